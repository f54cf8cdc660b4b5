"""Action types: the one-line meaning shown by ``list_action_types`` (discovery: action types →
workflows → details).

The meanings of the common action types of Kubernaut's taxonomy are written here; any other
action type is explained by its own words and the title of one workflow that has it, so a catalog
may introduce action types without touching the operator.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from aianalysis.catalog import model

KNOWN: dict[str, str] = {
    "IncreaseMemoryLimits": "Raise the memory limits (and requests) of a workload's containers.",
    "IncreaseCPULimits": "Raise the CPU limits (and requests) of a workload's containers.",
    "RestartPod": "Delete a Pod so its controller recreates it.",
    "RestartDeployment": "Roll every Pod of a Deployment (rollout restart).",
    "RollbackDeployment": "Return a Deployment to its previous revision.",
    "ScaleReplicas": "Change the replica count of a workload.",
    "ScaleDeployment": "Change the replica count of a Deployment.",
    "DrainNode": "Cordon a Node and evict its Pods.",
    "CordonNode": "Mark a Node unschedulable without evicting its Pods.",
    "UncordonNode": "Mark a Node schedulable again.",
    "ExpandPVC": "Grow a PersistentVolumeClaim.",
    "CleanupNode": "Free disk space on a Node (unused images, logs).",
    "DeletePod": "Delete a Pod without waiting for a replacement.",
    "PatchHPA": "Change the bounds of a HorizontalPodAutoscaler.",
    "UpdateImage": "Point a workload's container at another image.",
}

_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+")


def spelled_out(action_type: str | None) -> str:
    """``IncreaseMemoryLimits`` → ``Increase Memory Limits``."""
    return " ".join(_CAMEL.findall(action_type or ""))


def meaning(action_type: str, workflows: Iterable[model.Workflow] = ()) -> str:
    """One line saying what workflows of this action type do."""
    known = KNOWN.get(action_type)
    if known is not None:
        return known
    titles = sorted(w.spec.title for w in workflows if w.spec.action_type == action_type)
    spelled = spelled_out(action_type).capitalize()
    return f"{spelled} (e.g. {titles[0]})." if titles else f"{spelled}."
