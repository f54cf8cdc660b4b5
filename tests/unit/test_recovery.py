from __future__ import annotations

import copy
from typing import Any

from aianalysis import resources
from aianalysis.controller import recovery

SPEC: dict[str, Any] = {
    "signal": {"type": "OOMKilled", "severity": "critical", "errorMessage": "Container killed due to OOM"},
    "resource": {"kind": "Deployment", "name": "payment-api", "namespace": "production"},
    "businessContext": {"environment": "production", "priority": "P1", "riskTolerance": "low"},
}
STATUS: dict[str, Any] = {
    "phase": "Completed",
    "rootCause": {
        "summary": "limit 256Mi below working set",
        "severity": "high",
        "signalType": "OOMKilled",
        "contributingFactors": ["traffic peak"],
    },
    "selectedWorkflow": {
        "workflowId": "oomkill-increase-memory",
        "version": "1.0.0",
        "containerImage": "registry.example/wf@sha256:aa",
        "confidence": 0.9,
        "rationale": "memory limit too low",
        "parameters": {"MEMORY_LIMIT_NEW": "512Mi"},
    },
    "kopf": {"progress": {}},  # foreign bookkeeping must not break parsing
}


def analysis(name: str = "payment-oom", spec: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "demo"}, "spec": spec or SPEC, "status": STATUS}


def execution(
    name: str = "payment-oom-exec-1", ref: str = "payment-oom", reason: str = "OOMKilled"
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "demo", "uid": "uid-1"},
        "spec": {
            "analysisRef": ref,
            "workflowRef": {"workflowId": "oomkill-increase-memory", "version": "1.0.0"},
            "parameters": {"MEMORY_LIMIT_NEW": "512Mi"},
        },
        "status": {
            "phase": "Failed",
            "failureDetails": {
                "failedStepIndex": 0,
                "failedStepName": "patch",
                "reason": reason,
                "message": "job OOM",
                "exitCode": 137,
                "failedAt": "2026-11-20T10:05:00Z",
                "executionTime": "2m34s",
            },
        },
    }


def next_step(
    *, execution: dict[str, Any], analysis: dict[str, Any] | None, max_attempts: int
) -> recovery.Course:
    """As the reconciler calls it: the execution's status parsed once, passed beside its body."""
    status = resources.WorkflowExecutionStatus.parse_known(execution["status"])
    return recovery.next_step(
        execution=execution, status=status, analysis=analysis, max_attempts=max_attempts
    )


def test_first_failure_creates_attempt_one_with_full_context() -> None:
    plan = next_step(execution=execution(), analysis=analysis(), max_attempts=3)

    assert isinstance(plan, recovery.Create)
    assert plan.name == "payment-oom-recovery-1"
    spec = resources.AIAnalysisSpec.model_validate(plan.body["spec"])
    assert spec.signal == resources.AIAnalysisSpec.model_validate(SPEC).signal
    assert spec.recovery is not None and spec.recovery.attempt_number == 1
    assert spec.recovery.original_analysis_ref == "payment-oom"
    [attempt] = spec.recovery.previous_executions
    assert attempt.workflow_execution_ref == "payment-oom-exec-1"
    assert attempt.original_rca.summary == "limit 256Mi below working set"
    assert attempt.selected_workflow.parameters == {"MEMORY_LIMIT_NEW": "512Mi"}
    assert attempt.selected_workflow.container_image == "registry.example/wf@sha256:aa"
    assert attempt.failure.reason == "OOMKilled" and attempt.failure.exit_code == 137
    assert plan.body["metadata"]["ownerReferences"][0]["name"] == "payment-oom-exec-1"


def test_later_failures_extend_the_history_in_order() -> None:
    first = next_step(execution=execution(), analysis=analysis(), max_attempts=3)
    assert isinstance(first, recovery.Create)
    second_analysis = analysis(first.name, spec=first.body["spec"])
    second = next_step(
        execution=execution("exec-2", first.name, "DeadlineExceeded"),
        analysis=second_analysis,
        max_attempts=3,
    )

    assert isinstance(second, recovery.Create)
    assert second.name == "payment-oom-recovery-2"
    history = second.body["spec"]["recovery"]["previousExecutions"]
    assert [h["workflowExecutionRef"] for h in history] == ["payment-oom-exec-1", "exec-2"]
    assert [h["failure"]["reason"] for h in history] == ["OOMKilled", "DeadlineExceeded"]
    assert second.body["spec"]["recovery"]["attemptNumber"] == 2


def test_the_attempt_beyond_the_limit_gives_up_for_human_review() -> None:
    spec = copy.deepcopy(SPEC)
    base = execution()
    history = [
        recovery._attempt(  # three earlier failures already recorded
            f"exec-{i}",
            resources.WorkflowExecutionSpec.model_validate(base["spec"]),
            resources.ExecutionFailure(reason="Error"),
            resources.AIAnalysisSpec.model_validate(SPEC),
            resources.AIAnalysisStatus.model_validate({k: v for k, v in STATUS.items() if k != "kopf"}),
        ).wire()
        for i in (1, 2)
    ]
    spec["recovery"] = {
        "attemptNumber": 2,
        "originalAnalysisRef": "payment-oom",
        "previousExecutions": history,
    }

    plan = next_step(
        execution=execution("exec-3", "payment-oom-recovery-2"),
        analysis=analysis("payment-oom-recovery-2", spec),
        max_attempts=2,
    )

    assert isinstance(plan, recovery.GiveUp)
    assert plan.reason == "max_recovery_attempts" and plan.attempt == 3


def test_missing_analysis_or_failure_details_is_explained_not_raised() -> None:
    no_analysis = next_step(execution=execution(ref="gone"), analysis=None, max_attempts=3)
    assert isinstance(no_analysis, recovery.Unusable) and "gone" in no_analysis.message

    bare = execution()
    del bare["status"]["failureDetails"]
    no_details = next_step(execution=bare, analysis=analysis(), max_attempts=3)
    assert isinstance(no_details, recovery.Unusable) and no_details.reason == "NoFailureDetails"


def test_recovery_name_fits_kubernetes_limits() -> None:
    name = recovery.recovery_name("x" * 253, 3)
    assert len(name) == 253 and name.endswith("-recovery-3")
