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
import datetime
import json
import logging
from collections.abc import Callable, Coroutine
from typing import Any

import pydantic
import urllib3
from kubernetes import client as k8s

from aianalysis import catalog as catalog_mod
from aianalysis import errors, metrics, resources
from aianalysis import settings as settings_mod
from aianalysis.analysis import status
from aianalysis.catalog import gate as catalog_admission
from aianalysis.catalog import sync as catalog_sync_mod
from aianalysis.executor import admission, approval, plan, reasons
from aianalysis.kube import approvals as kube_approvals

log = logging.getLogger(__name__)
G, V = resources.GROUP, resources.VERSION
WFE, AIA = resources.WORKFLOWEXECUTION_PLURAL, resources.AIANALYSIS_PLURAL

ANNOTATION_EXECUTION = "kubernaut.io/workflow-execution"
"""On Jobs and Pods: the full name of their WorkflowExecution (labels are capped at 63 characters)."""
Clock = Callable[[], datetime.datetime]


def utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Transition:
    """What the caller announces as a Kubernetes Event on the execution."""

    type: str  # Normal | Warning
    reason: str
    message: str
    about: dict[str, Any] = dataclasses.field(default_factory=dict)
    """The execution's body as read (the Event's involved object)."""


@dataclasses.dataclass(kw_only=True)
class Runtime:
    """What one executor process shares: opened at startup, closed at cleanup."""

    settings: settings_mod.Settings
    api: k8s.ApiClient
    catalog: catalog_mod.Catalog
    catalog_sync: catalog_sync_mod.CatalogSync
    locks: dict[tuple[str, str], asyncio.Lock] = dataclasses.field(default_factory=dict)
    pending: set[asyncio.Task[None]] = dataclasses.field(default_factory=set)
    now: Clock = utcnow
    identity: str = ""
    """The user the API server knows this executor as (``approvedBy`` of its autoExecute approvals)."""

    @classmethod
    def create(cls, settings: settings_mod.Settings, api: k8s.ApiClient) -> Runtime:
        catalog = catalog_mod.Catalog()
        return cls(
            settings=settings,
            api=api,
            catalog=catalog,
            catalog_sync=catalog_sync_mod.CatalogSync(
                api=api, catalog=catalog, reporter=catalog_admission.ReadOnlyReporter()
            ),
        )

    @property
    def job_settings(self) -> plan.JobSettings:
        s = self.settings
        return plan.JobSettings(
            backoff_limit=s.executor_backoff_limit,
            default_deadline_seconds=s.executor_default_deadline_seconds,
            deadline_multiplier=s.executor_deadline_multiplier,
        )

    @property
    def auto_policy(self) -> approval.AutoPolicy:
        s = self.settings
        return approval.AutoPolicy(
            enabled=s.executor_auto_execute,
            min_confidence=s.executor_auto_execute_min_confidence,
            namespaces=s.executor_auto_execute_namespaces,
            namespace_label=s.executor_auto_execute_namespace_label,
            max_risk=s.executor_auto_execute_max_risk,  # type: ignore[arg-type]  # checked by Settings
            environments=s.executor_auto_execute_environments,
            max_age_seconds=s.executor_auto_execute_max_age_seconds,
        )

    async def auto_facts(self, namespace: str, workflow: catalog_mod.Workflow | None) -> approval.AutoFacts:
        labels = await asyncio.to_thread(kube_approvals.namespace_labels, self.api, namespace)
        return approval.AutoFacts(namespace_labels=labels or {}, workflow=workflow)

    async def learn_identity(self) -> None:
        self.identity = await asyncio.to_thread(kube_approvals.whoami, self.api)
        log.info("executor runs as %s", self.identity)

    async def load_catalog(self) -> None:
        count = await asyncio.to_thread(self.catalog_sync.load)
        log.info("catalog loaded: %d RemediationWorkflow objects", count)
        self.catalog_sync.start()

    async def aclose(self) -> None:
        for task in self.pending:
            task.cancel()
        self.catalog_sync.stop()
        await asyncio.to_thread(self.api.close)

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


async def reconcile(runtime: Runtime, *, namespace: str, name: str) -> Transition | None:
    """One pass over one execution (serialised per execution)."""
    async with runtime.lock(namespace, name):
        body = await _get(runtime, _custom(runtime).get_namespaced_custom_object, G, V, namespace, WFE, name)
        if body is None or (body.get("status") or {}).get("phase") in plan.TERMINAL:
            runtime.locks.pop((namespace, name), None)  # nothing more to serialise for this one
            return None
        return await _reconcile(runtime, body)


async def _reconcile(runtime: Runtime, body: dict[str, Any]) -> Transition | None:
    current = _status(body)
    if current is None or current.phase in plan.TERMINAL or _left_to_others(current):
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
    job = await _get(runtime, k8s.BatchV1Api(runtime.api).read_namespaced_job, job_name, meta["namespace"])
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
    runtime: Runtime, body: dict[str, Any], current: resources.WorkflowExecutionStatus,
    spec: resources.WorkflowExecutionSpec,
) -> Transition | None:  # fmt: skip
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
    manifest = plan.job_manifest(body, spec=spec, workflow=workflow, settings=runtime.job_settings)
    manifest["metadata"]["annotations"] = {ANNOTATION_EXECUTION: body["metadata"]["name"]}
    manifest["spec"]["template"]["metadata"]["annotations"] = {ANNOTATION_EXECUTION: body["metadata"]["name"]}
    await _create_job(runtime, manifest)
    job_name = manifest["metadata"]["name"]
    await _write(
        runtime, body, current, phase="Pending", reason="JobCreated", message=f"job/{job_name} created"
    )
    return Transition(
        about=body,
        type="Normal",
        reason="JobCreated",
        message=f"job/{job_name} runs {spec.workflow_ref.workflow_id}",
    )


async def _follow(
    runtime: Runtime, body: dict[str, Any], current: resources.WorkflowExecutionStatus, job: dict[str, Any]
) -> Transition | None:
    namespace = body["metadata"]["namespace"]
    pods = [p for p in await _pods(runtime, namespace, job) if plan.owned_by(p, job)]
    events = await _events(runtime, namespace, [job["metadata"], *(p["metadata"] for p in pods)])
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
    runtime: Runtime,
    body: dict[str, Any],
    spec: resources.WorkflowExecutionSpec,
    workflow: catalog_mod.Workflow | None,
) -> admission.Refusal | None:
    """Fresh reads of every fact the admission check needs, then the pure check."""
    namespace = body["metadata"]["namespace"]
    analysis = await _get(
        runtime, _custom(runtime).get_namespaced_custom_object, G, V, namespace, AIA, spec.analysis_ref
    )
    try:
        problem = await asyncio.to_thread(
            kube_approvals.approval_policy_in_force, runtime.api, runtime.settings.executor_approval_policy
        )
    except errors.ClusterRejectedError as exc:  # e.g. 403: then nothing proves approvals were checked
        problem = f"the admission policy cannot be read ({exc})"
    mode = spec.approval.mode if spec.approval is not None else None
    auto_facts = await runtime.auto_facts(namespace, workflow) if mode == "Auto" else None
    facts = admission.Facts(
        execution=body,
        spec=spec,
        analysis=analysis,
        workflow=workflow,
        approval_policy_problem=problem,
        auto=runtime.auto_policy,
        auto_facts=auto_facts,
        cross_namespace=settings_mod.cross_namespace_pairs(runtime.settings),
    )
    # Off the event loop: the validator runs the catalog's (bounded) regexes.
    return await asyncio.to_thread(admission.refusal, facts)


async def _refuse(
    runtime: Runtime,
    body: dict[str, Any],
    current: resources.WorkflowExecutionStatus,
    refused: admission.Refusal,
) -> Transition | None:
    """``Refused``, not ``Failed``: nothing ran, so no recovery analysis (and no LLM bill) follows."""
    return await _write(
        runtime, body, current, phase="Refused", reason=refused.reason, message=refused.message[:1024]
    )


async def _write(
    runtime: Runtime,
    body: dict[str, Any],
    current: resources.WorkflowExecutionStatus,
    *,
    phase: resources.ExecutionPhase,
    reason: str,
    message: str | None = None,
    failure: reasons.Failure | None = None,
    started_at: str | None = None,
) -> Transition | None:
    """Write the next status if the execution is still what we read; a terminal write that lands is
    counted and announced (exactly once: a conflicting write is dropped and the next pass re-reads)."""
    meta = body["metadata"]
    text = message or (failure.message if failure else reason)
    new = plan.next_status(
        current, phase=phase, now=runtime.now(), reason=reason, message=text,
        generation=meta.get("generation"), failure=failure, started_at=started_at,
    )  # fmt: skip
    patch = {"metadata": {"resourceVersion": meta["resourceVersion"]}, "status": status.merge_patch(new)}
    try:
        await asyncio.to_thread(
            k8s.CustomObjectsApi(runtime.api).patch_namespaced_custom_object_status,
            resources.GROUP, resources.VERSION, meta["namespace"], resources.WORKFLOWEXECUTION_PLURAL,
            meta["name"], patch,
        )  # fmt: skip
    except k8s.ApiException as exc:
        if exc.status in (404, 409):  # deleted, or changed since we read it: the next pass re-reads
            return None
        raise errors.ClusterError(
            f"status write of workflowexecution {meta['name']} failed: {exc.status}"
        ) from exc
    if phase not in plan.TERMINAL:
        return None
    if phase == "Refused":
        metrics.record_execution("refused", reason)
        return Transition(about=body, type="Warning", reason=reason, message=text)
    if phase == "Completed":
        metrics.record_execution("completed")
        return Transition(about=body, type="Normal", reason="Completed", message=text)
    code = failure.reason if failure else "Error"
    metrics.record_execution("failed", code)
    return Transition(about=body, type="Warning", reason=code, message=text)


# ---- reads ----------------------------------------------------------------------------------------------


async def _current_workflow(runtime: Runtime, ref: resources.WorkflowRef) -> catalog_mod.Workflow | None:
    """The catalog's entry, confirmed by a fresh read of its object: the catalog follows a watch that
    may lag behind a deletion by a moment, and a refused workflow (condition ``Accepted=False``) is
    never run."""
    entry = runtime.catalog.get(ref.workflow_id, ref.version)
    if entry is None:
        return None
    rw_plural = resources.REMEDIATIONWORKFLOW_PLURAL
    fresh = await _get(runtime, _custom(runtime).get_cluster_custom_object, G, V, rw_plural, entry.name)
    if fresh is None or not plan.accepted(fresh):
        return None
    try:
        spec = resources.RemediationWorkflowSpec.parse_known(fresh.get("spec") or {})
    except pydantic.ValidationError:
        return None
    if (spec.workflow_id, spec.version) != (ref.workflow_id, ref.version):
        return None
    return catalog_mod.Workflow(name=entry.name, spec=spec)


async def _pods(runtime: Runtime, namespace: str, job: dict[str, Any]) -> list[dict[str, Any]]:
    selector = f"{plan.LABEL_EXECUTION}={job['metadata']['labels'][plan.LABEL_EXECUTION]}"
    found = await _get(
        runtime, k8s.CoreV1Api(runtime.api).list_namespaced_pod, namespace, label_selector=selector
    )
    return list((found or {}).get("items") or [])


async def _events(runtime: Runtime, namespace: str, about: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events about exactly these objects: matched by uid as well as name, so an Event written in
    advance for a name (anyone who may create Events could) never picks the failure reason."""
    out: list[dict[str, Any]] = []
    for meta in about:
        found = await _get(
            runtime,
            k8s.CoreV1Api(runtime.api).list_namespaced_event,
            namespace,
            field_selector=f"involvedObject.name={meta['name']},involvedObject.uid={meta.get('uid', '')}",
        )
        out.extend((found or {}).get("items") or [])
    return sorted(out, key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")


async def _nodes(runtime: Runtime, pods: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The Nodes the Pods were placed on (reading them is optional: without the permission, node
    problems are still seen through the Pods' own status and Events)."""
    names = {(p.get("spec") or {}).get("nodeName") for p in pods} - {None, ""}
    out: dict[str, dict[str, Any]] = {}
    for name in sorted(str(n) for n in names):
        try:
            node = await _get(runtime, k8s.CoreV1Api(runtime.api).read_node, name)
        except errors.ClusterError:
            continue
        if node is not None:
            out[name] = node
    return out


async def _create_job(runtime: Runtime, manifest: dict[str, Any]) -> None:
    """Create the Job; one that exists already (a pass before a restart made it) is fine: the next
    pass checks it is ours and follows it."""
    try:
        await asyncio.to_thread(
            k8s.BatchV1Api(runtime.api).create_namespaced_job,
            manifest["metadata"]["namespace"],
            manifest,  # type: ignore[arg-type]  # a plain manifest; the client serialises dicts as they are
        )
    except k8s.ApiException as exc:
        if exc.status == 409:
            return
        raise errors.ClusterError(
            f"creating job {manifest['metadata']['name']} failed: {exc.status} {exc.reason}"
        ) from exc


async def _get(
    runtime: Runtime, method: Callable[..., Any], *args: Any, **kwargs: Any
) -> dict[str, Any] | None:
    """One typed read as the API server's plain JSON (the camelCase shape the pure core reads);
    None on 404."""

    def call() -> bytes:
        response = method(*args, _preload_content=False, _request_timeout=30, **kwargs)
        try:
            return bytes(response.data)
        finally:
            response.release_conn()

    try:
        raw = await asyncio.to_thread(call)
    except k8s.ApiException as exc:
        if exc.status == 404:
            return None
        raise errors.ClusterError(f"reading {args[-1]} failed: {exc.status} {exc.reason}") from exc
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise errors.ClusterError(f"cannot reach the Kubernetes API reading {args[-1]}: {exc}") from exc
    found: dict[str, Any] = json.loads(raw)
    return found


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


def _custom(runtime: Runtime) -> k8s.CustomObjectsApi:
    return k8s.CustomObjectsApi(runtime.api)
