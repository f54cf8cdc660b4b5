"""The loop closed on the real node: a real incident (``aianalysis_dev.incidents``), its alert through
the intake, the offline operator's selection, ``aianalysis approve`` as a person runs it, the
executor's Job running the workflow's own image (pinned by digest) as the workflow's ServiceAccount
holding only the Role the workflow declares — and then what the cluster's own controllers do about
it: the deployment controller brings the old ReplicaSet back, a raised limit lets the service
start. The assessment judges what the kubelet reports afterwards. A workflow whose ServiceAccount
lacks a permission fails with the API server's Forbidden, and recovery analyses it. No Pod, Job or
Node status is written here."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from aianalysis_dev import devcluster, incidents, loop, reads
from tests.e2e.conftest import ROOT, OperatorProcess
from tests.node.conftest import NodeOperator
from tests.node.test_incidents import analysed, business_namespace  # noqa: F401 — a fixture
from tests.support import nodes

ROLLBACK, MEMORY = "rollback-deployment", "oomkill-increase-memory"


@pytest.fixture(scope="module")
def workflows(
    node_cluster: devcluster.NodeCluster,
    node_operator: NodeOperator,
    tmp_path_factory: pytest.TempPathFactory,
) -> loop.Workflows:
    """The workflow images on the node and the example catalog pinned to them (``node_operator``
    applied the CRDs and, with them, the approval policy the executor requires)."""
    return loop.install_workflows(node_cluster, root=ROOT, dest=tmp_path_factory.mktemp("catalog"))


@pytest.fixture(scope="module")
def executor(
    node_cluster: devcluster.NodeCluster, workflows: loop.Workflows, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    process = OperatorProcess(
        kubeconfig=node_cluster.kubeconfig,
        log_dir=tmp_path_factory.mktemp("executor"),
        env={},
        argv=[sys.executable, "-m", "aianalysis", "executor"],
    )
    process.start()
    try:
        yield process
    finally:
        process.stop()


def approved(
    cluster: devcluster.NodeCluster, operator: NodeOperator, incident: incidents.NodeIncident, *, expect: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The incident analysed, its selection (``expect``) approved and run to its end: (analysis,
    execution)."""
    analysis = analysed(cluster, operator, incident)
    selected = analysis["status"].get("selectedWorkflow") or {}
    assert selected.get("workflowId") == expect, analysis["status"]
    _, name = loop.approve(cluster, analysis)
    execution = loop.ended_execution(cluster, incident.namespace, name)
    return analysis, execution


def explain(cluster: devcluster.NodeCluster, execution: dict[str, Any]) -> str:
    """What went wrong with an execution: its status and its Job's log."""
    meta = execution["metadata"]
    logs = cluster.kubectl("logs", f"job/{meta['name']}", "-n", meta["namespace"], check=False)
    return f"{json.dumps(execution.get('status'), indent=1)}\n{logs.stdout}{logs.stderr}"


def the_job_pod(cluster: devcluster.NodeCluster, namespace: str, execution: str) -> dict[str, Any]:
    (pod,) = reads.listed(cluster, "pods", namespace, selector=f"kubernaut.io/workflow-execution={execution}")
    return pod


def assert_ran_as_the_workflow(
    cluster: devcluster.NodeCluster, workflows: loop.Workflows, pod: dict[str, Any], workflow: str
) -> None:
    """The Job's Pod ran the workflow's image by digest, as its ServiceAccount, and ended by itself."""
    built = workflows.images[workflow]
    (status,) = pod["status"]["containerStatuses"]
    assert pod["spec"]["serviceAccountName"] == workflows.accounts[workflow]
    assert pod["spec"]["containers"][0]["image"] == built.pinned
    assert status["imageID"].endswith(built.digest), status
    assert status["state"]["terminated"]["exitCode"] == (0 if pod["status"]["phase"] == "Succeeded" else 1)


def ready_pods(cluster: devcluster.NodeCluster, namespace: str, app: str) -> list[dict[str, Any]]:
    pods = reads.listed(cluster, "pods", namespace, selector=f"app={app}")
    return [
        p
        for p in pods
        if not p["metadata"].get("deletionTimestamp")
        and any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions") or [])
    ]


def replica_set_of(pod: dict[str, Any]) -> str:
    return str(pod["metadata"]["ownerReferences"][0]["name"])


def test_a_crash_loop_after_a_rollout_is_rolled_back_by_the_deployment_controller_and_judged_effective(
    node_cluster: devcluster.NodeCluster,
    busybox: str,
    business_namespace: str,  # noqa: F811 — the fixture imported above
    node_operator: NodeOperator,
    workflows: loop.Workflows,
    executor: OperatorProcess,
) -> None:
    ns = business_namespace
    loop.grant(node_cluster, ns, workflows)
    incident = incidents.crashloop_after_rollout(node_cluster, ns, image=busybox)
    (good,) = {replica_set_of(p) for p in ready_pods(node_cluster, ns, "worker")}  # the old revision
    analysis, execution = approved(node_cluster, node_operator, incident, expect=ROLLBACK)
    name = execution["metadata"]["name"]
    assert execution["status"]["phase"] == "Completed", explain(node_cluster, execution)
    assert_ran_as_the_workflow(node_cluster, workflows, the_job_pod(node_cluster, ns, name), ROLLBACK)
    logs = node_cluster.kubectl("logs", f"job/{name}", "-n", ns).stdout
    assert f"rolled back Deployment {ns}/worker" in logs, logs

    # The deployment controller scaled the old ReplicaSet back up and the crashing one down.
    sets = {
        s["metadata"]["name"]: s for s in reads.listed(node_cluster, "replicasets", ns, selector="app=worker")
    }
    assert {n: s["spec"]["replicas"] for n, s in sets.items()} == {n: (2 if n == good else 0) for n in sets}
    nodes.wait_for(
        lambda: (
            {replica_set_of(p) for p in ready_pods(node_cluster, ns, "worker")} == {good}
            and len(reads.listed(node_cluster, "pods", ns, selector="app=worker")) == 2
        ),
        what="only the old revision's two Pods",
        describe=nodes.describer(node_cluster, ns),
    )
    assessment = loop.assessed(node_cluster, ns, name)
    assert (assessment["verdict"], assessment["reason"]) == ("effective", "Healthy"), assessment
    assert analysis["spec"]["resource"]["name"] == incident.workload["name"]


def test_an_oom_kill_at_start_is_fixed_by_a_raised_limit_and_judged_effective(
    node_cluster: devcluster.NodeCluster,
    busybox: str,
    business_namespace: str,  # noqa: F811
    node_operator: NodeOperator,
    workflows: loop.Workflows,
    executor: OperatorProcess,
) -> None:
    ns = business_namespace
    loop.grant(node_cluster, ns, workflows)
    incident = loop.oom_at_startup(node_cluster, ns, image=busybox)
    analysis, execution = approved(node_cluster, node_operator, incident, expect=MEMORY)
    name = execution["metadata"]["name"]
    assert analysis["status"]["selectedWorkflow"]["parameters"]["MEMORY_LIMIT_NEW"] == "64Mi"
    assert execution["status"]["phase"] == "Completed", explain(node_cluster, execution)
    assert_ran_as_the_workflow(node_cluster, workflows, the_job_pod(node_cluster, ns, name), MEMORY)
    deployment = reads.get(node_cluster, "deployment", "indexer", ns) or {}
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["resources"]["limits"]["memory"] == "64Mi"
    (pod,) = ready_pods(node_cluster, ns, "indexer")
    assert "index loaded, serving" in node_cluster.kubectl("logs", pod["metadata"]["name"], "-n", ns).stdout
    assessment = loop.assessed(node_cluster, ns, name)
    assert (assessment["verdict"], assessment["reason"]) == ("effective", "Healthy"), assessment


def test_a_rollback_the_release_pipeline_reapplies_is_judged_ineffective(
    node_cluster: devcluster.NodeCluster,
    busybox: str,
    business_namespace: str,  # noqa: F811
    node_operator: NodeOperator,
    workflows: loop.Workflows,
    executor: OperatorProcess,
) -> None:
    """The rollback works, then the bad release is applied again (a pipeline or a GitOps sync that
    still holds it): the Pods crash again and the target is back where it was — ``ineffective``."""
    ns = business_namespace
    loop.grant(node_cluster, ns, workflows)
    incident = incidents.crashloop_after_rollout(node_cluster, ns, image=busybox)
    bad = (reads.get(node_cluster, "deployment", "worker", ns) or {})["spec"]["template"]["spec"][
        "containers"
    ][0]
    _, execution = approved(node_cluster, node_operator, incident, expect=ROLLBACK)
    name = execution["metadata"]["name"]
    assert execution["status"]["phase"] == "Completed", explain(node_cluster, execution)

    def stabilizing() -> bool:
        found = reads.get(node_cluster, "workflowexecution", name, ns) or {}
        return bool(((found.get("status") or {}).get("assessment") or {}).get("afterSpecHash"))

    nodes.wait_for(stabilizing, what="the assessment to record the state after the rollback")
    patch = [{"op": "replace", "path": "/spec/template/spec/containers/0/command", "value": bad["command"]}]
    node_cluster.kubectl("patch", "deployment", "worker", "-n", ns, "--type=json", "-p", json.dumps(patch))
    assessment = loop.assessed(node_cluster, ns, name)
    assert (assessment["verdict"], assessment["reason"]) == ("ineffective", "Reverted"), assessment


def test_a_workflow_whose_serviceaccount_lacks_a_permission_fails_forbidden_and_recovery_analyses_it(
    node_cluster: devcluster.NodeCluster,
    busybox: str,
    business_namespace: str,  # noqa: F811
    node_operator: NodeOperator,
    workflows: loop.Workflows,
    executor: OperatorProcess,
) -> None:
    ns = business_namespace
    loop.grant(node_cluster, ns, workflows, without={workflows.accounts[ROLLBACK]: {"patch"}})
    incident = incidents.crashloop_after_rollout(node_cluster, ns, image=busybox)
    analysis, execution = approved(node_cluster, node_operator, incident, expect=ROLLBACK)
    status = execution["status"]
    assert status["phase"] == "Failed", (status, executor.logs())
    details = status["failureDetails"]
    assert (details["reason"], details["exitCode"]) == ("Forbidden", 1), details
    account = f"system:serviceaccount:{ns}:{workflows.accounts[ROLLBACK]}"
    assert account in details["message"] and "cannot patch" in details["message"], details
    assert_ran_as_the_workflow(
        node_cluster, workflows, the_job_pod(node_cluster, ns, execution["metadata"]["name"]), ROLLBACK
    )
    # Nothing changed: the crashing release is still the Deployment's.
    deployment = reads.get(node_cluster, "deployment", "worker", ns) or {}
    assert "bad release" in json.dumps(deployment["spec"]["template"]["spec"]["containers"][0]["command"])

    recovery = loop.ended_analysis(node_cluster, ns, f"{analysis['metadata']['name']}-recovery-1")
    (previous,) = recovery["spec"]["recovery"]["previousExecutions"]
    assert (previous["failure"]["reason"], previous["selectedWorkflow"]["workflowId"]) == (
        "Forbidden",
        ROLLBACK,
    )
    rec = recovery["status"]
    assert rec["phase"] == "Completed", rec
    assert (rec.get("selectedWorkflow") or {}).get("workflowId") != ROLLBACK, rec
    assert "Forbidden" in json.dumps(rec.get("recoveryAnalysis") or rec), rec
