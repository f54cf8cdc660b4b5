"""The offline provider's investigation: a fixed, bounded sequence of read-only tool calls that
condenses an incident's surroundings into :class:`analyzers.Evidence`.

It reads through the conversation's tool box, exactly as an LLM would (so what it reads is
redacted and fenced the same way, counted in ``status.llm.toolCalls``, and recorded as "returned"
for the target check): the incident's object and its owner chain, the Pods of the workload
(each read in full, a few at most), the ReplicaSets behind them (rollout revisions and what
changed in the pod template), the events of the workload, its failing Pods and their Nodes, the
Nodes themselves (conditions, taints, cordon), the HPA and PodDisruptionBudget of the workload
(when the incident is about one, or one carries the workload's name), and the ConfigMaps and
PVCs its Pods reference (present or missing).

A Pod the alert names that no longer exists (it
was replaced since) leads to the workload its name says it belonged to (``web-5b4c9d7f8-x2k4q``
→ Deployment ``web``, ``db-2`` → StatefulSet ``db``), read and checked like any other object.

When Pods crash, the last lines of the crashed run of one of them are read (``get_pod_logs``
with ``previous``, else the current run; for a running container that is not Ready, its current
run): they say whether the process rejects its configuration or is denied by the API server.

A listing tool (see :data:`LIST_TOOLS`) is used when the tool box offers one: Pods Pending on no
Node lead to the cluster's Nodes (taints, cordons); Pods running unready to the namespace's
NetworkPolicies; a workload mounting Secrets to the cert-manager Certificates that issue them
(and their issuers); an unhealthy workload running as its own ServiceAccount to the namespace's
RoleBindings (ClusterRoleBindings are not read); a Pod that cannot attach its volume to the
VolumeAttachments of that volume, and whether the node each names still exists (a Node the API
server no longer has cannot be writing to it). Without one those facts stay unknown and the
rules that need them do not fire. Nothing here raises for what the cluster answers: an
unreadable object is simply not evidence.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from aianalysis import resources
from aianalysis.analysis import conversation, tools
from aianalysis.analysis.llm import analyzers

MAX_PODS = 6
MAX_REPLICASETS = 3
MAX_NODES = 3
MAX_JOBS = 8
TOP_TOOL = "top"
#: A Job's ``Failed`` condition reasons.
JOB_FAILURE_REASONS = frozenset({"BackoffLimitExceeded", "DeadlineExceeded"})
#: Node labels naming the node pool / group a Node belongs to (EKS, GKE, AKS, Karpenter).
POOL_LABELS = (
    "eks.amazonaws.com/nodegroup",
    "cloud.google.com/gke-nodepool",
    "kubernetes.azure.com/agentpool",
    "karpenter.sh/nodepool",
)
MAX_REFERENCES = 4
LOG_LINES = 40
OWNER_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob")
REVISION = "deployment.kubernetes.io/revision"
#: Listing tools another module may offer (name, argument names); the first one present is used.
LIST_TOOLS: tuple[str, ...] = ("list_resources", "list_objects")
#: Events of a Pod that cannot attach or mount its volumes.
ATTACH_EVENTS = frozenset({"FailedAttachVolume", "FailedMount"})
#: Rows asked of a listing tool for cluster-wide kinds (VolumeAttachments).
MAX_LISTED = 100
_VOLUME_NAMED = re.compile(r'volume "([a-z0-9][-a-z0-9.]*)"')
_REPLICASET_POD = re.compile(r"^(?P<owner>[a-z0-9][-a-z0-9.]*?)-[a-z0-9]{6,10}-[a-z0-9]{5}$")
_ORDINAL_POD = re.compile(r"^(?P<owner>[a-z0-9][-a-z0-9.]*?)-[0-9]+$")
_TEMPLATE_FIELDS = ("image", "command", "args", "env", "envFrom", "resources", "volumeMounts")

Call = Callable[[str, dict[str, Any]], Awaitable[conversation.ToolOutcome]]


class Investigation:
    """Reads one incident's surroundings through ``call`` (the tool box, counted by the caller)."""

    def __init__(self, call: Call, *, tool_names: Sequence[str], spec: resources.AIAnalysisSpec) -> None:
        self._call = call
        self._spec = spec
        self._list_tool = next((name for name in LIST_TOOLS if name in tool_names), None)
        self._top = TOP_TOOL in tool_names
        self.chain: list[resources.ResourceRef] = [spec.resource]
        self.cluster = False
        self.volumes: list[str] = []
        """PersistentVolumes bound to the claims the Pods mount (read with the claims)."""

    async def gather(self) -> analyzers.Evidence:
        spec = self._spec
        incident = await self._get(spec.resource.kind, spec.resource.name, spec.resource.namespace)
        if incident is None and spec.resource.kind == "Pod":
            incident = await self._replaced_pod_owner(spec.resource.name, spec.resource.namespace)
        if incident is None:
            return analyzers.Evidence(
                signal_type=spec.signal.type, incident=spec.resource, cluster=self.cluster
            )
        objects = [incident]
        while len(objects) <= 3 and (owner := controller_of(objects[-1], namespace=spec.resource.namespace)):
            found = await self._get(owner.kind, owner.name, owner.namespace)
            self.chain.append(owner)
            if found is None:
                break
            objects.append(found)
        namespace = spec.resource.namespace
        hpa_obj = incident if spec.resource.kind == "HorizontalPodAutoscaler" else None
        workload_obj = next((o for o in reversed(objects) if o.get("kind") in OWNER_KINDS), None)
        if workload_obj is None and hpa_obj is not None:
            workload_obj = await self._scale_target(hpa_obj, namespace)
        workload = _ref(workload_obj, namespace) if workload_obj is not None else None
        pods = [incident] if incident.get("kind") == "Pod" else []
        if workload is not None and workload.kind in OWNER_KINDS and namespace:
            pods = await self._pods(workload, namespace, keep=pods)
        nodes = await self._nodes(incident, pods)
        if not nodes and any(pod_facts(p).unschedulable for p in pods):
            nodes = await self._listed_nodes()
        events = await self._events([incident, *([workload_obj] if workload_obj else [])], pods, nodes)
        missing, present, synced = await self._references(workload_obj or incident, pods, namespace)
        return analyzers.Evidence(
            signal_type=spec.signal.type,
            incident=spec.resource,
            cluster=True,
            workload=workload,
            pods=tuple(pod_facts(p) for p in pods),
            events=tuple(events),
            rollout=await self._rollout(workload_obj, pods, namespace),
            nodes=tuple(node_facts(n) for n in nodes),
            hpa=hpa_facts(hpa_obj or await self._named("HorizontalPodAutoscaler", workload, namespace)),
            pdb=pdb_facts(
                incident
                if spec.resource.kind == "PodDisruptionBudget"
                else await self._named("PodDisruptionBudget", workload, namespace)
            ),
            missing=tuple(missing),
            claims=tuple(name for kind, name in present if kind == "PersistentVolumeClaim"),
            config_maps=tuple(name for kind, name in present if kind == "ConfigMap"),
            network_policies=tuple(await self._network_policies(pods, namespace)),
            certificates=tuple(await self._certificates(workload_obj or incident, namespace)),
            gitops=tuple(
                synced
                + ([_describe_obj(workload_obj)] if workload_obj and gitops_managed(workload_obj) else [])
            ),
            logs=await self._crash_logs(pods, namespace),
            service_account=service_account(workload_obj or incident),
            account_bound=await self._account_bound(
                service_account(workload_obj or incident), pods, namespace
            ),
            job_failure=job_failure(workload_obj) or job_failure(incident),
            claim_capacity=claim_capacity(incident),
            cpu_of_requests=await self._cpu_of_requests(pods, namespace),
            failed_runs=await self._failed_runs(workload_obj, namespace) + self._failed_reruns(workload_obj),
            java=runs_java(workload_obj or incident),
            claim_users=tuple(await self._claim_users(incident, namespace)),
            node_usage=tuple(await self._node_usage(nodes)),
            attachments=tuple(await self._attachments(pods, events)),
        )

    # ---- reads -------------------------------------------------------------------------------

    async def _get(self, kind: str, name: str, namespace: str | None) -> dict[str, Any] | None:
        outcome = await self._call("get_resource", _where(kind, name, namespace))
        self.cluster = self.cluster or not outcome.is_error or isinstance(outcome.data, tools.Absent)
        return outcome.data.body if isinstance(outcome.data, tools.ObjectResult) else None

    async def _lookup(self, kind: str, name: str, namespace: str | None) -> tuple[bool | None, Any]:
        """Whether it exists (True/False when the cluster said so, None when it could not tell),
        and the object as read."""
        outcome = await self._call("get_resource", _where(kind, name, namespace))
        if isinstance(outcome.data, tools.Absent):
            return False, None
        if isinstance(outcome.data, tools.ObjectResult):
            return True, outcome.data.body
        return None, None

    async def _list(self, arguments: dict[str, Any]) -> list[str] | None:
        """The names a listing tool returned, in its order (None: no listing tool, or it failed)."""
        if self._list_tool is None:
            return None
        outcome = await self._call(self._list_tool, arguments)
        if not isinstance(outcome.data, tools.ListResult):
            return None
        return [_name(item) for item in outcome.data.items]

    async def _replaced_pod_owner(self, name: str, namespace: str | None) -> dict[str, Any] | None:
        """The workload a vanished Pod's name says it belonged to, when it exists."""
        guesses = [("Deployment", m["owner"]) for m in [_REPLICASET_POD.match(name)] if m]
        guesses += [("StatefulSet", m["owner"]) for m in [_ORDINAL_POD.match(name)] if m]
        for kind, owner in guesses:
            found = await self._get(kind, owner, namespace)
            if found is not None:
                self.chain.append(resources.ResourceRef(kind=kind, name=owner, namespace=namespace))
                return found
        return None

    async def _network_policies(
        self, pods: Sequence[Mapping[str, Any]], namespace: str | None
    ) -> list[analyzers.NetworkPolicy]:
        """The namespace's NetworkPolicies, when Pods run unready and a listing tool exists."""
        facts = [pod_facts(p) for p in pods]
        if (
            self._list_tool is None
            or not namespace
            or not any(p.phase == "Running" and not p.healthy for p in facts)
        ):
            return []
        listed = await self._list({"kind": "NetworkPolicy", "namespace": namespace})
        if listed is None:
            return []
        found = [await self._get("NetworkPolicy", name, namespace) for name in listed[:MAX_REFERENCES]]
        return [network_policy_facts(n) for n in found if n is not None]

    async def _certificates(
        self, workload: Mapping[str, Any], namespace: str | None
    ) -> list[analyzers.Certificate]:
        """cert-manager Certificates whose Secret the workload mounts, with their issuers (only
        with a listing tool; the Secrets themselves are never read)."""
        template = pod_template(workload) if workload.get("kind") != "Pod" else workload.get("spec")
        mounted = {
            str((v.get("secret") or {}).get("secretName"))
            for v in (template or {}).get("volumes") or ()
            if isinstance(v, dict) and isinstance(v.get("secret"), dict)
        }
        if self._list_tool is None or not namespace or not mounted:
            return []
        listed = await self._list({"kind": "Certificate", "namespace": namespace})
        if listed is None:
            return []
        found: list[analyzers.Certificate] = []
        for name in listed[:MAX_REFERENCES]:
            cert = await self._get("Certificate", name, namespace)
            spec = (cert or {}).get("spec") or {}
            if cert is None or spec.get("secretName") not in mounted:
                continue
            issuer = spec.get("issuerRef") or {}
            kind = str(issuer.get("kind") or "Issuer")
            issuer_obj = await self._get(
                kind, str(issuer.get("name")), None if kind == "ClusterIssuer" else namespace
            )
            ready, message = ready_condition(cert)
            issuer_ready, issuer_message = ready_condition(issuer_obj)
            found.append(
                analyzers.Certificate(
                    name=name,
                    ready=ready,
                    message=message,
                    issuer_kind=kind,
                    issuer_name=str(issuer.get("name") or ""),
                    issuer_ready=issuer_ready,
                    issuer_message=issuer_message,
                )
            )
        return found

    async def _account_bound(
        self, account: str | None, pods: Sequence[Mapping[str, Any]], namespace: str | None
    ) -> bool | None:
        """Whether a RoleBinding of the namespace names the workload's ServiceAccount, read when
        its Pods are unhealthy and a listing tool exists (None: not known)."""
        unhealthy = any(not pod_facts(p).healthy for p in pods)
        if self._list_tool is None or not namespace or account in (None, "default") or not unhealthy:
            return None
        listed = await self._list({"kind": "RoleBinding", "namespace": namespace})
        if listed is None:
            return None
        for name in listed[:MAX_REFERENCES]:
            binding = await self._get("RoleBinding", name, namespace)
            for subject in (binding or {}).get("subjects") or ():
                if (
                    isinstance(subject, dict)
                    and subject.get("kind") == "ServiceAccount"
                    and subject.get("name") == account
                    and subject.get("namespace", namespace) == namespace
                ):
                    return True
        return False if len(listed) <= MAX_REFERENCES else None

    async def _cpu_of_requests(
        self, pods: Sequence[Mapping[str, Any]], namespace: str | None
    ) -> tuple[int, ...]:
        """CPU use of each of the workload's Pods as a percentage of its CPU requests (the metrics
        API through ``top``), read only when every Pod is healthy: a service-level alert then
        needs to know whether they are saturated. Empty when unknown for any of them."""
        if not self._top or not pods or not namespace or not all(pod_facts(p).healthy for p in pods):
            return ()
        outcome = await self._call(
            TOP_TOOL, {"resource": "pods", "namespace": namespace, "sort_by": "cpu", "limit": 50}
        )
        if not isinstance(outcome.data, tools.UsageResult):
            return ()
        used = {row.name: round(row.cpu * 1000) for row in outcome.data.rows}
        shares: list[int] = []
        for pod in pods:
            name = str((pod.get("metadata") or {}).get("name"))
            requested = cpu_requests(pod)
            millis = used.get(name)
            if millis is None or not requested:
                return ()
            shares.append(round(100 * millis / requested))
        return tuple(shares)

    def _failed_reruns(self, workload_obj: Mapping[str, Any] | None) -> tuple[str, ...]:
        """Runs of a CronJob's job that an earlier remediation of this incident started and that
        failed as a Job fails (the recovery history's failure reason, written by the executor)."""
        recovery = self._spec.recovery
        if recovery is None or not workload_obj or workload_obj.get("kind") != "CronJob":
            return ()
        return tuple(
            p.failure.reason for p in recovery.previous_executions if p.failure.reason in JOB_FAILURE_REASONS
        )

    async def _failed_runs(
        self, workload_obj: Mapping[str, Any] | None, namespace: str | None
    ) -> tuple[str, ...]:
        """The ``Failed`` reasons of a CronJob's Jobs (through a listing tool; none without one),
        a few read in full."""
        if (
            self._list_tool is None
            or not workload_obj
            or workload_obj.get("kind") != "CronJob"
            or not namespace
        ):
            return ()
        listed = await self._list({"kind": "Job", "namespace": namespace})
        if listed is None:
            return ()
        name = str((workload_obj.get("metadata") or {}).get("name"))
        reasons: list[str] = []
        for job_name in listed[:MAX_JOBS]:
            job = await self._get("Job", job_name, namespace)
            owner = controller_of(job, namespace=namespace)
            if job is not None and owner is not None and (owner.kind, owner.name) == ("CronJob", name):
                reasons += [r for r in [job_failure(job)] if r]
        return tuple(reasons)

    async def _claim_users(
        self, incident: Mapping[str, Any], namespace: str | None
    ) -> list[analyzers.ClaimUser]:
        """For a claim the incident is about, the containers of the Pods mounting it: the Pods a
        StatefulSet names its claims after (``data-db-0`` is mounted by ``db-0``), found through a
        listing tool and read in full."""
        if incident.get("kind") != "PersistentVolumeClaim" or self._list_tool is None or not namespace:
            return []
        claim = str((incident.get("metadata") or {}).get("name"))
        listed = await self._list({"kind": "Pod", "namespace": namespace, "limit": MAX_LISTED})
        if listed is None:
            return []
        named = [n for n in listed if claim.endswith(f"-{n}")]
        found: list[analyzers.ClaimUser] = []
        for name in named[:MAX_REFERENCES]:
            pod = await self._get("Pod", name, namespace)
            spec = (pod or {}).get("spec") or {}
            volumes = {
                str(v.get("name"))
                for v in spec.get("volumes") or ()
                if isinstance(v, dict) and (v.get("persistentVolumeClaim") or {}).get("claimName") == claim
            }
            found += [
                analyzers.ClaimUser(
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
        return found

    async def _node_usage(self, nodes: Sequence[Mapping[str, Any]]) -> list[analyzers.NodeUsage]:
        """The memory use of the Nodes under MemoryPressure (the metrics API through ``top``)."""
        pressed = {f.name for f in map(node_facts, nodes) if f.conditions.get("MemoryPressure") == "True"}
        if not self._top or not pressed:
            return []
        outcome = await self._call(TOP_TOOL, {"resource": "nodes", "sort_by": "memory", "limit": MAX_LISTED})
        if not isinstance(outcome.data, tools.UsageResult):
            return []
        return [
            analyzers.NodeUsage(
                name=row.name, memory_mi=round(row.memory / 2**20), memory_percent=round(row.memory_share)
            )
            for row in outcome.data.rows
            if row.name in pressed and row.memory_share is not None
        ]

    async def _attachments(
        self, pods: Sequence[Mapping[str, Any]], events: Sequence[analyzers.Event]
    ) -> list[analyzers.Attachment]:
        """After an attach error, the VolumeAttachments of the Pods' volumes (those of their
        claims, and those the error names) to nodes the Pods do not run on, and whether each
        such node still exists: read through a listing tool (none without one)."""
        attach_errors = [e.message for e in events if e.reason in ATTACH_EVENTS]
        if self._list_tool is None or not (attach_errors or self._spec.signal.type in ATTACH_EVENTS):
            return []
        wanted = list(self.volumes)
        wanted += [v for m in attach_errors for v in _VOLUME_NAMED.findall(m) if v not in wanted]
        own = {(p.get("spec") or {}).get("nodeName") for p in pods}
        if not wanted:
            return []
        outcome = await self._call(self._list_tool, {"kind": "VolumeAttachment", "limit": MAX_LISTED})
        if not isinstance(outcome.data, tools.ListResult):
            return []
        found: list[analyzers.Attachment] = []
        nodes: dict[str, tuple[bool | None, str | None]] = {}
        for attachment in outcome.data.items:
            spec = attachment.get("spec") or {}
            volume = str((spec.get("source") or {}).get("persistentVolumeName") or "")
            node = str(spec.get("nodeName") or "")
            if volume not in wanted or not node or node in own:
                continue
            if node not in nodes and len(nodes) < MAX_NODES:
                exists, obj = await self._lookup("Node", node, None)
                conditions = node_facts(obj).conditions if isinstance(obj, dict) else {}
                nodes[node] = (exists, conditions.get("Ready"))
            exists, ready = nodes.get(node, (None, None))
            found.append(
                analyzers.Attachment(
                    volume=volume,
                    node=node,
                    attached=bool((attachment.get("status") or {}).get("attached")),
                    node_exists=exists,
                    node_ready=ready,
                )
            )
        return found

    async def _listed_nodes(self) -> list[dict[str, Any]]:
        """The cluster's Nodes through a listing tool (none without one), a few read in full."""
        if self._list_tool is None:
            return []
        listed = await self._list({"kind": "Node"})
        if listed is None:
            return []
        found = [await self._get("Node", name, None) for name in listed[:MAX_NODES]]
        return [n for n in found if n is not None]

    async def _crash_logs(self, pods: Sequence[Mapping[str, Any]], namespace: str | None) -> tuple[str, ...]:
        """The last lines of a crashing container's previous run (else its current run), or of
        the current run of a running container that is not Ready."""
        crashing = [
            (pod, c)
            for pod in map(pod_facts, pods)
            for c in pod.containers
            if c.waiting in analyzers.CRASH_WAITING
            or (c.restarts > 0 and c.last_reason not in (None, "Completed"))
        ]
        # Else a container that runs but is not Ready: its current run says why.
        crashing = crashing or [
            (pod, c)
            for pod in map(pod_facts, pods)
            if pod.phase == "Running"
            for c in pod.containers
            if not c.ready
        ]
        if not crashing or not namespace:
            return ()
        pod, container = crashing[0]
        for previous in (True, False):
            outcome = await self._call(
                "get_pod_logs",
                {
                    "name": pod.name,
                    "namespace": namespace,
                    "container": container.name,
                    "previous": previous,
                    "tail_lines": LOG_LINES,
                },
            )
            if isinstance(outcome.data, tools.LogsResult) and outcome.data.lines:
                return outcome.data.lines
        return ()

    async def _scale_target(self, hpa: Mapping[str, Any], namespace: str | None) -> dict[str, Any] | None:
        ref = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
        if not isinstance(ref.get("kind"), str) or not isinstance(ref.get("name"), str):
            return None
        return await self._get(ref["kind"], ref["name"], namespace)

    async def _named(
        self, kind: str, workload: resources.ResourceRef | None, namespace: str | None
    ) -> dict[str, Any] | None:
        """The object of ``kind`` that concerns the workload: from a listing tool when there is
        one, else the one carrying the workload's name (the common convention)."""
        if workload is None or not namespace:
            return None
        return await self._get(kind, workload.name, namespace)

    async def _pods(
        self, workload: resources.ResourceRef, namespace: str, *, keep: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        outcome = await self._call(
            "list_pods_of_owner", {"kind": workload.kind, "name": workload.name, "namespace": namespace}
        )
        listed = outcome.data.pods if isinstance(outcome.data, tools.PodsResult) else ()
        settled = {_name(p): _settled(p) for p in listed if _name(p)}
        kept = {str((p.get("metadata") or {}).get("name")) for p in keep}
        # Failing Pods first: those waiting, terminated or not Running.
        names = sorted(settled, key=lambda n: (settled[n], n))
        pods = list(keep)
        for name in [n for n in names if n not in kept][: MAX_PODS - len(pods)]:
            pod = await self._get("Pod", name, namespace)
            if pod is not None:
                pods.append(pod)
        return pods

    async def _nodes(
        self, incident: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]
    ) -> list[dict[str, Any]]:
        if incident.get("kind") == "Node":
            return [dict(incident)]
        names: list[str] = []
        for pod in pods:
            node = (pod.get("spec") or {}).get("nodeName")
            if isinstance(node, str) and node not in names:
                names.append(node)
        found = [await self._get("Node", name, None) for name in names[:MAX_NODES]]
        return [n for n in found if n is not None]

    async def _events(
        self,
        objects: Sequence[Mapping[str, Any]],
        pods: Sequence[Mapping[str, Any]],
        nodes: Sequence[Mapping[str, Any]],
    ) -> list[analyzers.Event]:
        wanted: list[tuple[str, str, str | None]] = []
        for obj in [*objects, *[p for p in pods if not pod_facts(p).healthy][:3], *nodes]:
            meta = obj.get("metadata") or {}
            key = (str(obj.get("kind")), str(meta.get("name")), meta.get("namespace"))
            if key not in wanted:
                wanted.append(key)
        events: list[analyzers.Event] = []
        for kind, name, namespace in wanted:
            outcome = await self._call("list_events", _where(kind, name, namespace))
            if isinstance(outcome.data, tools.EventsResult):
                events += [
                    analyzers.Event(
                        kind=kind, name=name, type=e.type, reason=e.reason, count=e.count, message=e.message
                    )
                    for e in outcome.data.events
                ]
        return events

    async def _rollout(
        self, workload: Mapping[str, Any] | None, pods: Sequence[Mapping[str, Any]], namespace: str | None
    ) -> analyzers.Rollout | None:
        if workload is None or workload.get("kind") != "Deployment" or not namespace:
            return None
        revision = _int(((workload.get("metadata") or {}).get("annotations") or {}).get(REVISION))
        owners: dict[str, list[Mapping[str, Any]]] = {}
        for pod in pods:
            owner = controller_of(pod, namespace=namespace)
            if owner is not None and owner.kind == "ReplicaSet":
                owners.setdefault(owner.name, []).append(pod)
        failing: set[int] = set()
        healthy: set[int] = set()
        templates: dict[int, Mapping[str, Any]] = {}
        age: float | None = None
        for name, members in list(owners.items())[:MAX_REPLICASETS]:
            rs = await self._get("ReplicaSet", name, namespace)
            rs_revision = _int(((rs or {}).get("metadata") or {}).get("annotations", {}).get(REVISION))
            if rs is None or rs_revision is None:
                continue
            templates[rs_revision] = ((rs.get("spec") or {}).get("template") or {}).get("spec") or {}
            if rs_revision == revision:
                age = _hours_between(
                    (rs.get("metadata") or {}).get("creationTimestamp"), self._spec.signal.firing_time
                )
            facts = [pod_facts(p) for p in members]
            if any(p.failing or _restarting(p) for p in facts):
                failing.add(rs_revision)
            elif all(p.healthy for p in facts):
                healthy.add(rs_revision)
        changed: tuple[str, ...] = ()
        if revision is not None and revision in templates:
            older = [r for r in templates if r < revision]
            if older:
                changed = template_changes(templates[max(older)], templates[revision])
        return analyzers.Rollout(
            revision=revision,
            failing_revisions=frozenset(failing),
            healthy_revisions=frozenset(healthy),
            changed=changed,
            age_hours=age,
        )

    async def _references(
        self, workload: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], namespace: str | None
    ) -> tuple[list[tuple[str, str]], list[tuple[str, str]], list[str]]:
        """The ConfigMaps and PVCs the Pods need: those missing, those present, and those of the
        present ones a GitOps controller keeps in sync from a repository."""
        if not namespace:
            return [], [], []
        wanted: list[tuple[str, str]] = []
        for spec in [pod_template(workload) or {}, *((p.get("spec") or {}) for p in pods)]:
            wanted += [ref for ref in references(spec) if ref not in wanted]
        missing: list[tuple[str, str]] = []
        present: list[tuple[str, str]] = []
        synced: list[str] = []
        for kind, name in wanted[:MAX_REFERENCES]:
            exists, found = await self._lookup(kind, name, namespace)
            if exists is not None:
                (present if exists else missing).append((kind, name))
            if gitops_managed(found):
                synced.append(f"{kind} {name}")
            volume = (
                ((found or {}).get("spec") or {}).get("volumeName")
                if kind == "PersistentVolumeClaim"
                else None
            )
            if isinstance(volume, str) and volume:
                self.volumes.append(volume)
        return missing, present, synced


# ---- condensing objects into facts -------------------------------------------------------------


def pod_facts(pod: Mapping[str, Any]) -> analyzers.Pod:
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    statuses = {s.get("name"): s for s in status.get("containerStatuses") or () if isinstance(s, dict)}
    containers = tuple(
        _container(c, statuses.get(c.get("name")) or {})
        for c in spec.get("containers") or ()
        if isinstance(c, dict)
    )
    scheduled = next(
        (
            c
            for c in status.get("conditions") or ()
            if isinstance(c, dict) and c.get("type") == "PodScheduled"
        ),
        {},
    )
    owner = next(
        (r for r in meta.get("ownerReferences") or () if isinstance(r, dict) and r.get("controller")), None
    )
    return analyzers.Pod(
        name=str(meta.get("name") or ""),
        phase=status.get("phase"),
        reason=status.get("reason"),
        message=str(status.get("message") or ""),
        node=spec.get("nodeName"),
        owner=f"{owner.get('kind')}/{owner.get('name')}" if owner else None,
        unschedulable=str(scheduled.get("message") or "Unschedulable")
        if scheduled.get("status") == "False" and scheduled.get("reason") == "Unschedulable"
        else None,
        containers=containers,
        pull_secrets=tuple(
            str(ref.get("name"))
            for ref in spec.get("imagePullSecrets") or ()
            if isinstance(ref, dict) and ref.get("name")
        ),
    )


def _container(container: Mapping[str, Any], status: Mapping[str, Any]) -> analyzers.Container:
    state, last = status.get("state") or {}, status.get("lastState") or {}
    waiting = state.get("waiting") or {}
    terminated = last.get("terminated") or state.get("terminated") or {}
    limits = (container.get("resources") or {}).get("limits") or {}
    env = " ".join(
        f"{e.get('name')}={e.get('value', '')}" for e in container.get("env") or () if isinstance(e, dict)
    )
    image = str(container.get("image") or "")
    return analyzers.Container(
        name=str(container.get("name") or ""),
        ready=bool(status.get("ready")),
        restarts=_int(status.get("restartCount")) or 0,
        waiting=waiting.get("reason"),
        waiting_message=str(waiting.get("message") or ""),
        last_reason=terminated.get("reason"),
        last_exit_code=_int(terminated.get("exitCode")),
        memory_limit=str(limits["memory"]) if limits.get("memory") is not None else None,
        image=image,
        java=bool(re.search(r"java|jdk|jre|jvm|temurin|corretto|Xmx|JAVA_", f"{image} {env}", re.IGNORECASE)),
        heap_percent=_heap_percent(" ".join([env, *map(str, container.get("args") or ())])),
    )


def _heap_percent(text: str) -> float | None:
    """The JVM's ``-XX:MaxRAMPercentage`` in the container's environment or arguments (the last wins)."""
    found = re.findall(r"-XX:MaxRAMPercentage=([0-9]+(?:\.[0-9]+)?)", text)
    return float(found[-1]) if found else None


def node_facts(node: Mapping[str, Any]) -> analyzers.Node:
    spec, status = node.get("spec") or {}, node.get("status") or {}
    labels = (node.get("metadata") or {}).get("labels") or {}
    return analyzers.Node(
        name=str((node.get("metadata") or {}).get("name") or ""),
        conditions={
            str(c.get("type")): str(c.get("status"))
            for c in status.get("conditions") or ()
            if isinstance(c, dict)
        },
        unschedulable=bool(spec.get("unschedulable")),
        pool=next((str(labels[k]) for k in POOL_LABELS if labels.get(k)), None),
        taints=tuple(
            analyzers.Taint(key=str(t.get("key")), effect=str(t.get("effect")), value=t.get("value"))
            for t in spec.get("taints") or ()
            if isinstance(t, dict)
        ),
    )


def ready_condition(obj: Mapping[str, Any] | None) -> tuple[bool | None, str]:
    """The ``Ready`` condition of a custom object (cert-manager's): True/False/None and its message."""
    for condition in ((obj or {}).get("status") or {}).get("conditions") or ():
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            status = condition.get("status")
            return (
                True if status == "True" else False if status == "False" else None,
                str(condition.get("message") or condition.get("reason") or ""),
            )
    return None, ""


def network_policy_facts(policy: Mapping[str, Any]) -> analyzers.NetworkPolicy:
    spec = policy.get("spec") or {}
    types = spec.get("policyTypes") or (
        ["Ingress", "Egress"] if spec.get("egress") is not None else ["Ingress"]
    )
    selector = spec.get("podSelector") or {}
    return analyzers.NetworkPolicy(
        name=str((policy.get("metadata") or {}).get("name") or ""),
        selects_all=not selector.get("matchLabels") and not selector.get("matchExpressions"),
        denies_ingress="Ingress" in types and not spec.get("ingress"),
        denies_egress="Egress" in types and not spec.get("egress"),
    )


def hpa_facts(hpa: Mapping[str, Any] | None) -> analyzers.HPA | None:
    if not hpa or hpa.get("kind") != "HorizontalPodAutoscaler":
        return None
    spec, status = hpa.get("spec") or {}, hpa.get("status") or {}
    target = next(
        (
            ((m.get("resource") or {}).get("target") or {}).get("averageUtilization")
            for m in spec.get("metrics") or ()
            if isinstance(m, dict) and (m.get("resource") or {}).get("name") == "cpu"
        ),
        spec.get("targetCPUUtilizationPercentage"),
    )
    current = next(
        (
            ((m.get("resource") or {}).get("current") or {}).get("averageUtilization")
            for m in status.get("currentMetrics") or ()
            if isinstance(m, dict) and (m.get("resource") or {}).get("name") == "cpu"
        ),
        status.get("currentCPUUtilizationPercentage"),
    )
    return analyzers.HPA(
        name=str((hpa.get("metadata") or {}).get("name") or ""),
        min_replicas=_int(spec.get("minReplicas")),
        max_replicas=_int(spec.get("maxReplicas")),
        current_replicas=_int(status.get("currentReplicas")),
        cpu_target=_int(target),
        cpu_current=_int(current),
    )


def pdb_facts(pdb: Mapping[str, Any] | None) -> analyzers.PDB | None:
    if not pdb or pdb.get("kind") != "PodDisruptionBudget":
        return None
    status = pdb.get("status") or {}
    return analyzers.PDB(
        name=str((pdb.get("metadata") or {}).get("name") or ""),
        disruptions_allowed=_int(status.get("disruptionsAllowed")),
        current_healthy=_int(status.get("currentHealthy")),
        desired_healthy=_int(status.get("desiredHealthy")),
    )


def cpu_requests(pod: Mapping[str, Any]) -> int | None:
    """The Pod's summed container CPU requests in millicores (None when a container has none)."""
    total = 0
    for container in (pod.get("spec") or {}).get("containers") or ():
        text = str(((container.get("resources") or {}).get("requests") or {}).get("cpu") or "")
        found = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)(m?)", text)
        if found is None:
            return None
        total += round(float(found[1]) * (1 if found[2] else 1000))
    return total or None


def _hours_between(start: Any, end: Any) -> float | None:
    """Hours from one RFC 3339 time to another (None when either is missing or malformed)."""
    try:
        since = datetime.datetime.fromisoformat(str(start).replace("Z", "+00:00"))
        until = datetime.datetime.fromisoformat(str(end).replace("Z", "+00:00"))
    except ValueError:
        return None
    if since.tzinfo is None or until.tzinfo is None:
        return None
    return (until - since).total_seconds() / 3600


def claim_capacity(obj: Mapping[str, Any]) -> str | None:
    """The provisioned size of a Bound PersistentVolumeClaim (``status.capacity.storage``)."""
    if obj.get("kind") != "PersistentVolumeClaim":
        return None
    status = obj.get("status") or {}
    size = (status.get("capacity") or {}).get("storage")
    return str(size) if status.get("phase") == "Bound" and size else None


def job_failure(obj: Mapping[str, Any] | None) -> str | None:
    if not obj or obj.get("kind") != "Job":
        return None
    conditions = (obj.get("status") or {}).get("conditions") or ()
    failed = next(
        (
            c
            for c in conditions
            if isinstance(c, dict) and c.get("type") == "Failed" and c.get("status") == "True"
        ),
        None,
    )
    return str(failed.get("reason") or "Failed") if failed else None


def runs_java(obj: Mapping[str, Any]) -> bool:
    """Whether the workload's pod template says JVM (image name, JAVA_* or -Xmx in its env)."""
    template = pod_template(obj) or {}
    return any(
        _container({**c, "env": c.get("env") or ()}, {}).java for c in template.get("containers") or ()
    )


#: Marks a GitOps controller leaves on what it syncs (Argo CD's tracking annotation and label,
#: Flux's kustomize and helm controllers' labels).
GITOPS_ANNOTATIONS = ("argocd.argoproj.io/tracking-id",)
GITOPS_LABELS = (
    "argocd.argoproj.io/instance",
    "kustomize.toolkit.fluxcd.io/name",
    "helm.toolkit.fluxcd.io/name",
)


def gitops_managed(obj: Any) -> bool:
    """Whether a GitOps controller syncs this object from a repository (its marks say so)."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict):
        return False
    annotations, labels = meta.get("annotations") or {}, meta.get("labels") or {}
    return any(key in annotations for key in GITOPS_ANNOTATIONS) or any(
        key in labels for key in GITOPS_LABELS
    )


def _describe_obj(obj: Mapping[str, Any]) -> str:
    return f"{obj.get('kind')} {(obj.get('metadata') or {}).get('name')}"


def service_account(obj: Mapping[str, Any]) -> str | None:
    """The ServiceAccount a workload's Pods (or a Pod) run as."""
    spec = pod_template(obj) if obj.get("kind") != "Pod" else obj.get("spec")
    name = (spec or {}).get("serviceAccountName")
    return name if isinstance(name, str) and name else None


def pod_template(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    spec = obj.get("spec") or {}
    if obj.get("kind") == "CronJob":
        spec = ((spec.get("jobTemplate") or {}).get("spec")) or {}
    template = (spec.get("template") or {}).get("spec")
    return template if isinstance(template, dict) else None


def references(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """ConfigMaps and PVCs a pod spec needs to start (optional references left out). Secrets are
    never read, so they are not checked here (their absence shows in the container's state)."""
    found: list[tuple[str, str]] = []

    def add(kind: str, source: Any) -> None:
        if not isinstance(source, dict) or source.get("optional"):
            return
        name = source.get("name" if kind == "ConfigMap" else "claimName")
        if isinstance(name, str) and (kind, name) not in found:
            found.append((kind, name))

    for volume in spec.get("volumes") or ():
        if isinstance(volume, dict):
            add("ConfigMap", volume.get("configMap"))
            add("PersistentVolumeClaim", volume.get("persistentVolumeClaim"))
    for container in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
        if not isinstance(container, dict):
            continue
        for source in container.get("envFrom") or ():
            add("ConfigMap", (source or {}).get("configMapRef"))
        for env in container.get("env") or ():
            add("ConfigMap", ((env or {}).get("valueFrom") or {}).get("configMapKeyRef"))
    return found


def template_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[str, ...]:
    """Which container fields differ between two pod templates (``image of api``, ``command of api``)."""
    before = {c.get("name"): c for c in old.get("containers") or () if isinstance(c, dict)}
    changes = []
    for container in new.get("containers") or ():
        if not isinstance(container, dict):
            continue
        previous = before.get(container.get("name"), {})
        changes += [
            f"{f} of {container.get('name')}" for f in _TEMPLATE_FIELDS if container.get(f) != previous.get(f)
        ]
    if old.get("volumes") != new.get("volumes"):
        changes.append("volumes")
    return tuple(changes)


def controller_of(obj: Any, *, namespace: str | None) -> resources.ResourceRef | None:
    """The controlling owner of an object read from the cluster (else its first owner), if any."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    refs = meta.get("ownerReferences") if isinstance(meta, dict) else None
    if not isinstance(refs, list):
        return None
    owners = [r for r in refs if isinstance(r, dict)]
    owner = next((r for r in owners if r.get("controller")), owners[0] if owners else None)
    if owner is None or not isinstance(owner.get("kind"), str) or not isinstance(owner.get("name"), str):
        return None
    return resources.ResourceRef(kind=owner["kind"], name=owner["name"], namespace=namespace)


def _ref(obj: Mapping[str, Any], namespace: str | None) -> resources.ResourceRef:
    meta = obj.get("metadata") or {}
    return resources.ResourceRef(
        kind=str(obj.get("kind")), name=str(meta.get("name")), namespace=meta.get("namespace") or namespace
    )


def _where(kind: str, name: str, namespace: str | None) -> dict[str, Any]:
    return {"kind": kind, "name": name} | ({"namespace": namespace} if namespace else {})


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _settled(pod: Mapping[str, Any]) -> bool:
    """Running, and no container of its spec waiting or terminated (its state's first entry)."""
    status = pod.get("status") or {}
    statuses = {s.get("name"): s for s in status.get("containerStatuses") or () if isinstance(s, dict)}
    for container in (pod.get("spec") or {}).get("containers") or ():
        state = (statuses.get(container.get("name")) or {}).get("state") or {}
        current = next((key for key, detail in state.items() if isinstance(detail, dict)), None)
        if current in ("waiting", "terminated"):
            return False
    return status.get("phase") == "Running"


def _restarting(pod: analyzers.Pod) -> bool:
    return any(c.restarts > 0 and c.last_reason not in (None, "Completed") for c in pod.containers)


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None
