"""Analyzers: rules from the evidence an investigation gathered to a refined signal and an action.

Pure. The offline provider reads the cluster through the same read-only tools an LLM gets
(:mod:`aianalysis.analysis.llm.evidence`), condenses what it saw into an :class:`Evidence`, and
runs every rule of :data:`RULES` on it, in order. A rule that matches returns a :class:`Finding`:

- a refined ``signal_type`` (the one the evidence supports, which may differ from the alert's),
- an ``action_type`` from Kubernaut's taxonomy (``RollbackDeployment``, ``IncreaseMemoryLimits``)
  and ``query`` words, used to search the catalog,
- the remediation ``target`` (the Deployment that owns the crashing Pods, the tainted Node, the
  HPA, the PDB...),
- ``values``: parameter values the evidence supports (a new memory limit from the current one),
  never guessed,
- ``facts``: the observations behind it, which set the confidence, and an ``explanation`` that
  lands in the rationale,
- or a ``decline``: the evidence contradicts the alert (a red herring), or it names a cause no
  workflow can fix; a person decides, and the explanation says why.

The table is meant to be extended: a rule is a name, what it refines to, an explanation and a
``match`` function over :class:`Evidence`; pass your own tuple to ``OfflineProvider(rules=...)``
(earlier rules win). The first matching rule is the finding; the others that matched are listed
as contributing factors.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping, Sequence

from aianalysis import resources

#: Exit code of a container killed by SIGKILL (the OOM killer, or the kubelet after a failed probe).
SIGKILL_EXIT = 137
CRASH_WAITING = frozenset({"CrashLoopBackOff", "RunContainerError"})
PULL_WAITING = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName"})
CONFIG_WAITING = frozenset({"CreateContainerConfigError"})
_JAVA = re.compile(r"\b(java|jvm|jdk|jre|openjdk|temurin|corretto|spring|-Xmx)", re.IGNORECASE)
_AUTH_PULL = re.compile(
    r"unauthorized|authentication required|no basic auth|access denied|denied|forbidden|credentials",
    re.IGNORECASE,
)
_MISSING_IMAGE = re.compile(r"not found|manifest unknown|does not exist|no such", re.IGNORECASE)
_TAINT = re.compile(r"untolerated taint[s]?\s*\{?\s*([^:}\s]+)", re.IGNORECASE)
#: Taints that are not a workload's to remove: the control plane's own, and the one a cordon sets
#: (``pending-cordoned-node`` handles that).
_SYSTEM_TAINTS = frozenset(
    {
        "node-role.kubernetes.io/control-plane",
        "node-role.kubernetes.io/master",
        "node.kubernetes.io/unschedulable",
    }
)
#: Signals of a volume running out of space.
FILL_SIGNALS = frozenset(
    {"PersistentVolumeFillingUp", "KubePersistentVolumeFillingUp", "PersistentVolumeFull"}
)
#: CPU use (% of requests) from which a Pod counts as saturated, and below which as not busy.
CPU_SATURATED = 90
CPU_BUSY = 70
#: Hours after which a revision counts as settled (not a suspect for a new alert).
SETTLED_HOURS = 24
#: A JVM heap share (MaxRAMPercentage) above this leaves too little of the container limit for
#: metaspace, threads and direct buffers; HEAP_SHARE_SAFE is the share a tuning asks for.
HEAP_SHARE_MAX = 80
HEAP_SHARE_SAFE = 70
#: Share of a Node's allocatable memory that relieving MemoryPressure brings its use back to.
MEMORY_RELIEVED_SHARE = 85
#: Failed Jobs of one CronJob that make its failure a pattern, not a one-off.
MIN_FAILED_RUNS = 2
_INSUFFICIENT = re.compile(r"Insufficient (cpu|memory)", re.IGNORECASE)
_PDB_EVICT = re.compile(r"disruption budget", re.IGNORECASE)
_CONFIG_ERROR = re.compile(
    r"(config|configuration|settings|\.ya?ml|\.json|\.toml|\.ini|\.conf)\b.{0,80}"
    r"(invalid|unknown|unrecognized|unexpected|malformed|cannot parse|failed to parse|parse error|"
    r"syntax error|missing required|not allowed)"
    r"|(invalid|unknown|unrecognized|unexpected|malformed)\s+"
    r"(directive|field|key|option|setting|parameter)",
    re.IGNORECASE,
)
_CONNECT_FAILED = re.compile(
    r"connection refused|dial tcp\b.{0,120}(refused|timeout|no route)|no route to host"
    r"|connection reset by peer|ECONNREFUSED|i/o timeout",
    re.IGNORECASE,
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
_LISTENING = re.compile(r"\blisten(?:ing)?\b\D{0,30}?(?:port\s*|:)(\d{2,5})\b", re.IGNORECASE)
_PROBE_REFUSED = re.compile(
    r"(liveness|readiness|startup) probe failed:.*?:(\d{2,5})\b.*connection refused", re.IGNORECASE
)
_RBAC_DENIED = re.compile(
    r"(is forbidden|forbidden:).{0,200}cannot (get|list|watch|create|update|patch|delete)\b"
    r"|cannot (get|list|watch|create|update|patch|delete) resource",
    re.IGNORECASE,
)
_DENIED_WORD = re.compile(r"\b(forbidden|permission denied|access denied|not authorized)\b", re.IGNORECASE)
_DENIED_ACCOUNT = re.compile(r"system:serviceaccount:([a-z0-9][-a-z0-9.]*):([a-z0-9][-a-z0-9.]*)")
_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|K|M|G|T)?$")
_UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


# ---- evidence ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class Container:
    name: str
    ready: bool = False
    restarts: int = 0
    waiting: str | None = None
    """``state.waiting.reason`` (CrashLoopBackOff, ImagePullBackOff, CreateContainerConfigError...)."""
    waiting_message: str = ""
    last_reason: str | None = None
    """``lastState.terminated.reason`` (or the current terminated state): OOMKilled, Error..."""
    last_exit_code: int | None = None
    memory_limit: str | None = None
    image: str = ""
    java: bool = False
    """The image or the environment says this is a JVM."""
    heap_percent: float | None = None
    """The JVM's ``-XX:MaxRAMPercentage`` (share of the container limit given to the heap)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Pod:
    name: str
    phase: str | None = None
    reason: str | None = None
    """``status.reason`` (Evicted...)."""
    message: str = ""
    node: str | None = None
    owner: str | None = None
    """``Kind/name`` of the controlling owner."""
    unschedulable: str | None = None
    """The message of ``PodScheduled=False`` (reason Unschedulable), when it is so."""
    containers: tuple[Container, ...] = ()
    pull_secrets: tuple[str, ...] = ()
    """``spec.imagePullSecrets`` names (the Secrets are never read)."""

    @property
    def failing(self) -> bool:
        return (
            self.reason == "Evicted"
            or self.phase == "Failed"
            or any(c.waiting in CRASH_WAITING | PULL_WAITING | CONFIG_WAITING for c in self.containers)
        )

    @property
    def healthy(self) -> bool:
        return self.phase == "Running" and bool(self.containers) and all(c.ready for c in self.containers)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Event:
    kind: str
    name: str
    reason: str
    message: str = ""
    type: str = "Normal"
    count: int = 1


@dataclasses.dataclass(frozen=True, kw_only=True)
class Rollout:
    """What the Deployment's revisions say (from the ReplicaSets of its Pods)."""

    revision: int | None
    """The Deployment's current revision (``deployment.kubernetes.io/revision``)."""
    failing_revisions: frozenset[int] = frozenset()
    """Revisions of the ReplicaSets whose Pods fail."""
    healthy_revisions: frozenset[int] = frozenset()
    """Revisions of the ReplicaSets whose Pods are healthy."""
    changed: tuple[str, ...] = ()
    """Pod-template fields that differ from the previous revision, when it could be read."""
    age_hours: float | None = None
    """Hours from the current revision's ReplicaSet creation to the alert (None: unknown)."""

    @property
    def failing_since_last_change(self) -> bool:
        """Only the newest revision fails, and an older one exists (healthy, or at least older)."""
        if self.revision is None or self.revision < 2 or not self.failing_revisions:
            return False
        return self.failing_revisions == {self.revision}


@dataclasses.dataclass(frozen=True, kw_only=True)
class Taint:
    key: str
    effect: str
    value: str | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Node:
    name: str
    conditions: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Condition type → status (``Ready: "False"``, ``DiskPressure: "True"``)."""
    unschedulable: bool = False
    taints: tuple[Taint, ...] = ()
    pool: str | None = None
    """The node pool / group the cloud's node label names (``POOL_LABELS``)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class HPA:
    name: str
    min_replicas: int | None = None
    max_replicas: int | None = None
    current_replicas: int | None = None
    cpu_target: int | None = None
    """Target average CPU utilisation (%)."""
    cpu_current: int | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class PDB:
    name: str
    disruptions_allowed: int | None = None
    current_healthy: int | None = None
    desired_healthy: int | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class NetworkPolicy:
    name: str
    selects_all: bool = False
    """``podSelector: {}``: every Pod of the namespace."""
    denies_ingress: bool = False
    """Ingress is a policy type and no ingress rule admits anything."""
    denies_egress: bool = False


@dataclasses.dataclass(frozen=True, kw_only=True)
class Certificate:
    """A cert-manager Certificate whose Secret the workload mounts, and its issuer."""

    name: str
    ready: bool | None = None
    message: str = ""
    issuer_kind: str = "Issuer"
    issuer_name: str = ""
    issuer_ready: bool | None = None
    issuer_message: str = ""


@dataclasses.dataclass(frozen=True, kw_only=True)
class NodeUsage:
    """A Node's memory use as the metrics API reports it (``top nodes``)."""

    name: str
    memory_mi: int
    """Working set, MiB."""
    memory_percent: int
    """Share of the Node's allocatable memory, %."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ClaimUser:
    """A container that mounts the PersistentVolumeClaim the incident is about."""

    pod: str
    container: str
    image: str
    mount_path: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class Attachment:
    """A VolumeAttachment binding a volume the incident's Pods need to a node they do not run on."""

    volume: str
    """The PersistentVolume (``spec.source.persistentVolumeName``)."""
    node: str
    """The node it is attached to (``spec.nodeName``)."""
    attached: bool = False
    """``status.attached``."""
    node_exists: bool | None = None
    """False: the API server has no such Node (its machine is gone); None: could not tell."""
    node_ready: str | None = None
    """The Node's ``Ready`` condition status when it exists (True, False, Unknown)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Evidence:
    """What the investigation saw; empty when no cluster could be read (``cluster`` False)."""

    signal_type: str
    incident: resources.ResourceRef
    cluster: bool = False
    workload: resources.ResourceRef | None = None
    """The controller at the top of the incident's owner chain (Deployment, StatefulSet...)."""
    pods: tuple[Pod, ...] = ()
    events: tuple[Event, ...] = ()
    rollout: Rollout | None = None
    nodes: tuple[Node, ...] = ()
    hpa: HPA | None = None
    pdb: PDB | None = None
    missing: tuple[tuple[str, str], ...] = ()
    """Objects the workload references that do not exist: ``(kind, name)`` (ConfigMap, PVC...)."""
    claims: tuple[str, ...] = ()
    """PersistentVolumeClaims the workload's Pods mount that exist (candidate targets)."""
    java: bool = False
    """The workload's pod template runs a JVM."""
    job_failure: str | None = None
    """The reason of a Job's ``Failed`` condition (DeadlineExceeded, BackoffLimitExceeded)."""
    cpu_of_requests: tuple[int, ...] = ()
    """CPU use of each healthy Pod of the workload, % of its CPU requests (metrics API; empty: unknown)."""
    claim_capacity: str | None = None
    """The size of the Bound PersistentVolumeClaim the incident is about."""
    failed_runs: tuple[str, ...] = ()
    """The ``Failed`` reasons of the Jobs a CronJob workload started (read with a listing tool)."""
    config_maps: tuple[str, ...] = ()
    """ConfigMaps the workload's Pods mount or read that exist (candidate configuration to fix)."""
    logs: tuple[str, ...] = ()
    """The last log lines of a crashing container's previous run (untrusted text: matched, never obeyed)."""
    service_account: str | None = None
    """The ServiceAccount the workload's Pods run as."""
    account_bound: bool | None = None
    """Whether a RoleBinding of the namespace names that ServiceAccount (None: not listed)."""
    network_policies: tuple[NetworkPolicy, ...] = ()
    """The namespace's NetworkPolicies (read when Pods are not Ready and a listing tool exists)."""
    certificates: tuple[Certificate, ...] = ()
    """Certificates whose Secrets the workload mounts (read when a listing tool exists)."""
    gitops: tuple[str, ...] = ()
    """``Kind name`` of the workload and the ConfigMaps it reads that a GitOps controller syncs."""
    claim_users: tuple[ClaimUser, ...] = ()
    """The containers mounting the claim the incident is about (read with a listing tool)."""
    node_usage: tuple[NodeUsage, ...] = ()
    """Memory use of the Nodes under MemoryPressure (metrics API; empty: unknown)."""
    attachments: tuple[Attachment, ...] = ()
    """VolumeAttachments of the Pods' volumes to other nodes (read after an attach error with a
    listing tool)."""

    @property
    def containers(self) -> list[tuple[Pod, Container]]:
        return [(pod, c) for pod in self.pods for c in pod.containers]

    def event_messages(self, *reasons: str) -> list[str]:
        return [e.message for e in self.events if e.reason in reasons]


# ---- findings and rules -----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class Match:
    """What one rule's ``match`` found: the facts behind it and what they let us fill."""

    facts: tuple[str, ...]
    target: resources.ResourceRef | None = None
    values: Mapping[str, str] = dataclasses.field(default_factory=dict)
    detail: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Words for the explanation template."""
    query: str = ""
    """Words added to the rule's catalog query (what this case has that others do not)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Finding:
    rule: str
    signal_type: str
    action_type: str | None
    query: str
    explanation: str
    facts: tuple[str, ...]
    target: resources.ResourceRef | None = None
    values: Mapping[str, str] = dataclasses.field(default_factory=dict)
    decline: str | None = None
    """Why a person must decide instead (red herring, no automated fix): the finding selects nothing."""
    alert_remedies: bool = True
    """Whether the workflows for the alert's own signal type may serve when the catalog has none for
    the refined signal or action type. False when the finding rules them out (a configuration
    error: neither a rollback nor a restart of the template fixes it)."""

    @property
    def strength(self) -> float:
        """0..1: how much evidence stands behind the finding (three independent facts = all)."""
        return min(1.0, len(self.facts) / 3)


Matcher = Callable[[Evidence], Match | None]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Rule:
    """One analyzer. ``explanation`` is a ``str.format`` template over the match's ``detail``."""

    name: str
    signal_type: str
    action_type: str | None
    query: str
    explanation: str
    match: Matcher
    decline: str | None = None
    alert_remedies: bool = True
    """See :attr:`Finding.alert_remedies`."""

    def apply(self, evidence: Evidence) -> Finding | None:
        found = self.match(evidence)
        if found is None:
            return None
        detail = {"workload": _describe(evidence.workload or evidence.incident), **found.detail}
        return Finding(
            rule=self.name,
            signal_type=self.signal_type,
            action_type=self.action_type,
            query=f"{self.query} {found.query}".strip(),
            explanation=self.explanation.format_map(_Defaulting(detail)),
            facts=found.facts,
            target=found.target,
            values=dict(found.values),
            decline=self.decline,
            alert_remedies=self.alert_remedies,
        )


class _Defaulting(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return f"<{key}>"


def analyze(evidence: Evidence, rules: Sequence[Rule] | None = None) -> list[Finding]:
    """Every finding, in rule order (the first is the analysis' conclusion)."""
    return [f for rule in (RULES if rules is None else rules) if (f := rule.apply(evidence)) is not None]


# ---- the matchers -------------------------------------------------------------------------------


def _crashing(evidence: Evidence) -> list[tuple[Pod, Container]]:
    return [
        (pod, c)
        for pod, c in evidence.containers
        if c.waiting in CRASH_WAITING or (c.restarts > 0 and c.last_reason not in (None, "Completed"))
    ]


def crash_after_rollout(evidence: Evidence) -> Match | None:
    """Crash loop (not OOM) where only the newest revision's Pods crash."""
    crashing = [(p, c) for p, c in _crashing(evidence) if c.last_reason != "OOMKilled"]
    rollout = evidence.rollout
    if not crashing or rollout is None or not rollout.failing_since_last_change:
        return None
    container = crashing[0][1]
    facts = [
        f"{len({p.name for p, _ in crashing})} Pod(s) crash-loop (container {container.name} last exited "
        f"{container.last_reason or 'with an error'}, exit code {container.last_exit_code}, "
        f"{container.restarts} restarts)",
        f"only revision {rollout.revision} of {_describe(evidence.workload)} fails, the newest",
    ]
    if rollout.healthy_revisions:
        older = ", ".join(str(r) for r in sorted(rollout.healthy_revisions))
        facts.append(f"Pods of the previous revision ({older}) are healthy")
    if rollout.changed:
        facts.append(f"the pod template changed in revision {rollout.revision}: {', '.join(rollout.changed)}")
    return Match(
        facts=tuple(facts),
        target=evidence.workload,
        values={"TO_REVISION": str(max(rollout.healthy_revisions or {(rollout.revision or 2) - 1}))},
        detail={"revision": str(rollout.revision)},
    )


def oom_heap_share(evidence: Evidence) -> Match | None:
    """A JVM OOMKilled by the kernel while its heap may take more than ``HEAP_SHARE_MAX`` percent
    of the container limit: metaspace, threads and buffers do not fit beside it; a smaller heap
    share (same limit) is the fix, more memory would be eaten by the same share."""
    killed = [
        (p, c)
        for p, c in evidence.containers
        if c.last_reason == "OOMKilled" and c.heap_percent is not None and c.heap_percent > HEAP_SHARE_MAX
    ]
    if not killed:
        return None
    pod, container = max(killed, key=lambda pc: pc[1].restarts)
    share = f"{container.heap_percent:g}"
    facts = (
        f"container {container.name} of Pod {pod.name} was OOMKilled (exit code "
        f"{container.last_exit_code if container.last_exit_code is not None else SIGKILL_EXIT}), "
        f"{container.restarts} restarts",
        f"its JVM may use {share}% of the memory limit ({container.memory_limit or 'unknown'}) for the heap "
        f"(-XX:MaxRAMPercentage={share}), above {HEAP_SHARE_MAX}%",
    )
    return Match(
        facts=facts,
        target=evidence.workload,
        values={"MAX_RAM_PERCENTAGE": str(HEAP_SHARE_SAFE)},
        detail={"container": container.name, "share": share, "limit": container.memory_limit or "its limit"},
    )


def crash_on_connection(evidence: Evidence) -> Match | None:
    """A crash loop (not OOM, not the newest revision's) whose last log lines say the process
    could not connect to a dependency: state it holds (a cached address, a pool of dead
    connections) is stale; a rolling restart reconnects, a rollback of an unchanged template would not."""
    crashing = [(p, c) for p, c in _crashing(evidence) if c.last_reason != "OOMKilled"]
    if not crashing or (evidence.rollout is not None and evidence.rollout.failing_since_last_change):
        return None
    said = next((line for line in evidence.logs if _CONNECT_FAILED.search(line)), None)
    if said is None:
        return None
    _, container = crashing[0]
    return Match(
        facts=(
            f"{len({p.name for p, _ in crashing})} Pod(s) crash-loop (container {container.name} last exited "
            f"{container.last_reason or 'with an error'}, exit code {container.last_exit_code}, "
            f"{container.restarts} restarts)",
            f"its log says it cannot connect to a dependency: {_clip(said)}",
            "the failing Pods are not those of a new revision",
        ),
        target=evidence.workload,
        detail={"container": container.name},
    )


def oom_at_limit(evidence: Evidence) -> Match | None:
    """Containers OOMKilled (exit 137) with a known memory limit: raise it."""
    killed = [(p, c) for p, c in evidence.containers if c.last_reason == "OOMKilled"]
    if not killed:
        return None
    pod, container = max(killed, key=lambda pc: pc[1].restarts)
    facts = [
        f"container {container.name} of Pod {pod.name} was OOMKilled (exit code "
        f"{container.last_exit_code if container.last_exit_code is not None else SIGKILL_EXIT}), "
        f"{container.restarts} restarts"
    ]
    values: dict[str, str] = {"CONTAINER_NAME": container.name}
    detail = {"container": container.name, "limit": container.memory_limit or "unknown"}
    if container.memory_limit:
        facts.append(f"its memory limit is {container.memory_limit}: usage reached the limit")
        raised = raise_quantity(container.memory_limit, factor=2.0)
        if raised:
            values["MEMORY_LIMIT_NEW"] = raised
            detail["new_limit"] = raised
    if len({p.name for p, _ in killed}) > 1:
        facts.append(f"{len({p.name for p, _ in killed})} Pods were OOMKilled, not one")
    java = container.java or evidence.java
    if java:
        facts.append("the container runs a JVM")
    return Match(
        facts=tuple(facts),
        target=evidence.workload,
        values=values,
        detail=detail,
        query="jvm java heap" if java else "",
    )


def missing_reference(evidence: Evidence) -> Match | None:
    """The workload references a ConfigMap/Secret/PVC that does not exist."""
    config = [(p, c) for p, c in evidence.containers if c.waiting in CONFIG_WAITING]
    missing = [f"{kind} {name}" for kind, name in evidence.missing]
    messages = [c.waiting_message for _, c in config if "not found" in c.waiting_message]
    if not missing and not messages:
        return None
    facts = [f"referenced but missing: {', '.join(missing)}"] if missing else []
    facts += [f"container {c.name} cannot start: {c.waiting}" for _, c in config[:1]]
    facts += [m for m in messages[:1] if m not in facts]
    return Match(
        facts=tuple(facts),
        target=evidence.workload,
        detail={"missing": ", ".join(missing) or messages[0]},
    )


def image_tag_missing(evidence: Evidence) -> Match | None:
    """The image cannot be pulled because the tag/name does not exist: go back to the last good one."""
    pulling = [(p, c) for p, c in evidence.containers if c.waiting in PULL_WAITING]
    if not pulling:
        return None
    texts = [c.waiting_message for _, c in pulling] + evidence.event_messages("Failed", "ErrImagePull")
    invalid = any(c.waiting == "InvalidImageName" for _, c in pulling)
    if not invalid and (
        not any(_MISSING_IMAGE.search(t) for t in texts) or any(_AUTH_PULL.search(t) for t in texts)
    ):
        return None
    _, container = pulling[0]
    facts = [f"container {container.name} cannot pull image {container.image}: {container.waiting}"]
    facts += [t for t in texts if _MISSING_IMAGE.search(t)][:1]
    if evidence.rollout and evidence.rollout.failing_since_last_change:
        facts.append(f"the image changed in revision {evidence.rollout.revision}; the previous one ran")
    return Match(
        facts=tuple(facts),
        target=evidence.workload,
        values={"CONTAINER_NAME": container.name},
        detail={"image": container.image},
    )


def image_pull_denied(evidence: Evidence) -> Match | None:
    """The registry refuses the pull (credentials): fix the pull secret."""
    pulling = [(p, c) for p, c in evidence.containers if c.waiting in ("ErrImagePull", "ImagePullBackOff")]
    if not pulling:
        return None
    texts = [c.waiting_message for _, c in pulling] + evidence.event_messages("Failed", "ErrImagePull")
    denied = [t for t in texts if _AUTH_PULL.search(t)]
    if not denied:
        return None
    pod, container = pulling[0]
    facts = [f"container {container.name} cannot pull image {container.image}", denied[0]]
    values = {}
    if pod.pull_secrets:
        facts.append(f"the Pod pulls with the image pull secret {pod.pull_secrets[0]}")
        values["PULL_SECRET_NAME"] = pod.pull_secrets[0]
    return Match(
        facts=tuple(facts), target=evidence.workload, values=values, detail={"image": container.image}
    )


def pending_on_taint(evidence: Evidence) -> Match | None:
    """Pods Pending because every Node carries a taint they do not tolerate (not the control
    plane's own taint, which no workload should have removed)."""
    messages = [p.unschedulable for p in evidence.pods if p.phase == "Pending" and p.unschedulable]
    messages += evidence.event_messages("FailedScheduling")
    keys = {m.group(1).strip("'\"") for text in messages if (m := _TAINT.search(text))} - _SYSTEM_TAINTS
    tainted = [
        n for n in evidence.nodes for t in n.taints if t.key in keys and t.effect != "PreferNoSchedule"
    ]
    if not keys:
        return None
    facts = [f"Pods are Pending: {next(t for t in messages if _TAINT.search(t))}"]
    target = None
    values: dict[str, str] = {}
    if tainted:
        node = tainted[0]
        taint = next(t for t in node.taints if t.key in keys)
        facts.append(f"Node {node.name} carries the taint {taint.key}:{taint.effect}")
        target = resources.ResourceRef(kind="Node", name=node.name)
        values = {"TAINT_KEY": taint.key, "TAINT_EFFECT": taint.effect, "NODE_NAME": node.name}
    return Match(facts=tuple(facts), target=target, values=values, detail={"taint": ", ".join(sorted(keys))})


def pending_on_cordon(evidence: Evidence) -> Match | None:
    """Pods Pending and the Nodes they could use are cordoned (unschedulable)."""
    pending = [p for p in evidence.pods if p.phase == "Pending"]
    cordoned = [n for n in evidence.nodes if n.unschedulable and n.conditions.get("Ready") == "True"]
    if not pending or not cordoned:
        return None
    node = cordoned[0]
    return Match(
        facts=(f"{len(pending)} Pod(s) Pending", f"Node {node.name} is Ready but cordoned (unschedulable)"),
        target=resources.ResourceRef(kind="Node", name=node.name),
        values={"NODE_NAME": node.name},
        detail={"node": node.name},
    )


def pending_on_resources(evidence: Evidence) -> Match | None:
    """Pods Pending because no Node has enough CPU or memory left."""
    texts = [p.unschedulable for p in evidence.pods if p.phase == "Pending" and p.unschedulable]
    texts += evidence.event_messages("FailedScheduling")
    short = sorted({m.group(1).lower() for t in texts if (m := _INSUFFICIENT.search(t))})
    if not short:
        return None
    facts = [f"Pods are Pending: {next(t for t in texts if _INSUFFICIENT.search(t))}"]
    values: dict[str, str] = {}
    pools = {n.pool for n in evidence.nodes}
    if evidence.nodes and len(pools) == 1 and None not in pools:
        pool = str(next(iter(pools)))
        facts.append(f"the Nodes read belong to node pool {pool}")
        values["NODE_POOL"] = pool
    return Match(
        facts=tuple(facts),
        target=evidence.workload,
        values=values,
        detail={"resource": " and ".join(short)},
    )


def pdb_blocks_drain(evidence: Evidence) -> Match | None:
    """A PodDisruptionBudget at its limit (0 disruptions allowed) while a drain wants to evict."""
    pdb = evidence.pdb
    if pdb is None or pdb.disruptions_allowed != 0:
        return None
    facts = [
        f"PodDisruptionBudget {pdb.name} allows 0 disruptions ({pdb.current_healthy} healthy, "
        f"{pdb.desired_healthy} required)"
    ]
    blocked = evidence.event_messages("EvictionBlocked", "FailedEviction", "DisruptionBlocked")
    blocked += [e.message for e in evidence.events if _PDB_EVICT.search(e.message)]
    if blocked:
        facts.append(blocked[0])
    facts += [f"Node {n.name} is cordoned (a drain is under way)" for n in evidence.nodes if n.unschedulable][
        :1
    ]
    if len(facts) < 2 and evidence.incident.kind != "PodDisruptionBudget":
        return None
    return Match(
        facts=tuple(facts),
        target=resources.ResourceRef(
            kind="PodDisruptionBudget", name=pdb.name, namespace=evidence.incident.namespace
        ),
        detail={"pdb": pdb.name},
    )


def hpa_maxed(evidence: Evidence) -> Match | None:
    """An HPA at maxReplicas with CPU above its target: raise the ceiling."""
    hpa = evidence.hpa
    if hpa is None or hpa.max_replicas is None or hpa.current_replicas is None:
        return None
    if hpa.current_replicas < hpa.max_replicas:
        return None
    facts = [
        f"HorizontalPodAutoscaler {hpa.name} runs at its maximum ({hpa.current_replicas}/{hpa.max_replicas})"
    ]
    if hpa.cpu_current is not None and hpa.cpu_target is not None:
        if hpa.cpu_current < hpa.cpu_target:
            return None
        facts.append(f"CPU is {hpa.cpu_current}% against a {hpa.cpu_target}% target")
    new_max = max(hpa.max_replicas + 2, math.ceil(hpa.max_replicas * 1.5))
    return Match(
        facts=tuple(facts),
        target=resources.ResourceRef(
            kind="HorizontalPodAutoscaler", name=hpa.name, namespace=evidence.incident.namespace
        ),
        values={"MAX_REPLICAS_NEW": str(new_max), "MAX_REPLICAS": str(new_max)},
        detail={"hpa": hpa.name, "new_max": str(new_max)},
    )


def node_condition(condition: str, status: str = "True") -> Matcher:
    def match(evidence: Evidence) -> Match | None:
        nodes = [n for n in evidence.nodes if n.conditions.get(condition) == status]
        if not nodes:
            return None
        node = nodes[0]
        facts = [f"Node {node.name} reports {condition}={status}"]
        if node.unschedulable:
            facts.append(f"Node {node.name} is cordoned")
        facts += [
            f"{e.reason}: {e.message}" for e in evidence.events if e.kind == "Node" and e.type == "Warning"
        ][:1]
        return Match(
            facts=tuple(facts),
            target=resources.ResourceRef(kind="Node", name=node.name),
            values={"NODE_NAME": node.name},
            detail={"node": node.name},
        )

    return match


def memory_pressure(evidence: Evidence) -> Match | None:
    """A Node reports MemoryPressure: evicting its lowest-priority Pods relieves it. With the
    Node's memory use from the metrics API, the memory to free is what brings it back to
    ``MEMORY_RELIEVED_SHARE`` percent of its allocatable memory."""
    found = node_condition("MemoryPressure")(evidence)
    if found is None or found.target is None:
        return None
    node = found.target.name
    found = dataclasses.replace(found, detail={**found.detail, "until": ""})
    usage = next((u for u in evidence.node_usage if u.name == node), None)
    if usage is None or usage.memory_percent <= 0:
        return found
    allocatable = usage.memory_mi * 100 / usage.memory_percent
    free = usage.memory_mi - allocatable * MEMORY_RELIEVED_SHARE / 100
    if free <= 0:
        return found
    target = f"{math.ceil(free / 1024)}Gi" if free >= 1024 else f"{math.ceil(free)}Mi"
    return dataclasses.replace(
        found,
        facts=(
            *found.facts,
            f"the metrics API reports Node {usage.name} using {usage.memory_mi}Mi, "
            f"{usage.memory_percent}% of its allocatable memory; freeing {target} brings it back to "
            f"{MEMORY_RELIEVED_SHARE}%",
        ),
        values={**found.values, "MEMORY_FREE_TARGET": target},
        detail={**found.detail, "until": f" until {target} is free"},
    )


def evicted_pods(evidence: Evidence) -> Match | None:
    evicted = [p for p in evidence.pods if p.reason == "Evicted"]
    if not evicted:
        return None
    return Match(
        facts=(f"{len(evicted)} Pod(s) Evicted: {evicted[0].message}".rstrip(": "),),
        target=evidence.workload,
        detail={"count": str(len(evicted))},
    )


def claim_filling_up(evidence: Evidence) -> Match | None:
    """A Bound claim the alert says fills up: its size, and the size an expansion would ask for.
    What fills it (data to keep or files to delete) is not in the cluster's objects, so the rule
    names no action: the catalog search by the alert's signal decides between the workflows."""
    incident = evidence.incident
    if incident.kind != "PersistentVolumeClaim" or evidence.signal_type not in FILL_SIGNALS:
        return None
    if not evidence.claim_capacity:
        return None
    facts = [f"PersistentVolumeClaim {incident.name} is Bound with {evidence.claim_capacity}"]
    values = {}
    bigger = grow_storage(evidence.claim_capacity, factor=1.5)
    if bigger:
        facts.append(f"an expansion by half would make it {bigger}")
        values["NEW_SIZE"] = bigger
    return Match(facts=tuple(facts), target=incident, values=values, detail={"size": evidence.claim_capacity})


def image_engine(image: str) -> str | None:
    """The database engine an image's repository name says it runs, if any."""
    repository = image.split("@", 1)[0].rsplit("/", 1)[-1].split(":", 1)[0]
    found = _DATABASE_IMAGE.match(repository)
    return found.group(1).lower() if found else None


def database_claim_filling_up(evidence: Evidence) -> Match | None:
    """A claim the alert says fills up is a database's data volume (the container mounting it
    runs a database engine): its files are the data itself, so deleting files is not the fix;
    expanding the claim is."""
    found = claim_filling_up(evidence)
    user = next((u for u in evidence.claim_users if image_engine(u.image)), None)
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


def cronjob_keeps_failing(evidence: Evidence) -> Match | None:
    """Several Jobs of a CronJob failed: the next runs will fail the same way until someone fixes
    the cause, so stop the schedule rather than re-run."""
    workload = evidence.workload
    if workload is None or workload.kind != "CronJob" or len(evidence.failed_runs) < MIN_FAILED_RUNS:
        return None
    reasons = sorted(set(evidence.failed_runs))
    return Match(
        facts=(
            f"{len(evidence.failed_runs)} Jobs of {_describe(workload)} failed ({', '.join(reasons)})",
            "every recent run fails: another run would fail the same way",
        ),
        target=workload,
        detail={"runs": str(len(evidence.failed_runs)), "reason": reasons[0]},
    )


def job_failed(evidence: Evidence) -> Match | None:
    if evidence.job_failure is None:
        return None
    return Match(
        facts=(f"the Job failed with {evidence.job_failure}",),
        target=evidence.workload or evidence.incident,
        detail={"reason": evidence.job_failure},
    )


def crash_on_configuration(evidence: Evidence) -> Match | None:
    """A crash loop whose logs say the process rejects its configuration, while no container
    field of the pod template changed (a restart picked up a changed ConfigMap): fix the
    configuration, a rollback of the template would not."""
    crashing = [(p, c) for p, c in _crashing(evidence) if c.last_reason != "OOMKilled"]
    if not crashing or not evidence.config_maps:
        return None
    if evidence.rollout is not None and evidence.rollout.changed:
        return None
    said = next((line for line in evidence.logs if _CONFIG_ERROR.search(line)), None) or _port_moved(evidence)
    if said is None:
        return None
    _, container = crashing[0]
    config_map = evidence.config_maps[0]
    facts = [
        f"container {container.name} crash-loops ({container.restarts} restarts, last exit "
        f"{container.last_reason or 'an error'})",
        f"its last run logged a configuration error: {_clip(said)}",
        f"the Pods read ConfigMap {config_map}",
    ]
    if evidence.rollout is not None and evidence.rollout.revision and evidence.rollout.revision > 1:
        facts.append("no container field of the pod template changed in the last revision")
    return Match(
        facts=tuple(facts),
        target=evidence.workload,
        values={"TARGET_CONFIGMAP_NAME": config_map, "CONFIGMAP_NAME": config_map},
        detail={"configmap": config_map},
    )


def _port_moved(evidence: Evidence) -> str | None:
    """The probes knock on one port while the process says it listens on another: the port
    came from the configuration (the template's probes did not move)."""
    probes = [m for e in evidence.events if (m := _PROBE_REFUSED.search(e.message))]
    listening = [m for line in evidence.logs if (m := _LISTENING.search(line))]
    if not probes or not listening or probes[0].group(2) == listening[-1].group(1):
        return None
    return (
        f"the process listens on port {listening[-1].group(1)} while its {probes[0].group(1).lower()} "
        f"probe is refused on port {probes[0].group(2)}"
    )


def crash_on_synced_configuration(evidence: Evidence) -> Match | None:
    """A configuration error (as :func:`crash_on_configuration`) in a ConfigMap a GitOps
    controller syncs: the bad change came from the repository, and a patch in the cluster would
    be synced away; revert the commit."""
    found = crash_on_configuration(evidence)
    config_map = found.values.get("TARGET_CONFIGMAP_NAME") if found else None
    if found is None or config_map is None or f"ConfigMap {config_map}" not in evidence.gitops:
        return None
    return dataclasses.replace(
        found,
        facts=(*found.facts, f"ConfigMap {config_map} is synced by a GitOps controller from a repository"),
    )


_PROBE_UNREACHED = re.compile(
    r"readiness probe failed:.*(timed out|timeout|connection refused|could not resolve|unreachable|"
    r"no route to host|deadline exceeded)",
    re.IGNORECASE,
)


def network_isolated(evidence: Evidence) -> Match | None:
    """Pods running but not Ready because their readiness probes cannot reach what they check,
    while a NetworkPolicy of the namespace denies all traffic of a kind to every Pod."""
    unready = [p for p in evidence.pods if p.phase == "Running" and not p.healthy and not p.failing]
    blocking = [
        n for n in evidence.network_policies if n.selects_all and (n.denies_ingress or n.denies_egress)
    ]
    said = next((e.message for e in evidence.events if _PROBE_UNREACHED.search(e.message)), None)
    if not unready or not blocking or said is None:
        return None
    policy = blocking[0]
    denied = " and ".join(
        d for d, on in (("ingress", policy.denies_ingress), ("egress", policy.denies_egress)) if on
    )
    return Match(
        facts=(
            f"{len(unready)} Pod(s) run but are not Ready",
            f"their readiness probe cannot reach its peer: {_clip(said)}",
            f"NetworkPolicy {policy.name} selects every Pod of the namespace and allows no {denied}",
        ),
        target=resources.ResourceRef(
            kind="NetworkPolicy", name=policy.name, namespace=evidence.incident.namespace
        ),
        values={"POLICY_NAME": policy.name, "NETWORK_POLICY_NAME": policy.name},
        detail={"policy": policy.name, "denied": denied},
    )


def certificate_not_ready(evidence: Evidence) -> Match | None:
    """A Certificate the workload mounts is not Ready; its issuer's state says why."""
    failing = [c for c in evidence.certificates if c.ready is False]
    if not failing:
        return None
    cert = failing[0]
    facts = [f"Certificate {cert.name} is not Ready: {_clip(cert.message or 'no reason given')}"]
    if cert.issuer_ready is False:
        facts.append(f"its {cert.issuer_kind} {cert.issuer_name} is not Ready: {_clip(cert.issuer_message)}")
    facts.append(f"{_describe(evidence.workload or evidence.incident)} mounts the Certificate's Secret")
    values = {"ISSUER_NAME": cert.issuer_name, "ISSUER_KIND": cert.issuer_kind} if cert.issuer_name else {}
    return Match(
        facts=tuple(facts),
        target=resources.ResourceRef(
            kind="Certificate", name=cert.name, namespace=evidence.incident.namespace
        ),
        values=values,
        detail={"certificate": cert.name, "issuer": f"{cert.issuer_kind} {cert.issuer_name}".strip()},
    )


def crash_on_rbac_denial(evidence: Evidence) -> Match | None:
    """The workload's calls to the API server are denied (403 Forbidden in its logs or events):
    its ServiceAccount lost a binding."""
    texts = [*evidence.logs, *(e.message for e in evidence.events if e.type == "Warning")]
    said = next((t for t in texts if _RBAC_DENIED.search(t)), None)
    unbound = evidence.account_bound is False and evidence.service_account is not None
    if said is None and unbound and any(not p.healthy for p in evidence.pods):
        # The process only says "forbidden", but its ServiceAccount is bound to nothing here.
        said = next((t for t in evidence.logs if _DENIED_WORD.search(t)), None)
    if said is None or not (evidence.pods or evidence.workload):
        return None
    account = evidence.service_account
    named = _DENIED_ACCOUNT.search(said)
    if named and named.group(1) == evidence.incident.namespace:
        account = account or named.group(2)
    facts = [f"the API server denies the workload's calls: {_clip(said)}"]
    crashing = _crashing(evidence)
    if crashing:
        facts.append(f"container {crashing[0][1].name} crash-loops ({crashing[0][1].restarts} restarts)")
    values: dict[str, str] = {}
    if account:
        facts.append(f"the Pods run as ServiceAccount {account}")
        values["SERVICE_ACCOUNT_NAME"] = account
    if unbound:
        facts.append(f"no RoleBinding of the namespace binds ServiceAccount {evidence.service_account}")
    return Match(
        facts=tuple(facts),
        target=evidence.workload,
        values=values,
        detail={"account": account or "its ServiceAccount"},
    )


def _clip(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


_FAILURE_SIGNALS = frozenset(
    {
        "CrashLoopBackOff",
        "OOMKilled",
        "ImagePullBackOff",
        "ErrImagePull",
        "Error",
        "CreateContainerConfigError",
    }
)


def healthy_despite_alert(evidence: Evidence) -> Match | None:
    """The alert reports failing Pods, but every Pod of the workload is Running, Ready and stable."""
    if evidence.signal_type not in _FAILURE_SIGNALS or not evidence.pods:
        return None
    if not all(p.healthy for p in evidence.pods):
        return None
    if any(c.restarts > 0 and c.last_reason == evidence.signal_type for _, c in evidence.containers):
        return None
    return Match(
        facts=(
            f"all {len(evidence.pods)} Pod(s) of {_describe(evidence.workload or evidence.incident)} "
            "are Running and Ready",
            f"no container reports {evidence.signal_type}",
        ),
        target=evidence.workload,
        detail={"alert": evidence.signal_type},
    )


def _service_alert_on_healthy_pods(evidence: Evidence) -> bool:
    """A service-level alert (latency, errors: not a Pod failure) on a workload whose Pods are
    all Running, Ready and without restarts, with their CPU use known."""
    return (
        evidence.signal_type not in _FAILURE_SIGNALS
        and bool(evidence.pods)
        and all(p.healthy for p in evidence.pods)
        and not any(c.restarts for _, c in evidence.containers)
        and len(evidence.cpu_of_requests) == len(evidence.pods)
    )


def healthy_unchanged_unsaturated(evidence: Evidence) -> Match | None:
    """A service-level alert while the workload is healthy, well below its CPU requests and not
    rolled out for a day: nothing the cluster shows explains it (an outside dependency?)."""
    rollout = evidence.rollout
    if not _service_alert_on_healthy_pods(evidence) or max(evidence.cpu_of_requests) >= CPU_BUSY:
        return None
    if rollout is None or rollout.age_hours is None or rollout.age_hours < SETTLED_HOURS:
        return None
    return Match(
        facts=(
            f"all {len(evidence.pods)} Pod(s) of {_describe(evidence.workload)} are Running and Ready, "
            "without restarts",
            f"their CPU use is at most {max(evidence.cpu_of_requests)}% of their requests",
            f"the current revision was rolled out {rollout.age_hours / 24:.1f} days before the alert",
        ),
        target=evidence.workload,
        detail={"alert": evidence.signal_type, "days": f"{rollout.age_hours / 24:.1f}"},
    )


def cpu_saturated(evidence: Evidence) -> Match | None:
    """A service-level alert while every healthy Pod uses its whole CPU request and nothing
    scales the workload (no HPA): more replicas share the load."""
    if not _service_alert_on_healthy_pods(evidence) or evidence.hpa is not None:
        return None
    if min(evidence.cpu_of_requests) < CPU_SATURATED:
        return None
    replicas = len(evidence.pods) * 2
    low, high = min(evidence.cpu_of_requests), max(evidence.cpu_of_requests)
    return Match(
        facts=(
            f"all {len(evidence.pods)} Pod(s) of {_describe(evidence.workload)} are healthy and use "
            f"{low}-{high}% of their CPU requests",
            "no HorizontalPodAutoscaler scales the workload",
        ),
        target=evidence.workload,
        values={"REPLICAS": str(replicas)},
        detail={"replicas": str(replicas), "pods": str(len(evidence.pods))},
    )


def _multi_attach(evidence: Evidence) -> str | None:
    """The attach/detach controller's Multi-Attach error about the incident's Pods, if any."""
    return next(
        (m for m in evidence.event_messages("FailedAttachVolume", "FailedMount") if _MULTI_ATTACH.search(m)),
        None,
    )


def volume_on_gone_node(evidence: Evidence) -> Match | None:
    """A Pod cannot attach its volume because a VolumeAttachment still binds it to another node,
    and the API server has no such Node any more (its machine was deleted): nothing can be
    writing from there, so deleting the stale attachment (a force-detach) is safe."""
    said = _multi_attach(evidence)
    if said is None or not evidence.attachments:
        return None
    # The volume the error names, when a VolumeAttachment of it was read (else the first one read).
    volume = next((a.volume for a in evidence.attachments if f'"{a.volume}"' in said), None)
    volume = volume or evidence.attachments[0].volume
    elsewhere = [a for a in evidence.attachments if a.volume == volume]
    if not all(a.node_exists is False for a in elsewhere):
        return None
    nodes = ", ".join(sorted({a.node for a in elsewhere}))
    target = evidence.incident if evidence.incident.kind == "Pod" else evidence.workload
    return Match(
        facts=(
            f"the Pod's volume cannot be attached: {_clip(said)}",
            f"a VolumeAttachment binds PersistentVolume {volume} to node {nodes}"
            + (" (attached)" if any(a.attached for a in elsewhere) else ""),
            f"the API server has no Node {nodes}: its machine is gone and cannot write to the volume",
        ),
        target=target or evidence.incident,
        values={"PERSISTENT_VOLUME_NAME": volume},
        detail={"volume": volume, "node": nodes},
    )


def volume_attached_elsewhere(evidence: Evidence) -> Match | None:
    """A Pod cannot attach its volume: the attach/detach controller reports it exclusively
    attached to another node that still exists (or whose state could not be read). A node that
    stopped reporting may still write: a force-detach could corrupt the data, and moving the Pod
    frees nothing; a person must confirm the node is down."""
    said = _multi_attach(evidence)
    if said is None:
        return None
    facts = [f"the Pod's volume cannot be attached: {_clip(said)}"]
    alive = [a for a in evidence.attachments if a.node_exists is not False]
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
        unknown = [n.name for n in evidence.nodes if n.conditions.get("Ready") == "Unknown"]
        if unknown:
            facts.append(f"Node {unknown[0]} stopped reporting (Ready=Unknown): it may still hold the volume")
    return Match(facts=tuple(facts), target=evidence.workload or evidence.incident, detail={"why": why})


def oom_alert_but_crash(evidence: Evidence) -> Match | None:
    """The alert says OOMKilled but the containers exit with an application error: a red herring."""
    if evidence.signal_type != "OOMKilled":
        return None
    crashing = _crashing(evidence)
    if not crashing or any(c.last_reason == "OOMKilled" for _, c in evidence.containers):
        return None
    _, container = crashing[0]
    return Match(
        facts=(
            f"container {container.name} exits with {container.last_reason or 'an error'} (exit code "
            f"{container.last_exit_code}), not OOMKilled",
            "no container of the workload was OOMKilled",
        ),
        target=evidence.workload,
        detail={"reason": container.last_reason or "Error", "code": str(container.last_exit_code)},
    )


#: The analyzers, strongest evidence first. Extend by passing your own tuple to the provider.
RULES: tuple[Rule, ...] = (
    Rule(
        name="healthy-despite-alert",
        signal_type="Healthy",
        action_type=None,
        query="",
        explanation=(
            "The alert reports {alert}, but the cluster contradicts it: every Pod of {workload} is running "
            "and ready. Nothing to remediate automatically; a person should check the alert rule."
        ),
        match=healthy_despite_alert,
        decline="the evidence contradicts the alert (red herring)",
    ),
    Rule(
        name="healthy-unchanged-unsaturated",
        signal_type="Healthy",
        action_type=None,
        query="",
        explanation=(
            "The alert reports {alert}, but {workload} is healthy, not CPU-saturated and unchanged for "
            "{days} days: nothing in the cluster explains it (an outside dependency?). A rollback or a "
            "scale-out would change nothing; a person should decide."
        ),
        match=healthy_unchanged_unsaturated,
        decline="nothing the cluster shows explains the alert",
    ),
    Rule(
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
    ),
    Rule(
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
    ),
    Rule(
        name="oom-alert-but-application-crash",
        signal_type="CrashLoopBackOff",
        action_type=None,
        query="",
        explanation=(
            "The alert reports OOMKilled, but the containers of {workload} exit with {reason} (exit code "
            "{code}) and none was OOM-killed: raising memory would not help. A person should look at the "
            "crash."
        ),
        match=oom_alert_but_crash,
        decline=(
            "the evidence contradicts the alert (red herring): the containers crash, they are not OOMKilled"
        ),
    ),
    Rule(
        name="oomkilled-jvm-heap-share",
        signal_type="OOMKilled",
        action_type="TuneJVMHeap",
        query="JVM heap share MaxRAMPercentage smaller heap restart",
        explanation=(
            "Container {container} of {workload} runs a JVM whose heap may take {share}% of {limit}: the "
            "kernel kills it when heap and non-heap memory together pass the limit. A smaller heap share "
            "under the same limit fixes it; more memory would be taken by the same share."
        ),
        match=oom_heap_share,
    ),
    Rule(
        name="oomkilled-at-limit",
        signal_type="OOMKilled",
        action_type="IncreaseMemoryLimits",
        query="OOMKilled increase memory limit",
        explanation=(
            "Container {container} of {workload} was OOM-killed at its memory limit ({limit}); raising the "
            "limit to {new_limit} gives it room."
        ),
        match=oom_at_limit,
    ),
    Rule(
        name="crashloop-gitops-configuration-error",
        signal_type="ConfigurationError",
        action_type="GitRevertCommit",
        query="CrashLoopBackOff GitOps configuration revert commit repository",
        explanation=(
            "{workload} crash-loops because its process rejects the configuration in ConfigMap {configmap}, "
            "which a GitOps controller syncs from a repository: the bad change is a commit, and a patch in "
            "the cluster would be synced away; reverting the commit restores it."
        ),
        match=crash_on_synced_configuration,
        alert_remedies=False,
    ),
    Rule(
        name="crashloop-configuration-error",
        signal_type="ConfigurationError",
        action_type="PatchConfiguration",
        query="CrashLoopBackOff invalid configuration ConfigMap fix config",
        explanation=(
            "{workload} crash-loops because its process rejects the configuration it reads from ConfigMap "
            "{configmap}; the pod template did not change, so fixing the configuration (not a rollback of "
            "the template) restores it."
        ),
        match=crash_on_configuration,
        alert_remedies=False,
    ),
    Rule(
        name="rbac-denied",
        signal_type="Forbidden",
        action_type="RestoreRoleBinding",
        query="Forbidden RBAC denied restore RoleBinding ServiceAccount permission",
        explanation=(
            "The API server denies the calls of {workload} ({account}): a binding its ServiceAccount "
            "needs is missing; restoring the RoleBinding gives back the access it had."
        ),
        match=crash_on_rbac_denial,
    ),
    Rule(
        name="network-policy-isolation",
        signal_type="NetworkPolicyBlocked",
        action_type="FixNetworkPolicy",
        query="NetworkPolicy deny all blocks traffic readiness fix network policy",
        explanation=(
            "The Pods of {workload} are not Ready because their probes cannot reach their peers: "
            "NetworkPolicy {policy} denies all {denied} to every Pod of the namespace; fixing or removing "
            "that policy restores the traffic."
        ),
        match=network_isolated,
        alert_remedies=False,
    ),
    Rule(
        name="certificate-not-ready",
        signal_type="CertificateNotReady",
        action_type="FixCertificate",
        query="Certificate not ready issuer cert-manager fix certificate CA",
        explanation=(
            "Certificate {certificate}, whose Secret {workload} mounts, is not Ready and will not be renewed "
            "while its issuer ({issuer}) fails; fixing the issuer or the Certificate restores it."
        ),
        match=certificate_not_ready,
        alert_remedies=False,
    ),
    Rule(
        name="crashloop-after-rollout",
        signal_type="CrashLoopBackOff",
        action_type="RollbackDeployment",
        query="CrashLoopBackOff rollback previous revision bad release",
        explanation=(
            "{workload} crash-loops since revision {revision}: only the newest revision's Pods fail, so the "
            "last rollout is the cause; rolling back to the previous revision restores the working template."
        ),
        match=crash_after_rollout,
    ),
    Rule(
        name="crashloop-dependency-connection",
        signal_type="CrashLoopBackOff",
        action_type="RestartPods",
        query="CrashLoopBackOff restart stale connections transient dependency recovered",
        explanation=(
            "{workload} crash-loops because container {container} cannot connect to a dependency, and no "
            "new revision caused it: a rolling restart drops the stale connections and addresses it "
            "holds; a rollback of the unchanged template would not help."
        ),
        match=crash_on_connection,
    ),
    Rule(
        name="missing-reference",
        signal_type="CreateContainerConfigError",
        action_type="PatchConfiguration",
        query="missing ConfigMap configuration reference",
        explanation=(
            "{workload} cannot start its containers because {missing} does not exist; the object must be "
            "restored or the reference fixed."
        ),
        match=missing_reference,
    ),
    Rule(
        name="image-tag-missing",
        signal_type="ImagePullBackOff",
        action_type="RollbackDeployment",
        query="ImagePullBackOff image tag not found rollback previous image",
        explanation=(
            "{workload} cannot pull {image}: the registry does not have it, so the image reference is wrong; "
            "going back to the previous image restores the workload."
        ),
        match=image_tag_missing,
    ),
    Rule(
        name="image-pull-denied",
        signal_type="ImagePullBackOff",
        action_type="RefreshImagePullSecret",
        query="ImagePullBackOff pull secret credentials registry",
        explanation=(
            "{workload} cannot pull {image}: the registry refuses the credentials, so the image pull secret "
            "must be fixed."
        ),
        match=image_pull_denied,
    ),
    Rule(
        name="pending-untolerated-taint",
        signal_type="FailedScheduling",
        action_type="RemoveTaint",
        query="Pending untolerated taint remove taint node",
        explanation=(
            "The Pods of {workload} stay Pending because the Nodes carry the taint {taint} they do not "
            "tolerate; removing the taint lets them schedule."
        ),
        match=pending_on_taint,
    ),
    Rule(
        name="pending-cordoned-node",
        signal_type="Unschedulable",
        action_type="UncordonNode",
        query="Pending cordoned node uncordon",
        explanation=(
            "The Pods of {workload} stay Pending while Node {node} is healthy but cordoned; uncordon it."
        ),
        match=pending_on_cordon,
    ),
    Rule(
        name="pdb-blocks-drain",
        signal_type="KubePodDisruptionBudgetAtLimit",
        action_type="RelaxPDB",
        query="PodDisruptionBudget at limit blocks drain relax",
        explanation=(
            "PodDisruptionBudget {pdb} allows no disruption, which blocks the eviction of its Pods; "
            "relaxing it lets the drain proceed."
        ),
        match=pdb_blocks_drain,
    ),
    Rule(
        name="hpa-maxed-cpu",
        signal_type="HPAMaxedOut",
        action_type="PatchHPA",
        query="HPA maxed out raise max replicas",
        explanation=(
            "HorizontalPodAutoscaler {hpa} is at its maximum with CPU above target; raising maxReplicas to "
            "{new_max} lets it scale."
        ),
        match=hpa_maxed,
    ),
    Rule(
        name="cpu-saturated-scale-out",
        signal_type="HighCPU",
        action_type="ScaleOut",
        query="scale out replicas CPU saturated traffic load",
        explanation=(
            "Every Pod of {workload} uses its whole CPU request and nothing scales it: more replicas "
            "({pods} → {replicas}) share the load."
        ),
        match=cpu_saturated,
    ),
    Rule(
        name="pending-insufficient-resources",
        signal_type="FailedScheduling",
        action_type="ProvisionNode",
        query="FailedScheduling insufficient resources add node capacity",
        explanation="The Pods of {workload} stay Pending: no Node has enough {resource} left.",
        match=pending_on_resources,
    ),
    Rule(
        name="node-not-ready",
        signal_type="NodeNotReady",
        action_type="DrainNode",
        query="NodeNotReady node not ready cordon drain",
        explanation="Node {node} is NotReady; its workloads must move elsewhere.",
        match=node_condition("Ready", "False"),
    ),
    Rule(
        name="node-unreachable",
        signal_type="NodeUnreachable",
        action_type="DrainNode",
        query="NodeUnreachable node unreachable cordon drain",
        explanation="Node {node} stopped reporting (Ready=Unknown); its workloads must move elsewhere.",
        match=node_condition("Ready", "Unknown"),
    ),
    Rule(
        name="node-disk-pressure",
        signal_type="DiskPressure",
        action_type="CleanupNode",
        query="DiskPressure node disk cleanup images logs",
        explanation="Node {node} reports DiskPressure; freeing disk space on it relieves the evictions.",
        match=node_condition("DiskPressure"),
    ),
    Rule(
        name="node-memory-pressure",
        signal_type="MemoryPressure",
        action_type="EvictPods",
        query="MemoryPressure node memory pressure relief",
        explanation=(
            "Node {node} reports MemoryPressure; evicting its lowest-priority Pods{until} relieves it."
        ),
        match=memory_pressure,
    ),
    Rule(
        name="evicted-pods",
        signal_type="Evicted",
        action_type="DeletePod",
        query="delete evicted pods",
        explanation="{count} Pod(s) of {workload} were evicted and linger; cleaning them up is safe.",
        match=evicted_pods,
    ),
    Rule(
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
    ),
    Rule(
        name="pvc-filling-up",
        signal_type="PersistentVolumeFillingUp",
        action_type=None,
        query="",
        explanation="The volume of {workload} ({size}) fills up.",
        match=claim_filling_up,
    ),
    Rule(
        name="cronjob-runs-keep-failing",
        signal_type="BackoffLimitExceeded",
        action_type="SuspendCronJob",
        query="CronJob every run fails the same way suspend",
        explanation=(
            "{runs} runs of {workload} failed ({reason}): each new run fails the same way and adds load "
            "until someone fixes the cause, so suspending the CronJob stops it; re-running would not help."
        ),
        match=cronjob_keeps_failing,
    ),
    Rule(
        name="job-failed",
        signal_type="BackoffLimitExceeded",
        action_type=None,
        query="Job failed rerun",
        explanation="The Job failed with {reason}.",
        match=job_failed,
    ),
)


# ---- quantities --------------------------------------------------------------------------------


def quantity_bytes(text: str) -> int | None:
    match = _QUANTITY.match(text.strip())
    if match is None:
        return None
    return int(float(match.group(1)) * _UNITS.get(match.group(2) or "", 1))


def raise_quantity(text: str, *, factor: float) -> str | None:
    """A memory quantity raised by ``factor``, in Mi (or Gi when whole), e.g. ``256Mi`` → ``512Mi``."""
    size = quantity_bytes(text)
    if size is None or size <= 0:
        return None
    mebibytes = math.ceil(size * factor / 2**20)
    return f"{mebibytes // 1024}Gi" if mebibytes % 1024 == 0 else f"{mebibytes}Mi"


def grow_storage(text: str, *, factor: float) -> str | None:
    """A storage size raised by ``factor``, rounded up to whole Gi (``200Gi`` → ``300Gi``)."""
    size = quantity_bytes(text)
    if size is None or size <= 0:
        return None
    return f"{math.ceil(size * factor / 2**30)}Gi"


def _describe(ref: resources.ResourceRef | None) -> str:
    if ref is None:
        return "the workload"
    return f"{ref.kind} {ref.namespace}/{ref.name}" if ref.namespace else f"{ref.kind} {ref.name}"
