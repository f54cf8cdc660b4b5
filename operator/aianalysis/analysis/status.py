"""Pure: analysis results → the AIAnalysis status model.

The status is a contract (style.md rule 3): every write is an :class:`resources.AIAnalysisStatus`,
written as its ``merge_patch()`` (explicit nulls remove whatever a previous write left behind).
"""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

from aianalysis import resources


def _ready(
    previous: resources.AIAnalysisStatus,
    status: resources.ConditionStatus,
    reason: str,
    message: str,
    *,
    now: datetime.datetime,
    generation: int | None,
) -> list[resources.Condition]:
    """``previous``' conditions with ``Ready`` set (its transition time kept if its status stays)."""
    ready = resources.condition(resources.READY, status, reason, message, now=now, generation=generation)
    return resources.set_condition(previous.conditions, ready)


def _ended(
    previous: resources.AIAnalysisStatus,
    phase: resources.AnalysisPhase,
    reason: str,
    message: str,
    *,
    now: datetime.datetime,
    generation: int | None,
) -> dict[str, Any]:
    """The fields every terminal status sets the same way: phase, reason, attempt and times."""
    return {
        "phase": phase,
        "reason": reason,
        "message": message,
        "observed_generation": generation,
        "attempt": previous.attempt,
        "started_at": previous.started_at or resources.timestamp(now),
        "completed_at": resources.timestamp(now),
    }


def pending(
    *,
    previous: resources.AIAnalysisStatus,
    reason: str,
    message: str,
    now: datetime.datetime,
    generation: int | None,
) -> resources.AIAnalysisStatus:
    """Held before its conversation starts (no free concurrency slot, say): ``Ready=False`` with
    ``reason``; the conversations started so far (``attempt``) are kept."""
    return resources.AIAnalysisStatus(
        phase="Pending",
        reason=reason,
        message=message,
        observed_generation=generation,
        attempt=previous.attempt,
        started_at=previous.started_at,
        llm=previous.llm,
        conditions=_ready(previous, "False", reason, message, now=now, generation=generation),
    )


def investigating(
    *, previous: resources.AIAnalysisStatus, attempt: int, now: datetime.datetime, generation: int | None
) -> resources.AIAnalysisStatus:
    """Marks the start of attempt ``attempt``; written before the first LLM request."""
    return resources.AIAnalysisStatus(
        phase="Investigating",
        reason="Investigating",
        message=f"investigation attempt {attempt} started",
        observed_generation=generation,
        attempt=attempt,
        started_at=previous.started_at or resources.timestamp(now),
        conditions=_ready(
            previous, "False", "Investigating", "the LLM is investigating", now=now, generation=generation
        ),
    )


def recovery_given_up(
    *,
    previous: resources.AIAnalysisStatus,
    review_reason: resources.HumanReviewReason,
    message: str,
    now: datetime.datetime,
) -> resources.AIAnalysisStatus:
    """The analysis whose workflow kept failing: no further recovery, a person must decide. Phase
    and selection stay; ``Ready`` names the same reason as the status."""
    ready = next((c for c in previous.conditions or [] if c.type == resources.READY), None)
    conditions = _ready(
        previous,
        ready.status if ready is not None else "False",
        "MaxRecoveryAttempts",
        message,
        now=now,
        generation=previous.observed_generation,
    )
    return previous.model_copy(
        update={
            "needs_human_review": True,
            "human_review_reason": review_reason,
            "reason": "MaxRecoveryAttempts",
            "message": message,
            "conditions": conditions,
        }
    )


def failed(
    *,
    previous: resources.AIAnalysisStatus,
    reason: str,
    message: str,
    now: datetime.datetime,
    generation: int | None,
    review_reason: resources.HumanReviewReason | None = None,
    llm: resources.LLMUsage | None = None,
) -> resources.AIAnalysisStatus:
    """Terminal failure: no selection; a person must look (``review_reason`` says why, if known)."""
    return resources.AIAnalysisStatus(
        **_ended(previous, "Failed", reason, message, now=now, generation=generation),
        needs_human_review=True,
        human_review_reason=review_reason,
        validation_attempts=previous.validation_attempts,
        llm=llm or previous.llm,
        conditions=_ready(previous, "False", reason, message, now=now, generation=generation),
    )


def completed(
    *,
    previous: resources.AIAnalysisStatus,
    decision: Decision,
    now: datetime.datetime,
    generation: int | None,
) -> resources.AIAnalysisStatus:
    """Terminal success of the pipeline: a valid selection, or a clear reason a person must decide."""
    review = decision.review_reason
    if decision.selected is not None:
        sel = decision.selected
        message = f"selected {sel.workflow_id} {sel.version} (confidence {sel.confidence:.3f})"
    else:
        message = f"no executable selection: {review}"
    if review is not None:
        message += f"; needs human review ({review})"
    reason = "WorkflowSelected" if decision.selected is not None and review is None else "NeedsHumanReview"
    return resources.AIAnalysisStatus(
        **_ended(previous, "Completed", reason, message, now=now, generation=generation),
        root_cause=decision.root_cause,
        selected_workflow=decision.selected,
        alternative_workflows=decision.alternatives or None,
        warnings=decision.warnings or None,
        needs_human_review=review is not None,
        human_review_reason=review,
        validation_attempts=decision.attempts or None,
        recovery=decision.recovery,
        llm=decision.llm,
        investigation=decision.investigation,
        conditions=_ready(previous, "True", reason, message, now=now, generation=generation),
    )


@dataclasses.dataclass(frozen=True, kw_only=True)
class Decision:
    """What the pipeline concluded, in status vocabulary (built by ``analysis``)."""

    selected: resources.SelectedWorkflow | None
    review_reason: resources.HumanReviewReason | None
    root_cause: resources.RootCause | None
    alternatives: list[resources.AlternativeWorkflow]
    warnings: list[str]
    attempts: list[resources.ValidationAttempt]
    recovery: resources.RecoveryStatus | None
    llm: resources.LLMUsage
    investigation: resources.InvestigationAudit | None = None
    """The audit of the conversation's tool calls (None: no tool box, e.g. a provider failure)."""
    failed_rules: list[str] = dataclasses.field(default_factory=list)
    """Validation rules that rejected an answer, one entry per rule per rejected answer."""
