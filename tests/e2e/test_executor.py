"""The executor end to end: real kube-apiserver + kube-controller-manager (the Job controller reacts
for real), the executor as a process running as its shipped ServiceAccount (the chart's executor
RBAC, rendered by helm), ``aianalysis approve`` as a person runs it. No scheduler or kubelet: the
tests write the Pod status a kubelet would (through ``/status``).
"""

from __future__ import annotations

import datetime
import json
import os
import re
import secrets
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from aianalysis_dev import devcluster
from tests.e2e.conftest import ROOT, OperatorProcess, get, wait_for

CHART = ROOT / "helm" / "aianalysis-operator"
RELEASE, INSTALL_NAMESPACE = "aianalysis-operator", "aianalysis-system"
EXECUTOR_SA = f"{RELEASE}-executor"
EXECUTOR = f"system:serviceaccount:{INSTALL_NAMESPACE}:{EXECUTOR_SA}"
IMAGE = "registry.example/wf/fix@sha256:" + "a" * 64


def helm_bin() -> Path:
    if bin_dir := os.environ.get("AIANALYSIS_HELM_BIN"):
        return Path(bin_dir) / "helm"
    out = subprocess.run([str(ROOT / "hack" / "build-helm.sh")], capture_output=True, text=True, check=True)
    return Path(out.stdout.strip()) / "helm"


def executor_rbac() -> list[dict[str, Any]]:
    """The chart's executor objects (ServiceAccount, roles, bindings) as `helm template` renders them."""
    rendered = subprocess.run(
        [str(helm_bin()), "template", RELEASE, str(CHART), "--namespace", INSTALL_NAMESPACE,
         "--set", "executor.enabled=true"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    docs = [d for d in yaml.safe_load_all(rendered) if d]
    kinds = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
    return [d for d in docs if d["kind"] in kinds and "executor" in d["metadata"]["name"]]


@pytest.fixture(scope="module")
def jobs_cluster() -> Iterator[devcluster.DevCluster]:
    """Its own API server (static-token users are fixed at start) with kube-controller-manager."""
    groups = ["system:serviceaccounts", f"system:serviceaccounts:{INSTALL_NAMESPACE}"]
    cluster = devcluster.DevCluster(controller_manager=True, users={EXECUTOR: groups}).start()
    try:
        devcluster.apply_crds(cluster, ROOT / "crds")
        cluster.kubectl("create", "namespace", INSTALL_NAMESPACE)
        objects = executor_rbac()
        kinds = {o["kind"] for o in objects}
        assert kinds == {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}
        cluster.kubectl(
            "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})
        )
        cluster.kubectl("apply", "-f", str(ROOT / "examples" / "catalog"))
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def executor_kubeconfig(
    jobs_cluster: devcluster.DevCluster, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    path = tmp_path_factory.mktemp("executor") / "kubeconfig.yaml"
    path.write_text(jobs_cluster.kubeconfig_for(EXECUTOR).read_text())
    return path


@pytest.fixture
def ns(jobs_cluster: devcluster.DevCluster) -> str:
    name = f"ex-{secrets.token_hex(4)}"
    jobs_cluster.kubectl("create", "namespace", name)
    return name


@pytest.fixture
def start_executor(
    executor_kubeconfig: Path, ns: str, tmp_path: Path
) -> Iterator[Callable[..., OperatorProcess]]:
    started: list[OperatorProcess] = []

    def start(**env: str) -> OperatorProcess:
        argv = [sys.executable, "-m", "aianalysis", "executor", "--namespace", ns]
        proc = OperatorProcess(
            kubeconfig=executor_kubeconfig, log_dir=tmp_path / "executor", env=env, argv=argv
        )
        proc.log_dir.mkdir(exist_ok=True)
        proc.start()
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.stop()


# ---- helpers ---------------------------------------------------------------------------------------


def workflow(cluster: devcluster.DevCluster, *, estimated: str = "5m", engine: str = "job") -> dict[str, Any]:
    """A catalog entry of our own (cluster-scoped: a unique id per test)."""
    wid = f"fix-{secrets.token_hex(3)}"
    body = {
        "apiVersion": "kubernaut.io/v1alpha1",
        "kind": "RemediationWorkflow",
        "metadata": {"name": f"{wid}-v1"},
        "spec": {
            "workflowId": wid, "version": "1.0.0", "title": "Fix it", "description": "Fixes the workload.",
            "labels": {"signalTypes": ["OOMKilled"]}, "riskLevel": "low",
            "parameters": [
                {"name": "TARGET_NAMESPACE", "type": "string", "required": True},
                {"name": "MEMORY_LIMIT_NEW", "type": "string", "pattern": "^[0-9]+(Mi|Gi)$"},
            ],
            "execution": {"engine": engine, "containerImage": IMAGE, "serviceAccountName": "wf-fixer"},
            "estimatedDuration": estimated,
        },
    }  # fmt: skip
    cluster.kubectl("apply", "-f", "-", input=json.dumps(body))
    return body


def analysed(
    cluster: devcluster.DevCluster,
    ns: str,
    wf: dict[str, Any],
    *,
    name: str = "api-oom",
    environment: str = "production",
    completed_at: str = "2026-11-20T10:00:00Z",
) -> dict[str, Any]:
    """An AIAnalysis whose status (written through /status, as the operator would) selected ``wf``."""
    body = {
        "apiVersion": "kubernaut.io/v1alpha1",
        "kind": "AIAnalysis",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "signal": {"type": "OOMKilled", "severity": "high"},
            "resource": {"kind": "Deployment", "name": "api", "namespace": ns},
            "businessContext": {"environment": environment},
        },
    }
    cluster.kubectl("apply", "-f", "-", input=json.dumps(body))
    status = {
        "phase": "Completed",
        "completedAt": completed_at,
        "selectedWorkflow": {
            "workflowId": wf["spec"]["workflowId"], "version": "1.0.0", "containerImage": IMAGE,
            "confidence": 0.92, "rationale": "limit below working set",
            "parameters": {"TARGET_NAMESPACE": ns, "MEMORY_LIMIT_NEW": "1Gi"},
        },
    }  # fmt: skip
    patch_status(cluster, "aianalysis", name, ns, status)
    return body


def patch_status(
    cluster: devcluster.DevCluster, kind: str, name: str, ns: str, status: dict[str, Any]
) -> None:
    cluster.kubectl(
        "patch",
        kind,
        name,
        "-n",
        ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": status}),
    )


def approve(
    cluster: devcluster.DevCluster, ns: str, name: str, *extra: str
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    return subprocess.run(
        [sys.executable, "-m", "aianalysis", "approve", name, "-n", ns, *extra],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=60, check=False,
    )  # fmt: skip


def items(cluster: devcluster.DevCluster, kind: str, ns: str, *selector: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = json.loads(
        cluster.kubectl("get", kind, "-n", ns, "-o", "json", *selector).stdout
    )["items"]
    return found


def the_pod(
    cluster: devcluster.DevCluster, ns: str, execution: str, logs: Callable[[], str]
) -> dict[str, Any]:
    """The Pod the Job controller created for the execution's Job."""
    pods: list[dict[str, Any]] = wait_for(
        lambda: items(cluster, "pods", ns, "-l", f"kubernaut.io/workflow-execution={execution}"),
        what=f"the Pod of {execution}", timeout=90, logs=logs,
    )  # fmt: skip
    return pods[0]


def kubelet_reports(
    cluster: devcluster.DevCluster, ns: str, pod: str, *, phase: str, state: dict[str, Any]
) -> None:
    container = {
        "name": "workflow", "image": IMAGE, "imageID": "", "ready": phase == "Running", "restartCount": 0,
        "started": phase == "Running", "state": state,
    }  # fmt: skip
    patch_status(cluster, "pod", pod, ns, {"phase": phase, "containerStatuses": [container]})


def ended(cluster: devcluster.DevCluster, ns: str, name: str) -> dict[str, Any] | None:
    found = get(cluster, "workflowexecutions", name, ns)
    return found if found and (found.get("status") or {}).get("phase") in ("Completed", "Failed") else None


def with_phase(cluster: devcluster.DevCluster, ns: str, name: str, phase: str) -> dict[str, Any] | None:
    found = get(cluster, "workflowexecutions", name, ns)
    return found if found and (found.get("status") or {}).get("phase") == phase else None


def recovery_linked(cluster: devcluster.DevCluster, ns: str, name: str) -> dict[str, Any] | None:
    found = get(cluster, "workflowexecutions", name, ns)
    return found if found and (found.get("status") or {}).get("recoveryAnalysisRef") else None


def job_complete(cluster: devcluster.DevCluster, ns: str, name: str) -> bool:
    conditions = ((get(cluster, "jobs", name, ns) or {}).get("status") or {}).get("conditions") or []
    return any(c["type"] == "Complete" and c["status"] == "True" for c in conditions)


RUNNING = {"running": {"startedAt": "2026-11-20T10:00:05Z"}}
OOM = {"terminated": {"reason": "OOMKilled", "exitCode": 137, "startedAt": "2026-11-20T10:00:05Z",
                      "finishedAt": "2026-11-20T10:02:39Z"}}  # fmt: skip


# ---- tests -------------------------------------------------------------------------------------------


def test_approve_creates_a_job_and_oomkilled_fails_the_execution_then_one_recovery_analysis(
    jobs_cluster: devcluster.DevCluster,
    ns: str,
    start_executor: Callable[..., OperatorProcess],
    tmp_path: Path,
) -> None:
    cluster = jobs_cluster
    wf = workflow(cluster)
    analysed(cluster, ns, wf)  # before the operator starts: it finds the analysis already Completed
    executor = start_executor()
    operator = OperatorProcess(
        kubeconfig=cluster.kubeconfig, log_dir=tmp_path, env={"AIANALYSIS_PROVIDER": "offline"},
        argv=[sys.executable, "-m", "aianalysis", "run", "--namespace", ns],
    )  # fmt: skip
    operator.start()
    try:
        approved = approve(cluster, ns, "api-oom")
        assert approved.returncode == 0, approved.stderr
        assert "workflowexecution/api-oom-exec-1 created" in approved.stdout

        job = wait_for(lambda: get(cluster, "jobs", "api-oom-exec-1", ns), what="the Job", logs=executor.logs)
        pod_spec = job["spec"]["template"]["spec"]
        [container] = pod_spec["containers"]
        assert container["image"] == IMAGE
        assert {e["name"]: e["value"] for e in container["env"]} == {
            "TARGET_NAMESPACE": ns,
            "MEMORY_LIMIT_NEW": "1Gi",
        }
        assert pod_spec["serviceAccountName"] == "wf-fixer"
        execution = get(cluster, "workflowexecutions", "api-oom-exec-1", ns)
        assert execution is not None
        [owner] = job["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["uid"]) == ("WorkflowExecution", execution["metadata"]["uid"])
        assert job["spec"]["backoffLimit"] == 0 and job["spec"]["activeDeadlineSeconds"] == 600

        pod = the_pod(cluster, ns, "api-oom-exec-1", executor.logs)
        kubelet_reports(cluster, ns, pod["metadata"]["name"], phase="Running", state=RUNNING)
        wait_for(
            lambda: with_phase(cluster, ns, "api-oom-exec-1", "Running"), what="Running", logs=executor.logs
        )
        kubelet_reports(cluster, ns, pod["metadata"]["name"], phase="Failed", state=OOM)

        failed = wait_for(
            lambda: ended(cluster, ns, "api-oom-exec-1"), what="the execution to end", logs=executor.logs
        )
        status = failed["status"]
        assert status["phase"] == "Failed"
        details = status["failureDetails"]
        assert (details["reason"], details["exitCode"], details["failedStepIndex"]) == ("OOMKilled", 137, 0)
        assert details["failedStepName"] == "workflow" and details["failedAt"] and details["executionTime"]
        assert status["startedAt"] and status["completedAt"]

        # The analysing operator turns the failure into exactly one recovery analysis.
        noted = wait_for(
            lambda: recovery_linked(cluster, ns, "api-oom-exec-1"),
            what="the recovery link",
            logs=operator.logs,
        )
        assert noted["status"]["recoveryAnalysisRef"] == "api-oom-recovery-1"
        recoveries = [a for a in items(cluster, "aianalyses", ns) if a["spec"].get("recovery")]
        assert [r["metadata"]["name"] for r in recoveries] == ["api-oom-recovery-1"]
        previous = recoveries[0]["spec"]["recovery"]["previousExecutions"][0]
        assert (previous["failure"]["reason"], previous["failure"]["exitCode"]) == ("OOMKilled", 137)
        conditions = {c["type"]: c for c in noted["status"]["conditions"]}
        assert (
            conditions["Executed"]["status"] == "False" and conditions["RecoveryStarted"]["status"] == "True"
        )
        # kubectl tells the story
        table = cluster.kubectl("get", "wfe", "-n", ns).stdout
        assert "api-oom-exec-1" in table and "OOMKilled" in table and "Failed" in table
        assert "executions_total" in executor.metrics() and 'reason="OOMKilled"' in executor.metrics()
    finally:
        operator.stop()


def test_refusals_of_approve(jobs_cluster: devcluster.DevCluster, ns: str) -> None:
    cluster = jobs_cluster
    wf = workflow(cluster)
    analysed(cluster, ns, wf, name="unsure")
    patch_status(
        cluster, "aianalysis", "unsure", ns, {"needsHumanReview": True, "humanReviewReason": "low_confidence"}
    )
    refused = approve(cluster, ns, "unsure")
    assert refused.returncode == 1 and "--override-review" in refused.stderr
    assert approve(cluster, ns, "unsure", "--override-review").returncode == 0
    again = approve(cluster, ns, "unsure", "--override-review")
    assert again.returncode == 1 and "already has an execution" in again.stderr
    assert approve(cluster, ns, "nothing-here").returncode == 1
    assert [e["metadata"]["name"] for e in items(cluster, "wfe", ns)] == ["unsure-exec-1"]


def test_job_past_its_deadline_is_deadline_exceeded(
    jobs_cluster: devcluster.DevCluster, ns: str, start_executor: Callable[..., OperatorProcess]
) -> None:
    cluster = jobs_cluster
    wf = workflow(cluster, estimated="3s")
    executor = start_executor(AIANALYSIS_EXECUTOR_DEADLINE_MULTIPLIER="1")
    analysed(cluster, ns, wf)
    assert approve(cluster, ns, "api-oom").returncode == 0
    pod = the_pod(cluster, ns, "api-oom-exec-1", executor.logs)
    kubelet_reports(cluster, ns, pod["metadata"]["name"], phase="Running", state=RUNNING)
    failed = wait_for(lambda: ended(cluster, ns, "api-oom-exec-1"), what="the deadline", logs=executor.logs)
    assert failed["status"]["failureDetails"]["reason"] == "DeadlineExceeded", failed["status"]
    assert get(cluster, "jobs", "api-oom-exec-1", ns)["spec"]["activeDeadlineSeconds"] == 3  # type: ignore[index]


def test_image_pull_failure_is_image_pull_back_off(
    jobs_cluster: devcluster.DevCluster, ns: str, start_executor: Callable[..., OperatorProcess]
) -> None:
    cluster = jobs_cluster
    wf = workflow(cluster)
    executor = start_executor()
    analysed(cluster, ns, wf)
    assert approve(cluster, ns, "api-oom").returncode == 0
    pod = the_pod(cluster, ns, "api-oom-exec-1", executor.logs)
    waiting = {"waiting": {"reason": "ImagePullBackOff", "message": f'Back-off pulling image "{IMAGE}"'}}
    kubelet_reports(cluster, ns, pod["metadata"]["name"], phase="Pending", state=waiting)
    failed = wait_for(
        lambda: ended(cluster, ns, "api-oom-exec-1"), what="the pull failure", logs=executor.logs
    )
    details = failed["status"]["failureDetails"]
    assert details["reason"] == "ImagePullBackOff" and IMAGE in details["message"]


@pytest.mark.parametrize(
    ("how", "said"), [("deleted", "no longer in the catalog"), ("changed", "MEMORY_LIMIT_NEW")]
)
def test_a_selection_that_became_invalid_is_not_executed(
    jobs_cluster: devcluster.DevCluster,
    ns: str,
    start_executor: Callable[..., OperatorProcess],
    how: str,
    said: str,
) -> None:
    cluster = jobs_cluster
    wf = workflow(cluster)
    executor = start_executor()
    analysed(cluster, ns, wf)
    name = wf["metadata"]["name"]
    if how == "deleted":
        cluster.kubectl("delete", "remediationworkflow", name)
    else:  # the catalog now only allows Mi: the selected 1Gi is no longer a valid parameter
        params = wf["spec"]["parameters"]
        params[1] = {**params[1], "pattern": "^[0-9]+Mi$"}
        cluster.kubectl("apply", "-f", "-", input=json.dumps(wf))
    assert approve(cluster, ns, "api-oom").returncode == 0
    failed = wait_for(lambda: ended(cluster, ns, "api-oom-exec-1"), what="the refusal", logs=executor.logs)
    details = failed["status"]["failureDetails"]
    assert details["reason"] == "SelectionInvalid" and said in details["message"], details
    assert items(cluster, "jobs", ns) == []  # the refusal is written instead of creating the Job


def test_executor_killed_mid_run_creates_no_second_job_and_still_ends_right(
    jobs_cluster: devcluster.DevCluster, ns: str, start_executor: Callable[..., OperatorProcess]
) -> None:
    cluster = jobs_cluster
    wf = workflow(cluster)
    executor = start_executor()
    analysed(cluster, ns, wf)
    assert approve(cluster, ns, "api-oom").returncode == 0
    pod = the_pod(cluster, ns, "api-oom-exec-1", executor.logs)
    kubelet_reports(cluster, ns, pod["metadata"]["name"], phase="Running", state=RUNNING)
    wait_for(lambda: with_phase(cluster, ns, "api-oom-exec-1", "Running"), what="Running", logs=executor.logs)
    executor.kill()
    done = {"terminated": {"reason": "Completed", "exitCode": 0, "startedAt": "2026-11-20T10:00:05Z",
                           "finishedAt": "2026-11-20T10:01:00Z"}}  # fmt: skip
    kubelet_reports(cluster, ns, pod["metadata"]["name"], phase="Succeeded", state=done)
    wait_for(
        lambda: job_complete(cluster, ns, "api-oom-exec-1"), what="the Job controller to complete the Job"
    )
    assert with_phase(cluster, ns, "api-oom-exec-1", "Running"), (
        "nobody followed the Job while the executor was down"
    )
    executor.start()
    completed = wait_for(
        lambda: ended(cluster, ns, "api-oom-exec-1"), what="the execution to end", logs=executor.logs
    )
    assert completed["status"]["phase"] == "Completed"
    assert [j["metadata"]["name"] for j in items(cluster, "jobs", ns)] == ["api-oom-exec-1"]


@pytest.mark.parametrize(
    ("question", "allowed"),
    [
        ("get secrets -n {ns}", False),
        ("list secrets --all-namespaces", False),
        ("patch deployments.apps -n {ns}", False),
        ("delete pods -n {ns}", False),
        ("patch jobs.batch -n {ns}", False),
        ("create pods -n {ns}", False),
        ("create workflowexecutions.kubernaut.io -n {ns}", False),  # only with autoExecute
        ("patch aianalyses.kubernaut.io --subresource=status -n {ns}", False),
        ("create jobs.batch -n {ns}", True),
        ("watch pods -n {ns}", True),
        ("list events -n {ns}", True),
        ("patch workflowexecutions.kubernaut.io --subresource=status -n {ns}", True),
        ("watch remediationworkflows.kubernaut.io", True),
        (f"update leases.coordination.k8s.io/aianalysis-executor-start -n {INSTALL_NAMESPACE}", True),
        (f"update leases.coordination.k8s.io/aianalysis-operator -n {INSTALL_NAMESPACE}", False),
        ("create leases.coordination.k8s.io -n {ns}", False),
    ],
)
def test_executor_service_account_is_least_privilege(
    jobs_cluster: devcluster.DevCluster, ns: str, question: str, allowed: bool
) -> None:
    answer = jobs_cluster.kubectl(
        "auth", "can-i", *question.format(ns=ns).split(), user=EXECUTOR, check=False
    )
    assert answer.stdout.strip() == ("yes" if allowed else "no"), (question, answer.stderr)


def test_executor_logs_no_permission_problem(
    jobs_cluster: devcluster.DevCluster, ns: str, start_executor: Callable[..., OperatorProcess]
) -> None:
    """A full run as the shipped ServiceAccount (Job created, followed, status written, Events posted)
    leaves no 403 in the executor's log."""
    cluster = jobs_cluster
    wf = workflow(cluster)
    executor = start_executor()
    analysed(cluster, ns, wf)
    assert approve(cluster, ns, "api-oom").returncode == 0
    pod = the_pod(cluster, ns, "api-oom-exec-1", executor.logs)
    done = {"terminated": {"reason": "Completed", "exitCode": 0, "startedAt": "2026-11-20T10:00:05Z",
                           "finishedAt": "2026-11-20T10:01:00Z"}}  # fmt: skip
    kubelet_reports(cluster, ns, pod["metadata"]["name"], phase="Succeeded", state=done)
    assert (
        wait_for(lambda: ended(cluster, ns, "api-oom-exec-1"), logs=executor.logs)["status"]["phase"]
        == "Completed"
    )
    events = items(cluster, "events", ns, "--field-selector", "involvedObject.kind=WorkflowExecution")
    assert {"JobCreated", "Completed"} <= {e["reason"] for e in events}
    assert not re.search(r"forbidden|(?<![,.:\d])\b403\b", executor.logs(), re.I), executor.logs()


def test_chart_executor_objects_are_off_by_default_and_accepted_when_on(
    jobs_cluster: devcluster.DevCluster,
) -> None:
    def rendered(*values: str) -> list[dict[str, Any]]:
        out = subprocess.run(
            [str(helm_bin()), "template", RELEASE, str(CHART), "--namespace", INSTALL_NAMESPACE, *values],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        return [d for d in yaml.safe_load_all(out) if d]

    assert not [d for d in rendered() if "executor" in d["metadata"]["name"]]
    on = rendered("--set", "executor.enabled=true", "--set", "executor.namespaces={team-a}")
    executor = [d for d in on if "executor" in d["metadata"]["name"]]
    [deployment] = [d for d in executor if d["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == EXECUTOR_SA
    assert pod["containers"][0]["command"] == ["aianalysis", "executor"]
    assert pod["containers"][0]["args"] == ["--namespace=team-a"]
    [operator] = [d for d in on if d["kind"] == "Deployment" and d is not deployment]
    selector = operator["spec"]["selector"]["matchLabels"]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert not selector.items() <= labels.items(), (
        "the operator's Deployment must not select the executor's Pods"
    )
    [binding] = [
        d for d in executor if d["kind"] == "RoleBinding" and "start-lock" not in d["metadata"]["name"]
    ]
    assert binding["metadata"]["namespace"] == "team-a"
    # serving team-a only, it still lists executions everywhere: the guards' caps are cluster-wide
    [reads] = [
        d for d in executor if d["kind"] == "ClusterRole" and d["metadata"]["name"].endswith("-cluster")
    ]
    listing_all = {"apiGroups": ["kubernaut.io"], "resources": ["workflowexecutions"], "verbs": ["list"]}
    assert listing_all in reads["rules"]
    jobs_cluster.kubectl("create", "namespace", "team-a", check=False)
    listing = json.dumps({"apiVersion": "v1", "kind": "List", "items": executor})
    jobs_cluster.kubectl("apply", "--dry-run=server", "-f", "-", input=listing)


def test_auto_execute_runs_fresh_confident_selections_in_listed_environments_once(
    jobs_cluster: devcluster.DevCluster, ns: str, tmp_path: Path
) -> None:
    """The policy (with admin rights here: the chart grants ``create`` on executions only when
    autoExecute is on; the shipped-role run is the test above)."""
    cluster = jobs_cluster
    wf = workflow(cluster)
    cluster.kubectl("label", "namespace", ns, "kubernaut.io/managed=true")  # the guards' opt-in
    executor = OperatorProcess(
        kubeconfig=cluster.kubeconfig, log_dir=tmp_path,
        env={"AIANALYSIS_EXECUTOR_AUTO_EXECUTE": "true",
             "AIANALYSIS_EXECUTOR_AUTO_EXECUTE_ENVIRONMENTS": "production"},
        argv=[sys.executable, "-m", "aianalysis", "executor", "--namespace", ns],
    )  # fmt: skip
    executor.start()
    try:
        now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        analysed(cluster, ns, wf, name="old-prod")  # completed two days before: never auto-executed
        analysed(cluster, ns, wf, name="in-staging", environment="staging", completed_at=now)
        analysed(cluster, ns, wf, name="in-prod", completed_at=now)
        wait_for(
            lambda: get(cluster, "jobs", "in-prod-exec-1", ns),
            what="the auto-executed Job",
            logs=executor.logs,
        )
        executions = [e["metadata"]["name"] for e in items(cluster, "wfe", ns)]
        assert executions == ["in-prod-exec-1"]
        assert items(cluster, "wfe", ns)[0]["metadata"]["labels"]["kubernaut.io/approved-by"] == "autoExecute"
        refused = approve(cluster, ns, "in-prod")
        assert refused.returncode == 1 and "already has an execution" in refused.stderr
    finally:
        executor.stop()
