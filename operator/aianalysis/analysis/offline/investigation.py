"""The offline provider's investigation: a fixed, bounded sequence of read-only tool calls that
condenses an incident's surroundings into :class:`evidence.Evidence`.

It reads through the conversation's tool box, as an LLM would (:mod:`reads`): the incident's
object and its owner chain, the Pods of the workload (each read in full, a few at most, failing
ones first), the ReplicaSets behind them (rollout revisions and what changed in the pod
template), the events of the workload, its failing Pods and their Nodes, the Nodes themselves
(conditions, taints, cordon), the HPA and PodDisruptionBudget of the workload (when the incident
is about one, or one carries the workload's name), and the ConfigMaps and PVCs its Pods reference
(present or missing). What a listing tool or ``top`` gives is read by :mod:`listings`.

A Pod the alert names that no longer exists (it was replaced since) leads to the workload its
name says it belonged to (``web-5b4c9d7f8-x2k4q`` → Deployment ``web``, ``db-2`` → StatefulSet
``db``), read and checked like any other object.

When Pods crash, the last lines of the crashed run of one of them are read (``get_pod_logs``
with ``previous``, else the current run; for a running container that is not Ready, its current
run): they say whether the process rejects its configuration or is denied by the API server.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from aianalysis import resources
from aianalysis.analysis.offline import condense, evidence, listings, reads, workload

MAX_PODS = 6
MAX_REPLICASETS = 3
MAX_OWNER_DEPTH = 3
LOG_LINES = 40
OWNER_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob")
_REPLICASET_POD = re.compile(r"^(?P<owner>[a-z0-9][-a-z0-9.]*?)-[a-z0-9]{6,10}-[a-z0-9]{5}$")
_ORDINAL_POD = re.compile(r"^(?P<owner>[a-z0-9][-a-z0-9.]*?)-[0-9]+$")


class Investigation:
    """Reads one incident's surroundings through ``call`` (the tool box, counted by the caller).
    After :meth:`gather`, ``chain`` is the incident's owner chain, nearest first."""

    def __init__(
        self, call: reads.Call, *, tool_names: Sequence[str], spec: resources.AIAnalysisSpec
    ) -> None:
        self._reads = reads.Reads(call, tool_names=tool_names)
        self._spec = spec
        self.chain: list[resources.ResourceRef] = [spec.resource]
        self._volumes: list[str] = []
        """PersistentVolumes bound to the claims the Pods mount (read with the claims)."""

    async def gather(self) -> evidence.Evidence:
        spec, found = self._spec, self._reads
        incident = await found.get(spec.resource.kind, spec.resource.name, spec.resource.namespace)
        if incident is None and spec.resource.kind == "Pod":
            incident = await self._replaced_pod_owner(spec.resource.name, spec.resource.namespace)
        if incident is None:
            return evidence.Evidence(
                signal_type=spec.signal.type, incident=spec.resource, cluster=found.cluster
            )
        objects = [incident]
        namespace = spec.resource.namespace
        while len(objects) <= MAX_OWNER_DEPTH and (
            owner := workload.controller_of(objects[-1], namespace=namespace)
        ):
            read = await found.get(owner.kind, owner.name, owner.namespace)
            self.chain.append(owner)
            if read is None:
                break
            objects.append(read)
        hpa_obj = incident if spec.resource.kind == "HorizontalPodAutoscaler" else None
        owner_obj = next((o for o in reversed(objects) if o.get("kind") in OWNER_KINDS), None)
        if owner_obj is None and hpa_obj is not None:
            owner_obj = await self._scale_target(hpa_obj, namespace)
        owner_ref = workload.ref_of(owner_obj, namespace) if owner_obj is not None else None
        pods = [incident] if incident.get("kind") == "Pod" else []
        if owner_ref is not None and owner_ref.kind in OWNER_KINDS and namespace:
            pods = await self._pods(owner_ref, namespace, keep=pods)
        nodes = await self._nodes(incident, pods)
        if not nodes and any(condense.pod_facts(p).unschedulable for p in pods):
            nodes = await listings.nodes(found)
        events = await self._events([incident, *([owner_obj] if owner_obj else [])], pods, nodes)
        missing, present, synced = await self._references(owner_obj or incident, pods, namespace)
        account = workload.service_account(owner_obj or incident)
        # The order of the reads below is the order of the tool calls (and of the audit record).
        return evidence.Evidence(
            signal_type=spec.signal.type,
            incident=spec.resource,
            cluster=True,
            workload=owner_ref,
            pods=tuple(condense.pod_facts(p) for p in pods),
            events=tuple(events),
            rollout=await self._rollout(owner_obj, pods, namespace),
            nodes=tuple(condense.node_facts(n) for n in nodes),
            hpa=condense.hpa_facts(
                hpa_obj or await self._named("HorizontalPodAutoscaler", owner_ref, namespace)
            ),
            pdb=condense.pdb_facts(
                incident
                if spec.resource.kind == "PodDisruptionBudget"
                else await self._named("PodDisruptionBudget", owner_ref, namespace)
            ),
            missing=tuple(missing),
            claims=tuple(name for kind, name in present if kind == "PersistentVolumeClaim"),
            config_maps=tuple(name for kind, name in present if kind == "ConfigMap"),
            network_policies=tuple(await listings.network_policies(found, pods, namespace)),
            certificates=tuple(await listings.certificates(found, owner_obj or incident, namespace)),
            gitops=tuple(
                synced
                + (
                    [workload.kind_and_name(owner_obj)]
                    if owner_obj and workload.gitops_managed(owner_obj)
                    else []
                )
            ),
            logs=await self._crash_logs(pods, namespace),
            service_account=account,
            account_bound=await listings.account_bound(found, account, pods, namespace),
            job_failure=workload.job_failure(owner_obj) or workload.job_failure(incident),
            job_deadline=workload.job_deadline(owner_obj) or workload.job_deadline(incident),
            claim_capacity=workload.claim_capacity(incident),
            cpu_of_requests=await listings.cpu_of_requests(found, pods, namespace),
            failed_runs=await listings.failed_runs(found, owner_obj, namespace)
            + self._failed_reruns(owner_obj),
            java=workload.runs_java(owner_obj or incident),
            claim_users=tuple(await listings.claim_users(found, incident, namespace)),
            node_usage=tuple(await listings.node_usage(found, nodes)),
            attachments=tuple(
                await listings.attachments(
                    found, pods=pods, events=events, volumes=self._volumes, signal_type=spec.signal.type
                )
            ),
        )

    async def _replaced_pod_owner(self, name: str, namespace: str | None) -> dict[str, Any] | None:
        """The workload a vanished Pod's name says it belonged to, when it exists."""
        guesses = [("Deployment", m["owner"]) for m in [_REPLICASET_POD.match(name)] if m]
        guesses += [("StatefulSet", m["owner"]) for m in [_ORDINAL_POD.match(name)] if m]
        for kind, owner in guesses:
            found = await self._reads.get(kind, owner, namespace)
            if found is not None:
                self.chain.append(resources.ResourceRef(kind=kind, name=owner, namespace=namespace))
                return found
        return None

    async def _scale_target(self, hpa: Mapping[str, Any], namespace: str | None) -> dict[str, Any] | None:
        ref = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
        if not isinstance(ref.get("kind"), str) or not isinstance(ref.get("name"), str):
            return None
        return await self._reads.get(ref["kind"], ref["name"], namespace)

    async def _named(
        self, kind: str, owner: resources.ResourceRef | None, namespace: str | None
    ) -> dict[str, Any] | None:
        """The object of ``kind`` that carries the workload's name (the common convention)."""
        if owner is None or not namespace:
            return None
        return await self._reads.get(kind, owner.name, namespace)

    async def _pods(
        self, owner: resources.ResourceRef, namespace: str, *, keep: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """The incident's Pod (``keep``) and the owner's, failing ones first (waiting, terminated or
        not Running), up to ``MAX_PODS``, each read in full."""
        listed = await self._reads.pods_of(owner.kind, owner.name, namespace)
        settled = {workload.name_of(p): workload.settled(p) for p in listed if workload.name_of(p)}
        kept = {str((p.get("metadata") or {}).get("name")) for p in keep}
        pods = list(keep)
        for name in [n for n in sorted(settled, key=lambda n: (settled[n], n)) if n not in kept][
            : MAX_PODS - len(pods)
        ]:
            pod = await self._reads.get("Pod", name, namespace)
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
        found = [await self._reads.get("Node", name, None) for name in names[: listings.MAX_NODES]]
        return [n for n in found if n is not None]

    async def _events(
        self,
        objects: Sequence[Mapping[str, Any]],
        pods: Sequence[Mapping[str, Any]],
        nodes: Sequence[Mapping[str, Any]],
    ) -> list[evidence.Event]:
        """The events of the incident, its workload, its first unhealthy Pods and their Nodes."""
        wanted: list[tuple[str, str, str | None]] = []
        for obj in [*objects, *[p for p in pods if not condense.pod_facts(p).healthy][:3], *nodes]:
            meta = obj.get("metadata") or {}
            key = (str(obj.get("kind")), str(meta.get("name")), meta.get("namespace"))
            if key not in wanted:
                wanted.append(key)
        return [
            evidence.Event(
                kind=kind, name=name, type=e.type, reason=e.reason, count=e.count, message=e.message
            )
            for kind, name, namespace in wanted
            for e in await self._reads.events(kind, name, namespace)
        ]

    async def _rollout(
        self, owner: Mapping[str, Any] | None, pods: Sequence[Mapping[str, Any]], namespace: str | None
    ) -> evidence.Rollout | None:
        """A Deployment's revisions, from the ReplicaSets of its Pods: which fail, which are
        healthy, what changed in the newest template, and how old it was at the alert."""
        if owner is None or owner.get("kind") != "Deployment" or not namespace:
            return None
        revision = condense.integer(
            ((owner.get("metadata") or {}).get("annotations") or {}).get(workload.REVISION)
        )
        owners: dict[str, list[Mapping[str, Any]]] = {}
        for pod in pods:
            parent = workload.controller_of(pod, namespace=namespace)
            if parent is not None and parent.kind == "ReplicaSet":
                owners.setdefault(parent.name, []).append(pod)
        failing: set[int] = set()
        healthy: set[int] = set()
        templates: dict[int, Mapping[str, Any]] = {}
        age: float | None = None
        for name, members in list(owners.items())[:MAX_REPLICASETS]:
            rs = await self._reads.get("ReplicaSet", name, namespace)
            rs_revision = condense.integer(
                ((rs or {}).get("metadata") or {}).get("annotations", {}).get(workload.REVISION)
            )
            if rs is None or rs_revision is None:
                continue
            templates[rs_revision] = ((rs.get("spec") or {}).get("template") or {}).get("spec") or {}
            if rs_revision == revision:
                created = (rs.get("metadata") or {}).get("creationTimestamp")
                age = workload.hours_between(created, self._spec.signal.firing_time)
            facts = [condense.pod_facts(p) for p in members]
            if any(p.failing or any(c.restarted_after_failure for c in p.containers) for p in facts):
                failing.add(rs_revision)
            elif all(p.healthy for p in facts):
                healthy.add(rs_revision)
        changed: tuple[str, ...] = ()
        if revision is not None and revision in templates:
            older = [r for r in templates if r < revision]
            if older:
                changed = workload.template_changes(templates[max(older)], templates[revision])
        return evidence.Rollout(
            revision=revision,
            failing_revisions=frozenset(failing),
            healthy_revisions=frozenset(healthy),
            changed=changed,
            age_hours=age,
        )

    async def _references(
        self, owner: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], namespace: str | None
    ) -> tuple[list[tuple[str, str]], list[tuple[str, str]], list[str]]:
        """The ConfigMaps and PVCs the Pods need: those missing, those present, and those of the
        present ones a GitOps controller keeps in sync from a repository."""
        if not namespace:
            return [], [], []
        wanted: list[tuple[str, str]] = []
        for spec in [workload.pod_spec(owner) or {}, *((p.get("spec") or {}) for p in pods)]:
            wanted += [ref for ref in workload.needed_sources(spec) if ref not in wanted]
        missing: list[tuple[str, str]] = []
        present: list[tuple[str, str]] = []
        synced: list[str] = []
        for kind, name in wanted[: listings.MAX_REFERENCES]:
            exists, found = await self._reads.lookup(kind, name, namespace)
            if exists is not None:
                (present if exists else missing).append((kind, name))
            if workload.gitops_managed(found):
                synced.append(f"{kind} {name}")
            volume = (
                ((found or {}).get("spec") or {}).get("volumeName")
                if kind == "PersistentVolumeClaim"
                else None
            )
            if isinstance(volume, str) and volume:
                self._volumes.append(volume)
        return missing, present, synced

    async def _crash_logs(self, pods: Sequence[Mapping[str, Any]], namespace: str | None) -> tuple[str, ...]:
        """The last lines of a crashing container's previous run (else its current run), or of
        the current run of a running container that is not Ready."""
        facts = [condense.pod_facts(p) for p in pods]
        crashing = [(pod, c) for pod in facts for c in pod.containers if c.crashing]
        # Else a container that runs but is not Ready: its current run says why.
        crashing = crashing or [
            (pod, c) for pod in facts if pod.phase == "Running" for c in pod.containers if not c.ready
        ]
        if not crashing or not namespace:
            return ()
        pod, container = crashing[0]
        for previous in (True, False):
            lines = await self._reads.logs(
                {
                    "name": pod.name,
                    "namespace": namespace,
                    "container": container.name,
                    "previous": previous,
                    "tail_lines": LOG_LINES,
                }
            )
            if lines:
                return lines
        return ()

    def _failed_reruns(self, owner: Mapping[str, Any] | None) -> tuple[str, ...]:
        """Runs of a CronJob's job that an earlier remediation of this incident started and that
        failed as a Job fails (the recovery history's failure reason, written by the executor)."""
        recovery = self._spec.recovery
        if recovery is None or not owner or owner.get("kind") != "CronJob":
            return ()
        return tuple(
            p.failure.reason
            for p in recovery.previous_executions
            if p.failure.reason in workload.JOB_FAILURE_REASONS
        )
