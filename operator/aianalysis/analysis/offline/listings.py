"""What the offline investigation reads through a listing tool or ``top``, when the tool box
offers them; without them those facts stay unknown and the rules that need them do not fire.

Each read is asked for only when what was seen already calls for it: Pods Pending on no Node
lead to the cluster's Nodes (taints, cordons); Pods running unready to the namespace's
NetworkPolicies; a workload mounting Secrets to the cert-manager Certificates that issue them
(and their issuers); an unhealthy workload running as its own ServiceAccount to the namespace's
RoleBindings (ClusterRoleBindings are not read); a CronJob to its Jobs; a claim to the Pods that
mount it; a Pod that cannot attach its volume to the VolumeAttachments of that volume, and
whether the node each names still exists; healthy Pods to their CPU use and pressured Nodes to
their memory use (the metrics API through ``top``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from aianalysis.analysis.offline import condense, evidence, reads, workload

MAX_REFERENCES = 4
MAX_NODES = 3
MAX_JOBS = 8
#: Rows asked of a listing tool for kinds with many objects (Pods, VolumeAttachments).
MAX_LISTED = 100
#: Events of a Pod that cannot attach or mount its volumes.
ATTACH_EVENTS = frozenset({"FailedAttachVolume", "FailedMount"})
_VOLUME_NAMED = re.compile(r'volume "([a-z0-9][-a-z0-9.]*)"')


async def nodes(found: reads.Reads) -> list[dict[str, Any]]:
    """The cluster's Nodes, a few read in full."""
    names = await found.names({"kind": "Node"})
    read = [await found.get("Node", name, None) for name in (names or ())[:MAX_NODES]]
    return [n for n in read if n is not None]


async def network_policies(
    found: reads.Reads, pods: Sequence[Mapping[str, Any]], namespace: str | None
) -> list[evidence.NetworkPolicy]:
    """The namespace's NetworkPolicies, when Pods run unready."""
    facts = [condense.pod_facts(p) for p in pods]
    if not found.listing or not namespace or not any(p.phase == "Running" and not p.healthy for p in facts):
        return []
    names = await found.names({"kind": "NetworkPolicy", "namespace": namespace})
    read = [await found.get("NetworkPolicy", name, namespace) for name in (names or ())[:MAX_REFERENCES]]
    return [condense.network_policy_facts(n) for n in read if n is not None]


async def certificates(
    found: reads.Reads, owner: Mapping[str, Any], namespace: str | None
) -> list[evidence.Certificate]:
    """cert-manager Certificates whose Secret the workload mounts, with their issuers (the Secrets
    themselves are never read)."""
    template = workload.pod_spec(owner) if owner.get("kind") != "Pod" else owner.get("spec")
    mounted = {
        str((v.get("secret") or {}).get("secretName"))
        for v in (template or {}).get("volumes") or ()
        if isinstance(v, dict) and isinstance(v.get("secret"), dict)
    }
    if not found.listing or not namespace or not mounted:
        return []
    out: list[evidence.Certificate] = []
    for name in (await found.names({"kind": "Certificate", "namespace": namespace}) or ())[:MAX_REFERENCES]:
        cert = await found.get("Certificate", name, namespace)
        spec = (cert or {}).get("spec") or {}
        if cert is None or spec.get("secretName") not in mounted:
            continue
        issuer = spec.get("issuerRef") or {}
        kind = str(issuer.get("kind") or "Issuer")
        issuer_obj = await found.get(
            kind, str(issuer.get("name")), None if kind == "ClusterIssuer" else namespace
        )
        ready, message = condense.ready_condition(cert)
        issuer_ready, issuer_message = condense.ready_condition(issuer_obj)
        out.append(
            evidence.Certificate(
                name=name,
                ready=ready,
                message=message,
                issuer_kind=kind,
                issuer_name=str(issuer.get("name") or ""),
                issuer_ready=issuer_ready,
                issuer_message=issuer_message,
            )
        )
    return out


async def account_bound(
    found: reads.Reads, account: str | None, pods: Sequence[Mapping[str, Any]], namespace: str | None
) -> bool | None:
    """Whether a RoleBinding of the namespace names the workload's ServiceAccount, read when its
    Pods are unhealthy (None: not known)."""
    unhealthy = any(not condense.pod_facts(p).healthy for p in pods)
    if not found.listing or not namespace or account in (None, "default") or not unhealthy:
        return None
    names = await found.names({"kind": "RoleBinding", "namespace": namespace})
    if names is None:
        return None
    for name in names[:MAX_REFERENCES]:
        binding = await found.get("RoleBinding", name, namespace)
        for subject in (binding or {}).get("subjects") or ():
            if (
                isinstance(subject, dict)
                and subject.get("kind") == "ServiceAccount"
                and subject.get("name") == account
                and subject.get("namespace", namespace) == namespace
            ):
                return True
    return False if len(names) <= MAX_REFERENCES else None


async def cpu_of_requests(
    found: reads.Reads, pods: Sequence[Mapping[str, Any]], namespace: str | None
) -> tuple[int, ...]:
    """CPU use of each of the workload's Pods as a percentage of its CPU requests, read only when
    every Pod is healthy: a service-level alert then needs to know whether they are saturated.
    Empty when unknown for any of them."""
    if not found.top or not pods or not namespace or not all(condense.pod_facts(p).healthy for p in pods):
        return ()
    rows = await found.usage({"resource": "pods", "namespace": namespace, "sort_by": "cpu", "limit": 50})
    used = {row.name: round(row.cpu * 1000) for row in rows or ()}
    shares: list[int] = []
    for pod in pods:
        requested = workload.cpu_requests(pod)
        millis = used.get(str((pod.get("metadata") or {}).get("name")))
        if millis is None or not requested:
            return ()
        shares.append(round(100 * millis / requested))
    return tuple(shares)


async def failed_runs(
    found: reads.Reads, owner: Mapping[str, Any] | None, namespace: str | None
) -> tuple[str, ...]:
    """The ``Failed`` reasons of a CronJob's Jobs, a few read in full."""
    if not found.listing or not owner or owner.get("kind") != "CronJob" or not namespace:
        return ()
    names = await found.names({"kind": "Job", "namespace": namespace})
    if names is None:
        return ()
    cronjob = str((owner.get("metadata") or {}).get("name"))
    reasons: list[str] = []
    for name in names[:MAX_JOBS]:
        job = await found.get("Job", name, namespace)
        parent = workload.controller_of(job, namespace=namespace)
        if job is not None and parent is not None and (parent.kind, parent.name) == ("CronJob", cronjob):
            reasons += [r for r in [workload.job_failure(job)] if r]
    return tuple(reasons)


async def claim_users(
    found: reads.Reads, incident: Mapping[str, Any], namespace: str | None
) -> list[evidence.ClaimUser]:
    """For a claim the incident is about, the containers of the Pods mounting it: the Pods a
    StatefulSet names its claims after (``data-db-0`` is mounted by ``db-0``), read in full."""
    if incident.get("kind") != "PersistentVolumeClaim" or not found.listing or not namespace:
        return []
    claim = str((incident.get("metadata") or {}).get("name"))
    names = await found.names({"kind": "Pod", "namespace": namespace, "limit": MAX_LISTED})
    out: list[evidence.ClaimUser] = []
    for name in [n for n in names or () if claim.endswith(f"-{n}")][:MAX_REFERENCES]:
        spec = ((await found.get("Pod", name, namespace)) or {}).get("spec") or {}
        volumes = {
            str(v.get("name"))
            for v in spec.get("volumes") or ()
            if isinstance(v, dict) and (v.get("persistentVolumeClaim") or {}).get("claimName") == claim
        }
        out += [
            evidence.ClaimUser(
                pod=name,
                container=str(c.get("name") or ""),
                image=str(c.get("image") or ""),
                mount_path=str(m.get("mountPath") or ""),
            )
            for c in spec.get("containers") or ()
            if isinstance(c, dict)
            for m in c.get("volumeMounts") or ()
            if isinstance(m, dict) and m.get("name") in volumes
        ]
    return out


async def node_usage(found: reads.Reads, read: Sequence[Mapping[str, Any]]) -> list[evidence.NodeUsage]:
    """The memory use of the Nodes under MemoryPressure."""
    pressed = {n.name for n in map(condense.node_facts, read) if n.conditions.get("MemoryPressure") == "True"}
    if not found.top or not pressed:
        return []
    rows = await found.usage({"resource": "nodes", "sort_by": "memory", "limit": MAX_LISTED})
    return [
        evidence.NodeUsage(
            name=row.name, memory_mi=round(row.memory / 2**20), memory_percent=round(row.memory_share)
        )
        for row in rows or ()
        if row.name in pressed and row.memory_share is not None
    ]


async def attachments(
    found: reads.Reads,
    *,
    pods: Sequence[Mapping[str, Any]],
    events: Sequence[evidence.Event],
    volumes: Sequence[str],
    signal_type: str,
) -> list[evidence.Attachment]:
    """After an attach error, the VolumeAttachments of the Pods' volumes (``volumes``, bound to
    their claims, and those the error names) to nodes the Pods do not run on, and whether each
    such node still exists (a Node the API server no longer has cannot be writing to it)."""
    attach_errors = [e.message for e in events if e.reason in ATTACH_EVENTS]
    if not found.listing or not (attach_errors or signal_type in ATTACH_EVENTS):
        return []
    wanted = list(volumes)
    wanted += [v for m in attach_errors for v in _VOLUME_NAMED.findall(m) if v not in wanted]
    own = {(p.get("spec") or {}).get("nodeName") for p in pods}
    if not wanted:
        return []
    out: list[evidence.Attachment] = []
    nodes_seen: dict[str, tuple[bool | None, str | None]] = {}
    for attachment in await found.listed({"kind": "VolumeAttachment", "limit": MAX_LISTED}) or ():
        spec = attachment.get("spec") or {}
        volume = str((spec.get("source") or {}).get("persistentVolumeName") or "")
        node = str(spec.get("nodeName") or "")
        if volume not in wanted or not node or node in own:
            continue
        if node not in nodes_seen and len(nodes_seen) < MAX_NODES:
            exists, obj = await found.lookup("Node", node, None)
            conditions = condense.node_facts(obj).conditions if isinstance(obj, dict) else {}
            nodes_seen[node] = (exists, conditions.get("Ready"))
        exists, ready = nodes_seen.get(node, (None, None))
        out.append(
            evidence.Attachment(
                volume=volume,
                node=node,
                attached=bool((attachment.get("status") or {}).get("attached")),
                node_exists=exists,
                node_ready=ready,
            )
        )
    return out
