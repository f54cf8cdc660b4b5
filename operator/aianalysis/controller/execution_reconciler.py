"""Reconciliation of failed WorkflowExecutions, without kopf: a failed execution starts exactly one
recovery AIAnalysis (planned by :mod:`aianalysis.controller.recovery`), or says on the execution why not.

WorkflowExecutions belong to another controller (the executor): this one puts no finalizer on them
and writes only its own ``RecoveryStarted`` condition and recovery fields. Each try starts from a
fresh read, and the write is conditional on that read's resourceVersion, so a condition the executor
wrote meanwhile is kept (the conditions are merged by type, never replaced from a stale copy). A
transient failure is retried a bounded number of times by :func:`drive`, not by a timer.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pydantic

from aianalysis import errors, kit, metrics, resources
from aianalysis.analysis import status
from aianalysis.controller import process, recovery
from aianalysis.kube import objects

log = logging.getLogger(__name__)

RECOVERY_CONDITION = "RecoveryStarted"


def needs_recovery(body: dict[str, Any]) -> bool:
    """A failed execution that has not been handled yet (recovery created, refused or given up).
    A status that cannot be read counts as needing a look: it is then reported once."""
    raw = body.get("status") or {}
    try:
        current = resources.WorkflowExecutionStatus.parse_known(raw)
    except pydantic.ValidationError:
        return isinstance(raw, dict) and raw.get("phase") == "Failed"
    return _unhandled(current)


def _unhandled(current: resources.WorkflowExecutionStatus) -> bool:
    return current.phase == "Failed" and not any(
        c.type == RECOVERY_CONDITION for c in current.conditions or []
    )


async def start_recovery(
    runtime: process.Runtime, ref: objects.Ref, *, sleep: kit.Sleep = asyncio.sleep
) -> kit.Transition | None:
    """Handle the failed execution ``ref`` once; transient errors are retried, boundedly."""
    backoff = kit.Backoff.of_reconciles(
        first_seconds=runtime.settings.retries.delay_seconds,
        retries=runtime.settings.retries.reconcile_limit,
    )
    limit = backoff.retries
    failure: Exception | None = None
    for tried in range(limit + 1):
        if tried:
            metrics.INTERNAL_RETRIES.labels(cause="cluster").inc()
            await sleep(backoff.delay(tried))
        try:
            return await _reconcile(runtime, ref)
        except errors.AIAnalysisError as exc:
            if not exc.retryable:
                return kit.Transition(type="Warning", reason=exc.reason, message=str(exc))
            failure = exc
        except Exception as exc:  # the task boundary: a bug is retried, boundedly, then reported
            log.exception("%s/%s: unexpected error", ref.namespace, ref.name)
            failure = exc
        log.warning("recovery of %s/%s postponed: %s", ref.namespace, ref.name, failure)
    return kit.Transition(
        type="Warning", reason="RecoveryFailed", message=f"gave up after {limit + 1} tries: {failure}"[:1024]
    )


async def _reconcile(runtime: process.Runtime, ref: objects.Ref) -> kit.Transition | None:
    """Failed WorkflowExecution → exactly one recovery AIAnalysis, or a clear reason why not."""
    body = await objects.get(runtime.api, ref.namespace, resources.WORKFLOWEXECUTION_PLURAL, ref.name)
    if body is None or (body.get("metadata") or {}).get("uid") != ref.uid:
        return None
    raw = body.get("status") or {}
    try:  # the one parse of this pass: the decision and the write below take this model
        current = resources.WorkflowExecutionStatus.parse_known(raw)
    except pydantic.ValidationError as exc:  # fail closed: reported once (per version), never in a loop
        if not (isinstance(raw, dict) and raw.get("phase") == "Failed"):
            return None
        metrics.UNREADABLE.labels(kind="WorkflowExecution").inc()
        return kit.Transition(
            type="Warning",
            reason="UnreadableStatus",
            message=f"no recovery started: the status cannot be read ({exc.errors()[0]['msg']})"[:1024],
        )
    if not _unhandled(current):
        return None
    ref_name = (body.get("spec") or {}).get("analysisRef")
    analysed = (
        await objects.get_aianalysis(runtime.api, ref.namespace, ref_name)
        if isinstance(ref_name, str)
        else None
    )
    decided = recovery.next_step(
        execution=body,
        status=current,
        analysis=analysed,
        max_attempts=runtime.settings.analysis.max_recovery_attempts,
    )
    now = resources.utcnow()
    if isinstance(decided, recovery.Create):
        plural = resources.AIANALYSIS_PLURAL
        created = await objects.create(runtime.api, decided.body, plural=plural) is not None
        await _write_execution(
            runtime,
            body,
            current,
            now=now,
            condition_status="True",
            reason="RecoveryCreated",
            message=f"recovery analysis {decided.name} (attempt {decided.attempt})",
            extra={"recoveryAnalysisRef": decided.name},
        )
        if created:
            metrics.RECOVERIES.labels(outcome="created").inc()
        return kit.Transition(
            type="Normal",
            reason="RecoveryCreated",
            message=f"created recovery analysis {decided.name} (attempt {decided.attempt})",
        )
    if isinstance(decided, recovery.GiveUp):
        await _write_execution(
            runtime,
            body,
            current,
            now=now,
            condition_status="False",
            reason="MaxRecoveryAttempts",
            message=decided.message,
            extra={"needsHumanReview": True, "humanReviewReason": decided.reason},
        )
        if analysed is not None:
            await _mark_analysis_given_up(runtime, analysed, decided, now=now)
        metrics.RECOVERIES.labels(outcome="max_attempts").inc()
        return kit.Transition(type="Warning", reason="MaxRecoveryAttempts", message=decided.message)
    await _write_execution(
        runtime,
        body,
        current,
        now=now,
        condition_status="False",
        reason=decided.reason,
        message=decided.message,
        extra={},
    )
    metrics.RECOVERIES.labels(outcome="no_reference").inc()
    return kit.Transition(
        type="Warning", reason=decided.reason, message=f"no recovery started: {decided.message}"
    )


async def _mark_analysis_given_up(
    runtime: process.Runtime, analysed: dict[str, Any], decided: recovery.GiveUp, *, now: Any
) -> None:
    """Through the status model (as :func:`recovery.next_step` parsed it), so ``reason`` and the
    ``Ready`` condition agree."""
    new = status.recovery_given_up(
        previous=decided.analysis_status, review_reason=decided.reason, message=decided.message, now=now
    )
    target = objects.Ref.of(analysed)
    await objects.write_status(
        runtime.api,
        namespace=target.namespace,
        plural=resources.AIANALYSIS_PLURAL,
        name=target.name,
        uid=target.uid,
        fields=new.merge_patch(),
        current=analysed.get("status") or None,
    )


async def _write_execution(
    runtime: process.Runtime,
    body: dict[str, Any],
    current: resources.WorkflowExecutionStatus,
    *,
    now: Any,
    condition_status: resources.ConditionStatus,
    reason: str,
    message: str,
    extra: dict[str, Any],
) -> None:
    """Our condition merged into the conditions ``body`` holds (``current``, its status as parsed),
    written only if ``body`` is still the latest version (else :class:`errors.ClusterError`: the next
    try re-reads and merges again)."""
    condition = resources.condition(
        RECOVERY_CONDITION,
        condition_status,
        reason,
        message,
        now=now,
        generation=body["metadata"].get("generation"),
    )
    conditions = resources.set_condition(current.conditions, condition)
    patch = {**extra, "conditions": [c.wire() for c in conditions]}
    ref = objects.Ref.of(body)
    plural = resources.WORKFLOWEXECUTION_PLURAL
    written = await objects.write_status_at(runtime.api, body, plural=plural, fields=patch)
    if written is objects.Written.CONFLICT:
        raise errors.ClusterError(f"WorkflowExecution {ref.namespace}/{ref.name} changed meanwhile")
