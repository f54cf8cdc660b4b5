"""Nodes: conditions a Node reports, Pods it evicted, and drains a disruption budget blocks."""

from __future__ import annotations

import dataclasses
import math
import re

from aianalysis import resources
from aianalysis.analysis.offline import evidence, rule

_PDB_EVICT = re.compile(r"disruption budget", re.IGNORECASE)
#: Share of a Node's allocatable memory that relieving MemoryPressure brings its use back to.
MEMORY_RELIEVED_SHARE = 85


def pdb_blocks_drain(seen: evidence.Evidence) -> rule.Match | None:
    """A PodDisruptionBudget allows no disruption while something wants to evict: an eviction
    event names the budget, or a Node is cordoned (a drain under way). An incident about the budget
    itself needs no second fact.

    Needs: the PDB (the incident's, or the one named after the workload), the events and the Nodes.
    Selects RelaxPDB on the PDB: relaxing it lets the drain proceed."""
    pdb = seen.pdb
    if pdb is None or pdb.disruptions_allowed != 0:
        return None
    facts = [
        f"PodDisruptionBudget {pdb.name} allows 0 disruptions ({pdb.current_healthy} healthy, "
        f"{pdb.desired_healthy} required)"
    ]
    blocked = seen.event_messages("EvictionBlocked", "FailedEviction", "DisruptionBlocked")
    blocked += [e.message for e in seen.events if _PDB_EVICT.search(e.message)]
    if blocked:
        facts.append(blocked[0])
    facts += [f"Node {n.name} is cordoned (a drain is under way)" for n in seen.nodes if n.unschedulable][:1]
    if len(facts) < 2 and seen.incident.kind != "PodDisruptionBudget":
        return None
    return rule.Match(
        facts=tuple(facts),
        target=resources.ResourceRef(
            kind="PodDisruptionBudget", name=pdb.name, namespace=seen.incident.namespace
        ),
        detail={"pdb": pdb.name},
    )


PDB_BLOCKS_DRAIN = rule.Rule(
    name="pdb-blocks-drain",
    signal_type="KubePodDisruptionBudgetAtLimit",
    action_type="RelaxPDB",
    query="PodDisruptionBudget at limit blocks drain relax",
    explanation=(
        "PodDisruptionBudget {pdb} allows no disruption, which blocks the eviction of its Pods; "
        "relaxing it lets the drain proceed."
    ),
    match=pdb_blocks_drain,
)


def _node_condition(seen: evidence.Evidence, condition: str, status: str = "True") -> rule.Match | None:
    """The first Node read whose ``condition`` has ``status``, its cordon and a Warning event about it."""
    nodes = [n for n in seen.nodes if n.conditions.get(condition) == status]
    if not nodes:
        return None
    node = nodes[0]
    facts = [f"Node {node.name} reports {condition}={status}"]
    if node.unschedulable:
        facts.append(f"Node {node.name} is cordoned")
    facts += [f"{e.reason}: {e.message}" for e in seen.events if e.kind == "Node" and e.type == "Warning"][:1]
    return rule.Match(
        facts=tuple(facts),
        target=resources.ResourceRef(kind="Node", name=node.name),
        values={"NODE_NAME": node.name},
        detail={"node": node.name},
    )


def node_not_ready(seen: evidence.Evidence) -> rule.Match | None:
    """A Node reports Ready=False.

    Needs: the Nodes the Pods run on (or the incident's Node) and the Nodes' Warning events.
    Selects DrainNode on the Node with NODE_NAME: its workloads must move elsewhere."""
    return _node_condition(seen, "Ready", "False")


NODE_NOT_READY = rule.Rule(
    name="node-not-ready",
    signal_type="NodeNotReady",
    action_type="DrainNode",
    query="NodeNotReady node not ready cordon drain",
    explanation="Node {node} is NotReady; its workloads must move elsewhere.",
    match=node_not_ready,
)


def node_unreachable(seen: evidence.Evidence) -> rule.Match | None:
    """A Node stopped reporting (Ready=Unknown).

    Needs: the Nodes the Pods run on (or the incident's Node) and the Nodes' Warning events.
    Selects DrainNode on the Node with NODE_NAME: its workloads must move elsewhere."""
    return _node_condition(seen, "Ready", "Unknown")


NODE_UNREACHABLE = rule.Rule(
    name="node-unreachable",
    signal_type="NodeUnreachable",
    action_type="DrainNode",
    query="NodeUnreachable node unreachable cordon drain",
    explanation="Node {node} stopped reporting (Ready=Unknown); its workloads must move elsewhere.",
    match=node_unreachable,
)


def node_disk_pressure(seen: evidence.Evidence) -> rule.Match | None:
    """A Node reports DiskPressure.

    Needs: the Nodes the Pods run on (or the incident's Node) and the Nodes' Warning events.
    Selects CleanupNode on the Node with NODE_NAME: freeing disk space on it relieves the
    evictions."""
    return _node_condition(seen, "DiskPressure", "True")


NODE_DISK_PRESSURE = rule.Rule(
    name="node-disk-pressure",
    signal_type="DiskPressure",
    action_type="CleanupNode",
    query="DiskPressure node disk cleanup images logs",
    explanation="Node {node} reports DiskPressure; freeing disk space on it relieves the evictions.",
    match=node_disk_pressure,
)


def memory_pressure(seen: evidence.Evidence) -> rule.Match | None:
    """A Node reports MemoryPressure.

    Needs: the Nodes and their Warning events; for how much to free, the Node's memory use from the
    metrics API (``top nodes``). Selects EvictPods on the Node with NODE_NAME and, when its use is
    known, MEMORY_FREE_TARGET: what brings it back to ``MEMORY_RELIEVED_SHARE`` percent of its
    allocatable memory. Evicting its lowest-priority Pods relieves it."""
    found = _node_condition(seen, "MemoryPressure")
    if found is None or found.target is None:
        return None
    node = found.target.name
    found = dataclasses.replace(found, detail={**found.detail, "until": ""})
    usage = next((u for u in seen.node_usage if u.name == node), None)
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


NODE_MEMORY_PRESSURE = rule.Rule(
    name="node-memory-pressure",
    signal_type="MemoryPressure",
    action_type="EvictPods",
    query="MemoryPressure node memory pressure relief",
    explanation="Node {node} reports MemoryPressure; evicting its lowest-priority Pods{until} relieves it.",
    match=memory_pressure,
)


def evicted_pods(seen: evidence.Evidence) -> rule.Match | None:
    """Pods of the workload were evicted (status reason Evicted) and linger.

    Needs: the workload's Pods. Selects DeletePod on the workload: cleaning them up is safe."""
    evicted = [p for p in seen.pods if p.reason == "Evicted"]
    if not evicted:
        return None
    return rule.Match(
        facts=(f"{len(evicted)} Pod(s) Evicted: {evicted[0].message}".rstrip(": "),),
        target=seen.workload,
        detail={"count": str(len(evicted))},
    )


EVICTED_PODS = rule.Rule(
    name="evicted-pods",
    signal_type="Evicted",
    action_type="DeletePod",
    query="delete evicted pods",
    explanation="{count} Pod(s) of {workload} were evicted and linger; cleaning them up is safe.",
    match=evicted_pods,
)
