"""The effectiveness assessment of ended WorkflowExecutions, without kopf (the operator's side:
read-only on workloads, it writes only ``status.assessment`` of the execution).

Timeline, all in the execution's status so that a restart resumes it where it was:
1. The executor records ``assessment.before`` (the target's fingerprint) right before the Job.
2. Execution ``Completed`` → this module records the fingerprint *after* it, the window (the
   workflow's ``stabilizationWindow`` or the setting) and ``assessAfter = completedAt + window``
   (phase ``Stabilizing``).
3. At ``assessAfter`` it observes the target (Pods since the execution, alert, metrics, fingerprint
   now, clock) and writes the verdict (phase ``Assessed``) with an Event and metrics.
A dry-run execution gets ``NotExecuted`` at once. Failed executions are not assessed (recovery
takes them). Each step starts from a fresh read and writes conditionally on it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import logging
from typing import Any

import pydantic

from aianalysis import errors, kit, metrics, resources
from aianalysis.assessment import fingerprint, judge, podhealth, queries, targets, timeline
from aianalysis.controller import process
from aianalysis.kube import objects, readers

log = logging.getLogger(__name__)

MAX_RETRY_DELAY_SECONDS = 300.0
DONE = ("Assessed", "NotExecuted")
LATE_SECONDS = 3600.0
"""A window that ended longer ago than this when first seen is not assessed (``NotObserved``)."""
WFE = resources.WORKFLOWEXECUTION_PLURAL


@dataclasses.dataclass(frozen=True)
class Wait:
    """Nothing to do before ``seconds`` from now (the window runs)."""

    seconds: float


@dataclasses.dataclass(frozen=True)
class _Case:
    """One WorkflowExecution as read at the start of this step, and the target it names."""

    runtime: process.Runtime
    body: dict[str, Any]
    st: resources.WorkflowExecutionStatus
    target: resources.ResourceRef | None

    async def write(self, assessment: resources.Assessment) -> None:
        """``status.assessment`` only, conditional on the version read (a conflict: read again)."""
        ref = objects.Ref.of(self.body)
        written, _ = await objects.write_status(
            self.runtime.api,
            namespace=ref.namespace,
            plural=WFE,
            name=ref.name,
            uid=ref.uid,
            fields={"assessment": assessment.wire()},
            current=self.body.get("status") or None,
            resource_version=self.body["metadata"].get("resourceVersion"),
        )
        if written is objects.Written.CONFLICT:
            raise errors.ClusterError(f"WorkflowExecution {ref.namespace}/{ref.name} changed meanwhile")

    async def read_target(self, target: resources.ResourceRef) -> dict[str, Any] | None:
        return await targets.current(
            self.runtime.api, kind=target.kind, name=target.name, namespace=target.namespace
        )


def needs_assessment(body: dict[str, Any]) -> bool:
    """A completed execution whose assessment is not final (a status that cannot be read: no)."""
    try:
        st = resources.WorkflowExecutionStatus.parse_known(body.get("status") or {})
    except pydantic.ValidationError:
        return False
    return _unassessed(st)


def _unassessed(st: resources.WorkflowExecutionStatus) -> bool:
    return st.phase == "Completed" and (st.assessment is None or st.assessment.phase not in DONE)


async def assess_when_due(
    runtime: process.Runtime,
    ref: objects.Ref,
    *,
    sleep: kit.Sleep = asyncio.sleep,
    now: resources.Clock = resources.utcnow,
) -> kit.Transition | None:
    """Assess ``ref`` once its window ended; transient errors are retried, boundedly."""
    limit = runtime.settings.retries.reconcile_limit
    tried = 0
    while True:
        try:
            moved = await advance(runtime, ref, now=now)
        except errors.AIAnalysisError as exc:
            if not exc.retryable or tried >= limit:
                return kit.Transition(type="Warning", reason="AssessmentFailed", message=str(exc)[:1024])
            tried += 1
            metrics.INTERNAL_RETRIES.labels(cause="cluster").inc()
            log.warning("assessment of %s/%s postponed: %s", ref.namespace, ref.name, exc)
            await sleep(
                min(MAX_RETRY_DELAY_SECONDS, runtime.settings.retries.delay_seconds * 2 ** (tried - 1))
            )
            continue
        if isinstance(moved, Wait):
            await sleep(max(0.0, moved.seconds))
            continue
        return moved


async def advance(
    runtime: process.Runtime, ref: objects.Ref, *, now: resources.Clock = resources.utcnow
) -> kit.Transition | Wait | None:
    """One step of the timeline for ``ref`` (see the module docstring)."""
    body = await objects.get(runtime.api, ref.namespace, WFE, ref.name)
    if body is None or (body.get("metadata") or {}).get("uid") != ref.uid:
        return None
    try:  # the one parse of this step
        st = resources.WorkflowExecutionStatus.parse_known(body.get("status") or {})
    except pydantic.ValidationError:
        return None
    if not _unassessed(st):
        return None
    spec = resources.WorkflowExecutionSpec.model_validate(body.get("spec") or {})
    current = st.assessment or resources.Assessment()
    if st.dry_run:
        done = current.model_copy(
            update={
                "phase": "NotExecuted",
                "verdict": "not_executed",
                "reason": "DryRun",
                "message": "dry run: no Job was created, nothing to assess",
                "assessed_at": resources.timestamp(now()),
            }
        )
        await _Case(runtime, body, st, None).write(done)
        metrics.record_assessment("not_executed", "DryRun", None)
        return kit.Transition(type="Normal", reason="NotExecuted", message=done.message or "")
    case = _Case(runtime, body, st, _target(body, spec))
    if current.phase is None:
        return await _start_window(case, current, spec, now=now())
    due = resources.parse_timestamp(current.assess_after)
    left = (due - now()).total_seconds() if due else 0.0
    if left > 0:
        return Wait(left)
    return await _assess(case, current, now=now())


async def _start_window(
    case: _Case,
    current: resources.Assessment,
    spec: resources.WorkflowExecutionSpec,
    *,
    now: datetime.datetime,
) -> Wait:
    runtime, st, target = case.runtime, case.st, case.target
    entry = runtime.catalog.get(spec.workflow_ref.workflow_id, spec.workflow_ref.version)
    window = timeline.window_seconds(
        entry.spec.stabilization_window if entry else None,
        default_seconds=runtime.settings.assessment.window_seconds,
    )
    ended = resources.parse_timestamp(st.completed_at) or now
    after = None
    if target is not None:
        try:
            found = await case.read_target(target)
        except readers.Unavailable:
            found = None
        after = fingerprint.fingerprint(found) if found is not None else None
    due = ended + datetime.timedelta(seconds=window)
    if (now - due).total_seconds() > LATE_SECONDS:
        await case.write(_too_late(current, window=window, now=now))
        metrics.record_assessment("unknown", "NotObserved", None)
        return Wait(0.0)  # the next step finds it assessed and stops
    stabilizing = current.model_copy(
        update={
            "phase": "Stabilizing",
            "window_seconds": window,
            "assess_after": resources.timestamp(due),
            "after_spec_hash": after,
            "reason": "Stabilizing",
            "message": f"assessing {window}s after the execution ended",
        }
    )
    await case.write(stabilizing)
    return Wait(max(0.0, (due - now).total_seconds()))


async def _assess(case: _Case, current: resources.Assessment, *, now: datetime.datetime) -> kit.Transition:
    seen = await _observe(case, current, now=now)
    verdict = judge.judge(seen) if seen is not None else _no_target()
    final = current.model_copy(
        update={
            "phase": "Assessed",
            "verdict": verdict.verdict,
            "score": verdict.score,
            "reason": verdict.reason,
            "message": verdict.message[:1024],
            "assessed_at": resources.timestamp(now),
            "current_spec_hash": seen.now if seen is not None else None,
            "evidence": [e.model_copy(update={"detail": e.detail[:1024]}) for e in verdict.evidence],
        }
    )
    await case.write(final)
    metrics.record_assessment(verdict.verdict, verdict.reason, verdict.score)
    score = f" (score {verdict.score:.2f})" if verdict.score is not None else ""
    return kit.Transition(
        type="Normal" if verdict.verdict == "effective" else "Warning",
        reason=f"Assessed{verdict.verdict.title().replace('_', '')}",
        message=f"{verdict.verdict}{score}: {verdict.message}"[:1024],
    )


async def _observe(
    case: _Case, current: resources.Assessment, *, now: datetime.datetime
) -> judge.Observed | None:
    """Everything the verdict is made of, read now (None: the execution names no target)."""
    runtime, body, st, target = case.runtime, case.body, case.st, case.target
    if target is None:
        return None
    settings = runtime.settings
    skew = (now - await targets.server_time(runtime.api)).total_seconds()
    ended = resources.parse_timestamp(st.completed_at) or now
    try:
        found = await case.read_target(target)
    except readers.Unavailable as exc:
        return judge.Observed(
            target_found=False,
            alert_detail=str(exc),
            skew_seconds=skew,
            max_skew_seconds=settings.assessment.max_clock_skew_seconds,
        )
    pods = None
    if found is not None:
        pods = await targets.pods_of(
            runtime.api, kind=target.kind, name=target.name, namespace=target.namespace
        )
    client = runtime.metrics_reader  # the process' one Prometheus client (the tools' too)
    source = queries.ReaderSource(client) if client is not None else None
    before = current.before
    started = resources.parse_timestamp(before.at) if before else None
    alert, alert_detail = await _alert(
        runtime, body, source, started=started, ended=ended, now=now, target=target
    )
    return judge.Observed(
        target_found=found is not None,
        health=podhealth.of_pods(pods, since=ended) if pods is not None else None,
        alert=alert,
        alert_detail=alert_detail,
        metrics=await _metrics(source, target, before=started, now=now),
        before=before.spec_hash if before else None,
        after=current.after_spec_hash,
        now=fingerprint.fingerprint(found) if found is not None else None,
        skew_seconds=skew,
        max_skew_seconds=settings.assessment.max_clock_skew_seconds,
    )


async def _alert(
    runtime: process.Runtime,
    body: dict[str, Any],
    source: queries.Source | None,
    *,
    started: datetime.datetime | None,
    ended: datetime.datetime,
    now: datetime.datetime,
    target: resources.ResourceRef,
) -> tuple[judge.AlertState, str]:
    """From the intake's notifications on the incident's analysis; else Prometheus' ALERTS: resolved
    only when it was firing right before the execution (the baseline's time; else a minute before
    it ended) and is not now — no series either time is "no data", unknown."""
    analysis = await _incident_analysis(runtime, body)
    intake = ((analysis or {}).get("status") or {}).get("intake") or {}
    alert_name = (((analysis or {}).get("spec") or {}).get("signal") or {}).get("alertName")
    if intake:
        resolved = resources.parse_timestamp(intake.get("resolvedAt"))
        seen = resources.parse_timestamp(intake.get("lastSeenAt"))
        if resolved and resolved > ended and (seen is None or seen <= resolved):
            return "resolved", f"the intake received the resolved notification at {intake.get('resolvedAt')}"
        if seen and seen > ended:
            return "firing", f"the alert fired again at {intake.get('lastSeenAt')} (intake)"
        if source is None:
            return "unknown", "no resolved notification from the intake since the execution (no data)"
    if source is None or not alert_name:
        return "not_applicable", "no alert to check (not from the intake, no Prometheus configured)"
    query = queries.alert_query(str(alert_name), target.namespace)
    try:
        firing = await source.value(query, at=now)
        if firing:
            return "firing", f"{alert_name} is firing (Prometheus ALERTS)"
        was = await source.value(query, at=started or ended - datetime.timedelta(seconds=60))
    except queries.Unanswered as exc:
        return "unknown", f"Prometheus did not answer: {exc}"
    if was:
        return "resolved", f"{alert_name} fired before the execution and does not now (Prometheus ALERTS)"
    return "unknown", f"no ALERTS series for {alert_name} before or after (no data)"


async def _metrics(
    source: queries.Source | None,
    target: resources.ResourceRef,
    *,
    before: datetime.datetime | None,
    now: datetime.datetime,
) -> judge.Metrics | None:
    if source is None:
        return None
    standard = queries.standard_queries(target.kind, target.name, target.namespace or "")
    if not standard or before is None:
        return judge.Metrics(score=None, detail="no standard metrics for this target (or no baseline time)")
    better, compared, notes = 0, 0, []
    try:
        for name, query in standard.items():
            old, new = await source.value(query, at=before), await source.value(query, at=now)
            if old is None or new is None:
                notes.append(f"{name}: no data")
                continue
            compared += 1
            better += new <= old
            notes.append(f"{name}: {old:g} → {new:g}")
    except queries.Unanswered as exc:
        return judge.Metrics(score=None, detail=f"Prometheus did not answer: {exc}", unavailable=True)
    return judge.Metrics(score=round(better / compared, 2) if compared else None, detail="; ".join(notes))


async def _incident_analysis(runtime: process.Runtime, body: dict[str, Any]) -> dict[str, Any] | None:
    """The analysis the intake counts alerts on: the original one of a recovery chain."""
    namespace = body["metadata"]["namespace"]
    name = (body.get("spec") or {}).get("analysisRef")
    analysis = await objects.get_aianalysis(runtime.api, namespace, name) if name else None
    original = (((analysis or {}).get("spec") or {}).get("recovery") or {}).get("originalAnalysisRef")
    if original and original != name:
        return await objects.get_aianalysis(runtime.api, namespace, original)
    return analysis


def _target(body: dict[str, Any], spec: resources.WorkflowExecutionSpec) -> resources.ResourceRef | None:
    target = spec.target_resource
    if target is None:
        return None
    return (
        target if target.namespace else target.model_copy(update={"namespace": body["metadata"]["namespace"]})
    )


def _too_late(current: resources.Assessment, *, window: int, now: datetime.datetime) -> resources.Assessment:
    """Completed long before this operator first saw it (installed or upgraded since): what the
    target does now says nothing about that execution."""
    return current.model_copy(
        update={
            "phase": "Assessed",
            "verdict": "unknown",
            "reason": "NotObserved",
            "window_seconds": window,
            "assessed_at": resources.timestamp(now),
            "message": "the execution ended long before its window could be observed; not assessed",
        }
    )


def _no_target() -> judge.Judgement:
    return judge.Judgement(
        verdict="unknown",
        reason="NoTarget",
        score=None,
        evidence=(),
        message="the execution names no targetResource: nothing to observe",
    )
