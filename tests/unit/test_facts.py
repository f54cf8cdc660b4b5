"""Detected facts (``analysis.facts``): one test per rule of the table, on the right object — the
workload the incident concerns, and the PDB/HPA/NetworkPolicy itself when that is the target."""

from __future__ import annotations

from typing import Any

import pytest

import aianalysis.analysis.facts
from aianalysis import catalog, resources
from aianalysis.analysis import scope, tools
from aianalysis.evaluation.cluster import InMemoryCluster

NS = "shop"


def obj(kind: str, name: str, api_version: str = "v1", **fields: Any) -> dict[str, Any]:
    meta = {"name": name, "namespace": NS, **fields.pop("metadata", {})}
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, **fields}


def deployment(name: str = "web", *, labels: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    template = {
        "metadata": {"labels": {"app": name, **(labels or {})}},
        "spec": {"containers": [{"name": "c"}]},
    }
    return obj("Deployment", name, "apps/v1", metadata=meta, spec={"template": template})


NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
PDB = obj("PodDisruptionBudget", "web-pdb", "policy/v1", spec={"selector": {"matchLabels": {"app": "web"}}})
HPA = obj(
    "HorizontalPodAutoscaler",
    "web",
    "autoscaling/v2",
    spec={"scaleTargetRef": {"kind": "Deployment", "name": "web"}},
)
DENY_ALL = obj("NetworkPolicy", "deny-all", "networking.k8s.io/v1", spec={"podSelector": {}})


def ref(kind: str, name: str, namespace: str | None = NS) -> scope.ObjectRef:
    table = tools.target_kinds()
    info = table[kind.casefold()]
    return scope.ObjectRef(
        kind=info.kind,
        name=name,
        namespace=namespace if info.namespaced else None,
        api_version=info.api_version,
    )


async def facts(objects: list[dict[str, Any]], target: scope.ObjectRef, **kw: Any) -> catalog.TargetFacts:
    return await tools.detect_facts(InMemoryCluster(objects), target, **kw)


@pytest.mark.parametrize(
    ("meta", "tool"),
    [
        ({"annotations": {"argocd.argoproj.io/tracking-id": "app:apps/Deployment:shop/web"}}, "argocd"),
        ({"labels": {"argocd.argoproj.io/instance": "web"}}, "argocd"),
        ({"labels": {"kustomize.toolkit.fluxcd.io/name": "apps"}}, "flux"),
        ({"labels": {"fluxcd.io/sync-gc-mark": "x"}}, "flux"),
        ({}, None),
    ],
)
async def test_gitops_on_the_workload(meta: dict[str, Any], tool: str | None) -> None:
    found = await facts([NAMESPACE, deployment(**meta)], ref("Deployment", "web"))
    assert (found.gitops_managed, found.gitops_tool) == (tool is not None, tool)


@pytest.mark.parametrize(
    ("meta", "tool"),
    [
        ({"labels": {"argocd.argoproj.io/instance": "shop"}}, "argocd"),
        ({"annotations": {"argocd.argoproj.io/managed": "true"}}, "argocd"),
        ({"annotations": {"fluxcd.io/sync-status": "ok"}}, "flux"),
    ],
)
async def test_gitops_on_the_workloads_namespace(meta: dict[str, Any], tool: str) -> None:
    namespace = {**NAMESPACE, "metadata": {"name": NS, **meta}}
    found = await facts([namespace, deployment()], ref("Deployment", "web"))
    assert (found.gitops_managed, found.gitops_tool) == (True, tool)


def application(
    *, destination: dict[str, str] | None = None, resources: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    """An Argo CD Application, in Argo CD's own namespace."""
    app: dict[str, Any] = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "shop", "namespace": "argocd"},
        "spec": {"destination": destination or {"server": "https://kubernetes.default.svc", "namespace": NS}},
    }
    if resources is not None:
        app["status"] = {"resources": resources}
    return app


def listed(kind: str, name: str, group: str = "apps") -> dict[str, str]:
    return {"group": group, "version": "v1", "kind": kind, "namespace": NS, "name": name}


@pytest.mark.parametrize(
    ("app", "tool"),
    [
        # It lists what it manages: the workload, reached from its Pod through the owner chain too.
        (application(resources=[listed("Deployment", "web")]), "argocd"),
        # It lists other objects of the namespace only: this one is not its (status is precise).
        (application(resources=[listed("Deployment", "api")]), None),
        # It reports nothing yet: it deploys into this namespace on this cluster.
        (application(), "argocd"),
        (application(destination={"name": "in-cluster", "namespace": NS}), "argocd"),
        # Another namespace, or another cluster's namespace of the same name.
        (application(destination={"server": "https://kubernetes.default.svc", "namespace": "other"}), None),
        (application(destination={"server": "https://prod-east.example:6443", "namespace": NS}), None),
        (application(destination={"name": "prod-east", "namespace": NS}), None),
    ],
)
async def test_gitops_from_argo_cds_own_application(app: dict[str, Any], tool: str | None) -> None:
    """Nothing on the workload or its namespace says GitOps (Argo CD 2's default tracking label is
    Helm's too); the Application does."""
    web = deployment(labels={"app.kubernetes.io/instance": "shop"})
    pod = obj(
        "Pod",
        "web-abc",
        metadata={"ownerReferences": [{"kind": "Deployment", "name": "web", "controller": True}]},
        spec={"containers": [{"name": "c"}]},
    )
    for target in (ref("Deployment", "web"), ref("Pod", "web-abc")):
        found = await facts([NAMESPACE, web, pod, app], target)
        assert (found.gitops_managed, found.gitops_tool) == (tool is not None, tool), target


async def test_without_argo_cd_the_markers_alone_decide() -> None:
    found = await facts([NAMESPACE, deployment()], ref("Deployment", "web"))
    assert (found.gitops_managed, found.gitops_tool) == (False, None)


async def test_helm() -> None:
    helm = deployment(labels={"helm.sh/chart": "web-1.0.0"})
    assert (await facts([NAMESPACE, helm], ref("Deployment", "web"))).helm_managed is True
    assert (await facts([NAMESPACE, deployment()], ref("Deployment", "web"))).helm_managed is False


async def test_pdb_selecting_the_workload_and_the_pdb_itself() -> None:
    world = [NAMESPACE, deployment(), PDB]
    assert (await facts(world, ref("Deployment", "web"))).pdb_protected is True
    assert (await facts(world, ref("PodDisruptionBudget", "web-pdb"))).pdb_protected is True
    other = [NAMESPACE, deployment("api"), PDB]
    assert (await facts(other, ref("Deployment", "api"))).pdb_protected is False


async def test_hpa_scaling_the_workload_and_the_hpa_itself() -> None:
    world = [NAMESPACE, deployment(), HPA]
    assert (await facts(world, ref("Deployment", "web"))).hpa_enabled is True
    assert (await facts(world, ref("HorizontalPodAutoscaler", "web"))).hpa_enabled is True
    assert (await facts([NAMESPACE, deployment()], ref("Deployment", "web"))).hpa_enabled is False


async def test_network_isolated_by_any_policy_in_the_namespace_and_the_policy_itself() -> None:
    assert (
        await facts([NAMESPACE, deployment(), DENY_ALL], ref("Deployment", "web"))
    ).network_isolated is True
    assert (await facts([NAMESPACE, DENY_ALL], ref("NetworkPolicy", "deny-all"))).network_isolated is True
    assert (await facts([NAMESPACE, deployment()], ref("Deployment", "web"))).network_isolated is False


async def test_stateful() -> None:
    sts = {**deployment("db"), "kind": "StatefulSet"}
    assert (await facts([NAMESPACE, sts], ref("StatefulSet", "db"))).stateful is True
    assert (await facts([NAMESPACE, deployment()], ref("Deployment", "web"))).stateful is False


@pytest.mark.parametrize(
    ("namespace_labels", "target", "mesh"),
    [
        ({"istio-injection": "enabled"}, ("Deployment", "web"), "istio"),
        ({}, ("AuthorizationPolicy", "deny-all"), "istio"),
        ({"linkerd.io/inject": "enabled"}, ("Deployment", "web"), "linkerd"),
        ({}, ("Deployment", "web"), None),
    ],
)
async def test_service_mesh(
    namespace_labels: dict[str, str], target: tuple[str, str], mesh: str | None
) -> None:
    namespace = {**NAMESPACE, "metadata": {"name": NS, "labels": namespace_labels}}
    policy = obj("AuthorizationPolicy", "deny-all", "security.istio.io/v1", spec={})
    found = await facts([namespace, deployment(), policy], ref(*target))
    assert found.service_mesh == mesh


async def test_a_target_that_runs_no_pods_takes_the_facts_of_the_incidents_workload() -> None:
    argo = deployment(annotations={"argocd.argoproj.io/tracking-id": "x"})
    world = [NAMESPACE, argo, PDB, HPA]
    found = await facts(world, ref("PodDisruptionBudget", "web-pdb"), workload=ref("Deployment", "web"))
    assert (found.pdb_protected, found.gitops_tool, found.hpa_enabled) == (True, "argocd", True)
    node = await facts(
        [*world, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}],
        ref("Node", "n1", None),
        workload=ref("Deployment", "web"),
    )
    assert node.gitops_tool == "argocd"


async def test_an_unreadable_target_keeps_only_what_its_kind_decides() -> None:
    found = await facts([NAMESPACE], ref("PodDisruptionBudget", "gone"))
    assert found.pdb_protected is True
    assert found.helm_managed is None and found.network_isolated is None and found.gitops_tool is None


async def test_a_pdb_incident_concerns_the_workload_it_selects() -> None:
    incident = resources.ResourceRef(kind="PodDisruptionBudget", name="web-pdb", namespace=NS)
    where = await tools.gather_scope(InMemoryCluster([NAMESPACE, deployment(), PDB]), incident)
    assert where.workload == ref("Deployment", "web")
    assert where.violation(ref("Deployment", "web"), returned=set()) is None


async def test_a_namespace_target_is_judged_by_its_own_objects_and_markers() -> None:
    namespace = {**NAMESPACE, "metadata": {"name": NS, "labels": {"istio-injection": "enabled"}}}
    found = await facts([namespace, DENY_ALL], ref("Namespace", NS, None))
    assert (found.network_isolated, found.service_mesh) == (True, "istio")


@pytest.mark.parametrize(
    ("incident", "target"),
    [
        (("Deployment", "web"), ("Deployment", "web")),
        (("PodDisruptionBudget", "web-pdb"), ("PodDisruptionBudget", "web-pdb")),  # the workload it selects
        (("Deployment", "web"), ("HorizontalPodAutoscaler", "web")),
    ],
)
async def test_the_executor_reads_the_facts_the_analysis_read(
    incident: tuple[str, str], target: tuple[str, str]
) -> None:
    """``facts.as_analysed`` (the executor's re-validation) finds what the analysis found: the
    business context its namespace adds, and the target's facts with the incident's workload's."""
    labelled = {**NAMESPACE, "metadata": {"name": NS, "labels": {"kubernaut.io/environment": "Production"}}}
    world = [labelled, deployment(annotations={"argocd.argoproj.io/tracking-id": "x"}), PDB, HPA]
    cluster = InMemoryCluster(world)
    spec = resources.AIAnalysisSpec.model_validate(
        {
            "signal": {"type": "OOMKilled", "severity": "high"},
            "resource": {"kind": incident[0], "name": incident[1]},
        }
    )
    where = await tools.gather_scope(cluster, spec.resource.model_copy(update={"namespace": NS}))
    analysed_spec, _ = await tools.with_business_context(cluster, spec, home=NS)
    by_analysis = await tools.detect_facts(cluster, ref(*target), workload=where.workload)
    again = await aianalysis.analysis.facts.as_analysed(cluster, spec, ref(*target), home=NS)
    assert again.target == by_analysis and again.target.gitops_tool == "argocd"
    assert again.business == analysed_spec.business_context and again.business.environment == "production"
    unread = await aianalysis.analysis.facts.as_analysed(cluster, spec, None, home=NS)
    assert unread.target == catalog.TargetFacts() and unread.business.environment == "production"
