"""Scheduling: Pods the scheduler cannot place (a taint, a cordon, no room)."""

from __future__ import annotations

import re

from aianalysis import resources
from aianalysis.analysis.offline import evidence, rule

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
_INSUFFICIENT = re.compile(r"Insufficient (cpu|memory)", re.IGNORECASE)


def pending_on_taint(seen: evidence.Evidence) -> rule.Match | None:
    """Pods Pending because Nodes carry a taint they do not tolerate (the scheduler's message names
    it), other than the control plane's own taints and the one a cordon sets.

    Needs: the Pending Pods' PodScheduled condition or FailedScheduling events, and the Nodes (the
    cluster's, through a listing tool, when the Pods run nowhere). Selects RemoveTaint, on the first
    Node read that carries the taint (not as PreferNoSchedule) with TAINT_KEY, TAINT_EFFECT and
    NODE_NAME; without such a Node, on the incident with no values."""
    messages = [p.unschedulable for p in seen.pods if p.phase == "Pending" and p.unschedulable]
    messages += seen.event_messages("FailedScheduling")
    keys = {m.group(1).strip("'\"") for text in messages if (m := _TAINT.search(text))} - _SYSTEM_TAINTS
    tainted = [n for n in seen.nodes for t in n.taints if t.key in keys and t.effect != "PreferNoSchedule"]
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
    return rule.Match(
        facts=tuple(facts), target=target, values=values, detail={"taint": ", ".join(sorted(keys))}
    )


PENDING_UNTOLERATED_TAINT = rule.Rule(
    name="pending-untolerated-taint",
    signal_type="FailedScheduling",
    action_type="RemoveTaint",
    query="Pending untolerated taint remove taint node",
    explanation=(
        "The Pods of {workload} stay Pending because the Nodes carry the taint {taint} they do not "
        "tolerate; removing the taint lets them schedule."
    ),
    match=pending_on_taint,
)


def pending_on_cordon(seen: evidence.Evidence) -> rule.Match | None:
    """Pods Pending while a Node is Ready but cordoned (unschedulable).

    Needs: the Pods and the Nodes (the cluster's, through a listing tool, when the Pods run nowhere).
    Selects UncordonNode on that Node with NODE_NAME."""
    pending = [p for p in seen.pods if p.phase == "Pending"]
    cordoned = [n for n in seen.nodes if n.unschedulable and n.conditions.get("Ready") == "True"]
    if not pending or not cordoned:
        return None
    node = cordoned[0]
    return rule.Match(
        facts=(f"{len(pending)} Pod(s) Pending", f"Node {node.name} is Ready but cordoned (unschedulable)"),
        target=resources.ResourceRef(kind="Node", name=node.name),
        values={"NODE_NAME": node.name},
        detail={"node": node.name},
    )


PENDING_CORDONED_NODE = rule.Rule(
    name="pending-cordoned-node",
    signal_type="Unschedulable",
    action_type="UncordonNode",
    query="Pending cordoned node uncordon",
    explanation="The Pods of {workload} stay Pending while Node {node} is healthy but cordoned; uncordon it.",
    match=pending_on_cordon,
)


def pending_on_resources(seen: evidence.Evidence) -> rule.Match | None:
    """Pods Pending because no Node has enough CPU or memory left (``Insufficient cpu`` or
    ``memory`` in the scheduler's message).

    Needs: the Pending Pods' PodScheduled condition or FailedScheduling events, and the Nodes.
    Selects ProvisionNode on the workload, with NODE_POOL when every Node read belongs to one node
    pool. It comes after the HPA and saturation rules."""
    texts = [p.unschedulable for p in seen.pods if p.phase == "Pending" and p.unschedulable]
    texts += seen.event_messages("FailedScheduling")
    short = sorted({m.group(1).lower() for t in texts if (m := _INSUFFICIENT.search(t))})
    if not short:
        return None
    facts = [f"Pods are Pending: {next(t for t in texts if _INSUFFICIENT.search(t))}"]
    values: dict[str, str] = {}
    pools = {n.pool for n in seen.nodes}
    if seen.nodes and len(pools) == 1 and None not in pools:
        pool = str(next(iter(pools)))
        facts.append(f"the Nodes read belong to node pool {pool}")
        values["NODE_POOL"] = pool
    return rule.Match(
        facts=tuple(facts),
        target=seen.workload,
        values=values,
        detail={"resource": " and ".join(short)},
    )


PENDING_INSUFFICIENT_RESOURCES = rule.Rule(
    name="pending-insufficient-resources",
    signal_type="FailedScheduling",
    action_type="ProvisionNode",
    query="FailedScheduling insufficient resources add node capacity",
    explanation="The Pods of {workload} stay Pending: no Node has enough {resource} left.",
    match=pending_on_resources,
)
