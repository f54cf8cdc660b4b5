"""Cluster objects condensed into the records the rules read (:mod:`evidence`).

Pure: an object as a tool returned it (redacted, as shown) in, a record out. What the kubelet,
the scheduler and the controllers write is read here — container states, conditions, taints —
so a difference between a real kubelet and a written status is fixed in one place.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from aianalysis.analysis.offline import evidence

#: Node labels naming the node pool / group a Node belongs to (EKS, GKE, AKS, Karpenter).
POOL_LABELS = (
    "eks.amazonaws.com/nodegroup",
    "cloud.google.com/gke-nodepool",
    "kubernetes.azure.com/agentpool",
    "karpenter.sh/nodepool",
)


def pod_facts(pod: Mapping[str, Any]) -> evidence.Pod:
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    statuses = {s.get("name"): s for s in status.get("containerStatuses") or () if isinstance(s, dict)}
    containers = tuple(
        container_facts(c, statuses.get(c.get("name")) or {})
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
    return evidence.Pod(
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
        tolerations=tuple(
            evidence.Toleration(
                key=str(t.get("key") or ""),
                operator=str(t.get("operator") or "Equal"),
                value=str(t.get("value") or ""),
                effect=str(t.get("effect") or ""),
            )
            for t in spec.get("tolerations") or ()
            if isinstance(t, dict)
        ),
    )


def container_facts(container: Mapping[str, Any], status: Mapping[str, Any]) -> evidence.Container:
    state, last = status.get("state") or {}, status.get("lastState") or {}
    waiting = state.get("waiting") or {}
    terminated = last.get("terminated") or state.get("terminated") or {}
    limits = (container.get("resources") or {}).get("limits") or {}
    env = " ".join(
        f"{e.get('name')}={e.get('value', '')}" for e in container.get("env") or () if isinstance(e, dict)
    )
    image = str(container.get("image") or "")
    return evidence.Container(
        name=str(container.get("name") or ""),
        ready=bool(status.get("ready")),
        restarts=integer(status.get("restartCount")) or 0,
        waiting=waiting.get("reason"),
        waiting_message=str(waiting.get("message") or ""),
        last_reason=terminated.get("reason"),
        last_exit_code=integer(terminated.get("exitCode")),
        memory_limit=str(limits["memory"]) if limits.get("memory") is not None else None,
        requests={
            str(k): str(v)
            for k, v in ((container.get("resources") or {}).get("requests") or {}).items()
            if k in ("cpu", "memory") and v is not None
        },
        image=image,
        java=bool(re.search(r"java|jdk|jre|jvm|temurin|corretto|Xmx|JAVA_", f"{image} {env}", re.IGNORECASE)),
        heap_percent=_heap_percent(" ".join([env, *map(str, container.get("args") or ())])),
        probe_timeouts={
            kind: integer(probe.get("timeoutSeconds")) or 1
            for kind in ("readiness", "liveness", "startup")
            if isinstance(probe := container.get(f"{kind}Probe"), dict)
        },
    )


def _heap_percent(text: str) -> float | None:
    """The JVM's ``-XX:MaxRAMPercentage`` in the container's environment or arguments (the last wins)."""
    found = re.findall(r"-XX:MaxRAMPercentage=([0-9]+(?:\.[0-9]+)?)", text)
    return float(found[-1]) if found else None


def node_facts(node: Mapping[str, Any]) -> evidence.Node:
    spec, status = node.get("spec") or {}, node.get("status") or {}
    labels = (node.get("metadata") or {}).get("labels") or {}
    return evidence.Node(
        name=str((node.get("metadata") or {}).get("name") or ""),
        conditions={
            str(c.get("type")): str(c.get("status"))
            for c in status.get("conditions") or ()
            if isinstance(c, dict)
        },
        unschedulable=bool(spec.get("unschedulable")),
        pool=next((str(labels[k]) for k in POOL_LABELS if labels.get(k)), None),
        allocatable={
            str(k): str(v) for k, v in (status.get("allocatable") or {}).items() if k in ("cpu", "memory")
        },
        taints=tuple(
            evidence.Taint(key=str(t.get("key")), effect=str(t.get("effect")), value=t.get("value"))
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


def network_policy_facts(policy: Mapping[str, Any]) -> evidence.NetworkPolicy:
    spec = policy.get("spec") or {}
    types = spec.get("policyTypes") or (
        ["Ingress", "Egress"] if spec.get("egress") is not None else ["Ingress"]
    )
    selector = spec.get("podSelector") or {}
    return evidence.NetworkPolicy(
        name=str((policy.get("metadata") or {}).get("name") or ""),
        selects_all=not selector.get("matchLabels") and not selector.get("matchExpressions"),
        denies_ingress="Ingress" in types and not spec.get("ingress"),
        denies_egress="Egress" in types and not spec.get("egress"),
    )


def hpa_facts(hpa: Mapping[str, Any] | None) -> evidence.HPA | None:
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
    return evidence.HPA(
        name=str((hpa.get("metadata") or {}).get("name") or ""),
        min_replicas=integer(spec.get("minReplicas")),
        max_replicas=integer(spec.get("maxReplicas")),
        current_replicas=integer(status.get("currentReplicas")),
        cpu_target=integer(target),
        cpu_current=integer(current),
    )


def pdb_facts(pdb: Mapping[str, Any] | None) -> evidence.PDB | None:
    if not pdb or pdb.get("kind") != "PodDisruptionBudget":
        return None
    status = pdb.get("status") or {}
    return evidence.PDB(
        name=str((pdb.get("metadata") or {}).get("name") or ""),
        disruptions_allowed=integer(status.get("disruptionsAllowed")),
        current_healthy=integer(status.get("currentHealthy")),
        desired_healthy=integer(status.get("desiredHealthy")),
    )


def integer(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None
