"""The catalog side of the offline provider: the hits a search returned, the parameters a
workflow declares, and the values the target and the evidence give them — never guessed.

Pure: the catalog tools' answers (their values) and the finding in, plans out.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from aianalysis import catalog, resources

KIND_NAME_PARAMETERS: dict[str, tuple[str, ...]] = {
    "Deployment": ("DEPLOYMENT_NAME", "DEPLOYMENT"),
    "StatefulSet": ("STATEFULSET_NAME", "STATEFULSET"),
    "DaemonSet": ("DAEMONSET_NAME", "DAEMONSET"),
    "Pod": ("POD_NAME", "POD"),
    "Node": ("NODE_NAME", "NODE"),
    "Service": ("SERVICE_NAME",),
    "PersistentVolumeClaim": ("PVC_NAME",),
    "HorizontalPodAutoscaler": ("HPA_NAME",),
    "PodDisruptionBudget": ("PDB_NAME",),
}
_NAME_PARAMETERS = frozenset(name for names in KIND_NAME_PARAMETERS.values() for name in names)
_TARGET_PARAMETERS: dict[str, str] = {
    "TARGET_NAMESPACE": "namespace",
    "NAMESPACE": "namespace",
    "TARGET_RESOURCE_NAMESPACE": "namespace",
    "TARGET_RESOURCE_KIND": "kind",
    "RESOURCE_KIND": "kind",
    "TARGET_KIND": "kind",
    "TARGET_RESOURCE_NAME": "name",
    "RESOURCE_NAME": "name",
    "TARGET_NAME": "name",
}


@dataclasses.dataclass(frozen=True)
class Hit:
    workflow_id: str
    version: str | None
    confidence: float
    title: str = ""
    action_type: str | None = None


@dataclasses.dataclass(frozen=True)
class Param:
    name: str
    type: str = "string"
    required: bool = False
    default: str | None = None
    enum: tuple[str, ...] = ()
    system: bool = False
    """Filled by the system from the remediation target (the details tool's ``filled_by``)."""


@dataclasses.dataclass(frozen=True)
class Plan:
    """A candidate with the parameters the evidence fills and those nobody can."""

    hit: Hit
    parameters: dict[str, str]
    missing: tuple[str, ...]
    target: resources.ResourceRef | None = None
    """The object the workflow acts on (None = the incident's resource)."""


def parse_hits(data: Any) -> list[Hit]:
    """Hits from the search tool's answer: a list, or an object holding the list."""
    items = data
    if isinstance(data, dict):
        items = next(
            (data[key] for key in ("workflows", "results", "hits") if isinstance(data.get(key), list)), []
        )
    if not isinstance(items, list):
        return []
    return [hit for hit in (_hit(item) for item in items) if hit is not None]


def _hit(item: Any) -> Hit | None:
    if not isinstance(item, dict) or not isinstance(item.get("workflow_id"), str):
        return None
    confidence = item.get("confidence", 0.5)
    version = item.get("version")
    action = item.get("action_type")
    return Hit(
        workflow_id=item["workflow_id"],
        version=version if isinstance(version, str) else None,
        confidence=float(confidence) if isinstance(confidence, int | float) else 0.5,
        title=str(item.get("title") or ""),
        action_type=action if isinstance(action, str) else None,
    )


def parse_parameters(data: Any) -> list[Param]:
    """Declared parameters from the details tool's answer."""
    if not isinstance(data, dict):
        return []
    params = data.get("parameters")
    if params is None and isinstance(data.get("spec"), dict):
        params = data["spec"].get("parameters")
    if not isinstance(params, list):
        return []
    return [param for param in (_param(item) for item in params) if param is not None]


def _param(item: Any) -> Param | None:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        return None
    default = item.get("default")
    enum = item.get("enum") or ()
    return Param(
        name=item["name"],
        type=str(item.get("type") or "string"),
        required=bool(item.get("required", False)),
        default=None if default is None else str(default),
        enum=tuple(str(option) for option in enum) if isinstance(enum, list) else (),
        system=bool(item.get("filled_by")),
    )


def acts_on(details: Any, *, resource: resources.ResourceRef) -> bool:
    """Whether the workflow's ``acts_on`` (its ``labels.component``) admits the target's kind."""
    components = details.get("acts_on") if isinstance(details, dict) else None
    if not isinstance(components, list):
        return True
    return catalog.component_admits([str(c) for c in components], kind=resource.kind, api_version=None)


def plan_parameters(
    hit: Hit, params: list[Param], *, resource: resources.ResourceRef, values: dict[str, str] | None = None
) -> Plan:
    """Fill what the target and the evidence answer; defaults and system-filled parameters are
    left to the validator, which applies them."""
    filled: dict[str, str] = {}
    missing: list[str] = []
    for param in params:
        value = infer(param, resource, values or {})
        if value is not None:
            filled[param.name] = value
        elif param.required and param.default is None and not param.system:
            missing.append(param.name)
    return Plan(hit=hit, parameters=filled, missing=tuple(missing))


def infer(param: Param, resource: resources.ResourceRef, values: dict[str, str]) -> str | None:
    """The value of ``param`` the target or the evidence supports, if it fits the declared enum."""
    if param.name in values:
        value: str | None = values[param.name]
        if param.type in ("integer", "number") and not str(value).lstrip("-").isdigit():
            return None
    elif param.type != "string":
        return None
    elif param.name in _TARGET_PARAMETERS:
        value = _field(resource, _TARGET_PARAMETERS[param.name])
    elif param.name in KIND_NAME_PARAMETERS.get(resource.kind, ()):
        value = resource.name
    else:
        return None
    if value is None or not param.enum:
        return value
    # Catalogs spell kinds differently ("deployment", "Deployment"): use the enum's spelling.
    return next((option for option in param.enum if option.lower() == str(value).lower()), None)


def _field(resource: resources.ResourceRef, name: str) -> str | None:
    return {"kind": resource.kind, "name": resource.name, "namespace": resource.namespace}.get(name)


def rank(
    hits: list[Hit], *, recovery: resources.RecoverySpec | None, supported: frozenset[str] | None = None
) -> list[Hit]:
    """Search order, without workflows that already failed on this incident: deterministic
    parameters would repeat the failure, so only an untried workflow is a real alternative —
    except one that failed with a parameter this answer would not pass (a value neither the
    target nor the evidence supports, e.g. an explicit override): retried without it, it is a
    different attempt. ``supported``: the parameters the evidence fills (None: no finding, so
    nothing tells a guessed value from a supported one and no failed workflow is retried)."""
    if recovery is None:
        return list(hits)
    failed = {p.selected_workflow.workflow_id for p in recovery.previous_executions}
    if supported is None:
        return [h for h in hits if h.workflow_id not in failed]
    guessed = {
        p.selected_workflow.workflow_id
        for p in recovery.previous_executions
        if set(p.selected_workflow.parameters) - supported - set(_TARGET_PARAMETERS) - _NAME_PARAMETERS
    }
    return [h for h in hits if h.workflow_id not in failed or h.workflow_id in guessed]


def details_arguments(hit: Hit) -> dict[str, str]:
    """The details tool's arguments for a hit (its version when the search gave one)."""
    return {"workflow_id": hit.workflow_id} | ({"version": hit.version} if hit.version else {})
