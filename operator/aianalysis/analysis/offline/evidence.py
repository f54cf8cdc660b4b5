"""What the offline investigation saw, condensed into values the rules read (:class:`Evidence`).

Pure data: :mod:`investigation` fills it from what the tools returned (:mod:`condense` turns
each object into these records), and the rules of :mod:`rules` only read it. An empty
:class:`Evidence` (``cluster`` False) means no cluster could be read.

What a real kubelet writes decides what these records say (a crash loop shows ``CrashLoopBackOff``
only between restarts, ``terminated: Error`` the rest of the time): the definitions that depend
on it are here, once (:attr:`Container.crashing`), and in :mod:`condense`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from aianalysis import resources

#: ``state.waiting.reason`` of a container that crash-loops.
CRASH_WAITING = frozenset({"CrashLoopBackOff", "RunContainerError"})
#: ``state.waiting.reason`` of a container whose image cannot be pulled.
PULL_WAITING = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName"})
#: ``state.waiting.reason`` of a container that cannot be created from its configuration.
CONFIG_WAITING = frozenset({"CreateContainerConfigError"})


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
    requests: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """``resources.requests`` as written (``cpu: 500m``, ``memory: 1Gi``)."""
    image: str = ""
    java: bool = False
    """The image or the environment says this is a JVM."""
    heap_percent: float | None = None
    """The JVM's ``-XX:MaxRAMPercentage`` (share of the container limit given to the heap)."""
    probe_timeouts: Mapping[str, int] = dataclasses.field(default_factory=dict)
    """Probe kind (``readiness``, ``liveness``, ``startup``) → its ``timeoutSeconds`` (the API
    default, 1, when unset)."""

    @property
    def restarted_after_failure(self) -> bool:
        """It restarted, and its last run ended otherwise than completed."""
        return self.restarts > 0 and self.last_reason not in (None, "Completed")

    @property
    def crashing(self) -> bool:
        """Waiting to restart after crashes, or restarted after a failure."""
        return self.waiting in CRASH_WAITING or self.restarted_after_failure


@dataclasses.dataclass(frozen=True, kw_only=True)
class Toleration:
    key: str = ""
    """Empty with ``Exists``: every taint."""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    """Empty: every effect."""

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.operator == "Exists":
            return not self.key or self.key == taint.key
        return self.key == taint.key and self.value == (taint.value or "")


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
    tolerations: tuple[Toleration, ...] = ()

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
    """The node pool / group the cloud's node label names (``condense.POOL_LABELS``)."""
    allocatable: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """``status.allocatable`` as written (``cpu: "2"``, ``memory: 8039848Ki``)."""


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
    job_deadline: int | None = None
    """The failed Job's ``activeDeadlineSeconds``."""
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
