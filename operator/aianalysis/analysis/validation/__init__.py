"""The validator of the LLM's answer: every check, every time (docs/architecture.md §6).

Pure: the raw ``submit_selection`` input, the catalog, the workflows shown in this conversation,
the business context and the recovery history go in; a :class:`Verdict` comes out. Every check
runs on every answer, the human-review path included (upstream #1711 let a hallucinated id
through there). Error strings go back to the LLM verbatim and into
``status.validationAttempts``, so each starts with its rule code, says what is wrong and what
would be right (allowed values, the parameter's schema) and stays under ~300 characters.

The decisions live with their code (see also the tests): coercion of values in ``_coerce``,
regex bounds and defaults in ``_parameters``, the version-insensitive repeated-failure check in
``_selection``, answer-level checks in ``_answer``, message budgets in ``_messages``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Set
from typing import Any

import pydantic

import aianalysis.analysis.answer
from aianalysis import catalog, resources
from aianalysis.analysis import scope
from aianalysis.analysis.validation import _answer, _selection, _target
from aianalysis.analysis.validation._coerce import canonical_value
from aianalysis.analysis.validation._messages import MAX_MESSAGE_CHARS
from aianalysis.analysis.validation._parameters import (
    MAX_PATTERNED_VALUE_CHARS,
    ParameterCheck,
    check_parameters,
)

#: Rule codes, in the order the checks run; each error string starts with ``[code]``.
RULES: tuple[str, ...] = (
    "no_submission",
    "truncated",
    "schema",
    "no_selection",
    "recovery_fields",
    "target_out_of_scope",
    "unknown_workflow",
    "unknown_version",
    "version_not_shown",
    "policy",
    "component_mismatch",
    "missing_parameter",
    "parameters",
    "repeated_failure",
)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What the pipeline needs from one validation.

    ``workflow`` is the resolved catalog entry whenever the id/version resolved (also when other
    checks failed, so the caller can name the candidate); ``parameters`` is executable as is only
    when ``valid``. ``answer`` has alternatives not in the catalog removed. ``target`` is the
    remediation target when it is in scope, else the incident's resource (None when no scope was
    given): only an in-scope target may reach status.
    """

    valid: bool
    errors: list[str]
    rules_failed: list[str]
    warnings: list[str]
    answer: aianalysis.analysis.answer.SelectionAnswer | None
    workflow: catalog.Workflow | None
    parameters: dict[str, str]
    target: scope.ObjectRef | None = None


def validate(
    *,
    raw: dict[str, Any] | None,
    truncated: bool,
    catalog: catalog.Catalog,
    seen: Mapping[str, set[str]],
    business: resources.BusinessContext,
    recovery: resources.RecoverySpec | None,
    prose: str | None = None,
    scope: scope.Scope | None = None,
    returned: Set[scope.Key] = frozenset(),
    facts: Mapping[scope.Key, catalog.TargetFacts] | None = None,
    malformed: str | None = None,
    inferred: scope.Inference | None = None,
) -> Verdict:
    """Run every check on one submitted answer.

    ``scope`` enables the target rules (§4 6a): the analysis always passes it; without one only
    the catalog fit is checked. ``returned`` holds what the investigation tools returned, and
    ``facts`` the facts detected per target (a target without an entry has unknown facts).
    ``malformed`` says why a submit call's arguments were not a JSON object (then ``raw`` is None).
    ``inferred``: the target the caller inferred because the answer named none (``scope`` module
    rules); its one candidate is the target (read by the inference, so it counts as returned), and
    without exactly one the component error says which the incident concerns.
    """
    errors: list[str] = [_answer.truncated_error()] if truncated else []
    if malformed is not None:
        return _verdict([*errors, _answer.malformed_error(malformed)], [], answer=None)
    if raw is None:
        return _verdict([*errors, _answer.no_submission_error(prose)], [], answer=None)
    try:
        parsed = aianalysis.analysis.answer.SelectionAnswer.model_validate(raw)
    except pydantic.ValidationError as exc:
        return _verdict([*errors, *_answer.schema_errors(exc)], [], answer=None)
    warnings: list[str] = []
    parsed = _answer.drop_unknown_alternatives(
        parsed, index=catalog, warnings=warnings, seen=seen, business=business
    )
    errors.extend(_answer.consistency_errors(parsed, recovery=recovery))
    target, in_scope = None, None
    if scope is not None:
        affected = parsed.affected_resource
        target = scope.target(None if affected is None else affected.model_dump())
        if inferred is not None and inferred.target is not None:
            target = inferred.target
            returned = {*returned, target.key}
            warnings.append(_target.inferred_warning(inferred, target))
        out = _target.scope_error(target, where=scope, returned=frozenset(returned))
        errors.extend([out] if out else [])
        in_scope = scope.incident if out else target
    if parsed.selected_workflow is None:
        return _verdict(errors, warnings, answer=parsed, target=in_scope)
    selection = _selection.check_selection(
        parsed.selected_workflow,
        index=catalog,
        seen=seen,
        business=business,
        recovery=recovery,
        target=target,
        facts=(facts or {}).get(target.key) if target is not None else None,
        inferred=inferred,
    )
    return _verdict(
        [*errors, *selection.errors],
        [*warnings, *selection.warnings],
        answer=parsed,
        workflow=selection.workflow,
        parameters=selection.canonical,
        target=in_scope,
    )


def revalidate(
    selected: resources.SelectedWorkflow,
    *,
    workflow: catalog.Workflow,
    business: resources.BusinessContext,
    recovery: resources.RecoverySpec | None,
    target: scope.ObjectRef | None,
    facts: catalog.TargetFacts | None = None,
) -> Verdict:
    """A stored selection, checked again by the very rules its answer passed, against ``workflow`` as
    the catalog holds it now (the executor's admission check: one validator, not a weaker copy).
    ``business`` and ``facts`` (the target's detected facts; None = unknown) are what the caller read
    from the cluster as the analysis did (``analysis.facts.as_analysed``).

    The selection was shown when it was validated, so its own version counts as shown; the target
    fills the system parameters again, and ``parameters`` comes back canonical (defaults filled): an
    execution must carry exactly these values.
    """
    try:
        chosen = aianalysis.analysis.answer.SelectedWorkflowAnswer(
            workflow_id=selected.workflow_id,
            version=selected.version,
            confidence=selected.confidence,
            rationale=selected.rationale or "-",
            parameters=dict(selected.parameters),
        )
    except pydantic.ValidationError as exc:
        return _verdict(_answer.schema_errors(exc), [], answer=None)
    result = _selection.check_selection(
        chosen,
        index=catalog.Catalog([workflow]),
        seen={workflow.workflow_id: {workflow.version}},
        business=business,
        recovery=recovery,
        target=target,
        facts=facts,
    )
    return _verdict(
        result.errors, result.warnings, answer=None, workflow=result.workflow, parameters=result.canonical,
        target=target,
    )  # fmt: skip


def _verdict(
    errors: list[str],
    warnings: list[str],
    *,
    answer: aianalysis.analysis.answer.SelectionAnswer | None,
    workflow: catalog.Workflow | None = None,
    parameters: dict[str, str] | None = None,
    target: scope.ObjectRef | None = None,
) -> Verdict:
    rules = list(dict.fromkeys(error[1 : error.index("]")] for error in errors))
    return Verdict(
        valid=not errors,
        errors=errors,
        rules_failed=rules,
        warnings=warnings,
        answer=answer,
        workflow=workflow,
        parameters=parameters or {},
        target=target,
    )


__all__ = [
    "MAX_MESSAGE_CHARS",
    "MAX_PATTERNED_VALUE_CHARS",
    "RULES",
    "ParameterCheck",
    "Verdict",
    "canonical_value",
    "check_parameters",
    "revalidate",
    "validate",
]
