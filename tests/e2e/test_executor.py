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

from aianalysis import catalog, resources
from aianalysis_dev import devcluster, reads
from tests.e2e.conftest import ROOT, OperatorProcess, get, starter, wait_for
from tests.support import approval_policy

CHART = ROOT / "helm" / "aianalysis-operator"
RELEASE, INSTALL_NAMESPACE = "aianalysis-operator", "aianalysis-system"
EXECUTOR_SA = f"{RELEASE}-executor"
EXECUTOR = f"system:serviceaccount:{INSTALL_NAMESPACE}:{EXECUTOR_SA}"
APPROVER_ROLE = f"{RELEASE}-approver"
ALICE, MALLORY = "alice", "mallory"
PLACEHOLDER = "opted-in"
"""The chart is rendered for this namespace; each test's namespace gets the same RoleBinding."""
"""alice may approve (the chart's approver ClusterRole); mallory may only create WorkflowExecutions."""
IMAGE = "registry.example/wf/fix@sha256:" + "a" * 64
VAP = "validatingadmissionpolicies.admissionregistration.k8s.io"


def helm_bin() -> Path:
    if bin_dir := os.environ.get("AIANALYSIS_HELM_BIN"):
        return Path(bin_dir) / "helm"
    out = subprocess.run([str(ROOT / "hack" / "build-helm.sh")], capture_output=True, text=True, check=True)
    return Path(out.stdout.strip()) / "helm"


def executor_rbac(*values: str) -> list[dict[str, Any]]:
    """The chart's executor objects (ServiceAccount, roles, bindings, its start lock's Lease) as `helm
    template` renders them (with ``values``: more ``--set`` arguments)."""
    rendered = subprocess.run(
        [str(helm_bin()), "template", RELEASE, str(CHART), "--namespace", INSTALL_NAMESPACE,
         "--set", "executor.enabled=true", "--set", f"executor.namespaces={{{PLACEHOLDER}}}", *values],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    docs = [d for d in yaml.safe_load_all(rendered) if d]
    kinds = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Lease")
    return [
        d
        for d in docs
        if d["kind"] in kinds
        and ("executor" in d["metadata"]["name"] or d["metadata"]["name"] == APPROVER_ROLE)
    ]


def _job_binding(obj: dict[str, Any]) -> bool:
    """The RoleBinding that lets the executor create Jobs in a namespace it serves (not the one on
    its start lock's Lease, in the release namespace)."""
    return obj["kind"] == "RoleBinding" and "start-lock" not in obj["metadata"]["name"]


@pytest.fixture(scope="module")
def jobs_cluster() -> Iterator[devcluster.DevCluster]:
    """Its own API server (static-token users are fixed at start) with kube-controller-manager."""
    yield from started_jobs_cluster()


def started_jobs_cluster(*values: str) -> Iterator[devcluster.DevCluster]:
    """:func:`jobs_cluster` with the executor's objects rendered with ``values`` (``--set`` ...)."""
    groups = ["system:serviceaccounts", f"system:serviceaccounts:{INSTALL_NAMESPACE}"]
    users = {EXECUTOR: groups, ALICE: [], MALLORY: []}
    cluster = devcluster.DevCluster(controller_manager=True, users=users).start()
    try:
        devcluster.apply_crds(cluster, ROOT / "crds")  # with the approval policy
        cluster.kubectl("create", "namespace", INSTALL_NAMESPACE)
        objects = executor_rbac(*values)
        assert {o["kind"] for o in objects} == {
            "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Lease",
        }  # fmt: skip
        # Everything but the per-namespace Job RoleBinding (applied by the ns fixture) up front.
        cluster_wide = [o for o in objects if not _job_binding(o)]
        cluster.kubectl(
            "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": cluster_wide})
        )
        cluster.kubectl("apply", "-f", str(ROOT / "examples" / "catalog"))
        approval_policy.wait_in_force(cluster)  # approvals made from now on count
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
    serving(jobs_cluster, name)
    return name


def serving(cluster: devcluster.DevCluster, name: str) -> None:
    """Make namespace ``name`` one the executor serves, as an install would: the chart's Job
    RoleBinding, Pod Security "restricted" for the workflow Pods, alice an approver there, mallory
    only a writer of WorkflowExecutions and AIAnalyses."""
    [binding] = [o for o in executor_rbac() if _job_binding(o)]
    binding["metadata"]["namespace"] = name
    cluster.kubectl("apply", "-f", "-", input=json.dumps(binding))
    cluster.kubectl("label", "namespace", name, "pod-security.kubernetes.io/enforce=restricted")
    cluster.kubectl(
        "create", "rolebinding", "approvers", "-n", name, f"--clusterrole={APPROVER_ROLE}", f"--user={ALICE}"
    )
    cluster.kubectl(
        "create",
        "role",
        "wfe-writer",
        "-n",
        name,
        "--verb=create,get,list",
        "--resource=workflowexecutions.kubernaut.io,aianalyses.kubernaut.io",
    )
    cluster.kubectl(
        "create", "rolebinding", "wfe-writers", "-n", name, "--role=wfe-writer", f"--user={MALLORY}"
    )


@pytest.fixture
def start_executor(
    executor_kubeconfig: Path, ns: str, tmp_path: Path
) -> Iterator[Callable[..., OperatorProcess]]:
    def make(started: list[OperatorProcess], env: dict[str, str]) -> OperatorProcess:
        argv = [sys.executable, "-m", "aianalysis", "executor", "--namespace", ns]
        return OperatorProcess(
            kubeconfig=executor_kubeconfig, log_dir=tmp_path / "executor", env=env, argv=argv
        )

    yield from starter(make)


# ---- helpers ---------------------------------------------------------------------------------------


def workflow(
    cluster: devcluster.DevCluster,
    *,
    estimated: str = "5m",
    engine: str = "job",
    labels: dict[str, Any] | None = None,
    detected: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A catalog entry of our own (cluster-scoped: a unique id per test); ``labels`` added to its
    labels, ``detected`` its detectedLabels."""
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
    body["spec"]["labels"].update(labels or {})
    if detected is not None:
        body["spec"]["detectedLabels"] = detected
    cluster.kubectl("apply", "-f", "-", input=json.dumps(body))
    accept(cluster, body["metadata"]["name"])
    return body


def accept(cluster: devcluster.DevCluster, name: str) -> None:
    """The operator's catalog gate's verdict (no operator runs here): ``Accepted=True`` for the
    workflow's current generation, without which the executor runs nothing."""
    stored = get(cluster, "remediationworkflows", name, "")
    assert stored is not None
    condition = {
        "type": "Accepted", "status": "True", "reason": "Accepted", "message": "offered to analyses",
        "lastTransitionTime": "2026-11-20T10:00:00Z", "observedGeneration": stored["metadata"]["generation"],
    }  # fmt: skip
    cluster.kubectl(
        "patch", "remediationworkflow", name, "--subresource=status", "--type=merge",
        "-p", json.dumps({"status": {"conditions": [condition]}}),
    )  # fmt: skip


def analysed(
    cluster: devcluster.DevCluster,
    ns: str,
    wf: dict[str, Any],
    *,
    name: str = "api-oom",
    environment: str | None = "production",
    completed_at: str = "2026-11-20T10:00:00Z",
) -> dict[str, Any]:
    """An AIAnalysis whose status (written through /status, as the operator would) selected ``wf``
    (``environment`` None: the spec states none, the namespace's labels may)."""
    body = {
        "apiVersion": "kubernaut.io/v1alpha1",
        "kind": "AIAnalysis",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "signal": {"type": "OOMKilled", "severity": "high"},
            "resource": {"kind": "Deployment", "name": "api", "namespace": ns},
            "businessContext": {"environment": environment} if environment else {},
        },
    }
    cluster.kubectl("apply", "-f", "-", input=json.dumps(body))
    status = selected(cluster, ns, wf, target="api", memory_limit="1Gi", completed_at=completed_at)
    patch_status(cluster, "aianalysis", name, ns, status)
    return body


def selected(
    cluster: devcluster.DevCluster,
    ns: str,
    wf: dict[str, Any],
    *,
    target: str,
    memory_limit: str,
    completed_at: str = "2026-11-20T10:00:00Z",
) -> dict[str, Any]:
    """A Completed status (as the operator writes it) whose selection raises the memory limit of
    the Deployment ``target`` in ``ns`` to ``memory_limit`` with ``wf``."""
    return {
        "phase": "Completed",
        "completedAt": completed_at,
        "rootCause": {
            "summary": "limit below working set", "severity": "high", "signalType": "OOMKilled",
            "affectedResource": {"kind": "Deployment", "name": target, "namespace": ns,
                                 "apiVersion": "apps/v1"},
        },
        "selectedWorkflow": {
            "workflowId": wf["spec"]["workflowId"], "version": "1.0.0", "containerImage": IMAGE,
            "confidence": 0.92, "rationale": "limit below working set",
            "parameters": {"TARGET_NAMESPACE": ns, "MEMORY_LIMIT_NEW": memory_limit},
            "specDigest": digest_of(cluster, wf),
        },
    }  # fmt: skip


def digest_of(cluster: devcluster.DevCluster, wf: dict[str, Any]) -> str:
    """The digest of the workflow as the API server holds it (with its defaults), as the analysis
    computes it when it validates a selection."""
    stored = get(cluster, "remediationworkflows", wf["metadata"]["name"], "")
    assert stored is not None
    return catalog.spec_digest(resources.RemediationWorkflowSpec.parse_known(stored["spec"]))


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
    cluster: devcluster.DevCluster, ns: str, name: str, *extra: str, user: str = ALICE
) -> subprocess.CompletedProcess[str]:
    """``aianalysis approve`` as a script run by a person who reviewed the analysis as it is now
    (``aianalysis show -o json``, then approve bound to its uid and selection digest)."""
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig_for(user))}

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "aianalysis", *argv],
            capture_output=True, text=True, env=env, cwd=ROOT, timeout=60, check=False,
        )  # fmt: skip

    shown = run("show", name, "-n", ns, "-o", "json")
    seen = json.loads(shown.stdout) if shown.returncode == 0 else {}
    bound = ["--uid", seen["uid"], "--digest", seen["digest"]] if seen else []
    return run("approve", name, "-n", ns, *bound, *extra)


items = reads.listed


def the_pod(
    cluster: devcluster.DevCluster, ns: str, execution: str, logs: Callable[[], str]
) -> dict[str, Any]:
    """The Pod the Job controller created for the execution's Job."""
    pods: list[dict[str, Any]] = wait_for(
        lambda: items(cluster, "pods", ns, selector=f"kubernaut.io/workflow-execution={execution}"),
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


def refused(cluster: devcluster.DevCluster, ns: str, name: str) -> dict[str, Any] | None:
    return with_phase(cluster, ns, name, "Refused")


def executed_condition(execution: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in execution["status"]["conditions"] if c["type"] == "Executed")


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
    assert refused.returncode == 1 and "--override-review low_confidence" in refused.stderr
    assert approve(cluster, ns, "unsure", "--override-review", "low_confidence").returncode == 0
    again = approve(cluster, ns, "unsure", "--override-review", "low_confidence")
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
    ("how", "said"), [("deleted", "no longer in the catalog"), ("changed", "changed since it was validated")]
)
def test_a_selection_whose_workflow_changed_after_approval_is_refused_not_failed(
    jobs_cluster: devcluster.DevCluster,
    ns: str,
    start_executor: Callable[..., OperatorProcess],
    how: str,
    said: str,
) -> None:
    cluster = jobs_cluster
    wf = workflow(cluster)
    analysed(cluster, ns, wf)
    assert approve(cluster, ns, "api-oom").returncode == 0  # approved while the executor is down
    name = wf["metadata"]["name"]
    if how == "deleted":
        cluster.kubectl("delete", "remediationworkflow", name)
    else:  # same id and version, another image: not what was validated and approved
        wf["spec"]["execution"]["containerImage"] = "registry.example/wf/other@sha256:" + "b" * 64
        cluster.kubectl("apply", "-f", "-", input=json.dumps(wf))
        accept(cluster, name)  # the gate accepts the new spec: it is still not what was validated
    executor = start_executor()
    done = wait_for(lambda: refused(cluster, ns, "api-oom-exec-1"), what="the refusal", logs=executor.logs)
    condition = executed_condition(done)
    assert condition["reason"] == "WorkflowChanged" and said in condition["message"], condition
    assert "failureDetails" not in done["status"]  # nothing ran: no failure, so no recovery analysis
    assert items(cluster, "jobs", ns) == []


def deployment(cluster: devcluster.DevCluster, ns: str, *, annotations: dict[str, str]) -> None:
    """Deployment ``api`` (the analyses' incident), with ``annotations``."""
    labels = {"app": "api"}
    body = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "api", "namespace": ns, "annotations": annotations},
        "spec": {
            "replicas": 0, "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels},
                         "spec": {"containers": [{"name": "api", "image": "registry.example/api:1"}]}},
        },
    }  # fmt: skip
    cluster.kubectl("apply", "-f", "-", input=json.dumps(body))


ARGO_TRACKED = {"argocd.argoproj.io/tracking-id": "shop:apps/Deployment:{ns}/api"}


@pytest.mark.parametrize("shown", ["argocd-managed", "unmanaged"])
def test_a_selection_of_a_workflow_requiring_detected_facts_is_revalidated_with_the_clusters_facts(
    jobs_cluster: devcluster.DevCluster, ns: str, start_executor: Callable[..., OperatorProcess], shown: str
) -> None:
    """A workflow that requires detected facts (detectedLabels: GitOps-managed by Argo CD) and an
    environment the analysis' spec does not state (its namespace's label says production): the
    analysis validated the selection with what it read from the cluster, and so does the executor —
    an approved execution runs. Its facts are read again, never taken from the analysis' status: the
    same status written for a Deployment the cluster shows unmanaged is refused."""
    cluster = jobs_cluster
    cluster.kubectl("label", "namespace", ns, "kubernaut.io/environment=production")
    managed = {k: v.format(ns=ns) for k, v in ARGO_TRACKED.items()} if shown == "argocd-managed" else {}
    deployment(cluster, ns, annotations=managed)
    wf = workflow(
        cluster,
        labels={"environment": ["production"]},
        detected={"gitOpsManaged": True, "gitOpsTool": "argocd"},
    )
    analysed(cluster, ns, wf, environment=None)
    executor = start_executor()
    assert approve(cluster, ns, "api-oom").returncode == 0
    if shown == "argocd-managed":
        wait_for(lambda: get(cluster, "jobs", "api-oom-exec-1", ns), what="the Job", logs=executor.logs)
        return
    done = wait_for(lambda: refused(cluster, ns, "api-oom-exec-1"), what="the refusal", logs=executor.logs)
    condition = executed_condition(done)
    assert condition["reason"] == "SelectionInvalid", condition
    assert "detectedLabels.gitOpsManaged requires True but the target's is False" in condition["message"]
    assert "environment" not in condition["message"]  # the namespace's label was read: production
    assert items(cluster, "jobs", ns) == []


def aimed_at_kube_system(
    cluster: devcluster.DevCluster, ns: str, name: str, *, analysis: str, uid: str, wf: dict[str, Any]
) -> dict[str, Any]:
    """A hand-written WorkflowExecution (mallory's) naming ``analysis`` and ``wf`` but aimed at
    kube-system's coredns, not at what the analysis selected."""
    return {
        "apiVersion": "kubernaut.io/v1alpha1", "kind": "WorkflowExecution",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "analysisRef": analysis, "analysisUID": uid,
            "workflowRef": {"workflowId": wf["spec"]["workflowId"], "version": "1.0.0",
                            "specDigest": digest_of(cluster, wf)},
            "parameters": {"TARGET_NAMESPACE": "kube-system", "MEMORY_LIMIT_NEW": "1Gi"},
            "targetResource": {"kind": "Deployment", "name": "coredns", "namespace": "kube-system"},
        },
    }  # fmt: skip


def test_a_hand_written_execution_is_refused_and_only_an_approver_can_approve(
    jobs_cluster: devcluster.DevCluster, ns: str, start_executor: Callable[..., OperatorProcess]
) -> None:
    """mallory may create WorkflowExecutions (the old approval): one aimed at kube-system is refused by
    the executor; recording an approval is refused by the API server; alice's approval runs."""
    cluster = jobs_cluster
    wf = workflow(cluster)
    subject = analysed(cluster, ns, wf)
    uid = get(cluster, "aianalyses", "api-oom", ns)["metadata"]["uid"]  # type: ignore[index]
    executor = start_executor()
    forged = aimed_at_kube_system(cluster, ns, "sneaky", analysis=subject["metadata"]["name"], uid=uid, wf=wf)
    cluster.kubectl("create", "-f", "-", input=json.dumps(forged), user=MALLORY)
    done = wait_for(lambda: refused(cluster, ns, "sneaky"), what="the refusal", logs=executor.logs)
    condition = executed_condition(done)
    assert condition["reason"] == "SelectionMismatch" and "kube-system" in condition["message"], condition

    for claimed in (MALLORY, ALICE):  # neither her own approval nor one in alice's name
        stamped = {**forged, "metadata": {"name": f"stamped-{claimed}", "namespace": ns}}
        stamped["spec"] = {
            **forged["spec"],
            "approval": {"mode": "Manual", "approvedBy": claimed, "selectionDigest": "sha256:x"},
        }
        denied = cluster.kubectl("create", "-f", "-", input=json.dumps(stamped), check=False, user=MALLORY)
        assert denied.returncode != 0 and "ValidatingAdmissionPolicy" in denied.stderr, denied.stderr
    not_approver = approve(cluster, ns, "api-oom", user=MALLORY)
    assert not_approver.returncode == 1 and "refused the approval" in not_approver.stderr

    assert approve(cluster, ns, "api-oom").returncode == 0
    wait_for(lambda: get(cluster, "jobs", "api-oom-exec-1", ns), what="the Job", logs=executor.logs)
    execution = get(cluster, "workflowexecutions", "api-oom-exec-1", ns)
    assert execution is not None and execution["spec"]["approval"]["approvedBy"] == ALICE
    assert [j["metadata"]["name"] for j in items(cluster, "jobs", ns)] == ["api-oom-exec-1"]


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
        ("approve workflowexecutions.kubernaut.io -n {ns}", False),  # only with autoExecute
        (f"get {VAP}/workflowexecution-approval.kubernaut.io", True),
        (f"get {VAP}/another-policy", False),  # that one policy only
        ("patch aianalyses.kubernaut.io --subresource=status -n {ns}", False),
        ("create jobs.batch -n {ns}", True),
        ("create jobs.batch -n kube-system", False),  # a namespace it was not opted in to
        ("watch pods -n {ns}", True),
        ("list events -n {ns}", True),
        ("patch workflowexecutions.kubernaut.io --subresource=status -n {ns}", True),
        ("watch remediationworkflows.kubernaut.io", True),
        (f"update leases.coordination.k8s.io/aianalysis-executor-start -n {INSTALL_NAMESPACE}", True),
        (f"update leases.coordination.k8s.io/aianalysis-operator -n {INSTALL_NAMESPACE}", False),
        ("create leases.coordination.k8s.io -n {ns}", False),
        (f"create leases.coordination.k8s.io -n {INSTALL_NAMESPACE}", False),  # the chart makes it
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
    events = items(cluster, "events", ns, fields="involvedObject.kind=WorkflowExecution")
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
    refused = subprocess.run(
        [str(helm_bin()), "template", RELEASE, str(CHART), "--set", "executor.enabled=true"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert refused.returncode != 0 and "executor.namespaces" in refused.stderr  # no cluster-wide Jobs
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


def test_auto_execute_runs_fresh_selections_in_opted_in_namespaces_once(
    jobs_cluster: devcluster.DevCluster, ns: str, tmp_path: Path
) -> None:
    """The policy (with admin rights here: the chart grants ``create``/``approve`` on executions only
    when autoExecute is on; the shipped-role run is the test above). The namespace is allowlisted AND
    labelled by its owner; the analysis spec has no say."""
    cluster = jobs_cluster
    wf = workflow(cluster)
    cluster.kubectl("label", "namespace", ns, "kubernaut.io/auto-execute=true")
    executor = OperatorProcess(
        kubeconfig=cluster.kubeconfig, log_dir=tmp_path,
        env={"AIANALYSIS_EXECUTOR_AUTO_EXECUTE": "true", "AIANALYSIS_EXECUTOR_AUTO_EXECUTE_NAMESPACES": ns},
        argv=[sys.executable, "-m", "aianalysis", "executor", "--namespace", ns],
    )  # fmt: skip
    executor.start()
    try:
        now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        analysed(cluster, ns, wf, name="old-prod")  # completed two days before: never auto-executed
        analysed(cluster, ns, wf, name="in-prod", completed_at=now)
        wait_for(
            lambda: get(cluster, "jobs", "in-prod-exec-1", ns),
            what="the auto-executed Job",
            logs=executor.logs,
        )
        [execution] = items(cluster, "wfe", ns)
        assert execution["metadata"]["name"] == "in-prod-exec-1"
        assert execution["metadata"]["labels"]["kubernaut.io/approval"] == "Auto"
        assert execution["spec"]["approval"]["approvedBy"] == "admin"  # the API server checked who
        refused = approve(cluster, ns, "in-prod")
        assert refused.returncode == 1 and "already has an execution" in refused.stderr
        wait_for(
            lambda: [e for e in items(cluster, "events", ns) if e["reason"] == "AutoExecuted"] or None,
            what="the AutoExecuted Event",
        )
        # A person deletes the execution: the policy does not create it again on the next event.
        cluster.kubectl("delete", "wfe", "in-prod-exec-1", "-n", ns)
        cluster.kubectl("annotate", "aianalysis", "in-prod", "-n", ns, "touched=1")
        analysed(cluster, ns, wf, name="in-prod-2", completed_at=now)  # the positive barrier
        wait_for(lambda: get(cluster, "jobs", "in-prod-2-exec-1", ns), what="the barrier", logs=executor.logs)
        assert [e["metadata"]["name"] for e in items(cluster, "wfe", ns)] == ["in-prod-2-exec-1"]
    finally:
        executor.stop()


def test_an_event_forged_for_the_pods_name_does_not_choose_the_failure_reason(
    jobs_cluster: devcluster.DevCluster, ns: str, start_executor: Callable[..., OperatorProcess]
) -> None:
    """Anyone who may create Events can write one about a Pod's name; only Events about that very
    Pod (its uid) are evidence."""
    cluster = jobs_cluster
    wf = workflow(cluster)
    executor = start_executor()
    analysed(cluster, ns, wf)
    assert approve(cluster, ns, "api-oom").returncode == 0
    pod = the_pod(cluster, ns, "api-oom-exec-1", executor.logs)
    forged = {
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "forged", "namespace": ns},
        "involvedObject": {"kind": "Pod", "name": pod["metadata"]["name"], "namespace": ns,
                           "uid": "not-this-pod"},
        "reason": "FailedMount", "message": "MountVolume.SetUp failed: forged", "type": "Warning",
        "firstTimestamp": "2026-11-20T10:00:01Z", "lastTimestamp": "2026-11-20T10:00:01Z", "count": 1,
    }  # fmt: skip
    cluster.kubectl("create", "-f", "-", input=json.dumps(forged))
    # The Pod fails without a container verdict: only Events could name a more specific reason.
    kubelet_reports(
        cluster,
        ns,
        pod["metadata"]["name"],
        phase="Failed",
        state={"waiting": {"reason": "ContainerCreating"}},
    )
    failed = wait_for(lambda: ended(cluster, ns, "api-oom-exec-1"), what="the failure", logs=executor.logs)
    details = failed["status"]["failureDetails"]
    assert details["reason"] != "FailedMount" and "forged" not in details["message"], details
