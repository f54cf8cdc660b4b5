"""The Job manifest and status transitions of the executor (pure parts; admission and approvals:
``test_executor_admission``)."""

from __future__ import annotations

import datetime
from typing import Any

from aianalysis import catalog, resources
from aianalysis.executor import plan, reasons

NOW = datetime.datetime(2026, 11, 20, 10, 5, 0, tzinfo=datetime.UTC)
WORKFLOW = catalog.Workflow(
    name="restart-v1",
    spec=resources.RemediationWorkflowSpec.model_validate(
        {
            "workflowId": "restart-deployment",
            "version": "1.0.0",
            "title": "Restart",
            "description": "Rolling restart",
            "labels": {"signalTypes": ["CrashLoopBackOff"], "environment": ["production"]},
            "riskLevel": "medium",
            "parameters": [
                {"name": "TARGET_NAMESPACE", "type": "string", "required": True},
                {"name": "REPLICAS", "type": "integer", "minimum": 1, "maximum": 5},
            ],
            "execution": {
                "engine": "job",
                "containerImage": "registry.example/wf/restart:1",
                "serviceAccountName": "wf-restart",
            },
            "estimatedDuration": "1m30s",
        }
    ),
)
BUSINESS = resources.BusinessContext(environment="production", risk_tolerance="medium")


def spec(**parameters: str) -> resources.WorkflowExecutionSpec:
    return resources.WorkflowExecutionSpec(
        analysis_ref="orders-crash",
        workflow_ref=resources.WorkflowRef(
            workflow_id="restart-deployment", version="1.0.0", container_image="registry.example/wf/restart:1"
        ),
        parameters=parameters or {"TARGET_NAMESPACE": "prod"},
    )


def execution(name: str = "orders-crash-exec-1") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "prod", "uid": "wfe-uid", "generation": 1}}


def test_job_manifest() -> None:
    job = plan.job_manifest(
        execution(),
        spec=spec(TARGET_NAMESPACE="prod", REPLICAS="2"),
        workflow=WORKFLOW,
        settings=plan.JobSettings(),
    )
    pod = job["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert container["image"] == "registry.example/wf/restart:1"
    assert container["env"] == [
        {"name": "REPLICAS", "value": "2"},
        {"name": "TARGET_NAMESPACE", "value": "prod"},
    ]
    assert pod["serviceAccountName"] == "wf-restart" and pod["automountServiceAccountToken"] is True
    assert pod["restartPolicy"] == "Never"
    # Pod Security "restricted" defaults and resource bounds on every workflow Pod
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert set(container["resources"]["limits"]) == {"cpu", "memory", "ephemeral-storage"}
    assert job["spec"]["backoffLimit"] == 0
    assert job["spec"]["activeDeadlineSeconds"] == 180  # 1m30s × 2
    [owner] = job["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("WorkflowExecution", "wfe-uid", True)


def test_a_workflow_without_a_service_account_gets_no_token() -> None:
    bare = catalog.Workflow(
        name=WORKFLOW.name,
        spec=WORKFLOW.spec.model_copy(
            update={"execution": WORKFLOW.spec.execution.model_copy(update={"service_account_name": None})}
        ),
    )
    job = plan.job_manifest(execution(), spec=spec(), workflow=bare, settings=plan.JobSettings())
    pod = job["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False and "serviceAccountName" not in pod


def test_deadline_and_long_names() -> None:
    assert plan.deadline_seconds(None, plan.JobSettings(default_deadline_seconds=900)) == 900
    assert plan.deadline_seconds("bogus", plan.JobSettings(default_deadline_seconds=900)) == 900
    assert plan.deadline_seconds("1h", plan.JobSettings(deadline_multiplier=1.0)) == 3600
    long = "x" * 200
    assert len(plan.job_name(long)) <= 63
    assert plan.job_name(long) != plan.job_name("x" * 199)


def test_status_transitions_keep_other_conditions_and_times() -> None:
    recovery = resources.Condition(
        type="RecoveryStarted", status="True", reason="RecoveryCreated", last_transition_time="t0"
    )
    start = resources.WorkflowExecutionStatus(conditions=[recovery])
    pending = plan.next_status(
        start, phase="Pending", now=NOW, reason="JobCreated", message="job/x created", generation=1
    )
    assert pending.started_at is None
    running = plan.next_status(
        pending, phase="Running", now=NOW, reason="Running", message="running", generation=1,
        started_at="2026-11-20T10:02:00Z",
    )  # fmt: skip
    assert running.started_at == "2026-11-20T10:02:00Z"
    oom = reasons.Failure(
        reason="OOMKilled", message="OOMKilled", exit_code=137, failed_at="2026-11-20T10:04:34Z"
    )
    failed = plan.next_status(
        running, phase="Failed", now=NOW, reason="Failed", message="oom", generation=1, failure=oom
    )
    assert failed.phase == "Failed" and failed.completed_at == "2026-11-20T10:05:00Z"
    details = failed.failure_details
    assert details is not None
    assert (details.reason, details.exit_code, details.failed_step_index, details.failed_step_name) == (
        "OOMKilled",
        137,
        0,
        "workflow",
    )
    assert details.execution_time == "2m34s"
    types = {c.type: c for c in failed.conditions or []}
    assert types["RecoveryStarted"] == recovery
    assert (types[plan.CONDITION].status, types[plan.CONDITION].reason) == ("False", "Failed")
    resources.WorkflowExecutionStatus.model_validate(failed.wire())  # what is written fits the CRD model


def test_only_a_workflow_accepted_for_its_current_generation_runs() -> None:
    """Fail closed: a workflow no catalog gate has judged (no condition), judged for an older
    generation, refused or Disabled is not run."""

    def judged(status: str, *, observed: int | None = 3, generation: int = 3, **spec: str) -> dict[str, Any]:
        condition = {"type": "Accepted", "status": status, "reason": "x", "lastTransitionTime": "t"}
        if observed is not None:
            condition["observedGeneration"] = observed
        return {"metadata": {"generation": generation}, "spec": spec, "status": {"conditions": [condition]}}

    assert plan.accepted(judged("True"))
    assert not plan.accepted({"metadata": {"generation": 3}, "spec": {}})  # never judged
    assert not plan.accepted({"metadata": {"generation": 3}, "spec": {}, "status": {"conditions": []}})
    assert not plan.accepted(judged("True", observed=2))  # judged before the spec changed
    assert not plan.accepted(judged("True", observed=None))  # for no generation in particular
    assert not plan.accepted(judged("False"))
    assert not plan.accepted(judged("Unknown"))
    assert not plan.accepted(judged("True", lifecycle="Disabled"))
