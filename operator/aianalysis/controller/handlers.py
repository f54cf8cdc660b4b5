"""kopf handlers — the only module that imports kopf. Thin: each delegates to a reconciler
(``analysis_reconciler``, ``execution_reconciler``) with the process's ``runtime``.

AIAnalyses are not kopf's: kopf would list and dispatch every one, the terminal ones too (tens of
KiB each, thousands in a cluster that keeps them). The leader follows only the unfinished ones with
a list-then-watch of its own, filtered by the API server (``runtime.follow_analyses``), and gives
each one task, as kopf's events do for WorkflowExecutions.

Run it with ``aianalysis run`` (or ``kopf run -m aianalysis.controller.handlers --all-namespaces``;
only ``aianalysis run --namespace`` scopes the AIAnalysis watch, through kopf's memo).

Only watch-event handlers: kopf keeps no progress or last-handled configuration for our objects
(its diff-base storage is switched off), so annotations on an object — copied with
``kubectl get -o yaml``, garbage, or hostile — cannot make it look handled, delay it or wedge it.
What an object needs is decided from its own status (and its uid); each object that needs work
gets one task (``runtime.workers``) that ends, with bounded retries, in a terminal status.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from concurrent import futures
from typing import Any

import kopf

import aianalysis.settings
from aianalysis import intake, kit, kube, metrics, notify, resources
from aianalysis.controller import (
    analysis_reconciler,
    assessment_reconciler,
    execution_reconciler,
    process,
    rejection_reconciler,
)
from aianalysis.kube import objects

G, V = resources.GROUP, resources.VERSION
AIA, WFE, WFR = (
    resources.AIANALYSIS_PLURAL,
    resources.WORKFLOWEXECUTION_PLURAL,
    resources.WORKFLOWREJECTION_PLURAL,
)

log = logging.getLogger(__name__)

#: Set when this replica lost its Lease: kopf stops, and the process exits non-zero (restarted as
#: a standby) rather than act beside the new leader. An asyncio flag (kopf awaits it on its loop; a
#: threading.Event would park an executor thread that keeps the process from exiting).
_LEASE_LOST = asyncio.Event()
#: kopf's stop flag: set when the Lease is lost, and at cleanup — kopf leaves the task that waits for
#: it running after a signal and then waits 5 s for it before exiting (every stop, every restart).
_STOP = asyncio.Event()


def _lease_lost() -> None:
    _LEASE_LOST.set()
    _STOP.set()


class _NoDiffBase(kopf.DiffBaseStorage):
    """No handler here compares with a last-handled configuration: none is read or written."""

    def fetch(self, *, body: kopf.Body) -> kopf.BodyEssence | None:
        return None

    def store(self, *, body: kopf.Body, patch: kopf.Patch, essence: kopf.BodyEssence) -> None:
        return None


@kopf.on.login()
def login(**_: Any) -> kopf.ConnectionInfo:
    """kopf connects with the operator's own credentials (``kube.config``), not its built-in guess."""
    return kopf.ConnectionInfo(**kube.login_fields())


@kopf.on.startup()
async def startup(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    """Idempotent: kopf retries a failed startup, and a retry neither re-binds ports nor opens a
    second set of clients."""
    config = aianalysis.settings.from_env()
    settings.persistence.diffbase_storage = _NoDiffBase()
    settings.posting.level = logging.WARNING
    kube.configure_kopf(settings, settings=config)  # kopf's calls bounded as ours are
    runtime: process.Runtime | None = getattr(memo, "runtime", None)
    if runtime is None:
        # Every API call is a blocking one on a thread of the loop's default executor; its default
        # size (cores + 4) would queue an alert storm's reads and writes behind each other.
        asyncio.get_running_loop().set_default_executor(
            futures.ThreadPoolExecutor(kube.CONNECTION_POOL_SIZE, thread_name_prefix="aianalysis-io")
        )
        runtime = memo.runtime = process.Runtime.create(config, kube.api_client(settings=config))
        metrics.serve(config.observability.metrics_port)
        await runtime.serve_health(config.observability.health_port)
    # With several replicas, only the Lease holder goes on; the others wait here (not ready).
    await runtime.lead(on_lost=_lease_lost)
    # What the previous leader (or this process before a restart) spent of the LLM budget.
    await runtime.budget.load()
    # Handlers start only after startup: no analysis ever sees a partially loaded catalog.
    await runtime.load_catalog()
    # Only the leader gets here: it follows the unfinished AIAnalyses (of ``--namespace``, if given).
    await runtime.follow_analyses(
        namespaces=getattr(memo, "namespaces", ()),
        on_seen=lambda ref, version, body: _analyze(runtime, ref, version, body),
        on_left=lambda ref: _left(runtime, ref),
    )
    if config.intake.port and getattr(memo, "intake", None) is None:
        memo.intake = intake.Intake.create(config, runtime.api, on_cancelled=runtime.budget.withdraw)
        await memo.intake.start(config.intake.port)
    if getattr(memo, "notifier", None) is None:
        # Only the leader gets here: only it posts to Alertmanager.
        memo.notifier = notify.Notifier.create(
            config, runtime.api, namespaces=getattr(memo, "namespaces", ())
        )
        if memo.notifier is not None:
            memo.notifier.start()
    log.info(
        "aianalysis operator starting: provider=%s model=%s concurrency=%d",
        config.llm.provider,
        config.llm.model if config.llm.provider != "offline" else "-",
        config.analysis.max_concurrent,
    )


@kopf.on.cleanup()
async def cleanup(memo: kopf.Memo, **_: Any) -> None:
    _STOP.set()
    receiver: intake.Intake | None = getattr(memo, "intake", None)
    if receiver is not None:
        await receiver.stop()
    notifier: notify.Notifier | None = getattr(memo, "notifier", None)
    if notifier is not None:
        await notifier.aclose()
    runtime: process.Runtime | None = getattr(memo, "runtime", None)
    if runtime is not None:
        await runtime.aclose()


#: How long an AIAnalysis that left the watch may keep its task running before the operator asks
#: the API server whether it was deleted (then the task is cancelled): its own terminal write is
#: what usually moved it out, and the task ends within this time without a question asked.
LEFT_GRACE_SECONDS = 2.0


def _analyze(
    runtime: process.Runtime, ref: objects.Ref, version: str | None, body: dict[str, Any] | None
) -> None:
    """An AIAnalysis that is not terminal: one task analyses it (on creation, and for the
    unfinished ones after a restart). A new object's ``body`` spares its first read; the task's
    first read takes it out of ``given``, so a waiting analysis does not keep it."""
    about = _about(ref)
    given = [body] if body is not None else []

    def drive(runtime: process.Runtime, ref: objects.Ref) -> Awaitable[kit.Transition | None]:
        return analysis_reconciler.drive(runtime, ref, given=given)

    runtime.workers.ensure(ref.uid, version=version, start=lambda: _drive(runtime, ref, about, drive))


def _left(runtime: process.Runtime, ref: objects.Ref) -> None:
    """It went terminal (its task, if any, ends by itself) or was deleted (its task is cancelled)."""
    runtime.workers.release(
        ref.uid,
        deleted=lambda: analysis_reconciler.deleted(runtime, ref),
        grace_seconds=LEFT_GRACE_SECONDS,
    )


def _about(ref: objects.Ref) -> dict[str, Any]:
    """What an Event names of an AIAnalysis (not its body: a waiting analysis holds only this)."""
    meta = {"namespace": ref.namespace, "name": ref.name, "uid": ref.uid}
    return {"apiVersion": resources.API_VERSION, "kind": "AIAnalysis", "metadata": meta}


@kopf.on.event(G, V, WFE, id="recover")
async def recover(type: str | None, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:  # kopf's name
    """A failed WorkflowExecution starts a recovery analysis. No finalizer, no timer: the task retries
    transient errors itself, boundedly."""
    _follow(memo, type, body, execution_reconciler.needs_recovery, execution_reconciler.start_recovery)


@kopf.on.event(G, V, WFE, id="assess")
async def assess(type: str | None, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:  # kopf's name
    """A completed WorkflowExecution is assessed after its stabilization window: one task per
    execution that sleeps until ``status.assessment.assessAfter`` (a restart resumes it from there)."""
    wanted, drive = assessment_reconciler.needs_assessment, assessment_reconciler.assess_when_due
    _follow(memo, type, body, wanted, drive, task="assessment")


@kopf.on.event(G, V, WFR, id="rejected")
async def rejected(type: str | None, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:  # kopf's name
    """A person's rejection is shown on the analysis it names (``status.rejection``, an Event)."""
    if type == "DELETED":
        return
    runtime = _runtime(memo)
    transition = await rejection_reconciler.record(runtime, dict(body))
    if transition is not None:
        await kit.announce(runtime.api, transition)


Drive = Callable[[process.Runtime, objects.Ref], Awaitable[kit.Transition | None]]


def _follow(
    memo: kopf.Memo,
    type: str | None,
    event_body: kopf.Body,
    wanted: Callable[[dict[str, Any]], bool],
    drive: Drive,
    *,
    task: str = "",
) -> None:
    """One watch event: a deleted object's task (keyed by its uid, and ``task`` when one object has
    several) is cancelled; an object that is ``wanted`` gets one task that runs ``drive`` and
    announces the transition it ends in as an Event."""
    runtime, body = _runtime(memo), dict(event_body)
    ref = objects.Ref.of(body)
    key = f"{ref.uid}/{task}" if task else ref.uid
    if type == "DELETED":
        runtime.workers.forget(key)
    elif wanted(body):
        runtime.workers.ensure(key, version=_version(body), start=lambda: _drive(runtime, ref, body, drive))


async def _drive(runtime: process.Runtime, ref: objects.Ref, body: Mapping[str, Any], drive: Drive) -> None:
    transition = await drive(runtime, ref)
    if transition is not None:
        await kit.announce(runtime.api, transition, about=body)


def _version(body: dict[str, Any]) -> str | None:
    version = (body.get("metadata") or {}).get("resourceVersion")
    return version if isinstance(version, str) else None


def _runtime(memo: kopf.Memo) -> process.Runtime:
    runtime: process.Runtime = memo.runtime
    return runtime


def run(*, namespaces: list[str], log_format: str, verbose: bool) -> None:
    """The operator's main loop (``aianalysis run``): these handlers, all namespaces by default.
    Health (``/healthz``, ``/readyz``) is served by the runtime, started in :func:`startup`."""
    kopf.configure(
        verbose=verbose, log_format=kopf.LogFormat.JSON if log_format == "json" else kopf.LogFormat.FULL
    )
    kopf.run(
        standalone=True,
        clusterwide=not namespaces,
        namespaces=namespaces,
        stop_flag=_STOP,
        memo=kopf.Memo(namespaces=tuple(namespaces)),
    )
    if _LEASE_LOST.is_set():
        raise SystemExit("aianalysis: lost the leader Lease; exiting so that one replica acts")
