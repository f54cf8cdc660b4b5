"""Checks on the remediation target (docs/architecture.md §4).

- ``target_out_of_scope``: the target is not something this incident may act on (``scope``).
- ``component_mismatch``: the workflow's ``labels.component`` does not admit the target's kind. When
  the answer named no target, the caller may have inferred one (``scope.Inference``): its one
  candidate is the target, with an ``inferred_target`` warning; none or several and the error says
  what the incident concerns, so the LLM names the object.
- (``detectedLabels`` requirements are business policy, ``catalog.policy``, given the facts
  detected on the target; unknown facts never meet one.)
- System-filled parameters (``catalog.target_field``) take the target's value whatever the LLM
  wrote; a differing LLM value is reported as a ``system_filled`` warning, not an error: the value
  that runs is already the right one, and a correction round would cost a paid LLM turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aianalysis import catalog, resources
from aianalysis.analysis import scope
from aianalysis.analysis.validation import _coerce, _messages


def scope_error(target: scope.ObjectRef, *, where: scope.Scope, returned: frozenset[scope.Key]) -> str | None:
    why = where.violation(target, returned=returned)
    if why is None:
        return None
    hint = (
        "read an object with get_resource first if it is the one to change"
        if where.cluster
        else "no cluster is attached"
    )
    return _messages.clip(
        f"[target_out_of_scope] affected_resource {why}. In scope: {_messages.listing(where.in_scope(), 120)}"
        f" ({hint}). Set affected_resource to the object the workflow must act on within this incident."
    )


def component_error(
    spec: resources.RemediationWorkflowSpec,
    target: scope.ObjectRef,
    *,
    inferred: scope.Inference | None = None,
) -> str | None:
    components = spec.labels.component
    if catalog.component_admits(components, kind=target.kind, api_version=target.api_version):
        return None
    acts_on = _messages.listing(components or [], 80)
    if inferred is not None:
        return _messages.clip(
            f"[component_mismatch] affected_resource names no object and workflow {spec.workflow_id!r} acts "
            f"on {acts_on}, not on the incident's {target.describe()}: {inferred.describe()}. Set "
            "affected_resource to the one object the workflow must change."
        )
    return _messages.clip(
        f"[component_mismatch] workflow {spec.workflow_id!r} acts on {acts_on}, "
        f"not on the target {target.describe()}; choose a workflow whose component admits {target.kind}, "
        "or set affected_resource to an in-scope object of a kind it admits."
    )


def inferred_warning(inferred: scope.Inference, target: scope.ObjectRef) -> str:
    kinds = "/".join(inferred.kinds)
    return _messages.clip(
        f"[inferred_target] affected_resource named no object; the workflow acts on {kinds} and "
        f"{target.describe()} is the only one the incident concerns: it is the target."
    )


def fill_from_target(
    params: Sequence[resources.WorkflowParameter], values: Mapping[str, Any], target: scope.ObjectRef
) -> tuple[dict[str, Any], list[str]]:
    """The LLM's values with every system-filled parameter set from the target, and warnings for
    the LLM values that were overridden. A field the target lacks (the namespace of a Node)
    leaves the parameter unset (``for_target`` then no longer requires it)."""
    filled = dict(values)
    warnings: list[str] = []
    for param in params:
        field = catalog.target_field(param)
        if field is None:
            continue
        value = _spelled(param, target.field(field))
        given = filled.pop(param.name, None)
        if value is not None:
            filled[param.name] = value
        if given is not None and _text(param, given) != value:
            submitted = _messages.clip(str(given), 60)
            warnings.append(
                _messages.clip(
                    f"[system_filled] {param.name} is filled by the system from the target "
                    f"{target.describe()} ({field}={value!r}); the submitted {submitted!r} was ignored."
                )
            )
    return filled, warnings


def for_target(
    params: Sequence[resources.WorkflowParameter], target: scope.ObjectRef
) -> list[resources.WorkflowParameter]:
    """The parameters as this target needs them. A cluster-scoped target (a Node, a ClusterIssuer)
    has no namespace: a system-filled namespace parameter stays unset and is not required, since a
    workflow whose ``labels.component`` admits the target's kind accepts such targets (a workflow
    that does not is refused by ``component_mismatch``)."""
    if target.namespace is not None:
        return list(params)
    return [
        param.model_copy(update={"required": False})
        if param.required and catalog.target_field(param) == "namespace"
        else param
        for param in params
    ]


def _spelled(param: resources.WorkflowParameter, value: str | None) -> str | None:
    """Catalogs spell kinds differently (``deployment``): use the enum's spelling when it has one."""
    if value is None or not param.enum:
        return value
    return next((option for option in param.enum if option.casefold() == value.casefold()), value)


def _text(param: resources.WorkflowParameter, value: Any) -> str:
    try:
        return _coerce.canonical_value(param.type, value)
    except ValueError:
        return str(value)
