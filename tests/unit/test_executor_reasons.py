"""The reason-code table (DD-RECOVERY-003) from object shapes as the API server and kubelet write them."""

from __future__ import annotations

from typing import Any

import pytest

from aianalysis.executor import plan, reasons


def job(
    *, reason: str | None = None, message: str = "", backoff_limit: int = 0, complete: bool = False
) -> dict[str, Any]:
    conditions = []
    if complete:
        conditions.append({"type": "SuccessCriteriaMet", "status": "True"})
        conditions.append({"type": "Complete", "status": "True"})
    if reason:
        conditions.append({"type": "FailureTarget", "status": "True", "reason": reason, "message": message})
        conditions.append({"type": "Failed", "status": "True", "reason": reason, "message": message})
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "fix-1", "namespace": "prod", "uid": "job-uid"},
        "spec": {"backoffLimit": backoff_limit, "activeDeadlineSeconds": 600},
        "status": {
            "conditions": conditions,
            "failed": 1 if reason else 0,
            "startTime": "2026-11-20T10:00:00Z",
        },
    }


def pod(
    *,
    phase: str = "Pending",
    state: dict[str, Any] | None = None,
    last_state: dict[str, Any] | None = None,
    conditions: list[dict[str, Any]] | None = None,
    reason: str | None = None,
    message: str | None = None,
    node: str | None = None,
) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase, "conditions": conditions or []}
    if state is not None or last_state is not None:
        status["containerStatuses"] = [
            {
                "name": "workflow",
                "image": "registry.example/wf/fix:1.0",
                "ready": False,
                "restartCount": 0,
                "state": state or {},
                "lastState": last_state or {},
            }
        ]
    if reason:
        status["reason"] = reason
    if message:
        status["message"] = message
    spec: dict[str, Any] = {"containers": [{"name": "workflow", "image": "registry.example/wf/fix:1.0"}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": "fix-1-abcde", "namespace": "prod"}, "spec": spec, "status": status}


def terminated(reason: str, exit_code: int, message: str | None = None) -> dict[str, Any]:
    done = {
        "reason": reason,
        "exitCode": exit_code,
        "startedAt": "2026-11-20T10:00:05Z",
        "finishedAt": "2026-11-20T10:02:39Z",
    }
    if message:
        done["message"] = message
    return {"terminated": done}


def event(reason: str, message: str, *, name: str = "fix-1-abcde", kind: str = "Pod") -> dict[str, Any]:
    return {
        "type": "Warning",
        "reason": reason,
        "message": message,
        "involvedObject": {"kind": kind, "name": name, "namespace": "prod"},
        "lastTimestamp": "2026-11-20T10:01:00Z",
    }


def node(name: str, ready: str, message: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "status": {"conditions": [{"type": "Ready", "status": ready, "reason": "x", "message": message}]},
    }


def test_oomkilled_container_reports_oomkilled_with_exit_code_137() -> None:
    failed = reasons.failure_of(
        job=job(reason="BackoffLimitExceeded", message="Job has reached the specified backoff limit"),
        pods=[pod(phase="Failed", state=terminated("OOMKilled", 137))],
    )
    assert failed.reason == "OOMKilled"
    assert failed.exit_code == 137
    assert failed.failed_at == "2026-11-20T10:02:39Z"
    assert "memory" in failed.message


def test_error_exit_reports_error_and_the_exit_code() -> None:
    failed = reasons.failure_of(
        job=job(reason="BackoffLimitExceeded"),
        pods=[pod(phase="Failed", state=terminated("Error", 3, "kubectl rollout failed: timed out"))],
    )
    assert (failed.reason, failed.exit_code) == ("Error", 3)
    assert "exited with code 3" in failed.message and "timed out" in failed.message


def test_retried_generic_failures_are_backoff_limit_exceeded() -> None:
    failed = reasons.failure_of(
        job=job(reason="BackoffLimitExceeded", backoff_limit=2),
        pods=[pod(phase="Failed", state=terminated("Error", 1))],
    )
    assert failed.reason == "BackoffLimitExceeded"
    assert failed.exit_code == 1


def test_backoff_limit_exceeded_without_pods_left() -> None:
    failed = reasons.failure_of(
        job=job(reason="BackoffLimitExceeded", message="Job has reached the limit"), pods=[]
    )
    assert failed.reason == "BackoffLimitExceeded"


@pytest.mark.parametrize(
    ("termination", "code"),
    [
        (
            'Error from server (Forbidden): deployments.apps "api" is forbidden: User '
            '"system:serviceaccount:prod:wf" cannot patch resource "deployments"',
            "Forbidden",
        ),
        ("error: You must be logged in to the server (Unauthorized)", "Unauthorized"),
        ("PATCH https://10.0.0.1/apis/apps/v1/namespaces/prod/deployments/api: 403", "Forbidden"),
    ],
)
def test_api_refusals_reported_by_the_workflow(termination: str, code: str) -> None:
    failed = reasons.failure_of(
        job=job(reason="BackoffLimitExceeded"),
        pods=[pod(phase="Failed", state=terminated("Error", 1, termination))],
    )
    assert failed.reason == code
    assert failed.exit_code == 1


def test_other_termination_reasons_are_error_naming_the_original() -> None:
    failed = reasons.failure_of(
        job=job(reason="BackoffLimitExceeded"),
        pods=[pod(phase="Failed", state=terminated("ContainerCannotRun", 128, "exec: not found"))],
    )
    assert failed.reason == "Error"
    assert "ContainerCannotRun" in failed.message


def test_deadline_exceeded_while_running() -> None:
    failed = reasons.failure_of(
        job=job(reason="DeadlineExceeded", message="Job was active longer than specified deadline"),
        pods=[pod(phase="Running", state={"running": {"startedAt": "2026-11-20T10:00:05Z"}})],
    )
    assert failed.reason == "DeadlineExceeded"
    assert "longer than specified deadline" in failed.message


@pytest.mark.parametrize("code", [137, 143])
def test_the_deadline_kill_of_a_running_pod_is_not_its_own_failure(code: int) -> None:
    """At the deadline the Job controller deletes the Pods still running; until they are gone the
    kubelet reports them ``terminated: Error`` with the signal's exit code — which is not why the
    Job failed. A failure before the kill (``lastState``) still is."""
    stopped = pod(phase="Running", state={"terminated": {"reason": "Error", "exitCode": code}})
    stopped["metadata"]["deletionTimestamp"] = "2026-11-20T10:10:00Z"
    deadline = job(reason="DeadlineExceeded", message="Job was active longer than specified deadline")
    assert reasons.failure_of(job=deadline, pods=[stopped]).reason == "DeadlineExceeded"
    stopped["status"]["containerStatuses"][0]["lastState"] = {
        "terminated": {"reason": "OOMKilled", "exitCode": 137}
    }
    assert reasons.failure_of(job=deadline, pods=[stopped]).reason == "OOMKilled"
    alive = pod(phase="Running", state={"terminated": {"reason": "Error", "exitCode": code}})
    assert reasons.failure_of(job=deadline, pods=[alive]).reason == "Error"


@pytest.mark.parametrize("waiting", ["ImagePullBackOff", "InvalidImageName"])
def test_image_problems_end_the_execution_before_the_job_does(waiting: str) -> None:
    pulling = pod(
        state={
            "waiting": {"reason": waiting, "message": 'Back-off pulling image "registry.example/wf/fix:1.0"'}
        }
    )
    early = reasons.early_failure([pulling])
    assert early is not None and early.reason == waiting
    seen = plan.observe(job=job(), pods=[pulling])
    assert seen.phase == "Failed" and seen.failure is not None and seen.failure.reason == waiting


def test_err_image_pull_is_retried_but_named_if_the_deadline_hits() -> None:
    pulling = pod(state={"waiting": {"reason": "ErrImagePull", "message": "rpc error: not found"}})
    assert reasons.early_failure([pulling]) is None
    assert plan.observe(job=job(), pods=[pulling]).phase == "Pending"
    failed = reasons.failure_of(job=job(reason="DeadlineExceeded"), pods=[pulling])
    assert failed.reason == "ErrImagePull"


def test_evicted_pod() -> None:
    failed = reasons.failure_of(
        job=job(reason="BackoffLimitExceeded"),
        pods=[pod(phase="Failed", reason="Evicted", message="The node was low on resource: memory.")],
    )
    assert failed.reason == "Evicted"
    assert "low on resource" in failed.message


@pytest.mark.parametrize(
    ("message", "code"),
    [
        (
            "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available.",
            "InsufficientCPU",
        ),
        (
            "0/3 nodes are available: 1 Insufficient memory, 2 node(s) had untolerated taint.",
            "InsufficientMemory",
        ),
        ("0/2 nodes are available: 2 node(s) were unschedulable.", "Unschedulable"),
        ("0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.", "FailedScheduling"),
    ],
)
def test_scheduling_failures_from_the_schedulers_message(message: str, code: str) -> None:
    unscheduled = pod(
        conditions=[
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
        ]
    )
    failed = reasons.failure_of(job=job(reason="DeadlineExceeded"), pods=[unscheduled])
    assert failed.reason == code
    assert message[:20] in failed.message


def test_failed_scheduling_event_when_the_pod_condition_is_gone() -> None:
    failed = reasons.failure_of(
        job=job(reason="DeadlineExceeded"),
        pods=[pod()],
        events=[event("FailedScheduling", "0/3 nodes are available: 3 Insufficient memory.")],
    )
    assert failed.reason == "InsufficientMemory"


@pytest.mark.parametrize(
    ("reason", "message"),
    [
        ("FailedMount", 'MountVolume.SetUp failed for volume "data" : secret "creds" not found'),
        ("FailedAttachVolume", 'AttachVolume.Attach failed for volume "pvc-1" : Multi-Attach error'),
        ("NetworkNotReady", "network is not ready: container runtime network not ready"),
    ],
)
def test_volume_and_network_events_on_the_pod(reason: str, message: str) -> None:
    creating = pod(state={"waiting": {"reason": "ContainerCreating"}})
    failed = reasons.failure_of(
        job=job(reason="DeadlineExceeded"), pods=[creating], events=[event(reason, message)]
    )
    assert failed.reason == reason
    assert message in failed.message


def test_events_about_other_objects_do_not_count() -> None:
    creating = pod(state={"waiting": {"reason": "ContainerCreating"}})
    other = event("FailedMount", "not ours", name="someone-else")
    assert (
        reasons.failure_of(job=job(reason="DeadlineExceeded"), pods=[creating], events=[other]).reason
        == "DeadlineExceeded"
    )


@pytest.mark.parametrize(("ready", "code"), [("False", "NodeNotReady"), ("Unknown", "NodeUnreachable")])
def test_node_problems_from_the_pods_node(ready: str, code: str) -> None:
    running = pod(phase="Running", state={"running": {"startedAt": "2026-11-20T10:00:05Z"}}, node="worker-2")
    nodes = {"worker-2": node("worker-2", ready, "Kubelet stopped posting node status.")}
    failed = reasons.failure_of(job=job(reason="DeadlineExceeded"), pods=[running], nodes=nodes)
    assert failed.reason == code
    assert "worker-2" in failed.message


def test_node_lost_and_taint_manager_evictions() -> None:
    lost = pod(
        phase="Failed", reason="NodeLost", message="Node worker-2 which was running pod is unresponsive"
    )
    assert reasons.failure_of(job=job(reason="BackoffLimitExceeded"), pods=[lost]).reason == "NodeUnreachable"
    disrupted = pod(
        phase="Failed",
        conditions=[
            {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "DeletionByTaintManager",
                "message": "Taint manager: deleting due to NoExecute taint key node.kubernetes.io/not-ready",
            }
        ],
    )
    assert (
        reasons.failure_of(job=job(reason="BackoffLimitExceeded"), pods=[disrupted]).reason == "NodeNotReady"
    )


def test_node_not_ready_event() -> None:
    running = pod(phase="Running", state={"running": {"startedAt": "2026-11-20T10:00:05Z"}})
    failed = reasons.failure_of(
        job=job(reason="DeadlineExceeded"),
        pods=[running],
        events=[event("NodeNotReady", "Node is not ready")],
    )
    assert failed.reason == "NodeNotReady"


def test_unknown_job_failure_is_error_with_the_original_reason() -> None:
    failed = reasons.failure_of(
        job=job(reason="PodFailurePolicy", message="Container failed with exit code 42"), pods=[]
    )
    assert failed.reason == "Error"
    assert "PodFailurePolicy" in failed.message


def test_completion_and_running() -> None:
    assert plan.observe(job=job(complete=True), pods=[]).phase == "Completed"
    running = pod(phase="Running", state={"running": {"startedAt": "2026-11-20T10:00:05Z"}})
    seen = plan.observe(job=job(), pods=[running])
    assert (seen.phase, seen.running_since) == ("Running", "2026-11-20T10:00:05Z")
    assert plan.observe(job=job(), pods=[pod()]).phase == "Pending"


def test_termination_messages_are_redacted_before_status_events_and_the_recovery_prompt() -> None:
    """A workflow's termination message is its log tail on error: a printed credential must not
    reach the execution's status (and from there the recovery analysis' prompt)."""
    leaked = "connecting with password=hunter2 failed; Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIi"
    failure = reasons.failure_of(
        job=job(reason="BackoffLimitExceeded"),
        pods=[pod(phase="Failed", state=terminated("Error", 1, leaked))],
    )
    assert failure.reason == "Error" and "connecting with" in failure.message
    assert "hunter2" not in failure.message and "eyJhbGciOiJIUzI1NiJ9" not in failure.message
