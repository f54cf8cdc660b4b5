"""Acceptance on Kubernaut-like material: for every incident of our corpus (tests/corpus/kubernaut_like,
modelled on the situations of Kubernaut's public demo scenarios: Kubernaut-labelled namespaces,
PDBs, HPAs, NetworkPolicies, Argo CD- and Helm-managed workloads, a cert-manager ClusterIssuer, a
Node, a namespace-aggregated alert, an Argo CD Application deploying into the namespace, a mesh
policy, a workload's certificate), the objects are created on the real API server, the alert goes
through the intake's mapping, and a scripted LLM (real anthropic SDK, local Messages server) gives
the answer a correct SRE would give through Kubernaut's discovery path (action types → search by
action type → details → read the object → submit). Every one is accepted as submitted, except those
the corpus marks ``refused``: they prove the rules did not loosen (a GitOps-only workflow for a
workload nothing says is GitOps-managed, a production-only one in staging, two objects the workflow
could act on, a ClusterIssuer the incident's Certificate does not use), and so are the
wrong-target attacks (another namespace's workload, a Node-scoped workflow on a Deployment
incident)."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from aianalysis import catalog, kube, resources
from aianalysis import settings as settings_mod
from aianalysis.analysis import pipeline, scope, status
from aianalysis.intake import mapping, payload
from aianalysis.kube import api_reader as k8s
from aianalysis_dev import devcluster
from tests.support import messages_server as ms

pytestmark = pytest.mark.cluster

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "kubernaut_like"
CATALOG = catalog.load_paths([CORPUS / "catalog.yaml"])
SCENARIOS: list[dict[str, Any]] = yaml.safe_load((CORPUS / "scenarios.yaml").read_text())
ACCEPTED = [s for s in SCENARIOS if "refused" not in s]
REFUSED = [s for s in SCENARIOS if "refused" in s]
UNKNOWN = "Unknown"
"""The kind an SRE writes when it leaves the target unknown (as Kubernaut's recorded answers do)."""


@pytest.fixture(scope="module")
def cert_manager_kinds(cluster: devcluster.Cluster) -> None:
    """cert-manager's, Argo CD's and Istio's kinds (minimal stand-ins)."""
    devcluster.apply_crds(cluster, CORPUS / "crds")


@pytest.fixture
def api(cluster: devcluster.Cluster) -> Iterator[kube.ApiClient]:
    with kube.api_client(str(cluster.kubeconfig)) as api_client:
        yield api_client


def placed(scenario: dict[str, Any], namespace: str) -> dict[str, Any]:
    """The scenario with NS replaced by the test's namespace (cluster-scoped names stay unique)."""
    loaded: dict[str, Any] = json.loads(json.dumps(scenario).replace("NS", namespace))
    return loaded


def set_up(cluster: devcluster.Cluster, namespace: str, scenario: dict[str, Any]) -> None:
    labels = [f"{key}={value}" for key, value in scenario["namespace"].items()]
    cluster.kubectl("label", "namespace", namespace, *labels)
    for obj in scenario["objects"]:
        where = obj["metadata"].get("namespace") or namespace
        if where != namespace:
            cluster.kubectl("create", "namespace", where)
        cluster.kubectl("create", "-n", where, "-f", "-", input=json.dumps(obj))


def incident(namespace: str, alert_labels: dict[str, str]) -> resources.AIAnalysisSpec:
    """The AIAnalysis the intake would create for the alert."""
    alert = payload.Alert.model_validate(
        {
            "status": "firing",
            "labels": {"namespace": namespace, **alert_labels},
            "annotations": {"summary": f"{alert_labels['alertname']} is firing"},
            "startsAt": "2026-11-24T10:00:00Z",
            "fingerprint": secrets.token_hex(8),
        }
    )
    mapped = mapping.map_alert(
        alert, common_labels={}, config=mapping.MappingConfig(), received="2026-11-24T10:00:05Z"
    )
    assert isinstance(mapped, mapping.Mapped), mapped
    target = mapped.target
    return resources.AIAnalysisSpec(
        signal=mapped.signal,
        resource=resources.ResourceRef(kind=target.kind, name=target.name, namespace=target.namespace),
    )


def sre_script(answer: dict[str, Any], *, reads: list[list[str]]) -> list[ms.Step]:
    """The objects read (the target last, unless left unknown), then Kubernaut's discovery path
    (action types → search by action type → details; naming the target to the catalog tools when
    the answer says so), then the answer."""
    workflow = CATALOG.get(answer["workflow"])
    assert workflow is not None and workflow.spec.action_type is not None
    target = answer["target"]
    named = {k: v for k, v in target.items() if k in ("kind", "name", "namespace")}
    read = [{"kind": k, "name": n} for k, n in reads] + ([named] if target["kind"] != UNKNOWN else [])
    for_target = {"affected_resource": named} if answer.get("catalog_for_target") else {}
    search = {"action_type": workflow.spec.action_type, "top_k": 10, **for_target}
    steps: list[ms.Step] = [
        *(ms.reply_tools(ms.tool_use("get_resource", arguments)) for arguments in read),
        ms.reply_tools(ms.tool_use("list_action_types", for_target)),
        ms.reply_tools(ms.tool_use("search_workflow_catalog", search)),
        ms.reply_tools(ms.tool_use("get_workflow_details", {"workflow_id": answer["workflow"]})),
    ]
    return [*steps, ms.submit(submission(answer["workflow"], answer.get("parameters") or {}, target))]


def submission(workflow_id: str, parameters: dict[str, Any], target: dict[str, Any]) -> dict[str, Any]:
    return {
        "analysis_summary": "Investigated the workload, its objects and its events.",
        "root_cause_assessment": f"The fault lies in {target['kind']} {target['name']}.",
        "rca_severity": "high",
        "affected_resource": target,
        "selected_workflow": {
            "workflow_id": workflow_id,
            "confidence": 0.9,
            "rationale": "the catalog's remedy for this root cause",
            "parameters": parameters,
        },
    }


async def analyse(
    api: kube.ApiClient,
    namespace: str,
    spec: resources.AIAnalysisSpec,
    steps: list[ms.Step],
    *,
    attempts: int,
    refused: bool = False,
) -> status.Decision:
    scoped = scope.own_namespace(spec, namespace=namespace)  # as the reconciler does
    assert not isinstance(scoped, str), scoped
    with ms.MessagesServer(*steps) as server:
        settings = settings_mod.Settings(
            llm=settings_mod.LlmSettings(
                provider="anthropic",
                api_key="sk-test-acceptance",
                anthropic_base_url=server.base_url,
                max_retries=0,
                timeout_seconds=5.0,
            ),
            analysis=settings_mod.AnalysisSettings(max_validation_attempts=attempts),
        )
        provider = pipeline.llm.make_provider(settings)
        try:
            decision = await pipeline.analyze(
                scoped,
                catalog=CATALOG,
                provider=provider,
                reader=k8s.KubernetesReader(api),
                settings=settings,
                namespace=namespace,
            )
        finally:
            await provider.aclose()
        assert server.remaining == 0, "the script was not played to the end"
        # An answer that must be refused may ask for a workflow the search did not offer.
        assert refused or decision.llm.tool_errors == 0, "a tool refused a call of the script"
    return decision


async def played(
    api: kube.ApiClient, cluster: devcluster.Cluster, namespace: str, scenario: dict[str, Any]
) -> tuple[dict[str, Any], status.Decision]:
    """The scenario set up in ``namespace``, its alert through the intake, its answer played."""
    scenario = placed(scenario, namespace)
    set_up(cluster, namespace, scenario)
    answer = scenario["answer"]
    decision = await analyse(
        api,
        namespace,
        incident(namespace, scenario["alert"]),
        sre_script(answer, reads=answer.get("reads") or []),
        attempts=1,
        refused="refused" in scenario,
    )
    return answer, decision


@pytest.mark.parametrize("scenario", ACCEPTED, ids=[s["name"] for s in ACCEPTED])
@pytest.mark.usefixtures("cert_manager_kinds")
async def test_the_answer_a_correct_sre_gives_is_accepted(
    api: kube.ApiClient, cluster: devcluster.Cluster, namespace: str, scenario: dict[str, Any]
) -> None:
    answer, decision = await played(api, cluster, namespace, scenario)

    assert decision.selected is not None, decision.attempts[-1].errors if decision.attempts else decision
    assert decision.selected.workflow_id == answer["workflow"]
    assert decision.review_reason is None and decision.failed_rules == []
    assert decision.root_cause is not None and decision.root_cause.affected_resource is not None
    chosen, acts_on = decision.root_cause.affected_resource, answer.get("acts_on") or answer["target"]
    assert (chosen.kind, chosen.name) == (acts_on["kind"], acts_on["name"])
    assert decision.selected.parameters.get("TARGET_RESOURCE_NAME") == acts_on["name"]


@pytest.mark.parametrize("scenario", REFUSED, ids=[s["name"] for s in REFUSED])
@pytest.mark.usefixtures("cert_manager_kinds")
async def test_the_answer_the_rules_forbid_stays_refused(
    api: kube.ApiClient, cluster: devcluster.Cluster, namespace: str, scenario: dict[str, Any]
) -> None:
    _, decision = await played(api, cluster, namespace, scenario)

    assert decision.selected is None
    assert decision.failed_rules == scenario["refused"], decision.attempts[-1].errors


def attack_world(cluster: devcluster.Cluster, namespace: str) -> tuple[str, str]:
    """The crash-looping worker, plus the same Deployment in another tenant's namespace and a Node
    the worker has nothing to do with."""
    set_up(cluster, namespace, placed(SCENARIOS[0], namespace))
    other = f"t-{secrets.token_hex(4)}"
    cluster.kubectl("create", "namespace", other)
    worker = placed(SCENARIOS[0], namespace)["objects"][1]
    cluster.kubectl("create", "-n", other, "-f", "-", input=json.dumps(worker))
    node = f"stranger-{namespace}"
    cluster.kubectl(
        "create",
        "-f",
        "-",
        input=json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}}),
    )
    return other, node


@pytest.mark.usefixtures("cert_manager_kinds")
async def test_wrong_target_attacks_are_still_refused(
    api: kube.ApiClient, cluster: devcluster.Cluster, namespace: str
) -> None:
    other, node = attack_world(cluster, namespace)
    spec = incident(
        namespace, {"alertname": "KubePodCrashLooping", "deployment": "worker", "severity": "critical"}
    )
    elsewhere = {
        "workflow": "undo-last-rollout",
        "target": {"kind": "Deployment", "name": "worker", "namespace": other},
    }
    on_a_node = {"workflow": "cordon-and-drain-node", "target": {"kind": "Node", "name": node}}
    node_on_deployment = {
        "workflow": "cordon-and-drain-node",
        "target": {"kind": "Deployment", "name": "worker"},
    }

    refused = [
        await analyse(api, namespace, spec, sre_script(attack, reads=[]), attempts=1, refused=True)
        for attack in (elsewhere, on_a_node, node_on_deployment)
    ]

    assert [d.selected for d in refused] == [None, None, None]
    assert [d.failed_rules for d in refused] == [
        ["target_out_of_scope"],
        ["target_out_of_scope"],
        ["component_mismatch"],
    ]
