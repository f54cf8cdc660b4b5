"""Reconciliation of failed WorkflowExecutions, without kopf: a failed execution starts exactly one
recovery AIAnalysis (planned by :mod:`aianalysis.recovery`), or says on the execution why not."""

from __future__ import annotations

from typing import Any

from aianalysis import custom_objects, metrics, pipeline, recovery, resources, status
from aianalysis import runtime as runtime_mod

RECOVERY_CONDITION = "RecoveryStarted"


def needs_recovery(body: dict[str, Any]) -> bool:
    """A failed execution that has not been handled yet (recovery created, refused or given up)."""
    st = body.get("status") or {}
    handled = any(c.get("type") == RECOVERY_CONDITION for c in st.get("conditions") or [])
    return st.get("phase") == "Failed" and not handled


async def reconcile(runtime: runtime_mod.Runtime, *, body: dict[str, Any]) -> runtime_mod.Transition | None:
    """Failed WorkflowExecution → exactly one recovery AIAnalysis, or a clear reason why not."""
    if not needs_recovery(body):
        return None
    namespace = body["metadata"]["namespace"]
    ref = (body.get("spec") or {}).get("analysisRef")
    analysed = (
        await custom_objects.get_aianalysis(runtime.api, namespace, ref) if isinstance(ref, str) else None
    )
    decided = recovery.plan(
        execution=body, analysis=analysed, max_attempts=runtime.settings.max_recovery_attempts
    )
    now = pipeline.utcnow()
    if isinstance(decided, recovery.Create):
        created = await custom_objects.create_aianalysis(runtime.api, namespace, decided.body)
        await _write_execution(
            runtime,
            body,
            now=now,
            condition_status="True",
            reason="RecoveryCreated",
            message=f"recovery analysis {decided.name} (attempt {decided.attempt})",
            extra={"recoveryAnalysisRef": decided.name},
        )
        if created:
            metrics.RECOVERIES.labels(outcome="created").inc()
        return runtime_mod.Transition(
            type="Normal",
            reason="RecoveryCreated",
            message=f"created recovery analysis {decided.name} (attempt {decided.attempt})",
        )
    if isinstance(decided, recovery.GiveUp):
        await _write_execution(
            runtime,
            body,
            now=now,
            condition_status="False",
            reason="MaxRecoveryAttempts",
            message=decided.message,
            extra={"needsHumanReview": True, "humanReviewReason": decided.reason},
        )
        if analysed is not None:
            await custom_objects.patch_status(
                runtime.api,
                namespace,
                resources.AIANALYSIS_PLURAL,
                analysed["metadata"]["name"],
                {
                    "needsHumanReview": True,
                    "humanReviewReason": decided.reason,
                    "reason": "MaxRecoveryAttempts",
                    "message": decided.message,
                },
            )
        metrics.RECOVERIES.labels(outcome="max_attempts").inc()
        return runtime_mod.Transition(type="Warning", reason="MaxRecoveryAttempts", message=decided.message)
    await _write_execution(
        runtime,
        body,
        now=now,
        condition_status="False",
        reason=decided.reason,
        message=decided.message,
        extra={},
    )
    metrics.RECOVERIES.labels(outcome="no_reference").inc()
    return runtime_mod.Transition(
        type="Warning", reason=decided.reason, message=f"no recovery started: {decided.message}"
    )


async def _write_execution(
    runtime: runtime_mod.Runtime,
    body: dict[str, Any],
    *,
    now: Any,
    condition_status: resources.ConditionStatus,
    reason: str,
    message: str,
    extra: dict[str, Any],
) -> None:
    previous = [
        c for c in (body.get("status") or {}).get("conditions") or [] if c.get("type") != RECOVERY_CONDITION
    ]
    condition = resources.Condition(
        type=RECOVERY_CONDITION,
        status=condition_status,
        reason=reason,
        message=message[:1024],
        last_transition_time=status.timestamp(now),
        observed_generation=body["metadata"].get("generation"),
    )
    patch = {**extra, "conditions": [*previous, condition.wire()]}
    resources.WorkflowExecutionStatus.parse_known({**(body.get("status") or {}), **patch})
    meta = body["metadata"]
    await custom_objects.patch_status(
        runtime.api, meta["namespace"], resources.WORKFLOWEXECUTION_PLURAL, meta["name"], patch
    )
