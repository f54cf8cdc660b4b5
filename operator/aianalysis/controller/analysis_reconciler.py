"""Reconciliation of one AIAnalysis (the resource), without kopf: ``controller.handlers`` starts :func:`drive`
for each object that is not terminal; it runs the pipeline (:mod:`aianalysis.analysis.pipeline`), writes
the status and returns the :class:`runtime.Transition` to announce.

Every path ends:

* the first try starts from the body the watch delivered for a new object (no read), later tries
  from a fresh read; every write is bound to the ``uid`` and to the resourceVersion this run last
  read or wrote (the version a write returns: no read between its writes), so an object that
  changed meanwhile (a lagging watch, a long wait for the LLM budget or a concurrency slot) is found
  out by the API server: the write is refused, the object read again and the decision taken again.
  A result is never written onto another object created under the same name;
* permanent API refusals (400/403/404/422) end the analysis ``Failed`` with a reason naming them;
  transient API errors, provider unavailability and unexpected exceptions are retried a bounded
  number of times (``settings.retries.reconcile_limit``/``provider_limit``), then end ``Failed``;
* ``status.attempt`` counts LLM conversations, written before each one starts; at
  ``max_conversations`` no further one starts (``ConversationLimit``). A conversation that finished
  but whose status write failed is written again, never run again;
* a status that cannot be parsed is left alone and reported (fail closed), never treated as new.

The decision "may this conversation start now?" is taken in one place, :func:`_conversation_slot`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import pydantic

from aianalysis import errors, kit, metrics, resources
from aianalysis.analysis import pipeline, scope, status
from aianalysis.assessment import history, targets
from aianalysis.controller import llm_budget, process
from aianalysis.kube import calls, objects

log = logging.getLogger(__name__)

TERMINAL_WRITE_TRIES = 3
STALE_RETRIES = 3
"""Tries that start again at once because the object changed under them; then with backoff."""
PENDING_AFTER_SECONDS = 1.0
"""A wait for a concurrency slot shows as ``Pending`` once it lasts this long: a shorter one is not
worth a status write (nor the read after it) in an alert storm, where most waits are short."""


async def deleted(runtime: process.Runtime, ref: objects.Ref) -> bool:
    """The AIAnalysis ``ref`` is gone (deleted, or replaced under its name). False while it exists
    — and when the API server cannot say: its task then finds out at its next read."""
    try:
        body = await objects.get_aianalysis(runtime.api, ref.namespace, ref.name)
    except errors.AIAnalysisError as exc:
        log.warning("%s/%s: could not tell whether it was deleted: %s", ref.namespace, ref.name, exc)
        return False
    return body is None or (body.get("metadata") or {}).get("uid") != ref.uid


class _Gone(Exception):
    """The object was deleted or replaced under its name: nothing more to do for it."""


@dataclasses.dataclass
class _Finished:
    final: resources.AIAnalysisStatus
    decision: status.Decision
    seconds: float


async def drive(
    runtime: process.Runtime,
    ref: objects.Ref,
    *,
    given: list[dict[str, Any]] | None = None,
    sleep: kit.Sleep = asyncio.sleep,
) -> kit.Transition | None:
    """Bring the AIAnalysis ``ref`` to a terminal status (or leave it, saying why). Always ends.
    ``given``: the object as the watch delivered it (possibly behind), which the first try takes
    out instead of reading it."""
    run = _Run(runtime, ref, given)
    retries: dict[str, int] = {}
    stale = 0
    failure: errors.AIAnalysisError
    while True:
        try:
            return await run.step()
        except _Gone:
            return None
        except _Stale:  # what it held was behind the object: decide again from a fresh read
            stale += 1
            if stale <= STALE_RETRIES:
                continue
            cause = "cluster"
            failure = errors.ClusterError(f"AIAnalysis {ref.namespace}/{ref.name} keeps changing")
        except _Unreadable as exc:  # fail closed: leave it as it is, say why, do not analyse it again
            metrics.UNREADABLE.labels(kind="AIAnalysis").inc()
            log.warning("%s/%s: left alone: %s", ref.namespace, ref.name, exc)
            return kit.Transition(
                type="Warning", reason="UnreadableStatus", message=f"not analysed: {exc}"[:1024]
            )
        except errors.AIAnalysisError as exc:
            if not exc.retryable:
                return await run.fail(exc.reason, f"{exc.reason}: {exc}", review=_review(exc))
            cause, failure = ("provider" if isinstance(exc, errors.ProviderError) else "cluster"), exc
        except Exception as exc:  # the task boundary: a bug is retried, boundedly, then reported
            log.exception("%s/%s: unexpected error", ref.namespace, ref.name)
            cause, failure = "internal", errors.AIAnalysisError(f"{type(exc).__name__}: {exc}")
            failure.reason = "InternalError"
        run.last_error = failure
        retries[cause] = retries.get(cause, 0) + 1
        backoff = kit.Backoff.of_reconciles(
            first_seconds=runtime.settings.retries.delay_seconds,
            retries=(
                runtime.settings.retries.provider_limit - 1
                if cause == "provider"
                else runtime.settings.retries.reconcile_limit
            ),
        )
        if not backoff.allows(retries[cause]):
            return await run.fail(failure.reason, f"{failure.reason}: {failure}", review=_review(failure))
        metrics.INTERNAL_RETRIES.labels(cause=cause).inc()
        delay = backoff.delay(retries[cause])
        log.warning("%s/%s: %s; trying again in %.0f s", ref.namespace, ref.name, failure, delay)
        await sleep(delay)


def _review(exc: errors.AIAnalysisError) -> resources.HumanReviewReason | None:
    if isinstance(exc, errors.ProviderUnavailableError):
        return "provider_unavailable"
    if isinstance(exc, errors.ProviderError):
        return "provider_error"
    return None


class _Run:
    """The state of one :func:`drive` across its tries."""

    def __init__(
        self, runtime: process.Runtime, ref: objects.Ref, given: list[dict[str, Any]] | None = None
    ) -> None:
        self.runtime = runtime
        self.ref = ref
        self.given = given if given is not None else []
        """The watch's body, taken out by the first read (nothing keeps it after)."""
        self.previous = resources.AIAnalysisStatus()
        self.raw_status: dict[str, Any] | None = None
        self.version: str | None = None
        """The object's resourceVersion as last read or written by this run."""
        self.generation: int | None = None
        self.finished: _Finished | None = None
        self.last_error: errors.AIAnalysisError | None = None
        self.unbilled = False
        """The last conversation failed before any billed response: the next one takes its number."""

    async def step(self) -> kit.Transition | None:
        body = await self._read()
        if self.finished is not None:  # never run a finished conversation again: write it again
            if self.previous == self.finished.final:  # the last write landed; its answer was lost
                return self._finished_transition(self.finished)
            return await self._finish(self.finished)
        if self.previous.phase in resources.TERMINAL_PHASES:
            return None
        try:
            spec = resources.AIAnalysisSpec.model_validate(body.get("spec") or {})
        except pydantic.ValidationError as exc:
            return await self.fail(
                "InvalidSpec", f"spec cannot be analysed: {_first_errors(exc)}", review=None
            )
        scoped = scope.own_namespace(
            spec,
            namespace=self.ref.namespace,
            allowed=self.runtime.settings.safety.cross_namespace_pairs(),
        )
        if isinstance(scoped, str):
            return await self.fail("NamespaceNotAllowed", scoped, review=None)
        spec = scoped
        if self._over_limit():
            return await self._limit_reached()
        ticket = llm_budget.ticket(
            body, severity=spec.signal.severity, previous_attempt=self.previous.attempt
        )
        del body  # a waiting analysis holds its spec and status, not the object (alert storms)
        async with self._conversation_slot(ticket):
            reuse = self.unbilled and bool(self.previous.attempt)
            attempt = (self.previous.attempt or 0) + (0 if reuse else 1)
            marked = status.investigating(
                previous=self.previous, attempt=attempt, now=resources.utcnow(), generation=self.generation
            )

            async def mark_started() -> None:
                """The Investigating write (attempt counted) that every conversation begins with."""
                await self._write_next(marked)
                self.previous = marked
                if attempt > 1 and not reuse:
                    metrics.CONVERSATIONS_RESTARTED.inc()

            started = time.monotonic()
            metrics.IN_FLIGHT.inc()
            # The write and the pipeline's first reads overlap; no LLM request before it landed.
            marking = asyncio.ensure_future(mark_started())
            try:
                decision = await _within_deadline(
                    pipeline.analyze(
                        spec,
                        catalog=self.runtime.catalog,
                        provider=self.runtime.provider,
                        reader=self.runtime.reader,
                        settings=self.runtime.settings,
                        history=self._history(spec),
                        namespace=self.ref.namespace,
                        metrics=self.runtime.metrics_reader,
                        started=marking,
                    ),
                    seconds=self.runtime.settings.analysis.deadline_seconds,
                )
            except errors.ProviderError as exc:
                self.unbilled = not exc.billed
                raise
            finally:
                metrics.IN_FLIGHT.dec()
                await _settled(marking)
        final = status.completed(
            previous=marked, decision=decision, now=resources.utcnow(), generation=self.generation
        )
        self.finished = _Finished(final=final, decision=decision, seconds=time.monotonic() - started)
        return await self._finish(self.finished)

    @contextlib.asynccontextmanager
    async def _conversation_slot(self, ticket: llm_budget.Ticket) -> AsyncIterator[None]:
        """The one place that decides whether this analysis' conversation may start now: the LLM
        budget (``Pending``, ``BudgetExhausted``), then a free concurrency slot (``Pending``,
        ``ConcurrencyLimit``)."""
        await self._await_budget(ticket)
        semaphore, slots = self.runtime.semaphore, self.runtime.settings.analysis.max_concurrent
        if semaphore.locked():
            metrics.WAITING.labels(reason="concurrency").inc()
            try:
                if not await _acquired_within(semaphore, PENDING_AFTER_SECONDS):
                    waiting = status.pending(
                        previous=self.previous,
                        reason="ConcurrencyLimit",
                        message=f"waiting for a free slot ({slots} run at once)",
                        now=resources.utcnow(),
                        generation=self.generation,
                    )
                    await self._write_next(waiting)
                    await semaphore.acquire()
            finally:
                metrics.WAITING.labels(reason="concurrency").dec()
        else:
            await semaphore.acquire()
        try:
            yield
        finally:
            semaphore.release()

    async def _await_budget(self, ticket: llm_budget.Ticket) -> None:
        """Wait while the LLM budget is spent (the gate orders waiters by severity, then age). An
        analysis that ends meanwhile (a resolved alert) is withdrawn by the intake; one deleted
        meanwhile is cancelled with its task."""

        async def show_waiting(message: str) -> None:
            waiting = status.pending(
                previous=self.previous,
                reason="BudgetExhausted",
                message=message,
                now=resources.utcnow(),
                generation=self.generation,
            )
            await self._write_next(waiting)

        await self.runtime.budget.acquire(ticket, on_wait=show_waiting)

    def _over_limit(self) -> bool:
        """Another paid conversation would exceed the cap (one that ended before any billed
        response in this process is tried again under its own number)."""
        started = self.previous.attempt or 0
        return started >= self.runtime.settings.analysis.max_conversations and not (self.unbilled and started)

    async def _limit_reached(self) -> kit.Transition | None:
        cap = self.runtime.settings.analysis.max_conversations
        last = self.last_error
        if last is not None:
            return await self.fail(
                last.reason, f"{last.reason} after {cap} conversation(s): {last}", review=_review(last)
            )
        return await self.fail(
            "ConversationLimit",
            f"{self.previous.attempt} LLM conversation(s) started without a result (limit {cap}); "
            "not starting another",
            review=None,
        )

    async def _history(self, spec: resources.AIAnalysisSpec) -> history.History:
        """Earlier executions on this incident's resource and the rejections of workflows on it (its
        namespace is the analysis' own)."""
        settings = self.runtime.settings
        executions, rejections = await asyncio.gather(
            targets.executions(self.runtime.api, namespace=self.ref.namespace),
            self._rejections(),
        )
        return history.of_target(
            executions,
            rejections=rejections,
            kind=spec.resource.kind,
            name=spec.resource.name,
            namespace=spec.resource.namespace or self.ref.namespace,
            now=resources.utcnow(),
            window_seconds=settings.assessment.history_seconds,
            recurrence_threshold=settings.assessment.recurrence_threshold,
        )

    async def _rejections(self) -> list[dict[str, Any]]:
        """The namespace's WorkflowRejections. A cluster without the kind (its CRD not applied yet after
        an upgrade: Helm does not add CRDs on upgrade) has none, said in the log; any other refusal
        (RBAC) fails the read, never hides a rejection."""
        try:
            return await objects.list_objects(
                self.runtime.api, plural=resources.WORKFLOWREJECTION_PLURAL, namespace=self.ref.namespace
            )
        except errors.ClusterRejectedError as exc:
            if exc.status != calls.NOT_FOUND:
                raise
            log.warning("no WorkflowRejection kind on this cluster (apply crds/): rejections are not seen")
            return []

    async def _read(self) -> dict[str, Any]:
        if self.given:
            body: dict[str, Any] | None = self.given.pop()
        else:
            body = await objects.get_aianalysis(self.runtime.api, self.ref.namespace, self.ref.name)
        if body is None or (body.get("metadata") or {}).get("uid") != self.ref.uid:
            raise _Gone
        self.version = body["metadata"].get("resourceVersion")
        self.generation = body["metadata"].get("generation")
        self.raw_status = body.get("status") or None
        try:
            self.previous = resources.AIAnalysisStatus.parse_known(body.get("status") or {})
        except pydantic.ValidationError as exc:
            raise _Unreadable(f"its status cannot be read ({_first_errors(exc)})") from None
        return body

    async def _write_next(self, new: resources.AIAnalysisStatus) -> None:
        """Write a status that is not terminal, bound to the version this run last read or wrote.
        Refused because the object moved on since (during a long wait, say): what this run holds is
        behind, so it reads again and decides again (:class:`_Stale`)."""
        if await self._write(new, resource_version=self.version) is objects.Written.CONFLICT:
            raise _Stale

    async def _write(
        self, new: resources.AIAnalysisStatus, *, resource_version: str | None = None
    ) -> objects.Written:
        fields = new.merge_patch()
        written, version = await objects.write_status(
            self.runtime.api,
            namespace=self.ref.namespace,
            plural=resources.AIANALYSIS_PLURAL,
            name=self.ref.name,
            uid=self.ref.uid,
            fields=fields,
            current=self.raw_status,
            resource_version=resource_version,
        )
        if written is objects.Written.DROPPED:
            raise _Gone
        if written is objects.Written.OK:
            self.raw_status = objects.merged(self.raw_status, fields)
            self.version = version
        elif resource_version is None:
            raise errors.ClusterError(f"AIAnalysis {self.ref.namespace}/{self.ref.name} changed meanwhile")
        return written

    async def _finish(self, finished: _Finished) -> kit.Transition | None:
        if not await self._write_terminal(finished.final):
            return _already_terminal(self.ref)
        return self._finished_transition(finished)

    async def _write_terminal(self, new: resources.AIAnalysisStatus) -> bool:
        """Write a terminal status once: bound to the resourceVersion this run last read or wrote
        (read again when it has none, or when the object moved since), and never over a terminal
        status another writer (a second leader after a split brain) made meanwhile — its selection
        may already be executing. False when that happened (ours is dropped)."""
        for number in range(TERMINAL_WRITE_TRIES):
            if number or self.version is None:
                await self._read()
            if self.previous.phase in resources.TERMINAL_PHASES:
                return self.previous == new
            if await self._write(new, resource_version=self.version) is objects.Written.OK:
                self.previous = new
                return True
        raise errors.ClusterError(f"AIAnalysis {self.ref.namespace}/{self.ref.name} keeps changing")

    def _finished_transition(self, finished: _Finished) -> kit.Transition:
        decision = finished.decision
        metrics.record_decision(
            decision,
            provider=self.runtime.provider.name,
            seconds=finished.seconds,
            namespace=self.ref.namespace,
        )
        kind = "Normal" if decision.review_reason is None else "Warning"
        final = finished.final
        return kit.Transition(type=kind, reason=final.reason or "Completed", message=final.message or "")

    async def fail(
        self, reason: str, message: str, *, review: resources.HumanReviewReason | None
    ) -> kit.Transition | None:
        """End ``Failed``. If even that write cannot be made, the Event and a metric still say why."""
        failed = status.failed(
            previous=self.previous,
            reason=reason,
            message=message[:4096],
            now=resources.utcnow(),
            generation=self.generation,
            review_reason=review,
        )
        try:
            if not await self._write_terminal(failed):
                return _already_terminal(self.ref)
        except (_Gone, _Unreadable):
            return None
        except errors.AIAnalysisError as exc:
            log.error(
                "%s/%s: the Failed status could not be written: %s", self.ref.namespace, self.ref.name, exc
            )
            metrics.STATUS_WRITES_DROPPED.labels(
                reason="rejected" if not exc.retryable else "unavailable"
            ).inc()
            message = f"{message} (and the status could not be written: {exc})"
        metrics.record_failure(review)
        return kit.Transition(type="Warning", reason=reason, message=message)


async def _settled(task: asyncio.Future[None]) -> None:
    """``task`` ended: cancelled if it had not (the pipeline failed before it needed it), its
    outcome taken (a failure that mattered was raised by the pipeline that awaited it)."""
    if not task.done():
        task.cancel()
    await asyncio.wait([task])  # never raises the task's failure; this task's own cancel passes
    if not task.cancelled():
        task.exception()


async def _acquired_within(semaphore: asyncio.Semaphore, seconds: float) -> bool:
    """Whether ``semaphore`` was acquired within ``seconds`` (False: it was not, and is not held)."""
    try:
        await asyncio.wait_for(semaphore.acquire(), timeout=seconds)
    except TimeoutError:
        return False
    return True


async def _within_deadline(work: Awaitable[status.Decision], *, seconds: float) -> status.Decision:
    try:
        return await asyncio.wait_for(work, timeout=seconds)
    except TimeoutError:
        raise errors.AnalysisDeadlineError(
            f"the analysis did not finish within its deadline of {seconds:g} s "
            "(AIANALYSIS_ANALYSIS_DEADLINE_SECONDS)"
        ) from None


def _already_terminal(ref: objects.Ref) -> kit.Transition:
    metrics.STATUS_WRITES_DROPPED.labels(reason="already_terminal").inc()
    log.warning("%s/%s: another writer ended it first; this result is dropped", ref.namespace, ref.name)
    return kit.Transition(
        type="Warning",
        reason="AlreadyTerminal",
        message="another writer ended this analysis first; its status was kept and this result dropped",
    )


class _Stale(Exception):
    """A write bound to the version this run holds was refused: the object had moved on since."""


class _Unreadable(Exception):
    """The object's status does not parse (a newer version wrote it, or a person edited it)."""


def _first_errors(exc: pydantic.ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5])
