"""Real incidents, from the failure to the analysis: each is made on the node the way it happens in
production (``aianalysis_dev.incidents``: a bad release, a memory limit, a missing image, a slow
readiness endpoint, a taint, a request no node can hold, a deadline, a missing ConfigMap), the
alert a kube-prometheus rule fires on that state goes through the intake, and the operator's
offline provider investigates what the kubelet, the scheduler and the controllers wrote. It must
select the workflow that fixes it — valid against the catalog — or decline with the reason. No
Pod, Job or Node status is written here."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from aianalysis_dev import devcluster, incidents, reads
from tests.node.conftest import NodeOperator
from tests.support import nodes

TERMINAL = ("Completed", "Failed")
Maker = Callable[[devcluster.NodeCluster, str, str], incidents.NodeIncident]


@pytest.fixture
def business_namespace(node_cluster: devcluster.NodeCluster, node_namespace: str) -> str:
    """The test's namespace labelled with its business context, as the intake reads it."""
    node_cluster.kubectl(
        "label", "namespace", node_namespace,
        "kubernaut.io/environment=staging", "kubernaut.io/priority=P2", "kubernaut.io/risk-tolerance=medium",
    )  # fmt: skip
    return node_namespace


@pytest.fixture
def undo(node_cluster: devcluster.NodeCluster) -> Iterator[list[incidents.NodeIncident]]:
    """Incidents whose changes outside their namespace (a taint on the node) are undone afterwards."""
    made: list[incidents.NodeIncident] = []
    yield made
    for incident in made:
        incident.clean_up(node_cluster)


def analysed(
    cluster: devcluster.NodeCluster, operator: NodeOperator, incident: incidents.NodeIncident
) -> dict[str, Any]:
    """The one analysis the intake opened for the incident's alert, once it ended."""
    operator.post(incident.payload())

    def ended() -> dict[str, Any] | None:
        listed = reads.listed(cluster, "aianalyses", incident.namespace)
        done = [a for a in listed if (a.get("status") or {}).get("phase") in TERMINAL]
        return done[0] if done else None

    found: dict[str, Any] = nodes.wait_for(
        ended, what=f"the analysis of {incident.kind}", timeout=120, describe=operator.process.logs
    )
    return found


def catalog(cluster: devcluster.NodeCluster) -> dict[str, dict[str, Any]]:
    listed = json.loads(cluster.kubectl("get", "remediationworkflows", "-o", "json").stdout)["items"]
    return {f"{w['spec']['workflowId']}@{w['spec']['version']}": w["spec"] for w in listed}


def assert_valid_selection(cluster: devcluster.NodeCluster, analysis: dict[str, Any]) -> dict[str, Any]:
    status = analysis["status"]
    selected: dict[str, Any] = status["selectedWorkflow"]
    spec = catalog(cluster)[f"{selected['workflowId']}@{selected['version']}"]
    declared = {p["name"] for p in spec.get("parameters", [])}
    required = {p["name"] for p in spec.get("parameters", []) if p.get("required")}
    assert set(selected["parameters"]) <= declared, selected
    assert required <= set(selected["parameters"]), (required, selected)
    assert selected["containerImage"] == spec["execution"]["containerImage"]
    return selected


MAKERS: dict[str, Callable[..., incidents.NodeIncident]] = {
    "crashloop-after-rollout": incidents.crashloop_after_rollout,
    "oomkilled": incidents.oom_killed,
    "oomkilled-child": lambda cluster, namespace, *, image: incidents.oom_killed(
        cluster, namespace, image=image, child=True
    ),
    "image-pull-failure": incidents.image_pull_failure,
    "readiness-probe-failing": incidents.readiness_failing,
    "pending-insufficient-cpu": incidents.pending_on_resources,
    "pending-insufficient-memory": lambda cluster, namespace, *, image: incidents.pending_on_resources(
        cluster, namespace, image=image, resource="memory"
    ),
    "job-deadline-exceeded": incidents.job_past_deadline,
    "missing-configmap": incidents.missing_reference,
    "missing-secret": lambda cluster, namespace, *, image: incidents.missing_reference(
        cluster, namespace, image=image, kind="Secret"
    ),
}


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_a_real_incident_ends_in_the_workflow_that_fixes_it_or_a_reasoned_decline(
    kind: str,
    node_cluster: devcluster.NodeCluster,
    busybox: str,
    business_namespace: str,
    node_operator: NodeOperator,
) -> None:
    incident = MAKERS[kind](node_cluster, business_namespace, image=busybox)
    assert incident.kind == kind
    analysis = analysed(node_cluster, node_operator, incident)
    status = analysis["status"]
    assert status["phase"] == "Completed", status
    assert analysis["spec"]["resource"]["kind"] == incident.workload["kind"]
    if incident.expect:
        selected = assert_valid_selection(node_cluster, analysis)
        assert selected["workflowId"] in incident.expect, status
    else:
        assert "selectedWorkflow" not in status, status
        assert status["needsHumanReview"] is True and status["humanReviewReason"], status


def test_a_pod_pending_on_a_taint_is_declined_with_the_taint_named(
    node_cluster: devcluster.NodeCluster,
    busybox: str,
    business_namespace: str,
    node_operator: NodeOperator,
    undo: list[incidents.NodeIncident],
) -> None:
    incident = incidents.pending_on_taint(
        node_cluster, business_namespace, image=busybox, node=node_cluster.node_name
    )
    undo.append(incident)
    analysis = analysed(node_cluster, node_operator, incident)
    status = analysis["status"]
    assert status["phase"] == "Completed" and "selectedWorkflow" not in status, status
    assert incidents.TAINT_KEY in json.dumps(status), status
