"""kopf handlers of the executor — with ``aianalysis.controller.handlers``, the only modules importing kopf.

``aianalysis executor`` runs these: a process of its own (own Deployment, own ServiceAccount), so
the analysing operator keeps never touching workloads. Only watch events drive it (WorkflowExecutions,
and the Jobs and Pods it created), no timers or daemons: those would put kopf finalizers on
WorkflowExecutions, objects other tools own as much as we do. A restart re-lists everything, and
each pass starts from a fresh read, so nothing is lost in between.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import kopf

import aianalysis.settings
from aianalysis import errors, kit, kube, metrics, resources
from aianalysis.executor import plan, runner, submit

G, V = resources.GROUP, resources.VERSION
WFE, AIA = resources.WORKFLOWEXECUTION_PLURAL, resources.AIANALYSIS_PLURAL
RETRIES = kit.Backoff(first_seconds=2.0, max_seconds=64.0, retries=6)
"""Watch events are not retried by kopf: a pass that failed transiently is, after 2, 4 … 64 s."""
OURS = {"app.kubernetes.io/managed-by": plan.MANAGED_BY}

log = logging.getLogger(__name__)


@kopf.on.login()
def login(**_: Any) -> kopf.ConnectionInfo:
    """kopf connects with the operator's own credentials (``kube.config``), not its built-in guess."""
    return kopf.ConnectionInfo(**kube.login_fields())


@kopf.on.startup()
async def startup(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    config = aianalysis.settings.from_env()
    settings.posting.level = logging.WARNING
    kube.configure_kopf(settings, settings=config)  # kopf's calls bounded as ours are
    memo.runtime = runner.ExecutorRuntime.create(config, kube.api_client(settings=config))
    metrics.serve(config.observability.metrics_port)
    await memo.runtime.serve_health(config.observability.health_port)  # /healthz, /readyz: as the operator's
    await memo.runtime.learn_identity()  # approvedBy of autoExecute's approvals
    await memo.runtime.load_catalog()  # before any execution is re-validated against it
    log.info("aianalysis executor starting: autoExecute=%s", config.auto_execute.enabled)


@kopf.on.cleanup()
async def cleanup(memo: kopf.Memo, **_: Any) -> None:
    runtime: runner.ExecutorRuntime | None = getattr(memo, "runtime", None)
    if runtime is not None:
        await runtime.aclose()


def _open(body: kopf.Body, **_: Any) -> bool:
    return (body.get("status") or {}).get("phase") not in resources.EXECUTION_TERMINAL_PHASES


@kopf.on.event(G, V, WFE, id="execute", when=_open)
async def execute(body: kopf.Body, memo: kopf.Memo, logger: kopf.Logger, **_: Any) -> None:
    meta = body.get("metadata", {})
    await _pass(memo, logger, namespace=meta.get("namespace"), name=meta.get("name"))


@kopf.on.event("batch", "v1", "jobs", id="follow_job", labels=OURS)
@kopf.on.event("", "v1", "pods", id="follow_pod", labels=OURS)
async def follow(body: kopf.Body, memo: kopf.Memo, logger: kopf.Logger, **_: Any) -> None:
    meta = body.get("metadata", {})
    owner = (meta.get("annotations") or {}).get(runner.ANNOTATION_EXECUTION)
    if owner:
        await _pass(memo, logger, namespace=meta.get("namespace"), name=owner)


async def _pass(
    memo: kopf.Memo, logger: kopf.Logger, *, namespace: str | None, name: str | None, attempt: int = 0
) -> None:
    """One reconcile pass; a transient API error is retried with backoff (then the next watch event or
    a restart picks the execution up again from a fresh read)."""
    if not namespace or not name:
        return
    runtime: runner.ExecutorRuntime = memo.runtime
    try:
        transition = await runner.reconcile(runtime, namespace=namespace, name=name)
    except errors.ClusterRejectedError as exc:  # asking again cannot help: the next event may
        logger.error("workflowexecution %s/%s: the API server refused: %s", namespace, name, exc)
        return
    except errors.ClusterError as exc:  # watch events are not retried by kopf: retry here, boundedly
        if not RETRIES.allows(attempt + 1):
            logger.error(
                "workflowexecution %s/%s: giving up after %d tries: %s", namespace, name, attempt + 1, exc
            )
            return
        delay = RETRIES.delay(attempt + 1)
        logger.warning("workflowexecution %s/%s postponed %.0fs: %s", namespace, name, delay, exc)
        runtime.later(delay, _pass(memo, logger, namespace=namespace, name=name, attempt=attempt + 1))
        return
    if transition is not None:
        await kit.announce(runtime.api, transition)


def _auto_candidate(body: kopf.Body, memo: kopf.Memo, **_: Any) -> bool:
    return _candidate(getattr(memo, "runtime", None), body)


def _candidate(runtime: runner.ExecutorRuntime | None, body: Mapping[str, Any]) -> bool:
    st = body.get("status") or {}
    return bool(
        runtime
        and runtime.auto_policy.enabled
        and st.get("phase") == "Completed"
        and st.get("selectedWorkflow")
    )


@kopf.on.event(G, V, AIA, id="auto_execute", when=_auto_candidate)
async def execute_when_allowed(body: kopf.Body, memo: kopf.Memo, logger: kopf.Logger, **_: Any) -> None:
    """``autoExecute``: the policy's execution of a fresh, confident, unreviewed selection."""
    await _auto(memo.runtime, logger, dict(body))


async def _auto(runtime: runner.ExecutorRuntime, logger: kopf.Logger, body: dict[str, Any]) -> None:
    meta = body.get("metadata", {})
    chosen = (body.get("status") or {}).get("selectedWorkflow") or {}
    workflow = runtime.catalog.get(str(chosen.get("workflowId") or ""), chosen.get("version"))
    try:
        # Its execution would be refused unless created after the approval policy is provably in force.
        policy = await runtime.approval_policy()
        if isinstance(policy, str):
            logger.warning("autoExecute of %s: nothing runs while %s", meta.get("name"), policy)
            return
        if (wait := (policy.since - runtime.now()).total_seconds()) >= 0:
            logger.info(
                "autoExecute of %s in %.0fs: the approval policy changed just now", meta.get("name"), wait
            )
            runtime.later(
                wait + 1.0, _auto_again(runtime, logger, namespace=meta["namespace"], name=meta["name"])
            )
            return
        facts = await runtime.auto_facts(meta.get("namespace") or "", workflow)
        created = await submit.auto_execute(
            runtime.api, body, policy=runtime.auto_policy, facts=facts,
            now=runtime.now(), approver=runtime.identity,
        )  # fmt: skip
    except (errors.ClusterError, errors.ClusterRejectedError) as exc:
        logger.warning("autoExecute of %s postponed: %s", meta.get("name"), exc)
        return
    if created:
        message = f"workflowexecution/{created} created by autoExecute"
        await kit.announce(
            runtime.api, kit.Transition(type="Normal", reason="AutoExecuted", message=message), about=body
        )


async def _auto_again(
    runtime: runner.ExecutorRuntime, logger: kopf.Logger, *, namespace: str, name: str
) -> None:
    """autoExecute once the approval policy has settled, on the analysis as it is then."""
    try:
        fresh = await runner.read_analysis(runtime, namespace=namespace, name=name)
    except errors.ClusterError as exc:
        logger.warning("autoExecute of %s postponed: %s", name, exc)
        return
    if fresh is not None and _candidate(runtime, fresh):
        await _auto(runtime, logger, fresh)


def run(*, namespaces: list[str], log_format: str, verbose: bool) -> None:
    """The executor's main loop (``aianalysis executor``): these handlers only."""
    kopf.configure(
        verbose=verbose, log_format=kopf.LogFormat.JSON if log_format == "json" else kopf.LogFormat.FULL
    )
    kopf.run(
        standalone=True,
        clusterwide=not namespaces,
        namespaces=namespaces,
    )
