"""Re-validation, the Job manifest, status transitions and approvals of the executor (pure parts)."""

from __future__ import annotations

import datetime
from typing import Any

from aianalysis import catalog, resources
from aianalysis.executor import approval, plan, reasons

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


def test_valid_selection_runs() -> None:
    assert plan.check_selection(spec(), workflow=WORKFLOW, business=BUSINESS) == []


def test_deleted_workflow_is_refused() -> None:
    [problem] = plan.check_selection(spec(), workflow=None, business=BUSINESS)
    assert "no longer in the catalog" in problem


def test_parameters_invalid_under_the_current_catalog_are_refused() -> None:
    problems = plan.check_selection(
        spec(TARGET_NAMESPACE="prod", REPLICAS="9"), workflow=WORKFLOW, business=BUSINESS
    )
    assert any("REPLICAS" in p for p in problems)
    missing = plan.check_selection(spec(REPLICAS="2"), workflow=WORKFLOW, business=BUSINESS)
    assert any("TARGET_NAMESPACE" in p for p in missing)


def test_policy_and_image_changes_are_refused() -> None:
    staging = resources.BusinessContext(environment="staging", risk_tolerance="medium")
    assert plan.check_selection(spec(), workflow=WORKFLOW, business=staging)
    low = resources.BusinessContext(environment="production", risk_tolerance="low")
    assert any("riskLevel" in p for p in plan.check_selection(spec(), workflow=WORKFLOW, business=low))
    moved = spec().model_copy(
        update={
            "workflow_ref": resources.WorkflowRef(
                workflow_id="restart-deployment", version="1.0.0", container_image="other:2"
            )
        }
    )
    assert any("image" in p for p in plan.check_selection(moved, workflow=WORKFLOW, business=BUSINESS))


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
    assert pod["serviceAccountName"] == "wf-restart"
    assert pod["restartPolicy"] == "Never"
    assert job["spec"]["backoffLimit"] == 0
    assert job["spec"]["activeDeadlineSeconds"] == 180  # 1m30s × 2
    [owner] = job["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("WorkflowExecution", "wfe-uid", True)


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


def analysis(**status: Any) -> dict[str, Any]:
    base = {
        "phase": "Completed",
        "completedAt": "2026-11-20T10:04:00Z",
        "selectedWorkflow": {
            "workflowId": "restart-deployment", "version": "1.0.0",
            "containerImage": "registry.example/wf/restart:1",
            "confidence": 0.95, "rationale": "crash loop after config change",
            "parameters": {"TARGET_NAMESPACE": "prod"},
        },
    }  # fmt: skip
    return {
        "metadata": {"name": "orders-crash", "namespace": "prod", "uid": "aia-uid"},
        "spec": {
            "signal": {"type": "CrashLoopBackOff", "severity": "high"},
            "resource": {"kind": "Deployment", "name": "orders", "namespace": "prod"},
            "businessContext": {"environment": "production"},
        },
        "status": {**base, **status},
    }


def test_approve_creates_the_first_execution() -> None:
    decided = approval.approve(analysis(), executions=[], approver="alice")
    assert isinstance(decided, approval.Create)
    assert decided.name == "orders-crash-exec-1"
    body = decided.body
    assert body["spec"]["workflowRef"]["workflowId"] == "restart-deployment"
    assert body["spec"]["parameters"] == {"TARGET_NAMESPACE": "prod"}
    assert body["spec"]["targetResource"] == {"kind": "Deployment", "name": "orders", "namespace": "prod"}
    assert body["metadata"]["labels"][approval.LABEL_APPROVED_BY] == "alice"


def test_approve_refusals() -> None:
    none = approval.approve(
        analysis(selectedWorkflow=None, humanReviewReason="no_eligible_workflow"), executions=[]
    )
    assert isinstance(none, approval.Refuse) and "no_eligible_workflow" in none.message
    review = approval.approve(
        analysis(needsHumanReview=True, humanReviewReason="low_confidence"), executions=[]
    )
    assert isinstance(review, approval.Refuse) and "--override-review" in review.message
    overridden = approval.approve(
        analysis(needsHumanReview=True, humanReviewReason="low_confidence"),
        executions=[],
        override_review=True,
    )
    assert isinstance(overridden, approval.Create)
    first = {
        "metadata": {"name": "orders-crash-exec-1"},
        "spec": {"analysisRef": "orders-crash"},
        "status": {"phase": "Running"},
    }
    twice = approval.approve(analysis(), executions=[first])
    assert isinstance(twice, approval.Refuse) and "already has an execution" in twice.message
    busy = approval.approve(analysis(), executions=[first], again=True)
    assert isinstance(busy, approval.Refuse) and "has not ended" in busy.message
    ended = {**first, "status": {"phase": "Failed"}}
    again = approval.approve(analysis(), executions=[ended], again=True)
    assert isinstance(again, approval.Create) and again.name == "orders-crash-exec-2"


def test_auto_execute_policy() -> None:
    policy = approval.AutoPolicy(
        enabled=True, min_confidence=0.9, environments=("production",), max_age_seconds=600
    )
    assert isinstance(approval.auto_execute(analysis(), policy=policy, now=NOW), approval.Create)
    off = approval.AutoPolicy(enabled=False, environments=("production",))
    assert isinstance(approval.auto_execute(analysis(), policy=off, now=NOW), approval.Refuse)
    staging_only = approval.AutoPolicy(enabled=True, environments=("staging",))
    assert isinstance(approval.auto_execute(analysis(), policy=staging_only, now=NOW), approval.Refuse)
    unsure = analysis(selectedWorkflow={**analysis()["status"]["selectedWorkflow"], "confidence": 0.8})
    assert isinstance(approval.auto_execute(unsure, policy=policy, now=NOW), approval.Refuse)
    reviewed = analysis(needsHumanReview=True, humanReviewReason="low_confidence")
    assert isinstance(approval.auto_execute(reviewed, policy=policy, now=NOW), approval.Refuse)
    later = NOW + datetime.timedelta(hours=1)
    assert isinstance(approval.auto_execute(analysis(), policy=policy, now=later), approval.Refuse)


def test_refused_or_disabled_workflows_are_not_accepted() -> None:
    def condition(status: str) -> dict[str, Any]:
        return {"type": "Accepted", "status": status, "reason": "x", "lastTransitionTime": "t"}

    assert plan.accepted({"spec": {}})  # no catalog controller has judged it
    assert plan.accepted({"spec": {}, "status": {"conditions": [condition("True")]}})
    assert not plan.accepted({"spec": {}, "status": {"conditions": [condition("False")]}})
    assert not plan.accepted({"spec": {"lifecycle": "Disabled"}})
