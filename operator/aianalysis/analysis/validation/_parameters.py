"""The LLM's parameter values against a workflow's declared parameters.

* **Constraints.** ``enum`` and ``pattern`` apply to the value, or to each item of an array;
  ``minimum``/``maximum`` to numbers. Values are checked in their canonical form (see
  ``_coerce``).
* **Regex bounds.** Patterns run on the ``regex`` engine with a timeout
  (:data:`MATCH_TIMEOUT_SECONDS`): a catastrophic pattern in a catalog entry fails the value with
  a clear error instead of hanging (the caller runs validation off the event loop). Patterns
  longer than :data:`MAX_PATTERN_CHARS` are refused, values longer than
  :data:`MAX_PATTERNED_VALUE_CHARS` are refused *before* matching, and matching is a full match
  (a pattern without anchors still has to cover the whole value).
* **Defaults.** Every absent parameter with a ``default`` is filled in (so the execution and the
  recovery history see the value that ran) and the default is checked like a value.
  ``dependsOn`` is checked for parameters the LLM supplied; a dependency is satisfied by a
  supplied or defaulted value.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

import regex

from aianalysis import resources
from aianalysis.analysis.validation import _coerce, _messages

MAX_PATTERN_CHARS = 256
MAX_PATTERNED_VALUE_CHARS = 1024
MATCH_TIMEOUT_SECONDS = 0.25


@dataclasses.dataclass(frozen=True)
class ParameterCheck:
    """Outcome of :func:`check_parameters`; ``canonical`` holds only declared, well-typed values."""

    errors: list[str]
    warnings: list[str]
    canonical: dict[str, str]


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
                _messages.clip(
                    f"[parameters] unknown parameter {name!r}: did you mean {meant!r}? "
                    "Names are case-sensitive; "
                    f"{_messages.describe_parameter(declared[meant])}"
                )
            )
        else:
            warnings.append(
                _messages.clip(
                    f"[undeclared_parameter] {name!r} is not a parameter of this workflow and was ignored "
                    f"(declared: {_messages.listing(declared)})."
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
        return _messages.clip(
            f"[missing_parameter] required parameter {param.name!r} is missing; "
            f"{_messages.describe_parameter(param)}"
        )
    else:
        return None
    try:
        text = _coerce.canonical_value(param.type, value)
        _check_constraints(param, text)
    except ValueError as exc:
        hint = " (set it explicitly)" if origin != "value" else ""
        return _messages.clip(
            f"[parameters] {param.name}: {origin} {_messages.clip(repr(value), 60)} is invalid{hint}: {exc}; "
            f"{_messages.describe_parameter(param)}"
        )
    canonical[param.name] = text
    return None


def _check_constraints(param: resources.WorkflowParameter, text: str) -> None:
    """Enum and pattern apply to the value, or to each item of an array; ranges to numbers."""
    is_array = param.type == "array"
    items = [_item_text(item) for item in json.loads(text)] if is_array else [text]
    for item in items:
        which = f"item {_messages.clip(item, 40)!r} " if is_array else ""
        if param.enum is not None and not _enum_admits(param, item):
            raise ValueError(f"{which}not one of the allowed values")
        if param.pattern is not None and not _matches(param.pattern, item):
            raise ValueError(f"{which}does not match the pattern")
    if param.type in ("integer", "number"):
        _check_range(param, _coerce.numeric(text))


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
        return _coerce.numeric(_coerce.canonical_value("number", option)) == _coerce.numeric(text)
    except ValueError:
        return False


def _check_range(param: resources.WorkflowParameter, number: float) -> None:
    if param.minimum is not None and number < param.minimum:
        raise ValueError(f"below the minimum {_messages.plain_number(param.minimum)}")
    if param.maximum is not None and number > param.maximum:
        raise ValueError(f"above the maximum {_messages.plain_number(param.maximum)}")


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
    try:
        return compiled.fullmatch(text, timeout=MATCH_TIMEOUT_SECONDS) is not None
    except TimeoutError:
        raise ValueError(
            f"the catalog's pattern did not finish within {MATCH_TIMEOUT_SECONDS:g}s on this value "
            "(a catastrophic regex); report the workflow"
        ) from None


@functools.lru_cache(maxsize=512)
def _compiled(pattern: str) -> regex.Pattern[str] | None:
    if len(pattern) > MAX_PATTERN_CHARS:
        return None
    try:
        return regex.compile(pattern)
    except regex.error:
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
            schema = (
                _messages.describe_parameter(declared[needed])
                if needed in declared
                else "not declared by this workflow"
            )
            errors.append(
                _messages.clip(
                    f"[missing_parameter] {param.name!r} depends on {needed!r}, which is missing; {schema}"
                )
            )
    return errors
