"""After a workflow runs, end to end: real kube-apiserver + kube-controller-manager (Deployments get
ReplicaSets and Pods, Jobs complete for real), the executor as its chart ServiceAccount, the operator
analysing with the anthropic provider against the scripted Messages API, ``aianalysis approve`` as a
person runs it. No kubelet: the tests write Pod status as a kubelet would. The stabilization window
is short through the setting; nothing sleeps, everything waits for a state a user would see.
"""

from __future__ import annotations

import json
import secrets
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from aianalysis_dev import devcluster
from tests.e2e import test_executor as executor_e2e
from tests.e2e.conftest import OperatorProcess, get, starter, wait_for
from tests.e2e.test_executor import IMAGE, approve, items, kubelet_reports, the_pod
from tests.support import messages_server as ms
from tests.support.fake_llm import GoodLLM

# The executor module's control plane (with kube-controller-manager) and executor process fixtures.
jobs_cluster = executor_e2e.jobs_cluster
executor_kubeconfig = executor_e2e.executor_kubeconfig
ns = executor_e2e.ns
start_executor = executor_e2e.start_executor

KEY = "sk-test-e2e-assessment"
WINDOW_SECONDS = "2"


@pytest.fixture
def llm_server() -> Iterator[ms.MessagesServer]:
    with ms.MessagesServer(policy=GoodLLM()) as server:
        yield server


@pytest.fixture
def start_operator(
    jobs_cluster: devcluster.DevCluster, ns: str, tmp_path: Path, llm_server: ms.MessagesServer
) -> Iterator[Callable[..., OperatorProcess]]:
    def make(started: list[OperatorProcess], env: dict[str, str]) -> OperatorProcess:
        return OperatorProcess(
            kubeconfig=jobs_cluster.kubeconfig,
            log_dir=tmp_path / "operator",
            env={
                "AIANALYSIS_PROVIDER": "anthropic",
                "ANTHROPIC_API_KEY": KEY,
                "AIANALYSIS_ANTHROPIC_BASE_URL": llm_server.base_url,
                "AIANALYSIS_LLM_MAX_RETRIES": "1",
                "AIANALYSIS_ASSESSMENT_WINDOW_SECONDS": WINDOW_SECONDS,
                **env,
            },
            argv=[sys.executable, "-m", "aianalysis", "run", "--namespace", ns],
        )

    yield from starter(make)


# ---- the scenario ------------------------------------------------------------------------------------


def catalog_entry(cluster: devcluster.DevCluster, *, window: str | None = None) -> tuple[str, str]:
    """A workflow only this test's incidents match (a signal type of its own); (workflow id, signal)."""
    wid, signal = f"fix-{secrets.token_hex(3)}", f"Broken{secrets.token_hex(3)}"
    body = {
        "apiVersion": "kubernaut.io/v1alpha1",
        "kind": "RemediationWorkflow",
        "metadata": {"name": f"{wid}-v1"},
        "spec": {
            "workflowId": wid,
            "version": "1.0.0",
            "title": "Fix the workload",
            "description": "Rolls the workload with a corrected configuration.",
            "labels": {"signalTypes": [signal]},
            "riskLevel": "low",
            "parameters": [{"name": "TARGET_NAMESPACE", "type": "string", "required": True}],
            "execution": {"engine": "job", "containerImage": IMAGE},
            "estimatedDuration": "5m",
        },
    }
    if window:
        body["spec"]["stabilizationWindow"] = window  # type: ignore[index]  # a JSON body
    cluster.kubectl("apply", "-f", "-", input=json.dumps(body))
    return wid, signal


def deployment(cluster: devcluster.DevCluster, ns: str, *, healthy: bool) -> str:
    """Deployment ``api`` with the ReplicaSet and Pod its controllers would make (this control plane
    runs only the Job and garbage-collector controllers); the Pod's status is then reported as a
    kubelet would. Returns the Pod's name."""
    labels = {"app": "api"}
    template = {
        "metadata": {"labels": labels},
        "spec": {
            # The namespace enforces Pod Security "restricted" (as the executor's e2e namespaces do).
            "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [
                {
                    "name": "app",
                    "image": "registry.example/api:1",
                    "securityContext": {
                        "allowPrivilegeEscalation": False,
                        "capabilities": {"drop": ["ALL"]},
                    },
                }
            ],
        },
    }
    made = create(
        cluster,
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "api", "namespace": ns},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": template},
        },
    )
    rs = create(
        cluster,
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": "api-7d4f",
                "namespace": ns,
                "labels": labels,
                "ownerReferences": [owner(made)],
            },
            "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": template},
        },
    )
    pod = create(
        cluster,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "api-7d4f-x2k9",
                "namespace": ns,
                "labels": labels,
                "ownerReferences": [owner(rs)],
            },
            "spec": template["spec"],
        },
    )
    report_app(cluster, ns, pod["metadata"]["name"], healthy=healthy)
    return str(pod["metadata"]["name"])


def create(cluster: devcluster.DevCluster, body: dict[str, Any]) -> dict[str, Any]:
    made: dict[str, Any] = json.loads(
        cluster.kubectl("create", "-o", "json", "-f", "-", input=json.dumps(body)).stdout
    )
    return made


def owner(body: dict[str, Any]) -> dict[str, Any]:
    meta = body["metadata"]
    return {
        "apiVersion": body["apiVersion"],
        "kind": body["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def report_app(cluster: devcluster.DevCluster, ns: str, pod: str, *, healthy: bool) -> None:
    old = "2026-01-01T00:00:00Z"  # restarts long before any execution: never counted against one
    container = {
        "name": "app",
        "image": "registry.example/api:1",
        "imageID": "",
        "ready": healthy,
        "restartCount": 6,
        "state": {"running": {"startedAt": old}} if healthy else {"waiting": {"reason": "CrashLoopBackOff"}},
        "lastState": {
            "terminated": {"reason": "OOMKilled", "exitCode": 137, "startedAt": old, "finishedAt": old}
        },
    }
    status = {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True" if healthy else "False"}],
        "containerStatuses": [container],
    }
    cluster.kubectl(
        "patch",
        "pod",
        pod,
        "-n",
        ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": status}),
    )


def incident(cluster: devcluster.DevCluster, ns: str, name: str, signal: str) -> None:
    body = {
        "apiVersion": "kubernaut.io/v1alpha1",
        "kind": "AIAnalysis",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "signal": {"type": signal, "severity": "high"},
            "resource": {"kind": "Deployment", "name": "api", "namespace": ns},
        },
    }
    cluster.kubectl("apply", "-f", "-", input=json.dumps(body))


def analysed(cluster: devcluster.DevCluster, ns: str, name: str, logs: Callable[[], str]) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        found = get(cluster, "aianalysis", name, ns)
        return (
            found if found and (found.get("status") or {}).get("phase") in ("Completed", "Failed") else None
        )

    found: dict[str, Any] = wait_for(done, what=f"analysis {name}", logs=logs)
    return found


def run_to_completion(
    cluster: devcluster.DevCluster, ns: str, execution: str, logs: Callable[[], str]
) -> None:
    """The workflow's Pod succeeds (as a kubelet reports it); the Job controller completes the Job."""
    pod = the_pod(cluster, ns, execution, logs)
    finished = {
        "terminated": {
            "reason": "Completed",
            "exitCode": 0,
            "startedAt": "2026-11-20T10:00:05Z",
            "finishedAt": "2026-11-20T10:00:09Z",
        }
    }
    kubelet_reports(cluster, ns, pod["metadata"]["name"], phase="Succeeded", state=finished)


def assessed(cluster: devcluster.DevCluster, ns: str, name: str, logs: Callable[[], str]) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        found = get(cluster, "workflowexecutions", name, ns)
        phase = (((found or {}).get("status") or {}).get("assessment") or {}).get("phase")
        return found if phase in ("Assessed", "NotExecuted") else None

    found: dict[str, Any] = wait_for(done, what=f"the assessment of {name}", logs=logs)
    return found


def events(cluster: devcluster.DevCluster, ns: str, name: str) -> list[str]:
    listed = json.loads(cluster.kubectl("get", "events", "-n", ns, "-o", "json").stdout)["items"]
    return [e["reason"] for e in listed if e["involvedObject"]["name"] == name]


# ---- tests -------------------------------------------------------------------------------------------


def test_an_effective_fix_then_the_same_fix_again_is_held_by_the_cooldown(
    jobs_cluster: devcluster.DevCluster,
    ns: str,
    start_executor: Callable[..., OperatorProcess],
    start_operator: Callable[..., OperatorProcess],
) -> None:
    cluster = jobs_cluster
    wid, signal = catalog_entry(cluster)
    executor, operator = start_executor(), start_operator()
    deployment(cluster, ns, healthy=True)
    incident(cluster, ns, "api-broken", signal)
    chosen = analysed(cluster, ns, "api-broken", operator.logs)["status"]
    assert chosen["selectedWorkflow"]["workflowId"] == wid and not chosen.get("needsHumanReview"), chosen

    assert approve(cluster, ns, "api-broken").returncode == 0
    run_to_completion(cluster, ns, "api-broken-exec-1", executor.logs)
    wfe = assessed(cluster, ns, "api-broken-exec-1", operator.logs)
    st = wfe["status"]
    result = st["assessment"]
    assert (st["phase"], result["verdict"], result["reason"], result["score"]) == (
        "Completed",
        "effective",
        "Healthy",
        1.0,
    )
    assert result["before"]["specHash"] == result["afterSpecHash"] == result["currentSpecHash"]
    assert result["windowSeconds"] == int(WINDOW_SECONDS) and result["assessedAt"] >= result["assessAfter"]
    assert "AssessedEffective" in events(cluster, ns, "api-broken-exec-1")
    table = cluster.kubectl("get", "wfe", "-n", ns).stdout
    assert "VERDICT" in table and "effective" in table
    assert 'aianalysis_assessments_total{reason="Healthy",verdict="effective"} 1.0' in operator.metrics()

    # the same workflow on the same target right away: the cooldown guard holds it, nothing runs
    again = approve(cluster, ns, "api-broken", "--again")
    assert again.returncode == 0, again.stderr
    blocked = wait_for(
        lambda: (get(cluster, "wfe", "api-broken-exec-2", ns) or {}).get("status", {}).get("failureDetails"),
        what="the guard",
        logs=executor.logs,
    )
    assert blocked["reason"] == "Cooldown" and "cooldown 1800s" in blocked["message"], blocked
    assert get(cluster, "jobs", "api-broken-exec-2", ns) is None
    noted = wait_for(
        lambda: [
            c
            for c in (get(cluster, "wfe", "api-broken-exec-2", ns) or {})
            .get("status", {})
            .get("conditions", [])
            if c["type"] == "RecoveryStarted"
        ],
        what="no recovery",
        logs=operator.logs,
    )
    assert noted[0]["reason"] == "NotExecuted"
    assert not [a for a in items(cluster, "aianalyses", ns) if a["spec"].get("recovery")]


def test_an_ineffective_fix_is_not_selected_again_without_a_person(
    jobs_cluster: devcluster.DevCluster,
    ns: str,
    start_executor: Callable[..., OperatorProcess],
    start_operator: Callable[..., OperatorProcess],
    llm_server: ms.MessagesServer,
) -> None:
    cluster = jobs_cluster
    wid, signal = catalog_entry(cluster)
    executor, operator = start_executor(), start_operator()
    deployment(cluster, ns, healthy=False)  # and it keeps crashing after the fix
    incident(cluster, ns, "api-crash-1", signal)
    analysed(cluster, ns, "api-crash-1", operator.logs)
    assert approve(cluster, ns, "api-crash-1").returncode == 0
    run_to_completion(cluster, ns, "api-crash-1-exec-1", executor.logs)
    result = assessed(cluster, ns, "api-crash-1-exec-1", operator.logs)["status"]["assessment"]
    assert (result["verdict"], result["reason"], result["score"]) == ("ineffective", "StillFailing", 0.0)
    assert "CrashLoopBackOff" in result["message"] and "AssessedIneffective" in events(
        cluster, ns, "api-crash-1-exec-1"
    )

    incident(cluster, ns, "api-crash-2", signal)  # the incident comes back
    st = analysed(cluster, ns, "api-crash-2", operator.logs)["status"]
    assert st["selectedWorkflow"]["workflowId"] == wid  # still proposed, for a person to judge
    assert st["needsHumanReview"] is True and st["humanReviewReason"] == "previously_ineffective"
    assert any("api-crash-1-exec-1" in w for w in st["warnings"])
    prompt = json.dumps(llm_server.requests[-1].body["messages"][0])
    assert "Remediation History" in prompt and f"{wid} 1.0.0: completed" in prompt and "ineffective" in prompt
    refused = approve(cluster, ns, "api-crash-2")
    assert refused.returncode == 1 and "previously_ineffective" in refused.stderr


def test_an_operator_restart_mid_window_resumes_the_window(
    jobs_cluster: devcluster.DevCluster,
    ns: str,
    start_executor: Callable[..., OperatorProcess],
    start_operator: Callable[..., OperatorProcess],
) -> None:
    cluster = jobs_cluster
    _, signal = catalog_entry(cluster)
    executor, operator = start_executor(), start_operator(AIANALYSIS_ASSESSMENT_WINDOW_SECONDS="6")
    deployment(cluster, ns, healthy=True)
    incident(cluster, ns, "api-slow", signal)
    analysed(cluster, ns, "api-slow", operator.logs)
    assert approve(cluster, ns, "api-slow").returncode == 0
    run_to_completion(cluster, ns, "api-slow-exec-1", executor.logs)
    stabilizing = wait_for(
        lambda: (
            (get(cluster, "wfe", "api-slow-exec-1", ns) or {}).get("status", {}).get("assessment") or {}
        ).get("assessAfter"),
        what="the window to start",
        logs=operator.logs,
    )
    operator.kill()  # mid-window
    operator.start()
    result = assessed(cluster, ns, "api-slow-exec-1", operator.logs)["status"]["assessment"]
    assert result["assessAfter"] == stabilizing and result["verdict"] == "effective"
    assert result["assessedAt"] >= stabilizing


def test_dry_run_creates_no_job_and_the_assessment_says_not_executed(
    jobs_cluster: devcluster.DevCluster,
    ns: str,
    start_executor: Callable[..., OperatorProcess],
    start_operator: Callable[..., OperatorProcess],
) -> None:
    cluster = jobs_cluster
    _, signal = catalog_entry(cluster)
    start_executor(AIANALYSIS_DRY_RUN="true")
    operator = start_operator(AIANALYSIS_DRY_RUN="true")
    deployment(cluster, ns, healthy=True)
    incident(cluster, ns, "api-dry", signal)
    analysed(cluster, ns, "api-dry", operator.logs)
    assert approve(cluster, ns, "api-dry").returncode == 0
    st = assessed(cluster, ns, "api-dry-exec-1", operator.logs)["status"]
    assert st["phase"] == "Completed" and st["dryRun"] is True
    executed = {c["type"]: c for c in st["conditions"]}["Executed"]
    assert (executed["status"], executed["reason"]) == ("False", "DryRun")
    assert (st["assessment"]["verdict"], st["assessment"]["reason"]) == ("not_executed", "DryRun")
    assert items(cluster, "jobs", ns) == []


def test_a_target_changed_by_another_writer_during_the_window_is_drift_not_effective(
    jobs_cluster: devcluster.DevCluster,
    ns: str,
    start_executor: Callable[..., OperatorProcess],
    start_operator: Callable[..., OperatorProcess],
) -> None:
    """The workflow's own ``stabilizationWindow`` (8s) wins over the setting; someone scales the
    Deployment while the window runs: the verdict is ``unknown`` (SpecDrift), never effective."""
    cluster = jobs_cluster
    _, signal = catalog_entry(cluster, window="8s")
    executor, operator = start_executor(), start_operator()
    deployment(cluster, ns, healthy=True)
    incident(cluster, ns, "api-drift", signal)
    analysed(cluster, ns, "api-drift", operator.logs)
    assert approve(cluster, ns, "api-drift").returncode == 0
    run_to_completion(cluster, ns, "api-drift-exec-1", executor.logs)
    wait_for(
        lambda: (
            (
                (get(cluster, "wfe", "api-drift-exec-1", ns) or {}).get("status", {}).get("assessment") or {}
            ).get("phase")
            == "Stabilizing"
        ),
        what="the window to start",
        logs=operator.logs,
    )
    cluster.kubectl("scale", "deployment", "api", "-n", ns, "--replicas=3")  # another writer
    result = assessed(cluster, ns, "api-drift-exec-1", operator.logs)["status"]["assessment"]
    assert result["windowSeconds"] == 8
    assert (result["verdict"], result["reason"]) == ("unknown", "SpecDrift"), result
    assert result["currentSpecHash"] != result["afterSpecHash"]
