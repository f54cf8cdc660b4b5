"""Reconciliation of AIAnalysis objects (the resource), without kopf: ``handlers`` calls in, this
module runs the pipeline (:mod:`aianalysis.pipeline`), writes the status, and tells the caller which
Event to post.

Idempotency: before the first LLM request the status is moved to ``Investigating`` with an
``attempt`` number. A terminal phase is never analysed again, so a restart (``on.resume``) or a
repeated handler call cannot produce a second completed analysis. That write is conditional on the
resourceVersion of the body the handler got: kopf may hand over a stale body (when its watch lags
behind its own patches for longer than its consistency timeout, an analysed object looks new
again), and then the write conflicts, the object is re-read and found terminal, and no second
conversation starts.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pydantic

from aianalysis import custom_objects, errors, metrics, pipeline, resources, status
from aianalysis import runtime as runtime_mod

log = logging.getLogger(__name__)

TERMINAL = ("Completed", "Failed")


async def reconcile(
    runtime: runtime_mod.Runtime,
    *,
    name: str,
    namespace: str,
    body: dict[str, Any],
    final_try: bool,
    reread: bool = False,
) -> runtime_mod.Transition | None:
    """Analyse one AIAnalysis to a terminal status. Raises retryable errors unless ``final_try``.
    ``reread``: ``body`` was just read from the API server (after a stale one)."""
    previous = _current_status(body)
    if previous.phase in TERMINAL:
        return None
    generation = body.get("metadata", {}).get("generation")
    now = pipeline.utcnow
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
        return runtime_mod.Transition(type="Warning", reason="InvalidSpec", message=message)
    marked = status.investigating(
        previous=previous, attempt=(previous.attempt or 0) + 1, now=now(), generation=generation
    )
    version = body.get("metadata", {}).get("resourceVersion")
    if not await _write(runtime, name, namespace, marked, resource_version=version):
        if reread:
            raise errors.ClusterError(f"AIAnalysis {namespace}/{name} keeps changing; will retry")
        fresh = await custom_objects.get_aianalysis(runtime.api, namespace, name)
        if fresh is None:  # deleted meanwhile
            return None
        return await reconcile(
            runtime, name=name, namespace=namespace, body=fresh, final_try=final_try, reread=True
        )
    started = time.monotonic()
    try:
        async with runtime.semaphore:
            metrics.IN_FLIGHT.inc()
            try:
                decision = await pipeline.analyze(
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
        return runtime_mod.Transition(type="Warning", reason=exc.reason, message=message)
    final = status.completed(previous=marked, decision=decision, now=now(), generation=generation)
    await _write(runtime, name, namespace, final)
    metrics.record_decision(decision, provider=runtime.provider.name, seconds=time.monotonic() - started)
    kind = "Normal" if decision.review_reason is None else "Warning"
    return runtime_mod.Transition(type=kind, reason=final.reason or "Completed", message=final.message or "")


def _current_status(body: dict[str, Any]) -> resources.AIAnalysisStatus:
    try:
        return resources.AIAnalysisStatus.parse_known(body.get("status") or {})
    except pydantic.ValidationError:
        log.warning("unreadable status; treating the analysis as new")
        return resources.AIAnalysisStatus()


def _first_errors(exc: pydantic.ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5])


async def _write(
    runtime: runtime_mod.Runtime,
    name: str,
    namespace: str,
    new: resources.AIAnalysisStatus,
    *,
    resource_version: str | None = None,
) -> bool:
    """False when ``resource_version`` is given and the object has changed since (409 Conflict)."""
    return await custom_objects.patch_status(
        runtime.api,
        namespace,
        resources.AIANALYSIS_PLURAL,
        name,
        status.merge_patch(new),
        resource_version=resource_version,
    )
