"""Checks on the selected workflow: shown in this conversation (id AND version), in the catalog,
eligible by policy and for the target, parameters valid (system-filled ones from the target), and
(in a recovery) not a repeat of a failed execution.

**Version (rule 6b).** The version must be one a catalog tool showed in this conversation. An
omitted version (or ``latest``) means the highest version shown, not the catalog's highest: search
offers the highest *eligible* version, and a newer ineligible one must not replace it behind the
LLM's back.

**Repeated failure is version-insensitive.** Same ``workflowId`` and same canonical parameters
(defaults filled on both sides) as a failed execution is a repeat whatever the version: a version
bump rarely changes what the remediation does, "latest" may resolve to the version that failed,
and a recovery must not retry the same approach (docs/architecture.md §6 rule 6). A genuinely
different attempt changes the workflow or its parameters.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from aianalysis import catalog, resources
from aianalysis.analysis import answer, scope
from aianalysis.analysis.validation import _coerce, _messages, _parameters, _target


@dataclasses.dataclass(frozen=True)
class Selection:
    errors: list[str]
    warnings: list[str] = dataclasses.field(default_factory=list)
    workflow: catalog.Workflow | None = None
    canonical: dict[str, str] = dataclasses.field(default_factory=dict)


def check_selection(
    chosen: answer.SelectedWorkflowAnswer,
    *,
    index: catalog.Catalog,
    seen: Mapping[str, set[str]],
    business: resources.BusinessContext,
    recovery: resources.RecoverySpec | None,
    target: scope.ObjectRef | None = None,
    facts: catalog.TargetFacts | None = None,
    inferred: scope.Inference | None = None,
    privileged_roles: Sequence[str] = (),
) -> Selection:
    unknown = _unknown_workflow_error(chosen.workflow_id, index=index, seen=seen)
    if unknown:
        return Selection(errors=[unknown])
    shown = seen.get(chosen.workflow_id, set())
    workflow = index.get(
        chosen.workflow_id, _version(chosen.version, shown=shown, index=index, wid=chosen.workflow_id)
    )
    if workflow is None:
        return Selection(errors=[_unknown_version_error(chosen, index=index)])
    errors: list[str] = []
    if workflow.spec.version not in shown:
        errors.append(_version_not_shown_error(workflow, shown=shown))
    reasons = catalog.policy.ineligibility(workflow.spec, business, facts=facts)
    if reasons:
        errors.append(
            _messages.clip(
                f"[policy] workflow {workflow.spec.workflow_id!r} is not eligible for this incident: "
                f"{'; '.join(reasons)}"
            )
        )
    values: Mapping[str, object] = chosen.parameters
    warnings: list[str] = []
    if target is not None:
        mismatch = _target.component_error(workflow.spec, target, inferred=inferred)
        errors.extend([mismatch] if mismatch else [])
        values, warnings = _target.fill_from_target(workflow.spec.parameters, values, target)
    params = (
        workflow.spec.parameters if target is None else _target.for_target(workflow.spec.parameters, target)
    )
    check = _parameters.check_parameters(params, values)
    errors.extend(check.errors)
    privileged = catalog.policy.privileged_binding(check.canonical, also=privileged_roles)
    if privileged:
        errors.append(_messages.clip(f"[policy] {'; '.join(privileged)}"))
    if not check.errors and recovery is not None:
        errors.extend(_repeat_errors(workflow, canonical=check.canonical, recovery=recovery))
    return Selection(
        errors=errors, warnings=[*warnings, *check.warnings], workflow=workflow, canonical=check.canonical
    )


def _version(requested: str | None, *, shown: set[str], index: catalog.Catalog, wid: str) -> str | None:
    """The version an answer means: as given, or for none/``latest`` the highest one shown."""
    if requested is not None and requested != catalog.LATEST:
        return requested
    available = [version for version in shown if index.get(wid, version) is not None]
    return catalog.semver.highest(available)


def _version_not_shown_error(workflow: catalog.Workflow, *, shown: set[str]) -> str:
    spec = workflow.spec
    return _messages.clip(
        f"[version_not_shown] version {spec.version!r} of {spec.workflow_id!r} was not shown by a catalog "
        f"tool in this conversation; shown: {_messages.listing(sorted(shown, key=catalog.semver.key))} "
        "(omit version for the highest one shown)."
    )


def _unknown_workflow_error(
    workflow_id: str, *, index: catalog.Catalog, seen: Mapping[str, set[str]]
) -> str | None:
    """Allowed: returned by a catalog tool in THIS conversation (not the whole catalog, upstream
    #2442) and still in the catalog (it may have been deleted since)."""
    shown = sorted(wid for wid in seen if index.get(wid, None) is not None)
    choices = f"choose one of the workflows shown in this conversation: {_messages.listing(shown)}"
    if workflow_id not in seen:
        in_catalog = index.get(workflow_id, None) is not None
        why = (
            "was not returned by search_workflow_catalog or get_workflow_details in this conversation"
            if in_catalog
            else "does not exist in the catalog"
        )
        return _messages.clip(
            f"[unknown_workflow] workflow_id {workflow_id!r} {why}; {choices}, or search the catalog."
        )
    if index.get(workflow_id, None) is None:
        return _messages.clip(
            f"[unknown_workflow] workflow_id {workflow_id!r} is no longer in the catalog (removed); "
            f"{choices}."
        )
    return None


def _unknown_version_error(chosen: answer.SelectedWorkflowAnswer, *, index: catalog.Catalog) -> str:
    versions = _messages.listing(index.versions(chosen.workflow_id))
    return _messages.clip(
        f"[unknown_version] workflow {chosen.workflow_id!r} has no version {chosen.version!r}; "
        f"available: {versions} (omit version for the latest)."
    )


def _repeat_errors(
    workflow: catalog.Workflow, *, canonical: Mapping[str, str], recovery: resources.RecoverySpec
) -> list[str]:
    spec = workflow.spec
    for number, previous in enumerate(recovery.previous_executions, start=1):
        executed = previous.selected_workflow
        if (
            executed.workflow_id == spec.workflow_id
            and _normalized(spec.parameters, executed.parameters) == canonical
        ):
            return [
                _messages.clip(
                    f"[repeated_failure] {spec.workflow_id!r} with these same parameters already failed "
                    f"(attempt {number}, {previous.workflow_execution_ref}: {previous.failure.reason}); "
                    "choose a different workflow, or parameters that address why it failed."
                )
            ]
    return []


def _normalized(params: Sequence[resources.WorkflowParameter], recorded: Mapping[str, str]) -> dict[str, str]:
    """A recorded execution's parameters in today's canonical form, defaults filled, undeclared
    dropped — so a hand-written ``"03"`` or an implicit default still counts as the same input."""
    result: dict[str, str] = {}
    for param in params:
        value = recorded.get(param.name, param.default)
        if value is None:
            continue
        try:
            result[param.name] = _coerce.canonical_value(param.type, value)
        except ValueError:
            result[param.name] = value
    return result
