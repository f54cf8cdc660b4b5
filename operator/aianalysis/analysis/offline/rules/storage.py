"""Storage: volumes a Pod cannot attach (another node holds them), and claims that fill up."""

from __future__ import annotations

import dataclasses
import math
import re

from aianalysis.analysis.offline import evidence, rule

#: Signals of a volume running out of space.
FILL_SIGNALS = frozenset(
    {"PersistentVolumeFillingUp", "KubePersistentVolumeFillingUp", "PersistentVolumeFull"}
)
#: Images of database and search engines, whose volume holds the data itself (matched on the
#: image's repository name: ``registry/team/postgres:16`` → ``postgres``).
_DATABASE_IMAGE = re.compile(
    r"^(postgres|postgresql|postgis|timescaledb|mysql|mariadb|percona-server|mongo|mongodb|redis|valkey|"
    r"cassandra|scylla|elasticsearch|opensearch|clickhouse|clickhouse-server|cockroach|influxdb|etcd|"
    r"neo4j|couchdb)(?:$|[-_])",
    re.IGNORECASE,
)
_MULTI_ATTACH = re.compile(r"Multi-Attach error", re.IGNORECASE)
#: How much a filling claim's expansion grows it.
GROWTH_FACTOR = 1.5


def _multi_attach(seen: evidence.Evidence) -> str | None:
    """The attach/detach controller's Multi-Attach error about the incident's Pods, if any."""
    return next(
        (m for m in seen.event_messages("FailedAttachVolume", "FailedMount") if _MULTI_ATTACH.search(m)),
        None,
    )


def volume_on_gone_node(seen: evidence.Evidence) -> rule.Match | None:
    """A Pod cannot attach its volume (the attach/detach controller's Multi-Attach error) because a
    VolumeAttachment still binds it to another node, and the API server has no such Node any more
    (its machine was deleted).

    Needs: the attach events and, with a listing tool, the VolumeAttachments of the Pods' volumes and
    a read of each node they name. Selects ForceDetachVolume on the Pod (else the workload) with
    PERSISTENT_VOLUME_NAME: nothing can be writing from a node that is gone, so deleting the stale
    attachment is safe. Every attachment of that volume must name a gone node."""
    said = _multi_attach(seen)
    if said is None or not seen.attachments:
        return None
    # The volume the error names, when a VolumeAttachment of it was read (else the first one read).
    volume = next((a.volume for a in seen.attachments if f'"{a.volume}"' in said), None)
    volume = volume or seen.attachments[0].volume
    elsewhere = [a for a in seen.attachments if a.volume == volume]
    if not all(a.node_exists is False for a in elsewhere):
        return None
    nodes = ", ".join(sorted({a.node for a in elsewhere}))
    target = seen.incident if seen.incident.kind == "Pod" else seen.workload
    return rule.Match(
        facts=(
            f"the Pod's volume cannot be attached: {rule.shorten(said)}",
            f"a VolumeAttachment binds PersistentVolume {volume} to node {nodes}"
            + (" (attached)" if any(a.attached for a in elsewhere) else ""),
            f"the API server has no Node {nodes}: its machine is gone and cannot write to the volume",
        ),
        target=target or seen.incident,
        values={"PERSISTENT_VOLUME_NAME": volume},
        detail={"volume": volume, "node": nodes},
    )


VOLUME_ATTACHED_TO_GONE_NODE = rule.Rule(
    name="volume-attached-to-gone-node",
    signal_type="FailedAttachVolume",
    action_type="ForceDetachVolume",
    query="force detach volume VolumeAttachment old node gone Multi-Attach",
    explanation=(
        "The volume {volume} of {workload} is still attached to node {node}, which no longer exists "
        "in the cluster: nothing can write from there, so force-detaching the stale attachment lets "
        "the Pod attach it where it runs now."
    ),
    match=volume_on_gone_node,
)


def volume_attached_elsewhere(seen: evidence.Evidence) -> rule.Match | None:
    """A Pod cannot attach its volume: the attach/detach controller reports it exclusively attached to
    another node that still exists, or whose state could not be read.

    Needs: the attach events; the VolumeAttachments and their nodes when a listing tool exists.
    Declines: a node that stopped reporting may still write; a force-detach could corrupt the data,
    and moving the Pod frees nothing. A person must confirm the node is down; the explanation says
    what the cluster showed of it."""
    said = _multi_attach(seen)
    if said is None:
        return None
    facts = [f"the Pod's volume cannot be attached: {rule.shorten(said)}"]
    alive = [a for a in seen.attachments if a.node_exists is not False]
    why = "the cluster's objects do not show whether that node is gone"
    if alive:
        attachment = alive[0]
        facts.append(
            f"a VolumeAttachment binds PersistentVolume {attachment.volume} to node {attachment.node}"
        )
        if attachment.node_exists:
            state = {
                "True": "is Ready",
                "False": "is NotReady",
                "Unknown": "stopped reporting (Ready=Unknown)",
            }
            said_state = state.get(str(attachment.node_ready), "its state is unknown")
            why = f"Node {attachment.node} still exists and {said_state}"
            facts.append(f"{why}: it may still hold and write the volume")
        else:
            why = f"whether Node {attachment.node} still exists could not be read"
    else:
        unknown = [n.name for n in seen.nodes if n.conditions.get("Ready") == "Unknown"]
        if unknown:
            facts.append(f"Node {unknown[0]} stopped reporting (Ready=Unknown): it may still hold the volume")
    return rule.Match(facts=tuple(facts), target=seen.workload or seen.incident, detail={"why": why})


VOLUME_ATTACHED_ELSEWHERE = rule.Rule(
    name="volume-attached-elsewhere",
    signal_type="FailedAttachVolume",
    action_type=None,
    query="",
    explanation=(
        "The volume of {workload} is still attached to another node, and {why}. Only a person can "
        "confirm that node is down: force-detaching a volume a live node still writes corrupts it, "
        "and moving the Pod frees nothing."
    ),
    match=volume_attached_elsewhere,
    decline="the volume is attached to another node that may still be writing to it",
)


def claim_filling_up(seen: evidence.Evidence) -> rule.Match | None:
    """A Bound PersistentVolumeClaim the alert says fills up (a volume-filling signal).

    Needs: the claim (the incident), its provisioned size. Names no action: what fills it (data to
    keep, or files to delete) is not in the cluster's objects, so the catalog search by the alert's
    signal decides between the workflows; NEW_SIZE is the claim grown by ``GROWTH_FACTOR``, rounded
    up to whole Gi, for a workflow that expands it."""
    incident = seen.incident
    if incident.kind != "PersistentVolumeClaim" or seen.signal_type not in FILL_SIGNALS:
        return None
    if not seen.claim_capacity:
        return None
    facts = [f"PersistentVolumeClaim {incident.name} is Bound with {seen.claim_capacity}"]
    values = {}
    bigger = grow_storage(seen.claim_capacity, factor=GROWTH_FACTOR)
    if bigger:
        facts.append(f"an expansion by half would make it {bigger}")
        values["NEW_SIZE"] = bigger
    return rule.Match(
        facts=tuple(facts), target=incident, values=values, detail={"size": seen.claim_capacity}
    )


PVC_FILLING_UP = rule.Rule(
    name="pvc-filling-up",
    signal_type="PersistentVolumeFillingUp",
    action_type=None,
    query="",
    explanation="The volume of {workload} ({size}) fills up.",
    match=claim_filling_up,
)


def image_engine(image: str) -> str | None:
    """The database engine an image's repository name says it runs, if any."""
    repository = image.split("@", 1)[0].rsplit("/", 1)[-1].split(":", 1)[0]
    found = _DATABASE_IMAGE.match(repository)
    return found.group(1).lower() if found else None


def database_claim_filling_up(seen: evidence.Evidence) -> rule.Match | None:
    """A claim that fills up (as ``pvc-filling-up``) is a database's data volume: the container
    mounting it runs a database or search engine (its image's repository name says which).

    Needs: what ``pvc-filling-up`` needs and, with a listing tool, the Pods mounting the claim (the
    StatefulSet naming convention: ``data-db-0`` is mounted by ``db-0``). Selects ExpandPVC on the
    claim with NEW_SIZE: its files are the data itself, so deleting files is not the fix. An
    inference from the image's name, not a reading of the files: a database whose volume fills with
    its own logs would be expanded too (the safe side)."""
    found = claim_filling_up(seen)
    user = next((u for u in seen.claim_users if image_engine(u.image)), None)
    if found is None or user is None:
        return None
    engine = str(image_engine(user.image))
    return dataclasses.replace(
        found,
        facts=(
            *found.facts,
            f"container {user.container} of Pod {user.pod} mounts it at {user.mount_path} and runs "
            f"{engine} ({user.image}): the volume holds the database's data",
        ),
        detail={**found.detail, "engine": engine, "path": user.mount_path},
    )


PVC_DATABASE_DATA_FILLING_UP = rule.Rule(
    name="pvc-database-data-filling-up",
    signal_type="PersistentVolumeFillingUp",
    action_type="ExpandPVC",
    query="expand volume claim data that must be kept database grow storage",
    explanation=(
        "The volume of {workload} ({size}) fills up and holds the data of a {engine} database "
        "(mounted at {path}): its files are the data itself, so deleting files is not the fix; "
        "expanding the claim gives it room."
    ),
    match=database_claim_filling_up,
)


def grow_storage(text: str, *, factor: float) -> str | None:
    """A storage size raised by ``factor``, rounded up to whole Gi (``200Gi`` → ``300Gi``)."""
    size = rule.quantity_bytes(text)
    if size is None or size <= 0:
        return None
    return f"{math.ceil(size * factor / 2**30)}Gi"
