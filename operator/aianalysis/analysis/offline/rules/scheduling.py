"""Scheduling: Pods the scheduler cannot place (a taint, a cordon, no room)."""

from __future__ import annotations

import re

from aianalysis import resources
from aianalysis.analysis.offline import evidence, rule

_TAINT = re.compile(r"untolerated taint[s]?\s*\{\s*([^:}\s]+)", re.IGNORECASE)
"""A taint the scheduler names (before 1.34: ``had untolerated taint {maintenance: x}``)."""
_UNTOLERATED = re.compile(r"untolerated taint", re.IGNORECASE)
"""Any taint message, also one that names none (1.34 and later: ``had untolerated taint(s)``)."""
#: Taints that are not a workload's to remove: the control plane's own, and the ones the node
#: lifecycle sets for a condition or a cordon (``pending-cordoned-node`` and the node rules).
_SYSTEM_TAINTS = frozenset(
    {
        "node-role.kubernetes.io/control-plane",
        "node-role.kubernetes.io/master",
        "node.kubernetes.io/unschedulable",
    }
)
_SYSTEM_TAINT_PREFIXES = ("node.kubernetes.io/", "node.cloudprovider.kubernetes.io/")
_INSUFFICIENT = re.compile(r"Insufficient (cpu|memory)", re.IGNORECASE)


def pending_on_taint(seen: evidence.Evidence) -> rule.Match | None:
    """Pods Pending because Nodes carry a taint they do not tolerate, other than the control plane's
    own taints and those the node lifecycle sets (conditions, a cordon).

    Needs: the Pending Pods' PodScheduled condition or FailedScheduling events, their tolerations,
    and the Nodes (the cluster's, through a listing tool, when the Pods run nowhere). The scheduler
    names the taint only before Kubernetes 1.34 (``untolerated taint {key: value}``); later it says
    ``untolerated taint(s)``, and the taint is the one the Nodes read carry that the Pods do not
    tolerate. Selects RemoveTaint, on the first Node that carries it (not as PreferNoSchedule) with
    TAINT_KEY, TAINT_EFFECT and NODE_NAME; without such a Node, on the incident with no values.
    Only a workflow of that action helps: lowering requests or adding Nodes leaves the taint."""
    pending = [p for p in seen.pods if p.phase == "Pending" and p.unschedulable]
    messages = [str(p.unschedulable) for p in pending] + seen.event_messages("FailedScheduling")
    said = next((text for text in messages if _UNTOLERATED.search(text)), None)
    if said is None:
        return None
    named = {m.group(1).strip("'\"") for text in messages if (m := _TAINT.search(text))}
    if named:
        keys = {k for k in named if not _system(k)}
    else:
        keys = {
            t.key
            for n in seen.nodes
            for t in n.taints
            if t.effect != "PreferNoSchedule"
            and not _system(t.key)
            and not any(any(o.tolerates(t) for o in p.tolerations) for p in pending)
        }
    if not keys:
        return None
    tainted = [n for n in seen.nodes for t in n.taints if t.key in keys and t.effect != "PreferNoSchedule"]
    facts = [f"Pods are Pending: {said}"]
    target = None
    values: dict[str, str] = {}
    if tainted:
        node = tainted[0]
        taint = next(t for t in node.taints if t.key in keys)
        facts.append(f"Node {node.name} carries the taint {taint.key}={taint.value or ''}:{taint.effect}")
        if not named:
            facts.append("the Pending Pods do not tolerate it")
        target = resources.ResourceRef(kind="Node", name=node.name)
        values = {"TAINT_KEY": taint.key, "TAINT_EFFECT": taint.effect, "NODE_NAME": node.name}
    return rule.Match(
        facts=tuple(facts), target=target, values=values, detail={"taint": ", ".join(sorted(keys))}
    )


def _system(key: str) -> bool:
    return key in _SYSTEM_TAINTS or key.startswith(_SYSTEM_TAINT_PREFIXES)


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
    action_only=True,
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


#: A Pod that asks for more than a whole Node gets this share of the largest Node's allocatable:
#: it then fits beside the Node's other Pods.
REQUEST_FIT_SHARE = 0.5


def request_exceeds_every_node(seen: evidence.Evidence) -> rule.Match | None:
    """Pods Pending for ``Insufficient cpu`` (or ``memory``) whose request alone is more than any
    Node read can allocate in total: no Node — and no new Node of those sizes — can ever hold
    one.

    Needs: the Pending Pods' PodScheduled condition or FailedScheduling events, their containers'
    requests, and the Nodes' allocatable (the cluster's, through a listing tool, when the Pods run
    nowhere). Selects LowerResourceRequests on the workload; for a one-container Pod with
    CPU_REQUEST_NEW (MEMORY_REQUEST_NEW) ``REQUEST_FIT_SHARE`` of the largest Node's allocatable.
    More Nodes would not help. It comes before ``pending-insufficient-resources``."""
    texts = [str(p.unschedulable) for p in seen.pods if p.phase == "Pending" and p.unschedulable]
    texts += seen.event_messages("FailedScheduling")
    short = {m.group(1).lower() for t in texts if (m := _INSUFFICIENT.search(t))}
    pending = [p for p in seen.pods if p.phase == "Pending" and p.unschedulable and p.containers]
    if not short or not pending or not seen.nodes:
        return None
    pod = pending[0]
    facts = [f"Pods are Pending: {next(t for t in texts if _INSUFFICIENT.search(t))}"]
    values: dict[str, str] = {}
    detail: dict[str, str] = {}
    for resource in sorted(short):
        parse = rule.quantity_millicores if resource == "cpu" else rule.quantity_bytes
        asked = [parse(c.requests[resource]) for c in pod.containers if resource in c.requests]
        capacity = [parse(n.allocatable[resource]) for n in seen.nodes if resource in n.allocatable]
        if not asked or None in asked or not capacity or None in capacity:
            return None
        wanted, largest = sum(a or 0 for a in asked), max(c or 0 for c in capacity)
        if wanted <= largest:
            return None
        shown = _cpu if resource == "cpu" else _memory
        facts.append(
            f"Pod {pod.name} requests {shown(wanted)} {resource}; the largest of {len(capacity)} Node(s) "
            f"can allocate {shown(largest)}"
        )
        detail[resource] = f"{shown(wanted)} {resource} (the largest Node: {shown(largest)})"
        if len(pod.containers) == 1:
            name = "CPU_REQUEST_NEW" if resource == "cpu" else "MEMORY_REQUEST_NEW"
            values[name] = shown(int(largest * REQUEST_FIT_SHARE))
    facts.append("no Node of these sizes can ever hold one such Pod: more Nodes would not help")
    return rule.Match(
        facts=tuple(facts),
        target=seen.workload,
        values=values,
        detail={"asked": " and ".join(detail.values())},
        query="lower requests",
    )


def _cpu(millicores: int) -> str:
    return f"{millicores // 1000}" if millicores % 1000 == 0 else f"{millicores}m"


def _memory(size: int) -> str:
    mebibytes = size // 2**20
    return f"{mebibytes // 1024}Gi" if mebibytes % 1024 == 0 and mebibytes else f"{mebibytes}Mi"


REQUEST_EXCEEDS_EVERY_NODE = rule.Rule(
    name="request-exceeds-every-node",
    signal_type="FailedScheduling",
    action_type="LowerResourceRequests",
    query="FailedScheduling Insufficient request larger than node lower resource requests",
    explanation=(
        "The Pods of {workload} stay Pending: each asks for {asked}, more than any Node can allocate, "
        "so no Node can hold one and adding Nodes would not help; lowering the requests lets them "
        "schedule."
    ),
    match=request_exceeds_every_node,
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
