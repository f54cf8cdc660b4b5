"""autoExecute decides from server-side facts only (issue 31, finding 7): an ``AutoExecuted`` Event
anyone may write is not a record that the policy ran, and a WorkflowExecution created under the
policy's name by someone else (``<analysis>-exec-1``) neither blocks the policy's execution nor runs.
Real kube-apiserver + kube-controller-manager, the executor as a process running as the chart's
ServiceAccount rendered with autoExecute on; mallory may create WorkflowExecutions (not approve)."""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from aianalysis_dev import devcluster
from tests.e2e import test_executor as executor_e2e
from tests.e2e.conftest import OperatorProcess, get, wait_for
from tests.e2e.test_executor import (
    EXECUTOR,
    MALLORY,
    analysed,
    approve,
    items,
    patch_status,
    refused,
    workflow,
)

executor_kubeconfig = executor_e2e.executor_kubeconfig
ns = executor_e2e.ns
start_executor = executor_e2e.start_executor


@pytest.fixture(scope="module")
def jobs_cluster() -> Iterator[devcluster.DevCluster]:
    """The executor module's cluster, its executor RBAC as the chart renders it with autoExecute on."""
    yield from executor_e2e.started_jobs_cluster("--set", "executor.autoExecute.enabled=true")


def squat(
    cluster: devcluster.DevCluster, ns: str, name: str, *, analysis: str, uid: str, wf: dict[str, Any]
) -> None:
    """mallory's WorkflowExecution under a name the policy or an approver would choose."""
    body = executor_e2e.aimed_at_kube_system(cluster, ns, name, analysis=analysis, uid=uid, wf=wf)
    cluster.kubectl("create", "-f", "-", input=json.dumps(body), user=MALLORY)


def test_a_forged_event_and_a_squatted_name_neither_deny_auto_execute_nor_run(
    jobs_cluster: devcluster.DevCluster, ns: str, start_executor: Callable[..., OperatorProcess]
) -> None:
    cluster = jobs_cluster
    wf = workflow(cluster)
    cluster.kubectl("label", "namespace", ns, "kubernaut.io/auto-execute=true")
    analysed(cluster, ns, wf)  # completed two days before: the policy leaves it alone for now
    uid = get(cluster, "aianalyses", "api-oom", ns)["metadata"]["uid"]  # type: ignore[index]
    squat(cluster, ns, "api-oom-exec-1", analysis="api-oom", uid=uid, wf=wf)
    forged = {
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "forged", "namespace": ns},
        "involvedObject": {"apiVersion": "kubernaut.io/v1alpha1", "kind": "AIAnalysis", "name": "api-oom",
                           "namespace": ns, "uid": uid},
        "reason": "AutoExecuted", "message": "workflowexecution/api-oom-exec-1 created by autoExecute",
        "type": "Normal", "firstTimestamp": "2026-11-20T10:00:01Z", "lastTimestamp": "2026-11-20T10:00:01Z",
        "count": 1,
    }  # fmt: skip
    cluster.kubectl("create", "-f", "-", input=json.dumps(forged))  # whoever may create Events
    executor = start_executor(
        AIANALYSIS_EXECUTOR_AUTO_EXECUTE="true", AIANALYSIS_EXECUTOR_AUTO_EXECUTE_NAMESPACES=ns
    )
    wait_for(lambda: refused(cluster, ns, "api-oom-exec-1"), what="the squat's refusal", logs=executor.logs)
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    patch_status(cluster, "aianalysis", "api-oom", ns, {"completedAt": now})

    wait_for(lambda: get(cluster, "jobs", "api-oom-exec-2", ns), what="the policy's Job", logs=executor.logs)
    execution = get(cluster, "workflowexecutions", "api-oom-exec-2", ns)
    assert execution is not None
    assert execution["spec"]["approval"]["mode"] == "Auto"
    assert execution["spec"]["approval"]["approvedBy"] == EXECUTOR  # the API server checked who
    assert execution["spec"]["targetResource"]["namespace"] == ns
    assert [j["metadata"]["name"] for j in items(cluster, "jobs", ns)] == ["api-oom-exec-2"]
    recorded = (get(cluster, "aianalyses", "api-oom", ns) or {})["status"].get("autoExecution")
    assert recorded is not None and recorded["execution"] == "api-oom-exec-2", recorded

    # A person deletes it: the record is the analysis' status, and the policy does not run it again.
    cluster.kubectl("delete", "wfe", "api-oom-exec-2", "-n", ns)
    cluster.kubectl("annotate", "aianalysis", "api-oom", "-n", ns, "touched=1")
    analysed(cluster, ns, wf, name="barrier", completed_at=now)  # the positive barrier
    wait_for(lambda: get(cluster, "jobs", "barrier-exec-1", ns), what="the barrier", logs=executor.logs)
    assert sorted(e["metadata"]["name"] for e in items(cluster, "wfe", ns)) == [
        "api-oom-exec-1",
        "barrier-exec-1",
    ]


def test_a_name_squatted_for_another_analysis_does_not_block_an_approval(
    jobs_cluster: devcluster.DevCluster, ns: str
) -> None:
    cluster = jobs_cluster
    wf = workflow(cluster)
    analysed(cluster, ns, wf)
    squat(cluster, ns, "api-oom-exec-1", analysis="elsewhere", uid="not-an-analysis", wf=wf)
    approved = approve(cluster, ns, "api-oom")
    assert approved.returncode == 0 and "api-oom-exec-2" in approved.stdout, approved.stderr
    execution = get(cluster, "workflowexecutions", "api-oom-exec-2", ns)
    assert execution is not None and execution["spec"]["analysisRef"] == "api-oom"
