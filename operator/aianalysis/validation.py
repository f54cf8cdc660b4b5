"""The validator of the LLM's answer: every check, every time (architecture §4).

Pure: the raw ``submit_selection`` input, the catalog, the workflows shown in this conversation,
the business context and the recovery history go in; a :class:`Verdict` comes out. Every check
runs on every answer, the human-review path included (upstream #1711 let a hallucinated id
through there). Error strings go back to the LLM verbatim and into
``status.validationAttempts``, so each starts with its rule code, says what is wrong and what
would be right (allowed values, the parameter's schema) and stays under ~300 characters.

Decisions (see also the tests):

* **Coercion.** JSON types are accepted as such. Because LLMs often quote scalars, ``integer``
  and ``number`` also accept plain decimal strings (``"3"``, ``"03"``, ``"+3"``, ``"0.5"``,
  ``"1e-3"``; not ``"1_000"``, ``"0x10"``, ``"nan"`` or ``"inf"``), canonicalized (``"03"`` →
  ``"3"``), and an integral float (``3.0``) is an integer;
  ``boolean`` also accepts ``"true"``/``"false"`` in any case. ``bool`` is never a number
  (upstream's ``int/bool`` mapping let it through and skipped ranges). ``string`` accepts only
  strings: a quoted value costs the LLM one correction, a silently stringified ``True`` would
  cost an execution. ``array`` is a list of scalars (or the JSON text of one); its canonical
  form is compact JSON; ``enum`` and ``pattern`` apply to each item.
* **Regex bounds.** Python's ``re`` has no timeout, so work is bounded by size: patterns longer
  than :data:`MAX_PATTERN_CHARS` are refused, values longer than :data:`MAX_PATTERNED_VALUE_CHARS`
  are refused *before* matching, and matching is ``re.fullmatch`` (a pattern without anchors
  still has to cover the whole value). A pathological pattern can still be slow on short
  input; the catalog author owns that, the LLM cannot widen it.
* **Defaults.** Every absent parameter with a ``default`` is filled in (so the execution and the
  recovery history see the value that ran) and the default is checked like a value.
  ``dependsOn`` is checked for parameters the LLM supplied; a dependency is satisfied by a
  supplied or defaulted value.
* **Repeated failure is version-insensitive.** Same ``workflowId`` and same canonical
  parameters (defaults filled on both sides) as a failed execution is a repeat whatever the
  version: a version bump rarely changes what the remediation does, "latest" may resolve to the
  version that failed, and DD-RECOVERY-003 forbids retrying the same approach. A genuinely
  different attempt changes the workflow or its parameters.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pydantic
import pydantic_core

from aianalysis import answer as answers
from aianalysis import catalog, resources

#: Rule codes, in the order the checks run; each error string starts with ``[code]``.
RULES: tuple[str, ...] = (
    "no_submission",
    "truncated",
    "schema",
    "no_selection",
    "recovery_fields",
    "unknown_workflow",
    "unknown_version",
    "policy",
    "missing_parameter",
    "parameters",
    "repeated_failure",
)

MAX_PATTERN_CHARS = 256
MAX_PATTERNED_VALUE_CHARS = 1024
MAX_MESSAGE_CHARS = 300
_MAX_SCHEMA_ERRORS = 8
_MAX_NUMERIC_TEXT_CHARS = 64
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")
_NUMBER_TEXT = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")
_SCALARS = (str, int, float, bool)


@dataclasses.dataclass(frozen=True)
class ParameterCheck:
    """Outcome of :func:`check_parameters`; ``canonical`` holds only declared, well-typed values."""

    errors: list[str]
    warnings: list[str]
    canonical: dict[str, str]


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What the pipeline needs from one validation.

    ``workflow`` is the resolved catalog entry whenever the id/version resolved (also when other
    checks failed, so the caller can name the candidate); ``parameters`` is executable as is only
    when ``valid``. ``answer`` has alternatives not in the catalog removed.
    """

    valid: bool
    errors: list[str]
    rules_failed: list[str]
    warnings: list[str]
    answer: answers.SelectionAnswer | None
    workflow: catalog.Workflow | None
    parameters: dict[str, str]


# --------------------------------------------------------------------------------------------
# Entry point


def validate(
    *,
    raw: dict[str, Any] | None,
    truncated: bool,
    catalog: catalog.Catalog,
    seen: Mapping[str, set[str]],
    business: resources.BusinessContext,
    recovery: resources.RecoverySpec | None,
    prose: str | None = None,
) -> Verdict:
    """Run every check on one submitted answer."""
    errors: list[str] = [_truncated_error()] if truncated else []
    if raw is None:
        return _verdict([*errors, _no_submission_error(prose)], [], answer=None)
    try:
        parsed = answers.SelectionAnswer.model_validate(raw)
    except pydantic.ValidationError as exc:
        return _verdict([*errors, *_schema_errors(exc)], [], answer=None)
    warnings: list[str] = []
    parsed = _drop_unknown_alternatives(parsed, index=catalog, warnings=warnings)
    errors.extend(_consistency_errors(parsed, recovery=recovery))
    if parsed.selected_workflow is None:
        return _verdict(errors, warnings, answer=parsed)
    selection = _check_selection(
        parsed.selected_workflow, index=catalog, seen=seen, business=business, recovery=recovery
    )
    return _verdict(
        [*errors, *selection.errors],
        [*warnings, *selection.warnings],
        answer=parsed,
        workflow=selection.workflow,
        parameters=selection.canonical,
    )


def _verdict(
    errors: list[str],
    warnings: list[str],
    *,
    answer: answers.SelectionAnswer | None,
    workflow: catalog.Workflow | None = None,
    parameters: dict[str, str] | None = None,
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
    )


def _clip(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _listing(items: Iterable[str], limit: int = 160) -> str:
    return _clip(", ".join(items), limit) or "(none)"


# --------------------------------------------------------------------------------------------
# Answer-level checks


def _truncated_error() -> str:
    return (
        "[truncated] the answer was cut off at the output token limit (stop_reason max_tokens); "
        "call submit_selection again with a complete, more concise answer."
    )


def _no_submission_error(prose: str | None) -> str:
    excerpt = f' (you wrote: "{_clip(" ".join(prose.split()), 80)}")' if prose and prose.strip() else ""
    return _clip(
        f"[no_submission] no submit_selection call was made{excerpt}; "
        "the answer is only accepted as the input of the submit_selection tool."
    )


def _schema_errors(exc: pydantic.ValidationError) -> list[str]:
    details = exc.errors(include_url=False)
    errors = [_schema_error(detail) for detail in details[:_MAX_SCHEMA_ERRORS]]
    if len(details) > _MAX_SCHEMA_ERRORS:
        errors.append(f"[schema] … and {len(details) - _MAX_SCHEMA_ERRORS} more schema errors.")
    return errors


def _schema_error(detail: pydantic_core.ErrorDetails) -> str:
    path = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in detail["loc"])
    shown = "" if detail["type"] == "missing" else f" (got {_clip(repr(detail['input']), 60)})"
    return _clip(f"[schema] {path.lstrip('.') or '(answer)'}: {detail['msg']}{shown}")


def _consistency_errors(
    parsed: answers.SelectionAnswer, *, recovery: resources.RecoverySpec | None
) -> list[str]:
    errors: list[str] = []
    if parsed.selected_workflow is None and not parsed.needs_human_review:
        errors.append(
            "[no_selection] selected_workflow is null but needs_human_review is false; select a workflow "
            "shown by the catalog tools, or set needs_human_review true with a human_review_reason."
        )
    if recovery is not None:
        errors.extend(_recovery_field_errors(parsed))
    return errors


def _recovery_field_errors(parsed: answers.SelectionAnswer) -> list[str]:
    missing = [name for name in ("recovery_analysis", "recovery_strategy") if getattr(parsed, name) is None]
    if missing:
        return [
            f"[recovery_fields] this is a recovery analysis: {' and '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} required (assess why the previous attempt failed "
            "and how this attempt differs)."
        ]
    assert parsed.recovery_strategy is not None
    if not parsed.recovery_strategy.differs_from_previous:
        return [
            "[recovery_fields] recovery_strategy.differs_from_previous is false: a recovery must not repeat "
            "the approach that failed; choose a different workflow or parameters and explain why_different."
        ]
    return []


def _drop_unknown_alternatives(
    parsed: answers.SelectionAnswer, *, index: catalog.Catalog, warnings: list[str]
) -> answers.SelectionAnswer:
    """Alternatives are informational: an unknown one is dropped with a warning, never fatal."""
    kept = []
    for alt in parsed.alternative_workflows:
        if index.get(alt.workflow_id, alt.version) is None:
            version = f" version {alt.version!r}" if alt.version else ""
            warnings.append(
                _clip(
                    f"[unknown_alternative] alternative {alt.workflow_id!r}{version} "
                    "is not in the catalog; dropped."
                )
            )
        else:
            kept.append(alt)
    if len(kept) == len(parsed.alternative_workflows):
        return parsed
    return parsed.model_copy(update={"alternative_workflows": kept})


# --------------------------------------------------------------------------------------------
# The selected workflow


@dataclasses.dataclass(frozen=True)
class _Selection:
    errors: list[str]
    warnings: list[str] = dataclasses.field(default_factory=list)
    workflow: catalog.Workflow | None = None
    canonical: dict[str, str] = dataclasses.field(default_factory=dict)


def _check_selection(
    chosen: answers.SelectedWorkflowAnswer,
    *,
    index: catalog.Catalog,
    seen: Mapping[str, set[str]],
    business: resources.BusinessContext,
    recovery: resources.RecoverySpec | None,
) -> _Selection:
    unknown = _unknown_workflow_error(chosen.workflow_id, index=index, seen=seen)
    if unknown:
        return _Selection(errors=[unknown])
    workflow = index.get(chosen.workflow_id, chosen.version)
    if workflow is None:
        return _Selection(errors=[_unknown_version_error(chosen, index=index)])
    errors: list[str] = []
    reasons = catalog.policy.ineligibility(workflow.spec, business)
    if reasons:
        errors.append(
            _clip(
                f"[policy] workflow {workflow.spec.workflow_id!r} is not eligible for this incident: "
                f"{'; '.join(reasons)}"
            )
        )
    check = check_parameters(workflow.spec.parameters, chosen.parameters)
    errors.extend(check.errors)
    if not check.errors and recovery is not None:
        errors.extend(_repeat_errors(workflow, canonical=check.canonical, recovery=recovery))
    return _Selection(errors=errors, warnings=check.warnings, workflow=workflow, canonical=check.canonical)


def _unknown_workflow_error(
    workflow_id: str, *, index: catalog.Catalog, seen: Mapping[str, set[str]]
) -> str | None:
    """Allowed: returned by a catalog tool in THIS conversation (not the whole catalog, upstream
    #2442) and still in the catalog (it may have been deleted since)."""
    shown = sorted(wid for wid in seen if index.get(wid, None) is not None)
    choices = f"choose one of the workflows shown in this conversation: {_listing(shown)}"
    if workflow_id not in seen:
        in_catalog = index.get(workflow_id, None) is not None
        why = (
            "was not returned by search_workflow_catalog or get_workflow_details in this conversation"
            if in_catalog
            else "does not exist in the catalog"
        )
        return _clip(
            f"[unknown_workflow] workflow_id {workflow_id!r} {why}; {choices}, or search the catalog."
        )
    if index.get(workflow_id, None) is None:
        return _clip(
            f"[unknown_workflow] workflow_id {workflow_id!r} is no longer in the catalog (removed); "
            f"{choices}."
        )
    return None


def _unknown_version_error(chosen: answers.SelectedWorkflowAnswer, *, index: catalog.Catalog) -> str:
    versions = _listing(index.versions(chosen.workflow_id))
    return _clip(
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
                _clip(
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
            result[param.name] = canonical_value(param.type, value)
        except ValueError:
            result[param.name] = value
    return result


# --------------------------------------------------------------------------------------------
# Parameters


def canonical_value(ptype: str, value: Any) -> str:
    """The one string form of a parameter value (status, WorkflowExecution, recovery history).

    Raises ``ValueError`` whose message tells the LLM what was expected.
    """
    converter = _CONVERTERS.get(ptype)
    if converter is None:
        raise ValueError(f"unknown parameter type {ptype!r}")
    return converter(value)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    return "an object" if isinstance(value, dict) else type(value).__name__


def _as_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    raise ValueError(f"expected a string, got {_json_type(value)} (quote it)")


def _as_integer(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if (
        isinstance(value, str)
        and len(value) <= _MAX_NUMERIC_TEXT_CHARS
        and _INTEGER_TEXT.fullmatch(value.strip())
    ):
        return str(int(value))
    raise ValueError(f"expected an integer, got {_json_type(value)} {_clip(repr(value), 40)}")


def _as_number(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)
    if (
        isinstance(value, str)
        and len(value) <= _MAX_NUMERIC_TEXT_CHARS
        and _NUMBER_TEXT.fullmatch(value.strip())
    ):
        text = value.strip()
        if _INTEGER_TEXT.fullmatch(text):
            return str(int(text))
        number = float(text)
        if math.isfinite(number):
            return repr(number)
    raise ValueError(f"expected a finite number, got {_json_type(value)} {_clip(repr(value), 40)}")


def _as_boolean(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower()
    raise ValueError(f"expected a boolean (true or false), got {_json_type(value)} {_clip(repr(value), 40)}")


def _as_array(value: Any) -> str:
    items = value
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:
            items = json.loads(value)
        except json.JSONDecodeError:
            items = value
    if not isinstance(items, list | tuple):
        raise ValueError(f"expected an array of scalars, got {_json_type(value)}")
    for item in items:
        if not isinstance(item, _SCALARS) or (isinstance(item, float) and not math.isfinite(item)):
            raise ValueError(f"array items must be strings, numbers or booleans, got {_json_type(item)}")
    return json.dumps(list(items), separators=(",", ":"), ensure_ascii=False)


_CONVERTERS: dict[str, Callable[[Any], str]] = {
    "string": _as_string,
    "integer": _as_integer,
    "number": _as_number,
    "boolean": _as_boolean,
    "array": _as_array,
}


def check_parameters(
    params: Sequence[resources.WorkflowParameter], values: Mapping[str, Any]
) -> ParameterCheck:
    """Check the LLM's parameter values against a workflow's declared parameters.

    Undeclared names are stripped with a warning, except a name differing only by case from a
    declared one, which is an error ("did you mean") because the value was clearly meant for it.
    """
    declared = {param.name: param for param in params}
    errors: list[str] = []
    warnings: list[str] = []
    misnamed: set[str] = set()
    for name in values:
        if name in declared:
            continue
        meant = next((d for d in declared if d.lower() == name.lower() and d not in values), None)
        if meant is not None:
            misnamed.add(meant)
            errors.append(
                _clip(
                    f"[parameters] unknown parameter {name!r}: did you mean {meant!r}? "
                    "Names are case-sensitive; "
                    f"{_describe(declared[meant])}"
                )
            )
        else:
            warnings.append(
                _clip(
                    f"[undeclared_parameter] {name!r} is not a parameter of this workflow and was ignored "
                    f"(declared: {_listing(declared)})."
                )
            )
    canonical: dict[str, str] = {}
    for param in params:
        error = _check_one(param, values=values, canonical=canonical, misnamed=param.name in misnamed)
        if error:
            errors.append(error)
    errors.extend(_dependency_errors(params, values=values, canonical=canonical, declared=declared))
    return ParameterCheck(errors=errors, warnings=warnings, canonical=canonical)


def _check_one(
    param: resources.WorkflowParameter,
    *,
    values: Mapping[str, Any],
    canonical: dict[str, str],
    misnamed: bool,
) -> str | None:
    """Check one declared parameter and, when it is fine, record its canonical value."""
    if param.name in values:
        value, origin = values[param.name], "value"
    elif param.default is not None:
        value, origin = param.default, "declared default"
    elif param.required and not misnamed:
        return _clip(f"[missing_parameter] required parameter {param.name!r} is missing; {_describe(param)}")
    else:
        return None
    try:
        text = canonical_value(param.type, value)
        _check_constraints(param, text)
    except ValueError as exc:
        hint = " (set it explicitly)" if origin != "value" else ""
        return _clip(
            f"[parameters] {param.name}: {origin} {_clip(repr(value), 60)} is invalid{hint}: {exc}; "
            f"{_describe(param)}"
        )
    canonical[param.name] = text
    return None


def _check_constraints(param: resources.WorkflowParameter, text: str) -> None:
    """Enum and pattern apply to the value, or to each item of an array; ranges to numbers."""
    is_array = param.type == "array"
    items = [_item_text(item) for item in json.loads(text)] if is_array else [text]
    for item in items:
        which = f"item {_clip(item, 40)!r} " if is_array else ""
        if param.enum is not None and not _enum_admits(param, item):
            raise ValueError(f"{which}not one of the allowed values")
        if param.pattern is not None and not _matches(param.pattern, item):
            raise ValueError(f"{which}does not match the pattern")
    if param.type in ("integer", "number"):
        _check_range(param, _numeric(text))


def _item_text(item: Any) -> str:
    if isinstance(item, bool):
        return "true" if item else "false"
    return item if isinstance(item, str) else repr(item) if isinstance(item, float) else str(item)


def _enum_admits(param: resources.WorkflowParameter, text: str) -> bool:
    allowed = param.enum or []
    if param.type in ("integer", "number"):
        return any(_same_number(option, text) for option in allowed)
    if param.type == "boolean":
        return text in (option.strip().lower() for option in allowed)
    return text in allowed


def _same_number(option: str, text: str) -> bool:
    try:
        return _numeric(canonical_value("number", option)) == _numeric(text)
    except ValueError:
        return False


def _numeric(text: str) -> int | float:
    return int(text) if _INTEGER_TEXT.fullmatch(text) else float(text)


def _check_range(param: resources.WorkflowParameter, number: float) -> None:
    if param.minimum is not None and number < param.minimum:
        raise ValueError(f"below the minimum {_number(param.minimum)}")
    if param.maximum is not None and number > param.maximum:
        raise ValueError(f"above the maximum {_number(param.maximum)}")


def _matches(pattern: str, text: str) -> bool:
    """Bounded matching: overlong values are refused before the regex engine sees them."""
    if len(text) > MAX_PATTERNED_VALUE_CHARS:
        raise ValueError(
            f"{len(text)} characters; at most {MAX_PATTERNED_VALUE_CHARS} can be checked against the pattern"
        )
    compiled = _compiled(pattern)
    if compiled is None:
        raise ValueError(
            "the catalog's pattern is unusable (too long or not a valid regex); report the workflow"
        )
    return compiled.fullmatch(text) is not None


@functools.lru_cache(maxsize=512)
def _compiled(pattern: str) -> re.Pattern[str] | None:
    if len(pattern) > MAX_PATTERN_CHARS:
        return None
    try:
        return re.compile(pattern)
    except re.error:
        return None


def _dependency_errors(
    params: Sequence[resources.WorkflowParameter],
    *,
    values: Mapping[str, Any],
    canonical: Mapping[str, str],
    declared: Mapping[str, resources.WorkflowParameter],
) -> list[str]:
    errors = []
    for param in params:
        if param.name not in values:
            continue
        for needed in param.depends_on or []:
            if needed in canonical or needed in values or (needed in declared and declared[needed].required):
                continue  # present, or already reported (invalid value / missing required parameter)
            schema = _describe(declared[needed]) if needed in declared else "not declared by this workflow"
            errors.append(
                _clip(f"[missing_parameter] {param.name!r} depends on {needed!r}, which is missing; {schema}")
            )
    return errors


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else repr(float(value))


def _describe(param: resources.WorkflowParameter) -> str:
    """The schema of a parameter, compactly, for the LLM to fix its value."""
    parts = [f"type {param.type}", "required" if param.required else "optional"]
    if param.enum is not None:
        parts.append(f"one of [{_listing(param.enum, 100)}]")
    if param.pattern is not None:
        parts.append(f"pattern {_clip(param.pattern, 60)}")
    if param.minimum is not None:
        parts.append(f"minimum {_number(param.minimum)}")
    if param.maximum is not None:
        parts.append(f"maximum {_number(param.maximum)}")
    if param.default is not None:
        parts.append(f"default {_clip(param.default, 30)!r}")
    if param.depends_on:
        parts.append(f"depends on {', '.join(param.depends_on)}")
    described = f"{param.name}: {', '.join(parts)}"
    if param.description:
        described += f" — {_clip(param.description, 60)}"
    return described
