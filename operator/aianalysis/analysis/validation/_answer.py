"""Checks on the answer as a whole: was it submitted, complete, well-formed and consistent."""

from __future__ import annotations

from collections.abc import Mapping

import pydantic
import pydantic_core

from aianalysis import catalog, resources
from aianalysis.analysis import answer
from aianalysis.analysis.validation import _messages

_MAX_SCHEMA_ERRORS = 8


def truncated_error() -> str:
    return (
        "[truncated] the answer was cut off at the output token limit (stop_reason max_tokens); "
        "call submit_selection again with a complete, more concise answer."
    )


def no_submission_error(prose: str | None) -> str:
    excerpt = (
        f' (you wrote: "{_messages.clip(" ".join(prose.split()), 80)}")' if prose and prose.strip() else ""
    )
    return _messages.clip(
        f"[no_submission] no submit_selection call was made{excerpt}; "
        "the answer is only accepted as the input of the submit_selection tool."
    )


def malformed_error(problem: str) -> str:
    return _messages.clip(
        f"[schema] the submit_selection arguments are not a JSON object ({problem}); call "
        "submit_selection again with one JSON object matching its schema."
    )


def schema_errors(exc: pydantic.ValidationError) -> list[str]:
    details = exc.errors(include_url=False)
    errors = [_schema_error(detail) for detail in details[:_MAX_SCHEMA_ERRORS]]
    if len(details) > _MAX_SCHEMA_ERRORS:
        errors.append(f"[schema] … and {len(details) - _MAX_SCHEMA_ERRORS} more schema errors.")
    return errors


def _schema_error(detail: pydantic_core.ErrorDetails) -> str:
    path = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in detail["loc"])
    shown = "" if detail["type"] == "missing" else f" (got {_messages.clip(repr(detail['input']), 60)})"
    return _messages.clip(f"[schema] {path.lstrip('.') or '(answer)'}: {detail['msg']}{shown}")


def consistency_errors(
    parsed: answer.SelectionAnswer, *, recovery: resources.RecoverySpec | None
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


def _recovery_field_errors(parsed: answer.SelectionAnswer) -> list[str]:
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


def drop_unknown_alternatives(
    parsed: answer.SelectionAnswer,
    *,
    index: catalog.Catalog,
    warnings: list[str],
    seen: Mapping[str, set[str]] | None = None,
    business: resources.BusinessContext | None = None,
) -> answer.SelectionAnswer:
    """Alternatives are informational, but they reach status where people read them: only
    workflows a catalog tool showed in this conversation (``seen``) and the policy admits for this
    incident (``business``) are kept; others (text injected into an alert can name any id) are
    dropped with a warning, never fatal."""
    kept = []
    for alt in parsed.alternative_workflows:
        found = index.get(alt.workflow_id, alt.version)
        why = None
        if found is None:
            why = "is not in the catalog"
        elif seen is not None and alt.workflow_id not in seen:
            why = "was not shown by a catalog tool in this conversation"
        elif business is not None and catalog.policy.ineligibility(found.spec, business):
            why = "is not eligible for this incident"
        if why is not None:
            version = f" version {alt.version!r}" if alt.version else ""
            warnings.append(
                _messages.clip(
                    f"[unknown_alternative] alternative {alt.workflow_id!r}{version} {why}; dropped."
                )
            )
        else:
            kept.append(alt)
    if len(kept) == len(parsed.alternative_workflows):
        return parsed
    return parsed.model_copy(update={"alternative_workflows": kept})
