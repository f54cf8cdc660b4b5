"""Load and scaling: an autoscaler at its ceiling, saturated Pods nothing scales."""

from __future__ import annotations

import math

from aianalysis import resources
from aianalysis.analysis.offline import evidence, rule

#: CPU use (% of requests) from which a Pod counts as saturated.
CPU_SATURATED = 90
#: How much a maxed-out HPA's ceiling is raised (at least ``HPA_MIN_STEP`` replicas more).
HPA_CEILING_FACTOR = 1.5
HPA_MIN_STEP = 2
#: Replicas a saturated workload is scaled to, per Pod it runs.
SCALE_OUT_FACTOR = 2


def hpa_maxed(seen: evidence.Evidence) -> rule.Match | None:
    """A HorizontalPodAutoscaler runs at its maxReplicas and, when its CPU use and target are
    known, CPU is at or above the target.

    Needs: the HPA (the incident's, or the one named after the workload). Selects PatchHPA on the HPA
    with MAX_REPLICAS_NEW (and MAX_REPLICAS) ``HPA_CEILING_FACTOR`` times the ceiling, at least
    ``HPA_MIN_STEP`` more: it cannot add the replicas the load asks for. Below its CPU target it is
    not maxed out for CPU, and the rule declines to match."""
    hpa = seen.hpa
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
    new_max = max(hpa.max_replicas + HPA_MIN_STEP, math.ceil(hpa.max_replicas * HPA_CEILING_FACTOR))
    return rule.Match(
        facts=tuple(facts),
        target=resources.ResourceRef(
            kind="HorizontalPodAutoscaler", name=hpa.name, namespace=seen.incident.namespace
        ),
        values={"MAX_REPLICAS_NEW": str(new_max), "MAX_REPLICAS": str(new_max)},
        detail={"hpa": hpa.name, "new_max": str(new_max)},
    )


HPA_MAXED_CPU = rule.Rule(
    name="hpa-maxed-cpu",
    signal_type="HPAMaxedOut",
    action_type="PatchHPA",
    query="HPA maxed out raise max replicas",
    explanation=(
        "HorizontalPodAutoscaler {hpa} is at its maximum with CPU above target; raising maxReplicas to "
        "{new_max} lets it scale."
    ),
    match=hpa_maxed,
)


def cpu_saturated(seen: evidence.Evidence) -> rule.Match | None:
    """A service-level alert while every Pod of the workload is healthy and uses at least
    ``CPU_SATURATED`` percent of its CPU requests, and no HorizontalPodAutoscaler scales it.

    Needs: the Pods and their CPU use from the metrics API (``top``). Selects ScaleOut on the
    workload with REPLICAS ``SCALE_OUT_FACTOR`` times the Pods it runs: more replicas share the
    load. With an HPA, the HPA rules decide."""
    if not rule.service_alert_on_healthy_pods(seen) or seen.hpa is not None:
        return None
    if min(seen.cpu_of_requests) < CPU_SATURATED:
        return None
    replicas = len(seen.pods) * SCALE_OUT_FACTOR
    low, high = min(seen.cpu_of_requests), max(seen.cpu_of_requests)
    return rule.Match(
        facts=(
            f"all {len(seen.pods)} Pod(s) of {rule.ref_text(seen.workload)} are healthy and use "
            f"{low}-{high}% of their CPU requests",
            "no HorizontalPodAutoscaler scales the workload",
        ),
        target=seen.workload,
        values={"REPLICAS": str(replicas)},
        detail={"replicas": str(replicas), "pods": str(len(seen.pods))},
    )


CPU_SATURATED_SCALE_OUT = rule.Rule(
    name="cpu-saturated-scale-out",
    signal_type="HighCPU",
    action_type="ScaleOut",
    query="scale out replicas CPU saturated traffic load",
    explanation=(
        "Every Pod of {workload} uses its whole CPU request and nothing scales it: more replicas "
        "({pods} → {replicas}) share the load."
    ),
    match=cpu_saturated,
)
