"""Runs WorkflowExecutions of engine ``job``, without kopf: ``executor.handlers`` calls in, this
module does the Kubernetes I/O and tells the caller which Event to post.

One pass of :func:`reconcile` moves one execution forward as far as the cluster allows: re-validate
against the catalog → create the Job → follow it → write the status. Every pass starts from a
fresh read, so repeated events, a restart or two passes at once (serialised per execution anyway)
cannot create a second Job (its name is the execution's) or count an end twice (status writes are
conditional on the resourceVersion read, and only the pass whose write lands counts).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Coroutine
from typing import Any

import pydantic

import aianalysis.analysis.facts
import aianalysis.catalog
import aianalysis.settings
from aianalysis import errors, kit, kube, metrics, resources
from aianalysis.catalog import gate, sync
from aianalysis.executor import admission, approval, guards, plan, preflight, proof, reasons, server_facts
from aianalysis.kube import api_reader, objects, readers

log = logging.getLogger(__name__)
WFE, AIA = resources.WORKFLOWEXECUTION_PLURAL, resources.AIANALYSIS_PLURAL

ANNOTATION_EXECUTION = "kubernaut.io/workflow-execution"
"""On Jobs and Pods: the full name of their WorkflowExecution (labels are capped at 63 characters)."""


@dataclasses.dataclass(kw_only=True)
class ExecutorRuntime(kit.ProcessRuntime):
    """What one executor process shares: opened at startup, closed at cleanup."""

    reader: api_reader.KubernetesReader
    locks: dict[tuple[str, str], asyncio.Lock] = dataclasses.field(default_factory=dict)
    start_lock: asyncio.Lock = dataclasses.field(default_factory=asyncio.Lock)
    pending: set[asyncio.Task[None]] = dataclasses.field(default_factory=set)
    now: resources.Clock = resources.utcnow
    identity: str = ""
    """The user the API server knows this executor as (``approvedBy`` of its autoExecute approvals)."""

    @classmethod
    def create(cls, settings: aianalysis.settings.Settings, api: kube.ApiClient) -> ExecutorRuntime:
        catalog = aianalysis.catalog.Catalog()
        return cls(
            settings=settings,
            api=api,
            reader=api_reader.KubernetesReader(api, timeout_seconds=30.0),
            catalog=catalog,
            catalog_sync=sync.CatalogSync(api=api, catalog=catalog, reporter=gate.ReadOnlyReporter()),
        )

    @property
    def job_settings(self) -> plan.JobSettings:
        s = self.settings
        return plan.JobSettings(
            backoff_limit=s.executor.backoff_limit,
            default_deadline_seconds=s.executor.default_deadline_seconds,
            deadline_multiplier=s.executor.deadline_multiplier,
        )

    @property
    def auto_policy(self) -> approval.AutoPolicy:
        s = self.settings
        return approval.AutoPolicy(
            enabled=s.auto_execute.enabled,
            min_confidence=s.auto_execute.min_confidence,
            namespaces=s.auto_execute.namespaces,
            namespace_label=s.auto_execute.namespace_label,
            max_risk=s.auto_execute.max_risk,
            environments=s.auto_execute.environments,
            max_age_seconds=s.auto_execute.max_age_seconds,
        )

    async def auto_facts(
        self, namespace: str, workflow: aianalysis.catalog.Workflow | None
    ) -> approval.AutoFacts:
        labels = await asyncio.to_thread(server_facts.namespace_labels, self.api, namespace)
        return approval.AutoFacts(namespace_labels=labels or {}, workflow=workflow)

    async def approval_policy(self) -> proof.InForce | str:
        """Since when the shipped approval policy has been in force (fresh reads), or why it is not."""
        name = self.settings.executor.approval_policy
        try:
            policy, binding = await asyncio.to_thread(server_facts.approval_policy, self.api, name)
        except errors.ClusterRejectedError as exc:  # e.g. 403: then nothing proves approvals were checked
            return f"the approval policy {name} cannot be read ({exc})"
        margin = self.settings.executor.approval_policy_margin_seconds
        return proof.in_force(policy, binding, name=name, margin_seconds=margin)

    async def learn_identity(self) -> None:
        self.identity = await asyncio.to_thread(server_facts.whoami, self.api)
        log.info("executor runs as %s", self.identity)

    async def aclose(self) -> None:
        for task in self.pending:
            task.cancel()
        await self.close_shared()

    def later(self, delay_seconds: float, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` after a delay, holding a reference so the task is not collected."""

        async def delayed() -> None:
            await asyncio.sleep(delay_seconds)
            await work

        task = asyncio.get_running_loop().create_task(delayed())
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)

    def lock(self, namespace: str, name: str) -> asyncio.Lock:
        return self.locks.setdefault((namespace, name), asyncio.Lock())


async def reconcile(runtime: ExecutorRuntime, *, namespace: str, name: str) -> kit.Transition | None:
    """One pass over one execution (serialised per execution)."""
    async with runtime.lock(namespace, name):
        body = await objects.get(runtime.api, namespace, WFE, name)
        if body is None or (body.get("status") or {}).get("phase") in resources.EXECUTION_TERMINAL_PHASES:
            runtime.locks.pop((namespace, name), None)  # nothing more to serialise for this one
            return None
        return await _reconcile(runtime, body)


async def read_analysis(runtime: ExecutorRuntime, *, namespace: str, name: str) -> dict[str, Any] | None:
    return await objects.get(runtime.api, namespace, AIA, name)


async def _reconcile(runtime: ExecutorRuntime, body: dict[str, Any]) -> kit.Transition | None:
    current = _status(body)
    if current is None or current.phase in resources.EXECUTION_TERMINAL_PHASES or _left_to_others(current):
        return None
    try:
        spec = resources.WorkflowExecutionSpec.model_validate(body.get("spec") or {})
    except pydantic.ValidationError as exc:
        unreadable = admission.Refusal(
            reason=admission.SELECTION_MISMATCH, problems=[f"spec cannot be read: {exc.errors()[0]['msg']}"]
        )
        return await _refuse(runtime, body, current, unreadable)
    meta = body["metadata"]
    job_name = plan.job_name(meta["name"])
    job = await _read(runtime, kind="Job", name=job_name, namespace=meta["namespace"])
    if job is None and (current.phase == "Running" or _job_was_created(current)):
        failure = reasons.Failure(reason="Error", message="Error: the Job of this execution was deleted")
        return await _write(runtime, body, current, phase="Failed", reason="JobDeleted", failure=failure)
    if job is None:
        return await _start(runtime, body, current, spec)
    if not plan.owned_by(job, body):
        taken = reasons.Failure(
            reason="Error",
            message=f"Error: a Job named {job['metadata']['name']} exists and is not this execution's",
        )
        return await _write(runtime, body, current, phase="Failed", reason="JobNameTaken", failure=taken)
    return await _follow(runtime, body, current, job)


async def _start(
    runtime: ExecutorRuntime, body: dict[str, Any], current: resources.WorkflowExecutionStatus,
    spec: resources.WorkflowExecutionSpec,
) -> kit.Transition | None:  # fmt: skip
    workflow = await _current_workflow(runtime, spec.workflow_ref)
    if workflow is not None and workflow.spec.execution.engine != "job":
        engine = workflow.spec.execution.engine
        message = f"engine {engine}: left to the {engine} controller; this executor runs engine job only"
        await _write(runtime, body, current, phase=current.phase, reason="EngineNotHandled", message=message)
        return None
    refused = await _admission(runtime, body, spec, workflow)
    if refused is not None:
        return await _refuse(runtime, body, current, refused)
    assert workflow is not None, "admission refuses a missing workflow"
    async with runtime.start_lock:  # guards count started executions: one start at a time
        step = await preflight.before_job(
            runtime.api, body, spec, settings=runtime.settings, now=runtime.now()
        )
        if isinstance(step, preflight.Blocked):
            failure = reasons.Failure(reason=step.block.reason, message=step.block.message)
            return await _write(
                runtime, body, current, phase="Failed", reason=step.block.reason, failure=failure
            )
        if isinstance(step, preflight.DryRun):
            return await _write(
                runtime,
                body,
                current,
                phase="Completed",
                reason="DryRun",
                message="dry run: the selection is valid and would run now; no Job was created",
            )
        if isinstance(step, preflight.Again):
            return None
        body = step.body
        current = _status(body) or current
    manifest = plan.job_manifest(body, spec=spec, workflow=workflow, settings=runtime.job_settings)
    manifest["metadata"]["annotations"] = {ANNOTATION_EXECUTION: body["metadata"]["name"]}
    manifest["spec"]["template"]["metadata"]["annotations"] = {ANNOTATION_EXECUTION: body["metadata"]["name"]}
    await _create_job(runtime, manifest)
    job_name = manifest["metadata"]["name"]
    await _write(
        runtime, body, current, phase="Pending", reason="JobCreated", message=f"job/{job_name} created"
    )
    return kit.Transition(
        about=body,
        type="Normal",
        reason="JobCreated",
        message=f"job/{job_name} runs {spec.workflow_ref.workflow_id}",
    )


async def _follow(
    runtime: ExecutorRuntime,
    body: dict[str, Any],
    current: resources.WorkflowExecutionStatus,
    job: dict[str, Any],
) -> kit.Transition | None:
    namespace = body["metadata"]["namespace"]
    pods = [p for p in await _pods(runtime, namespace, job) if plan.owned_by(p, job)]
    events = await _events(
        runtime, namespace, [("Job", job["metadata"]), *(("Pod", p["metadata"]) for p in pods)]
    )
    nodes = await _nodes(runtime, pods)
    seen = plan.observe(job=job, pods=pods, events=events, nodes=nodes)
    job_name = job["metadata"]["name"]
    if seen.phase == "Completed":
        return await _write(
            runtime, body, current, phase="Completed", reason="Completed", message=f"job/{job_name} succeeded"
        )
    if seen.phase == "Failed":
        return await _write(runtime, body, current, phase="Failed", reason="Failed", failure=seen.failure)
    if seen.phase == "Pending" and not _job_was_created(current):  # a restart between create and report
        await _write(
            runtime, body, current, phase="Pending", reason="JobCreated", message=f"job/{job_name} created"
        )
    if seen.phase == "Running" and current.phase != "Running":
        await _write(
            runtime,
            body,
            current,
            phase="Running",
            reason="Running",
            message=f"job/{job_name} is running",
            started_at=seen.running_since,
        )
    return None  # fmt: skip


async def _admission(
    runtime: ExecutorRuntime,
    body: dict[str, Any],
    spec: resources.WorkflowExecutionSpec,
    workflow: aianalysis.catalog.Workflow | None,
) -> admission.Refusal | None:
    """Fresh reads of every fact the admission check needs, then the pure check."""
    namespace = body["metadata"]["namespace"]
    analysis = await objects.get(runtime.api, namespace, AIA, spec.analysis_ref)
    cross_namespace = runtime.settings.safety.cross_namespace_pairs()
    wanted = admission.to_read(analysis, workflow, namespace=namespace, cross_namespace=cross_namespace)
    as_analysed = None
    if wanted is not None:  # the facts the selection was validated under, read again (never its status)
        as_analysed = await aianalysis.analysis.facts.as_analysed(
            runtime.reader, wanted.spec, wanted.target,
            home=namespace, prefixes=runtime.settings.catalog.business_label_prefixes,
        )  # fmt: skip
    policy = await runtime.approval_policy()
    mode = spec.approval.mode if spec.approval is not None else None
    auto_facts = await runtime.auto_facts(namespace, workflow) if mode == "Auto" else None
    facts = admission.Facts(
        execution=body,
        spec=spec,
        analysis=analysis,
        workflow=workflow,
        approval_policy=policy,
        auto=runtime.auto_policy,
        auto_facts=auto_facts,
        cross_namespace=cross_namespace,
        as_analysed=as_analysed,
    )
    # Off the event loop: the validator runs the catalog's (bounded) regexes.
    return await asyncio.to_thread(admission.refusal_for, facts)


async def _refuse(
    runtime: ExecutorRuntime,
    body: dict[str, Any],
    current: resources.WorkflowExecutionStatus,
    refused: admission.Refusal,
) -> kit.Transition | None:
    """``Refused``, not ``Failed``: nothing ran, so no recovery analysis (and no LLM bill) follows."""
    return await _write(
        runtime, body, current, phase="Refused", reason=refused.reason, message=refused.message[:1024]
    )


async def _write(
    runtime: ExecutorRuntime,
    body: dict[str, Any],
    current: resources.WorkflowExecutionStatus,
    *,
    phase: resources.ExecutionPhase,
    reason: str,
    message: str | None = None,
    failure: reasons.Failure | None = None,
    started_at: str | None = None,
) -> kit.Transition | None:
    """Write the next status if the execution is still what we read; a terminal write that lands is
    counted and announced (exactly once: a conflicting write is dropped and the next pass re-reads)."""
    meta = body["metadata"]
    text = message or (failure.message if failure else reason)
    new = plan.next_status(
        current, phase=phase, now=runtime.now(), reason=reason, message=text,
        generation=meta.get("generation"), failure=failure, started_at=started_at,
    )  # fmt: skip
    if reason == "DryRun":  # "completed" without running: the condition says it was not executed
        conditions = [
            c.model_copy(update={"status": "False"}) if c.type == plan.CONDITION else c
            for c in new.conditions or []
        ]
        new = new.model_copy(update={"dry_run": True, "conditions": conditions})
    written = await objects.write_status_at(runtime.api, body, plural=WFE, fields=new.merge_patch())
    if written is not objects.Written.OK:  # deleted, or changed since we read it: the next pass re-reads
        return None
    if phase not in resources.EXECUTION_TERMINAL_PHASES:
        return None
    if reason in guards.GUARD_REASONS:
        metrics.record_execution("blocked", reason)
        metrics.GUARD_BLOCKS.labels(reason=reason).inc()
        return kit.Transition(about=body, type="Warning", reason=reason, message=text)
    if reason == "DryRun":
        metrics.record_execution("dry_run")
        return kit.Transition(about=body, type="Normal", reason="DryRun", message=text)
    if phase == "Refused":
        metrics.record_execution("refused", reason)
        return kit.Transition(about=body, type="Warning", reason=reason, message=text)
    if phase == "Completed":
        metrics.record_execution("completed")
        return kit.Transition(about=body, type="Normal", reason="Completed", message=text)
    code = failure.reason if failure else "Error"
    metrics.record_execution("failed", code)
    return kit.Transition(about=body, type="Warning", reason=code, message=text)


# ---- reads ----------------------------------------------------------------------------------------------


async def _current_workflow(
    runtime: ExecutorRuntime, ref: resources.WorkflowRef
) -> aianalysis.catalog.Workflow | None:
    """The catalog's entry, confirmed by a fresh read of its object: the catalog follows a watch that
    may lag behind a deletion by a moment, and a refused workflow (condition ``Accepted=False``) is
    never run."""
    entry = runtime.catalog.get(ref.workflow_id, ref.version)
    if entry is None:
        return None
    rw_plural = resources.REMEDIATIONWORKFLOW_PLURAL
    fresh = await objects.get(runtime.api, "", rw_plural, entry.name)
    if fresh is None or not plan.accepted(fresh):
        return None
    try:
        spec = resources.RemediationWorkflowSpec.parse_known(fresh.get("spec") or {})
    except pydantic.ValidationError:
        return None
    if (spec.workflow_id, spec.version) != (ref.workflow_id, ref.version):
        return None
    return aianalysis.catalog.Workflow(name=entry.name, spec=spec)


async def _pods(runtime: ExecutorRuntime, namespace: str, job: dict[str, Any]) -> list[dict[str, Any]]:
    selector = f"{plan.LABEL_EXECUTION}={job['metadata']['labels'][plan.LABEL_EXECUTION]}"
    try:
        return await runtime.reader.list_objects(kind="Pod", namespace=namespace, label_selector=selector)
    except readers.Unavailable as exc:
        raise errors.ClusterError(f"listing the Pods of job {job['metadata']['name']}: {exc}") from exc


async def _events(
    runtime: ExecutorRuntime, namespace: str, about: list[tuple[str, dict[str, Any]]]
) -> list[dict[str, Any]]:
    """Events about exactly these objects: matched by uid as well as kind and name, so an Event
    written in advance for a name (anyone who may create Events could) never picks the failure
    reason."""
    out: list[dict[str, Any]] = []
    for kind, meta in about:
        try:
            found = await runtime.reader.list_events(kind=kind, name=meta["name"], namespace=namespace)
        except readers.Unavailable as exc:
            raise errors.ClusterError(f"listing the Events of {kind} {meta['name']}: {exc}") from exc
        out.extend(e for e in found if (e.get("involvedObject") or {}).get("uid") == meta.get("uid"))
    return sorted(out, key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")


async def _nodes(runtime: ExecutorRuntime, pods: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The Nodes the Pods were placed on (reading them is optional: without the permission, node
    problems are still seen through the Pods' own status and Events)."""
    names = {(p.get("spec") or {}).get("nodeName") for p in pods} - {None, ""}
    out: dict[str, dict[str, Any]] = {}
    for name in sorted(str(n) for n in names):
        try:
            out[name] = await runtime.reader.get_object(kind="Node", name=name, namespace=None)
        except (readers.Unavailable, errors.ClusterError):
            continue
    return out


async def _create_job(runtime: ExecutorRuntime, manifest: dict[str, Any]) -> None:
    """Create the Job; one that exists already (a pass before a restart made it) is fine: the next
    pass checks it is ours and follows it."""
    await objects.create(runtime.api, manifest, plural="jobs")


async def _read(runtime: ExecutorRuntime, *, kind: str, name: str, namespace: str) -> dict[str, Any] | None:
    """One object as the API server's plain JSON (the camelCase shape the pure core reads); None
    when there is none."""
    try:
        return await runtime.reader.get_object(kind=kind, name=name, namespace=namespace)
    except readers.Unavailable as exc:
        if exc.status == 404:
            return None
        raise errors.ClusterError(f"reading {kind} {namespace}/{name}: {exc}") from exc


def _status(body: dict[str, Any]) -> resources.WorkflowExecutionStatus | None:
    try:
        return resources.WorkflowExecutionStatus.parse_known(body.get("status") or {})
    except pydantic.ValidationError:
        log.warning("workflowexecution %s: unreadable status; left alone", body["metadata"].get("name"))
        return None


def _job_was_created(current: resources.WorkflowExecutionStatus) -> bool:
    return any(
        c.type == plan.CONDITION and c.reason in ("JobCreated", "Running") for c in current.conditions or []
    )


def _left_to_others(current: resources.WorkflowExecutionStatus) -> bool:
    return any(c.type == plan.CONDITION and c.reason == "EngineNotHandled" for c in current.conditions or [])
