"""Reconciliation of AIAnalysis objects, without kopf: ``handlers`` calls in, this module does the
work and the status I/O, and tells the caller which Event to post.

Idempotency: before the first LLM request the status is moved to ``Investigating`` with an
``attempt`` number. A terminal phase is never analysed again, so a restart (``on.resume``) or a
repeated handler call cannot produce a second completed analysis. That write is conditional on the
resourceVersion of the body the handler got: kopf may hand over a stale body (when its watch lags
behind its own patches for longer than its consistency timeout, an analysed object looks new
again), and then the write conflicts, the object is re-read and found terminal, and no second
conversation starts.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from typing import Any

import pydantic
from kubernetes import client as k8s

from aianalysis import analysis, errors, llm, metrics, recovery, resources, status, tools
from aianalysis import budget as budget_mod
from aianalysis import catalog as catalog_mod
from aianalysis import catalog_sync as catalog_sync_mod
from aianalysis import settings as settings_mod
from aianalysis.tools import k8s as k8s_tools

log = logging.getLogger(__name__)

TERMINAL = ("Completed", "Failed")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Transition:
    """A terminal transition the caller announces as a Kubernetes Event."""

    type: str  # Normal | Warning
    reason: str
    message: str


@dataclasses.dataclass(kw_only=True)
class Runtime:
    """Everything one operator process shares: opened at startup, closed at cleanup."""

    settings: settings_mod.Settings
    catalog: catalog_mod.Catalog
    provider: llm.Provider
    api: k8s.ApiClient
    reader: tools.ClusterReader
    semaphore: asyncio.Semaphore
    catalog_sync: catalog_sync_mod.CatalogSync
    budget: budget_mod.Gate

    @classmethod
    def create(
        cls, settings: settings_mod.Settings, api: k8s.ApiClient, *, clock: budget_mod.Clock | None = None
    ) -> Runtime:
        catalog = catalog_mod.Catalog()
        gate = budget_mod.Gate(budget_mod.Limits.from_settings(settings), clock=clock)
        observe = metrics.llm_observer(settings.provider)

        def on_request(request: llm.RequestRecord) -> None:
            observe(request)
            gate.observe(request)

        return cls(
            settings=settings,
            catalog=catalog,
            budget=gate,
            provider=llm.make_provider(settings, on_request=on_request),
            api=api,
            reader=k8s_tools.KubernetesReader(api),
            semaphore=asyncio.Semaphore(settings.max_concurrent_analyses),
            catalog_sync=catalog_sync_mod.CatalogSync(
                api=api, catalog=catalog, on_change=lambda: metrics.CATALOG_SIZE.set(len(catalog))
            ),
        )

    async def load_catalog(self) -> None:
        """Fill the catalog from the cluster, then keep following it (before any analysis runs)."""
        count = await asyncio.to_thread(self.catalog_sync.load)
        log.info("catalog loaded: %d RemediationWorkflow objects, %d entries", count, len(self.catalog))
        self.catalog_sync.start()

    async def aclose(self) -> None:
        await self.budget.aclose()
        self.catalog_sync.stop()
        await self.provider.aclose()
        await asyncio.to_thread(self.api.close)


async def reconcile_analysis(
    runtime: Runtime,
    *,
    name: str,
    namespace: str,
    body: dict[str, Any],
    final_try: bool,
    reread: bool = False,
) -> Transition | None:
    """Analyse one AIAnalysis to a terminal status. Raises retryable errors unless ``final_try``.
    ``reread``: ``body`` was just read from the API server (after a stale one)."""
    previous = _current_status(body)
    if previous.phase in TERMINAL:
        return None
    generation = body.get("metadata", {}).get("generation")
    now = analysis.utcnow
    try:
        spec = resources.AIAnalysisSpec.model_validate(body.get("spec") or {})
    except pydantic.ValidationError as exc:
        message = f"spec cannot be analysed: {_first_errors(exc)}"
        await _write(
            runtime,
            name,
            namespace,
            status.failed(
                previous=previous, reason="InvalidSpec", message=message, now=now(), generation=generation
            ),
        )
        metrics.record_failure(None)
        return Transition(type="Warning", reason="InvalidSpec", message=message)
    fresh = await _await_budget(
        runtime, name=name, namespace=namespace, body=body, spec=spec, previous=previous
    )
    if fresh is not body:  # it waited: start over from the object as it is now
        if fresh is None:
            return None
        return await reconcile_analysis(
            runtime, name=name, namespace=namespace, body=fresh, final_try=final_try
        )
    marked = status.investigating(
        previous=previous, attempt=(previous.attempt or 0) + 1, now=now(), generation=generation
    )
    version = body.get("metadata", {}).get("resourceVersion")
    if not await _write(runtime, name, namespace, marked, resource_version=version):
        if reread:
            raise errors.ClusterError(f"AIAnalysis {namespace}/{name} keeps changing; will retry")
        fresh = await _get_analysis(runtime, namespace, name)
        if fresh is None:  # deleted meanwhile
            return None
        return await reconcile_analysis(
            runtime, name=name, namespace=namespace, body=fresh, final_try=final_try, reread=True
        )
    started = time.monotonic()
    try:
        async with runtime.semaphore:
            metrics.IN_FLIGHT.inc()
            try:
                decision = await analysis.analyze(
                    spec,
                    catalog=runtime.catalog,
                    provider=runtime.provider,
                    reader=runtime.reader,
                    settings=runtime.settings,
                    now=now,
                )
            finally:
                metrics.IN_FLIGHT.dec()
    except errors.AIAnalysisError as exc:
        if exc.retryable and not final_try:
            raise
        message = f"{exc.reason}: {exc}"
        review: resources.HumanReviewReason = "provider_unavailable"
        await _write(
            runtime,
            name,
            namespace,
            status.failed(
                previous=marked,
                reason=exc.reason,
                message=message,
                now=now(),
                generation=generation,
                review_reason=review,
            ),
        )
        metrics.record_failure(review)
        return Transition(type="Warning", reason=exc.reason, message=message)
    final = status.completed(previous=marked, decision=decision, now=now(), generation=generation)
    await _write(runtime, name, namespace, final)
    metrics.record_decision(decision, provider=runtime.provider.name, seconds=time.monotonic() - started)
    kind = "Normal" if decision.review_reason is None else "Warning"
    return Transition(type=kind, reason=final.reason or "Completed", message=final.message or "")


async def _await_budget(
    runtime: Runtime,
    *,
    name: str,
    namespace: str,
    body: dict[str, Any],
    spec: resources.AIAnalysisSpec,
    previous: resources.AIAnalysisStatus,
) -> dict[str, Any] | None:
    """The LLM budget hook: may a conversation start now? ``body`` if at once; after waiting
    (``Pending``, ``BudgetExhausted``), the object re-read (None: deleted)."""
    ticket = budget_mod.ticket(body, severity=spec.signal.severity, previous_attempt=previous.attempt)

    async def show_waiting(message: str) -> None:
        current: dict[str, Any] | None = body
        for _ in range(3):  # each retry follows someone else's write (the intake's occurrences)
            seen = _current_status(current) if current is not None else None
            if seen is None or seen.phase in TERMINAL:  # deleted, or ended (resolved alert)
                runtime.budget.withdraw(ticket.uid)
                return
            waiting = budget_mod.waiting_status(
                previous=seen,
                message=message,
                now=status.timestamp(analysis.utcnow()),
                generation=current["metadata"].get("generation") if current else None,
            )
            version = current["metadata"].get("resourceVersion") if current else None
            if await _write(runtime, name, namespace, waiting, resource_version=version):
                return
            current = await _get_analysis(runtime, namespace, name)

    if not await runtime.budget.acquire(ticket, on_wait=show_waiting):
        return body
    return await _get_analysis(runtime, namespace, name)


def _current_status(body: dict[str, Any]) -> resources.AIAnalysisStatus:
    try:
        return resources.AIAnalysisStatus.parse_known(body.get("status") or {})
    except pydantic.ValidationError:
        log.warning("unreadable status; treating the analysis as new")
        return resources.AIAnalysisStatus()


def _first_errors(exc: pydantic.ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5])


async def _write(
    runtime: Runtime,
    name: str,
    namespace: str,
    new: resources.AIAnalysisStatus,
    *,
    resource_version: str | None = None,
) -> bool:
    """False when ``resource_version`` is given and the object has changed since (409 Conflict)."""
    return await _patch_status(
        runtime,
        namespace,
        resources.AIANALYSIS_PLURAL,
        name,
        status.merge_patch(new),
        resource_version=resource_version,
    )


RECOVERY_CONDITION = "RecoveryStarted"


def execution_needs_recovery(body: dict[str, Any]) -> bool:
    """A failed execution that has not been handled yet (recovery created, refused or given up)."""
    st = body.get("status") or {}
    handled = any(c.get("type") == RECOVERY_CONDITION for c in st.get("conditions") or [])
    return st.get("phase") == "Failed" and not handled


async def reconcile_execution(runtime: Runtime, *, body: dict[str, Any]) -> Transition | None:
    """Failed WorkflowExecution → exactly one recovery AIAnalysis, or a clear reason why not."""
    if not execution_needs_recovery(body):
        return None
    namespace = body["metadata"]["namespace"]
    ref = (body.get("spec") or {}).get("analysisRef")
    analysis_body = await _get_analysis(runtime, namespace, ref) if isinstance(ref, str) else None
    decided = recovery.plan(
        execution=body, analysis=analysis_body, max_attempts=runtime.settings.max_recovery_attempts
    )
    now = analysis.utcnow()
    if isinstance(decided, recovery.Create):
        created = await _create_analysis(runtime, namespace, decided.body)
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
        return Transition(
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
        if analysis_body is not None:
            await _patch_status(
                runtime,
                namespace,
                resources.AIANALYSIS_PLURAL,
                analysis_body["metadata"]["name"],
                {
                    "needsHumanReview": True,
                    "humanReviewReason": decided.reason,
                    "reason": "MaxRecoveryAttempts",
                    "message": decided.message,
                },
            )
        metrics.RECOVERIES.labels(outcome="max_attempts").inc()
        return Transition(type="Warning", reason="MaxRecoveryAttempts", message=decided.message)
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
    return Transition(
        type="Warning", reason=decided.reason, message=f"no recovery started: {decided.message}"
    )


async def _get_analysis(runtime: Runtime, namespace: str, name: str) -> dict[str, Any] | None:
    api = k8s.CustomObjectsApi(runtime.api)
    try:
        found: Any = await asyncio.to_thread(
            api.get_namespaced_custom_object,
            resources.GROUP,
            resources.VERSION,
            namespace,
            resources.AIANALYSIS_PLURAL,
            name,
        )
    except k8s.ApiException as exc:
        if exc.status == 404:
            return None
        raise errors.ClusterError(
            f"reading AIAnalysis {namespace}/{name} failed: {exc.status} {exc.reason}"
        ) from exc
    return dict(found)


async def _create_analysis(runtime: Runtime, namespace: str, body: dict[str, Any]) -> bool:
    """Creates it; False when it exists already (the name is the idempotency key)."""
    api = k8s.CustomObjectsApi(runtime.api)
    try:
        await asyncio.to_thread(
            api.create_namespaced_custom_object,
            resources.GROUP,
            resources.VERSION,
            namespace,
            resources.AIANALYSIS_PLURAL,
            body,
        )
    except k8s.ApiException as exc:
        if exc.status == 409:
            return False
        raise errors.ClusterError(f"creating recovery analysis failed: {exc.status} {exc.reason}") from exc
    return True


async def _write_execution(
    runtime: Runtime,
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
    await _patch_status(runtime, meta["namespace"], resources.WORKFLOWEXECUTION_PLURAL, meta["name"], patch)


async def _patch_status(
    runtime: Runtime,
    namespace: str,
    plural: str,
    name: str,
    fields: dict[str, Any],
    *,
    resource_version: str | None = None,
) -> bool:
    """Merge-patch the status; with ``resource_version``, only if the object is still at that version
    (False on 409 Conflict)."""
    api = k8s.CustomObjectsApi(runtime.api)
    patch: dict[str, Any] = {"status": fields}
    if resource_version is not None:
        patch["metadata"] = {"resourceVersion": resource_version}
    try:
        await asyncio.to_thread(
            api.patch_namespaced_custom_object_status,
            resources.GROUP,
            resources.VERSION,
            namespace,
            plural,
            name,
            patch,
        )
    except k8s.ApiException as exc:
        if exc.status == 409 and resource_version is not None:
            return False
        raise errors.ClusterError(
            f"status write of {plural}/{namespace}/{name} failed: {exc.status}"
        ) from exc
    return True
