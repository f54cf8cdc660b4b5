"""Pure: a failed WorkflowExecution + the analysis that chose it → what recovery should do.

The recovery analysis is named ``<original>-recovery-<n>``: the name is the idempotency key, so
repeated events and operator restarts can never create a second one for the same attempt.
Its history holds every earlier attempt, walking back through recoveries.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pydantic

from aianalysis import resources

LABEL_ORIGINAL = "kubernaut.io/original-analysis"
LABEL_ATTEMPT = "kubernaut.io/recovery-attempt"
MAX_NAME = 253
SHORT_MAX, VALUE_MAX, TEXT_MAX = 253, 1024, 4096


@dataclasses.dataclass(frozen=True, kw_only=True)
class Create:
    """Create this recovery AIAnalysis (a 409 means it exists already: nothing to do)."""

    name: str
    body: dict[str, Any]
    attempt: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class GiveUp:
    """No further recovery; a person must decide."""

    reason: resources.HumanReviewReason
    message: str
    attempt: int
    analysis_status: resources.AIAnalysisStatus
    """The status of the analysis whose workflow kept failing, as parsed here (it is marked too)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Unusable:
    """The failed execution cannot start a recovery (explained on the WorkflowExecution)."""

    reason: str
    message: str


Course = Create | GiveUp | Unusable


def next_step(
    *,
    execution: dict[str, Any],
    status: resources.WorkflowExecutionStatus,
    analysis: dict[str, Any] | None,
    max_attempts: int,
) -> Course:
    """Decide for one failed WorkflowExecution (``execution`` and ``analysis`` are API bodies;
    ``status`` is the execution's status as the caller parsed it)."""
    wfe_name = execution["metadata"]["name"]
    failure = status.failure_details
    try:
        wfe_spec = resources.WorkflowExecutionSpec.model_validate(execution.get("spec") or {})
    except pydantic.ValidationError as exc:
        return Unusable(
            reason="InvalidExecution", message=f"{wfe_name} cannot be read: {exc.errors()[0]['msg']}"
        )
    if failure is None:
        return Unusable(reason="NoFailureDetails", message=f"{wfe_name} failed without status.failureDetails")
    if failure.reason in resources.NOT_STARTED_REASONS:
        return Unusable(
            reason="NotExecuted",
            message=f"{wfe_name} was not started ({failure.reason}): nothing ran, so nothing to recover from",
        )
    if analysis is None:
        return Unusable(
            reason="AnalysisNotFound",
            message=f"analysisRef {wfe_spec.analysis_ref!r} names no AIAnalysis in this namespace",
        )
    try:
        a_spec = resources.AIAnalysisSpec.model_validate(analysis.get("spec") or {})
        a_status = resources.AIAnalysisStatus.parse_known(analysis.get("status") or {})
    except pydantic.ValidationError as exc:
        return Unusable(
            reason="InvalidAnalysis",
            message=f"{wfe_spec.analysis_ref} cannot be read: {exc.errors()[0]['msg']}",
        )
    history = list(a_spec.recovery.previous_executions) if a_spec.recovery else []
    history.append(_attempt(wfe_name, wfe_spec, failure, a_spec, a_status))
    attempt = len(history)
    if attempt > max_attempts:
        return GiveUp(
            reason="max_recovery_attempts",
            attempt=attempt,
            analysis_status=a_status,
            message=f"{attempt} attempts failed (limit: {max_attempts} recoveries); a person decides",
        )
    original = (a_spec.recovery.original_analysis_ref if a_spec.recovery else None) or analysis["metadata"][
        "name"
    ]
    name = recovery_name(original, attempt)
    spec = a_spec.model_copy(
        update={
            "recovery": resources.RecoverySpec(
                attempt_number=attempt, original_analysis_ref=original, previous_executions=history
            )
        }
    )
    body = resources.new_aianalysis(
        name=name,
        namespace=execution["metadata"]["namespace"],
        spec=spec,
        labels={LABEL_ORIGINAL: original[:63], LABEL_ATTEMPT: str(attempt)},
        execution=execution,
    )
    return Create(name=name, body=body, attempt=attempt)


def recovery_name(original: str, attempt: int) -> str:
    suffix = f"-recovery-{attempt}"
    return original[: MAX_NAME - len(suffix)] + suffix


def _attempt(
    wfe_name: str,
    wfe_spec: resources.WorkflowExecutionSpec,
    failure: resources.ExecutionFailureDetails,
    a_spec: resources.AIAnalysisSpec,
    a_status: resources.AIAnalysisStatus,
) -> resources.PreviousExecution:
    rca = a_status.root_cause
    chosen = a_status.selected_workflow
    return resources.PreviousExecution(
        workflow_execution_ref=wfe_name,
        original_rca=resources.OriginalRCA(
            summary=(rca.summary if rca else "not recorded")[:TEXT_MAX],
            signal_type=(rca.signal_type if rca and rca.signal_type else a_spec.signal.type),
            severity=(rca.severity if rca and rca.severity else a_spec.signal.severity),
            contributing_factors=[f[:VALUE_MAX] for f in rca.contributing_factors] if rca else [],
        ),
        selected_workflow=resources.ExecutedWorkflow(
            workflow_id=wfe_spec.workflow_ref.workflow_id,
            version=wfe_spec.workflow_ref.version,
            container_image=wfe_spec.workflow_ref.container_image
            or (chosen.container_image if chosen else None),
            parameters=dict(wfe_spec.parameters),
            rationale=chosen.rationale[:TEXT_MAX] if chosen and chosen.rationale else None,
        ),
        failure=_clipped(failure),
    )


def _clipped(failure: resources.ExecutionFailureDetails) -> resources.ExecutionFailure:
    """The executor's report within the bounds of an AIAnalysis spec (long messages are cut)."""
    raw = failure.model_dump()
    for key, value in raw.items():
        if isinstance(value, str):
            raw[key] = value[: TEXT_MAX if key == "message" else SHORT_MAX]
    return resources.ExecutionFailure.model_validate(raw)
