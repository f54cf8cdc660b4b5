"""Pure: one WorkflowExecution + the current catalog + what its Job reports → what to do next.

* Whether it may run at all is ``admission``'s question (the analysis' own validator, re-run).
* :func:`job_manifest` is the Job that runs a workflow of engine ``job``.
* :func:`observe` turns the Job, its Pods and their Events into the execution's next status.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from aianalysis import catalog, resources
from aianalysis.executor import reasons

CONDITION = "Executed"
"""The executor's condition on a WorkflowExecution: Unknown while running, True once Completed,
False when it failed or was not run (its reason says which)."""
LABEL_EXECUTION = "kubernaut.io/workflow-execution"
LABEL_WORKFLOW = "kubernaut.io/workflow-id"
MANAGED_BY = "aianalysis-executor"
STEP_NAME = "workflow"
"""The one step (container) of a ``job`` workflow: ``failureDetails.failedStepIndex`` is 0."""
MAX_JOB_NAME = 63  # the Job controller copies the name into a label value
_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


@dataclasses.dataclass(frozen=True, kw_only=True)
class JobSettings:
    backoff_limit: int = 0
    default_deadline_seconds: int = 1800
    deadline_multiplier: float = 2.0
    cpu_limit: str = "500m"
    memory_limit: str = "256Mi"
    ephemeral_storage_limit: str = "256Mi"


def pod_security(settings: JobSettings) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The Pod Security "restricted" defaults every workflow Pod gets (pod and container
    securityContext) and its resource bounds: a workflow image runs as a non-root user, cannot
    escalate, holds no capabilities and is confined by the runtime's default seccomp profile."""
    pod = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    container = {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    limits = {
        "cpu": settings.cpu_limit,
        "memory": settings.memory_limit,
        "ephemeral-storage": settings.ephemeral_storage_limit,
    }
    requests = {"cpu": "10m", "memory": "32Mi", "ephemeral-storage": "16Mi"}
    return pod, container, {"limits": limits, "requests": requests}


# ---- the catalog entry ---------------------------------------------------------------------------


def accepted(workflow: Mapping[str, Any]) -> bool:
    """A RemediationWorkflow object the catalog still offers: an ``Accepted`` condition, once the
    catalog controller writes one, must be True, and lifecycle ``Disabled`` never runs. (The
    catalog's own filter of refused workflows applies too, through the catalog the executor follows.)"""
    conditions = (workflow.get("status") or {}).get("conditions") or []
    verdict = next((c for c in conditions if c.get("type") == "Accepted"), None)
    lifecycle = (workflow.get("spec") or {}).get("lifecycle")
    return (verdict is None or verdict.get("status") == "True") and lifecycle != "Disabled"


# ---- the Job ------------------------------------------------------------------------------------------


def job_name(execution_name: str) -> str:
    if len(execution_name) <= MAX_JOB_NAME:
        return execution_name
    digest = hashlib.sha256(execution_name.encode()).hexdigest()[:8]
    return f"{execution_name[: MAX_JOB_NAME - 9].rstrip('-.')}-{digest}"


def deadline_seconds(estimated: str | None, settings: JobSettings) -> int:
    """``estimatedDuration`` (``90s``, ``5m``, ``1h30m``) × the multiplier, else the default."""
    match = _DURATION.fullmatch(estimated.strip()) if estimated else None
    if not match or not any(match.groups()):
        return settings.default_deadline_seconds
    hours, minutes, seconds = (int(g or 0) for g in match.groups())
    return max(1, round((hours * 3600 + minutes * 60 + seconds) * settings.deadline_multiplier))


def job_manifest(
    execution: Mapping[str, Any],
    *,
    spec: resources.WorkflowExecutionSpec,
    workflow: catalog.Workflow,
    settings: JobSettings,
) -> dict[str, Any]:
    """The Job of one execution: owned by it, the workflow's image and ServiceAccount, parameters as
    environment variables, a deadline, no retries by default."""
    meta = execution["metadata"]
    labels = {
        LABEL_EXECUTION: meta["name"][:63].rstrip("-."),
        LABEL_WORKFLOW: workflow.workflow_id[:63].rstrip("-."),
        "app.kubernetes.io/managed-by": MANAGED_BY,
    }
    pod_security_context, container_security_context, bounds = pod_security(settings)
    account = workflow.spec.execution.service_account_name
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "securityContext": pod_security_context,
        # A token only for a workflow that declares the ServiceAccount its remediation needs; never
        # the namespace's ``default`` one.
        "automountServiceAccountToken": bool(account),
        "containers": [
            {
                "name": STEP_NAME,
                "image": workflow.spec.execution.container_image,
                "env": [{"name": k, "value": v} for k, v in sorted(spec.parameters.items())],
                "terminationMessagePolicy": "FallbackToLogsOnError",
                "securityContext": container_security_context,
                "resources": bounds,
            }
        ],
    }
    if account:
        pod_spec["serviceAccountName"] = account
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job_name(meta["name"]),
            "namespace": meta["namespace"],
            "labels": labels,
            "ownerReferences": [
                {
                    "apiVersion": resources.API_VERSION,
                    "kind": "WorkflowExecution",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "backoffLimit": settings.backoff_limit,
            "activeDeadlineSeconds": deadline_seconds(workflow.spec.estimated_duration, settings),
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        },
    }


def owned_by(job: Mapping[str, Any], execution: Mapping[str, Any]) -> bool:
    """The Job was made for this very execution (not for an earlier object of the same name)."""
    uid = execution["metadata"]["uid"]
    return any(ref.get("uid") == uid for ref in (job.get("metadata") or {}).get("ownerReferences") or [])


# ---- following it ---------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class Observation:
    """The execution's status as the Job shows it now."""

    phase: resources.ExecutionPhase
    failure: reasons.Failure | None = None
    running_since: str | None = None


def observe(
    *,
    job: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    events: Sequence[Mapping[str, Any]] = (),
    nodes: Mapping[str, Mapping[str, Any]] | None = None,
) -> Observation:
    finished = reasons.job_finished(job)
    if finished == "Complete":
        return Observation(phase="Completed")
    if finished == "Failed":
        return Observation(
            phase="Failed", failure=reasons.failure_of(job=job, pods=pods, events=events, nodes=nodes)
        )
    early = reasons.early_failure(pods)
    if early is not None:
        return Observation(phase="Failed", failure=early)
    started = [_running_since(pod) for pod in pods]
    since = min((s for s in started if s), default=None)
    return Observation(phase="Running" if since else "Pending", running_since=since)


def _running_since(pod: Mapping[str, Any]) -> str | None:
    status = pod.get("status") or {}
    if status.get("phase") not in ("Running", "Succeeded", "Failed"):
        return None
    for container in status.get("containerStatuses") or []:
        state = container.get("state") or {}
        started = (state.get("running") or state.get("terminated") or {}).get("startedAt")
        if started:
            return str(started)
    return str(status.get("startTime") or "") or None


# ---- status -------------------------------------------------------------------------------------------


_Outcome = Literal["completed", "failed", "refused", "other_engine"]


def next_status(
    current: resources.WorkflowExecutionStatus,
    *,
    phase: resources.ExecutionPhase,
    now: datetime.datetime,
    reason: str,
    message: str,
    generation: int | None,
    failure: reasons.Failure | None = None,
    started_at: str | None = None,
) -> resources.WorkflowExecutionStatus:
    """``current`` moved to ``phase``: times set once, the ``Executed`` condition replaced by type
    (other writers' conditions, such as the operator's ``RecoveryStarted``, are kept)."""
    stamp = resources.timestamp(now)
    started = current.started_at or started_at or (stamp if phase not in ("Pending", "Refused") else None)
    finished = stamp if phase in resources.EXECUTION_TERMINAL_PHASES else None
    details = None
    if failure is not None:
        details = resources.ExecutionFailure(
            failed_step_index=0,
            failed_step_name=STEP_NAME,
            reason=failure.reason,
            message=failure.message,
            exit_code=failure.exit_code,
            failed_at=failure.failed_at or stamp,
            execution_time=execution_time(started, failure.failed_at or stamp),
        )
    condition_status: resources.ConditionStatus = (
        "True" if phase == "Completed" else "False" if phase in ("Failed", "Refused") else "Unknown"
    )
    return current.model_copy(
        update={
            "phase": phase,
            "started_at": started,
            "completed_at": finished or current.completed_at,
            "failure_details": details or current.failure_details,
            "conditions": resources.set_condition(
                current.conditions,
                resources.condition(
                    CONDITION, condition_status, reason, message, now=now, generation=generation
                ),
            ),
        }
    )


def execution_time(started: str | None, ended: str) -> str | None:
    """``2m34s`` between two RFC 3339 times (None when the start is unknown)."""
    start, end = resources.parse_timestamp(started), resources.parse_timestamp(ended)
    if start is None or end is None:
        return None
    seconds = max(0, int((end - start).total_seconds()))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return (f"{hours}h" if hours else "") + (f"{minutes}m" if hours or minutes else "") + f"{secs}s"
