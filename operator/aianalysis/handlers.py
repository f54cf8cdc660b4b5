"""kopf handlers — the only module that imports kopf. Thin: each delegates to a reconciler
(``aianalysis_reconciler``, ``execution_reconciler``) with the process's ``runtime``.

Run it with ``aianalysis run`` (or ``kopf run -m aianalysis.handlers --all-namespaces``).
"""

from __future__ import annotations

import logging
from typing import Any

import kopf

from aianalysis import aianalysis_reconciler, errors, execution_reconciler, kube, metrics, resources
from aianalysis import runtime as runtime_mod
from aianalysis import settings as settings_mod

G, V = resources.GROUP, resources.VERSION
AIA, WFE = resources.AIANALYSIS_PLURAL, resources.WORKFLOWEXECUTION_PLURAL
PREFIX = "aianalysis.kubernaut.io"
MAX_RETRY_DELAY_SECONDS = 300.0

log = logging.getLogger(__name__)


@kopf.on.startup()
async def startup(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    config = settings_mod.from_env()
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=PREFIX)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix=PREFIX)
    settings.posting.level = logging.WARNING
    settings.watching.server_timeout = 300
    settings.execution.max_workers = max(4, config.max_concurrent_analyses)
    memo.runtime = runtime_mod.Runtime.create(config, kube.api_client())
    metrics.serve(config.metrics_port)
    # Handlers start only after startup: no analysis ever sees a partially loaded catalog.
    await memo.runtime.load_catalog()
    log.info(
        "aianalysis operator starting: provider=%s model=%s concurrency=%d",
        config.provider,
        config.model if config.provider == "anthropic" else "-",
        config.max_concurrent_analyses,
    )


@kopf.on.cleanup()
async def cleanup(memo: kopf.Memo, **_: Any) -> None:
    runtime: runtime_mod.Runtime | None = getattr(memo, "runtime", None)
    if runtime is not None:
        await runtime.aclose()


@kopf.on.probe(id="catalog_workflows")
def catalog_probe(memo: kopf.Memo, **_: Any) -> int:
    return len(_runtime(memo).catalog)


@kopf.on.resume(G, V, AIA, id="analyze_resumed")
@kopf.on.create(G, V, AIA, id="analyze")
async def analyze(
    body: kopf.Body, name: str, namespace: str | None, retry: int, memo: kopf.Memo, **_: Any
) -> None:
    assert namespace is not None, "AIAnalysis is namespaced"
    runtime = _runtime(memo)
    limit = runtime.settings.provider_retry_limit
    try:
        transition = await aianalysis_reconciler.reconcile(
            runtime, name=name, namespace=namespace, body=dict(body), final_try=retry + 1 >= limit
        )
    except errors.AIAnalysisError as exc:
        raise _kopf_error(exc, retry=retry, base=runtime.settings.provider_retry_delay_seconds) from exc
    if transition is not None:
        _announce(body, transition)


def _announce(body: kopf.Body, transition: runtime_mod.Transition) -> None:
    """A terminal transition: a Kubernetes Event for kubectl users, a log line for log pipelines."""
    kopf.event(body, type=transition.type, reason=transition.reason, message=transition.message)
    level = logging.INFO if transition.type == "Normal" else logging.WARNING
    meta = body.get("metadata", {})
    log.log(
        level, "%s/%s: %s: %s", meta.get("namespace"), meta.get("name"), transition.reason, transition.message
    )


def _kopf_error(exc: errors.AIAnalysisError, *, retry: int, base: float) -> Exception:
    if exc.retryable:
        delay = min(MAX_RETRY_DELAY_SECONDS, base * 2**retry)
        return kopf.TemporaryError(f"{exc.reason}: {exc}", delay=delay)
    return kopf.PermanentError(f"{exc.reason}: {exc}")


def _runtime(memo: kopf.Memo) -> runtime_mod.Runtime:
    runtime: runtime_mod.Runtime = memo.runtime
    return runtime


def _failed_unhandled(body: kopf.Body, **_: Any) -> bool:
    return execution_reconciler.needs_recovery(dict(body))


@kopf.on.event(G, V, WFE, id="recover", when=_failed_unhandled)
async def recover(body: kopf.Body, memo: kopf.Memo, logger: kopf.Logger, **_: Any) -> None:
    """A failed WorkflowExecution starts a recovery analysis (watch events are not retried: see below)."""
    await _recover(body, memo, logger)


@kopf.timer(G, V, WFE, id="recover_retry", interval=30.0, initial_delay=30.0, when=_failed_unhandled)
async def recover_retry(body: kopf.Body, memo: kopf.Memo, logger: kopf.Logger, **_: Any) -> None:
    """Safety net: retries a recovery whose first try hit a transient API error."""
    await _recover(body, memo, logger)


async def _recover(body: kopf.Body, memo: kopf.Memo, logger: kopf.Logger) -> None:
    try:
        transition = await execution_reconciler.reconcile(_runtime(memo), body=dict(body))
    except errors.ClusterError as exc:
        logger.warning("recovery of %s postponed: %s", body.get("metadata", {}).get("name"), exc)
        return
    if transition is not None:
        _announce(body, transition)


def run(*, namespaces: list[str], log_format: str, verbose: bool, liveness_port: int) -> None:
    """The operator's main loop (``aianalysis run``): these handlers, all namespaces by default."""
    kopf.configure(
        verbose=verbose, log_format=kopf.LogFormat.JSON if log_format == "json" else kopf.LogFormat.FULL
    )
    kopf.run(
        standalone=True,
        clusterwide=not namespaces,
        namespaces=namespaces,
        liveness_endpoint=f"http://0.0.0.0:{liveness_port}/healthz" if liveness_port else None,
    )
