"""The remediation target's scope (``scope``) and what the cluster reads behind it find
(``tools.gather_scope``, ``tools.detect_facts``), over the in-memory reader the eval uses."""

from __future__ import annotations

from typing import Any

import pytest

from aianalysis import catalog, errors, resources
from aianalysis.analysis import scope, tools
from aianalysis.analysis.tools import _args, _cluster_tools
from aianalysis.evaluation.cluster import InMemoryCluster

DEPLOYMENT = resources.ResourceRef(kind="Deployment", name="checkout", namespace="shop")
POD = resources.ResourceRef(kind="Pod", name="checkout-7d9f-abcde", namespace="shop")
NO_CLUSTER = scope.Scope.of(DEPLOYMENT, cluster=False, kinds=tools.target_kinds())


def ref(kind: str, name: str, namespace: str | None = "shop") -> scope.ObjectRef:
    return NO_CLUSTER.resolve(kind=kind, name=name, namespace=namespace)


# ---- resolving the target -------------------------------------------------------------------------


def test_the_target_is_the_incidents_resource_unless_the_answer_names_another() -> None:
    assert NO_CLUSTER.target(None) == scope.ObjectRef(
        kind="Deployment", name="checkout", namespace="shop", api_version="apps/v1"
    )
    named = NO_CLUSTER.target({"kind": "statefulset", "name": "db"})
    assert named == scope.ObjectRef(kind="StatefulSet", name="db", namespace="shop", api_version="apps/v1")


@pytest.mark.parametrize(
    "affected",
    [
        {"kind": "Unknown", "name": "unknown"},
        {"kind": "Deployment", "name": "unknown"},
        {"kind": "n/a", "name": "checkout"},
        {"kind": " ", "name": "checkout"},
    ],
)
def test_an_affected_resource_with_a_placeholder_names_nothing(affected: dict[str, str]) -> None:
    assert not scope.names_object(affected)
    assert NO_CLUSTER.target(affected) == NO_CLUSTER.incident


def test_a_namespace_given_for_a_cluster_scoped_kind_is_ignored() -> None:
    assert NO_CLUSTER.target({"kind": "node", "name": "worker-1", "namespace": "shop"}) == scope.ObjectRef(
        kind="Node", name="worker-1", api_version="v1"
    )


# ---- without a cluster ----------------------------------------------------------------------------


def test_without_a_cluster_objects_in_the_incidents_namespace_are_in_scope() -> None:
    assert NO_CLUSTER.violation(ref("Deployment", "checkout"), returned=set()) is None
    assert NO_CLUSTER.violation(ref("CronJob", "nightly"), returned=set()) is None


@pytest.mark.parametrize(
    ("target", "why"),
    [
        (("Deployment", "coredns", "kube-system"), "outside the incident's namespace 'shop'"),
        (("Node", "worker-1", None), "cannot be checked without a cluster"),
        (("Widget", "w", None), "cannot be checked without a cluster"),  # unknown kind, no namespace
    ],
)
def test_without_a_cluster_other_namespaces_and_cluster_scoped_objects_are_not(
    target: tuple[str, str, str | None], why: str
) -> None:
    violation = NO_CLUSTER.violation(ref(*target), returned=set())
    assert violation is not None and why in violation


# ---- with a cluster -------------------------------------------------------------------------------


def meta(name: str, owner: tuple[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"name": name, "namespace": "shop", "uid": f"uid-{name}", **extra}
    if owner:
        data["ownerReferences"] = [
            {"kind": owner[0], "name": owner[1], "uid": f"uid-{owner[1]}", "controller": True}
        ]
    return data


TEMPLATE = {
    "metadata": {"labels": {"app": "checkout"}},
    "spec": {
        "containers": [{"name": "app"}],
        "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}],
    },
}


def world(*extra: dict[str, Any], deployment_meta: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": deployment_meta or meta("checkout"),
            "spec": {"template": TEMPLATE},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta("payments"),
            "spec": {"template": TEMPLATE},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": meta("checkout-7d9f", ("Deployment", "checkout")),
            "spec": {"template": TEMPLATE},
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": meta(
                "checkout-7d9f-abcde", ("ReplicaSet", "checkout-7d9f"), labels={"app": "checkout"}
            ),
            "spec": {"nodeName": "worker-3", **TEMPLATE["spec"]},
        },
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-3"}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}},
        *extra,
    ]


@pytest.mark.parametrize("incident", [POD, DEPLOYMENT])
async def test_the_owner_chain_the_node_and_the_pvc_are_in_scope_from_either_end(
    incident: resources.ResourceRef,
) -> None:
    where = await tools.gather_scope(InMemoryCluster(world()), incident)

    for kind, name, namespace in [
        ("Pod", "checkout-7d9f-abcde", "shop"),
        ("ReplicaSet", "checkout-7d9f", "shop"),
        ("Deployment", "checkout", "shop"),
        ("Node", "worker-3", None),
        ("PersistentVolumeClaim", "data", "shop"),
    ]:
        assert where.violation(ref(kind, name, namespace), returned=set()) is None, (kind, name)


async def test_a_sibling_is_out_of_scope_until_an_investigation_tool_returned_it() -> None:
    where = await tools.gather_scope(InMemoryCluster(world()), POD)
    payments = ref("Deployment", "payments")

    violation = where.violation(payments, returned=set())
    assert violation is not None and "returned by an investigation tool" in violation
    assert where.violation(payments, returned={payments.key}) is None
    assert where.in_scope()[:2] == ["Pod shop/checkout-7d9f-abcde", "Deployment shop/checkout"]


async def test_another_namespace_stays_out_of_scope_even_when_a_tool_returned_it() -> None:
    where = await tools.gather_scope(InMemoryCluster(world()), POD)
    coredns = ref("Deployment", "coredns", "kube-system")
    violation = where.violation(coredns, returned={coredns.key})
    assert violation is not None and "outside the incident's namespace" in violation


class Failing(InMemoryCluster):
    async def get_object(self, *, kind: str, name: str, namespace: str | None) -> tools.JSONObject:
        raise errors.ClusterError("connection refused")


async def test_failed_reads_leave_only_the_incident_in_scope_and_facts_unknown() -> None:
    reader = Failing(world())
    where = await tools.gather_scope(reader, POD)

    assert where.cluster and dict(where.related) == {}
    assert where.violation(where.incident, returned=set()) is None
    assert await tools.detect_facts(reader, where.incident) == catalog.TargetFacts()


# ---- facts ----------------------------------------------------------------------------------------


async def facts_of(objects: list[dict[str, Any]], target: resources.ResourceRef = POD) -> catalog.TargetFacts:
    where = scope.Scope.of(target, cluster=True, kinds=tools.target_kinds())
    return await tools.detect_facts(InMemoryCluster(objects), where.incident)


async def test_plain_workload_facts_are_known_negatives() -> None:
    no_pvc = [o for o in world() if o["kind"] != "Pod"] + [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": meta(
                "checkout-7d9f-abcde", ("ReplicaSet", "checkout-7d9f"), labels={"app": "checkout"}
            ),
            "spec": {"containers": [{"name": "app"}]},
        }
    ]
    facts = await facts_of(no_pvc)
    assert facts.helm_managed is False and facts.gitops_managed is False and facts.gitops_tool is None
    assert facts.hpa_enabled is False and facts.pdb_protected is False
    assert facts.service_mesh is None  # nothing says either way


async def test_helm_argocd_hpa_pdb_and_pvc_are_detected_through_the_owner_chain() -> None:
    labelled = meta(
        "checkout",
        labels={"app.kubernetes.io/managed-by": "Helm"},
        annotations={"argocd.argoproj.io/tracking-id": "shop:apps/Deployment:shop/checkout"},
    )
    hpa = {
        "kind": "HorizontalPodAutoscaler",
        "metadata": meta("checkout"),
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "checkout"}},
    }
    pdb = {
        "kind": "PodDisruptionBudget",
        "metadata": meta("checkout"),
        "spec": {
            "selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["checkout"]}]}
        },
    }
    facts = await facts_of(world(hpa, pdb, deployment_meta=labelled))
    assert facts == catalog.TargetFacts(
        helm_managed=True,
        gitops_managed=True,
        gitops_tool="argocd",
        hpa_enabled=True,
        pdb_protected=True,
        stateful=True,
        network_isolated=False,
        service_mesh=None,
    )


async def test_flux_and_istio_are_detected_and_a_pdb_for_other_pods_does_not_count() -> None:
    flux = meta("checkout", labels={"kustomize.toolkit.fluxcd.io/name": "apps"})
    pdb = {
        "kind": "PodDisruptionBudget",
        "metadata": meta("other"),
        "spec": {"selector": {"matchLabels": {"app": "x"}}},
    }
    mesh = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "shop", "labels": {"istio-injection": "enabled"}},
    }
    objects = [o for o in world(pdb, deployment_meta=flux) if o["kind"] != "Namespace"] + [mesh]
    facts = await facts_of(objects, target=DEPLOYMENT)
    assert (facts.gitops_tool, facts.helm_managed, facts.pdb_protected, facts.service_mesh) == (
        "flux",
        False,
        False,
        "istio",
    )


@pytest.mark.parametrize(
    ("selector", "selected"),
    [
        ({}, True),
        (None, False),
        ({"matchLabels": {"app": "checkout"}}, True),
        ({"matchLabels": {"app": "x"}}, False),
    ],
)
def test_label_selectors(selector: dict[str, Any] | None, selected: bool) -> None:
    assert tools.selects(selector, {"app": "checkout"}) is selected


# ---- what the incident concerns beyond its owner chain -------------------------------------------

CONCERNED_TEMPLATE = {
    "metadata": {"labels": {"app": "api"}},
    "spec": {
        "serviceAccountName": "api",
        "imagePullSecrets": [{"name": "registry"}],
        "containers": [
            {
                "name": "c",
                "envFrom": [{"configMapRef": {"name": "api-env"}}],
                "env": [{"name": "P", "valueFrom": {"secretKeyRef": {"name": "db-password", "key": "p"}}}],
            }
        ],
        "volumes": [{"name": "cfg", "configMap": {"name": "api-config"}}],
    },
}


def concerned_world() -> list[dict[str, Any]]:
    def o(kind: str, name: str, api: str = "v1", **fields: Any) -> dict[str, Any]:
        return {"apiVersion": api, "kind": kind, "metadata": meta(name), **fields}

    return [
        o("Deployment", "api", "apps/v1", spec={"template": CONCERNED_TEMPLATE}),
        o("Deployment", "other", "apps/v1", spec={"template": {"metadata": {"labels": {"app": "other"}}}}),
        o("Service", "api", spec={"selector": {"app": "api"}}),
        o("Service", "other", spec={"selector": {"app": "other"}}),
        o("NetworkPolicy", "deny-all", "networking.k8s.io/v1", spec={"podSelector": {}}),
        o("PodDisruptionBudget", "api", "policy/v1", spec={"selector": {"matchLabels": {"app": "api"}}}),
        o(
            "HorizontalPodAutoscaler",
            "api",
            "autoscaling/v2",
            spec={"scaleTargetRef": {"kind": "Deployment", "name": "api"}},
        ),
        o(
            "RoleBinding",
            "api-read",
            "rbac.authorization.k8s.io/v1",
            subjects=[{"kind": "ServiceAccount", "name": "api"}],
        ),
        o(
            "RoleBinding",
            "unrelated",
            "rbac.authorization.k8s.io/v1",
            subjects=[{"kind": "ServiceAccount", "name": "x"}],
        ),
        o(
            "Certificate",
            "api-tls",
            "cert-manager.io/v1",
            spec={"issuerRef": {"kind": "ClusterIssuer", "name": "corp-ca"}},
        ),
        {"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer", "metadata": {"name": "corp-ca"}},
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-9"}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}},
    ]


API = resources.ResourceRef(kind="Deployment", name="api", namespace="shop")


async def test_what_selects_scales_or_is_referenced_by_the_workload_is_in_scope() -> None:
    where = await tools.gather_scope(InMemoryCluster(concerned_world()), API)
    for kind, name in [
        ("Service", "api"),
        ("NetworkPolicy", "deny-all"),
        ("PodDisruptionBudget", "api"),
        ("HorizontalPodAutoscaler", "api"),
        ("ConfigMap", "api-config"),
        ("ConfigMap", "api-env"),
        ("Secret", "db-password"),
        ("Secret", "registry"),
        ("ServiceAccount", "api"),
        ("RoleBinding", "api-read"),
    ]:
        assert where.violation(ref(kind, name), returned=set()) is None, (kind, name)
    named_only = where.target({"kind": "secret", "name": "db-password"})
    assert named_only.namespace == "shop" and where.violation(named_only, returned=set()) is None
    for kind, name in [("Service", "other"), ("RoleBinding", "unrelated"), ("Deployment", "other")]:
        assert where.violation(ref(kind, name), returned=set()) is not None, (kind, name)


async def test_a_cluster_scoped_object_needs_a_reference_from_what_was_read_in_the_namespace() -> None:
    cluster = InMemoryCluster(concerned_world())
    where = await tools.gather_scope(cluster, API)
    returned: set[scope.Key] = set()
    box = _cluster_tools.ClusterTools(reader=cluster, incident=API, max_chars=10_000, returned=returned)
    issuer, node = ref("ClusterIssuer", "corp-ca", None), ref("Node", "worker-9", None)

    await box.get_resource(_args.ResourceArgs(kind="ClusterIssuer", name="corp-ca"))
    await box.get_resource(_args.ResourceArgs(kind="Node", name="worker-9"))
    refused = where.violation(issuer, returned=returned)
    assert refused is not None and "nothing returned from the incident's namespace" in refused
    await box.get_resource(_args.ResourceArgs(kind="Certificate", name="api-tls"))
    assert where.violation(issuer, returned=returned) is None
    assert where.violation(node, returned=returned) is not None  # a Node the Pods do not run on


def test_an_analysis_concerns_its_own_namespace_unless_a_pair_is_allowed() -> None:
    def spec(namespace: str | None) -> resources.AIAnalysisSpec:
        resource = {"kind": "Deployment", "name": "api", **({"namespace": namespace} if namespace else {})}
        return resources.AIAnalysisSpec.model_validate(
            {"signal": {"type": "OOMKilled", "severity": "high"}, "resource": resource}
        )

    filled = scope.own_namespace(spec(None), namespace="team-a")
    assert not isinstance(filled, str) and filled.resource.namespace == "team-a"
    assert not isinstance(scope.own_namespace(spec("team-a"), namespace="team-a"), str)
    refused = scope.own_namespace(spec("kube-system"), namespace="team-a")
    assert isinstance(refused, str) and "kube-system" in refused and "AIANALYSIS_CROSS_NAMESPACE" in refused
    allowed = scope.own_namespace(spec("shared"), namespace="team-a", allowed={("team-a", "shared")})
    assert not isinstance(allowed, str) and allowed.resource.namespace == "shared"
    assert isinstance(
        scope.own_namespace(spec("shared"), namespace="team-b", allowed={("team-a", "shared")}), str
    )


# ---- a Namespace belongs to itself (issue 31) -----------------------------------------------------


def namespace_spec(name: str, namespace: str | None = None) -> resources.AIAnalysisSpec:
    resource = {"kind": "Namespace", "name": name, **({"namespace": namespace} if namespace else {})}
    return resources.AIAnalysisSpec.model_validate(
        {"signal": {"type": "ResourceQuotaExceeded", "severity": "high"}, "resource": resource}
    )


@pytest.mark.parametrize("filled", [None, "team-a"])  # the intake fills the analysis' namespace in
def test_an_analysis_about_another_namespace_object_is_refused_whatever_its_namespace_field_says(
    filled: str | None,
) -> None:
    refused = scope.own_namespace(namespace_spec("kube-system", filled), namespace="team-a")
    assert isinstance(refused, str) and "Namespace kube-system is in namespace 'kube-system'" in refused
    own = scope.own_namespace(namespace_spec("team-a", filled), namespace="team-a")
    assert not isinstance(own, str) and own.resource.namespace == "team-a"
    paired = scope.own_namespace(
        namespace_spec("shared", filled), namespace="team-a", allowed={("team-a", "shared")}
    )
    assert not isinstance(paired, str) and paired.resource.namespace == "shared", "its reads go there"


def test_one_rule_says_which_namespace_an_object_belongs_to() -> None:
    assert scope.namespace_of(kind="Deployment", name="api", namespace="shop") == "shop"
    assert scope.namespace_of(kind="namespace", name="kube-system", namespace="shop") == "kube-system"
    assert scope.namespace_of(kind="Node", name="worker-1", namespace=None) is None
    assert (
        scope.foreign_namespace("shop", kind="Namespace", name="kube-system", namespace="shop")
        == "kube-system"
    )
    assert scope.foreign_namespace("shop", kind="Node", name="worker-1", namespace=None) is None
    assert (
        scope.foreign_namespace("a", kind="Namespace", name="b", namespace=None, allowed={("a", "*")}) is None
    )


def test_a_namespace_target_outside_the_incidents_namespace_is_out_of_scope_even_if_returned() -> None:
    """Something in the namespace may name another Namespace (a reference the tools record): that
    does not make the other namespace the incident's."""
    where = scope.Scope.of(DEPLOYMENT, cluster=True, kinds=tools.target_kinds())
    other = where.resolve(kind="Namespace", name="kube-system")
    returned = {other.key, scope.reference_key("Namespace", "kube-system")}
    why = where.violation(other, returned=returned)
    assert why is not None and "outside the incident's namespace 'shop'" in why
    incident = scope.Scope.of(
        resources.ResourceRef(kind="Namespace", name="shop", namespace="shop"), cluster=True,
        kinds=tools.target_kinds(),
    )  # fmt: skip
    assert incident.home == "shop" and incident.violation(incident.incident, returned=set()) is None


def test_an_incident_about_a_node_has_the_analysis_namespace_as_its_home() -> None:
    """Otherwise any namespace's objects the tools returned would be in scope (the executor refuses
    them anyway: the validator says so first)."""
    node = resources.ResourceRef(kind="Node", name="worker-1", namespace="shop")  # filled by own_namespace
    where = scope.Scope.of(node, cluster=True, kinds=tools.target_kinds())
    elsewhere = where.resolve(kind="Deployment", name="coredns", namespace="kube-system")
    assert where.home == "shop"
    why = where.violation(elsewhere, returned={elsewhere.key})
    assert why is not None and "outside the incident's namespace 'shop'" in why
    here = where.resolve(kind="Deployment", name="api")
    assert here.namespace == "shop" and where.violation(here, returned={here.key}) is None


# ---- the issuer of a workload's certificate ---------------------------------------------------------


def certificate_world(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    template = {
        "metadata": {"labels": {"app": "api"}},
        "spec": {
            "containers": [{"name": "c"}],
            "volumes": [{"name": "tls", "secret": {"secretName": "api-tls"}}],
        },
    }
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta("api"),
            "spec": {"template": template},
        },
        {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Certificate",
            "metadata": meta("api-cert"),
            "spec": {"secretName": "api-tls", "issuerRef": {"kind": "ClusterIssuer", "name": "corp-ca"}},
        },
        {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Certificate",
            "metadata": meta("other-cert"),
            "spec": {"secretName": "other-tls", "issuerRef": {"kind": "ClusterIssuer", "name": "other-ca"}},
        },
        {"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer", "metadata": {"name": "corp-ca"}},
        {"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer", "metadata": {"name": "other-ca"}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}},
        *extra,
    ]


async def test_the_certificate_issuing_a_mounted_secret_and_its_issuer_are_in_scope_without_a_read() -> None:
    where = await tools.gather_scope(InMemoryCluster(certificate_world()), API)
    assert where.violation(ref("Certificate", "api-cert"), returned=set()) is None
    assert where.violation(ref("ClusterIssuer", "corp-ca", None), returned=set()) is None
    # Another Certificate of the namespace, and its issuer, even read: nothing of the incident uses them.
    returned = {ref("Certificate", "other-cert").key, ref("ClusterIssuer", "other-ca", None).key}
    assert where.violation(ref("Certificate", "other-cert"), returned=set()) is not None
    assert where.violation(ref("ClusterIssuer", "other-ca", None), returned=returned) is not None


async def test_a_certificate_incident_leads_to_its_own_issuer() -> None:
    incident = resources.ResourceRef(kind="Certificate", name="other-cert", namespace="shop")
    where = await tools.gather_scope(InMemoryCluster(certificate_world()), incident)
    assert where.violation(ref("ClusterIssuer", "other-ca", None), returned=set()) is None
    assert where.violation(ref("ClusterIssuer", "corp-ca", None), returned=set()) is not None


# ---- the target inferred when the answer names none ---------------------------------------------------

MESH = resources.ResourceRef(kind="Namespace", name="shop", namespace="shop")


def policy(name: str) -> dict[str, Any]:
    return {"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy", "metadata": meta(name)}


async def test_the_one_object_of_the_workflows_kind_in_a_namespace_incident_is_inferred() -> None:
    cluster = InMemoryCluster(certificate_world(policy("deny-all")))
    where = await tools.gather_scope(cluster, MESH)
    inferred = await tools.infer_target(
        cluster, where, components=["security.istio.io/v1/AuthorizationPolicy"]
    )
    assert inferred.target == ref("AuthorizationPolicy", "deny-all")
    # The object Kubernetes puts in every namespace is never the one.
    root_ca = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("kube-root-ca.crt")}
    cluster = InMemoryCluster(certificate_world(root_ca))
    assert (await tools.infer_target(cluster, where, components=["v1/ConfigMap"])).candidates == ()


async def test_two_candidates_infer_nothing() -> None:
    cluster = InMemoryCluster(certificate_world(policy("deny-all"), policy("allow-probes")))
    where = await tools.gather_scope(cluster, MESH)
    inferred = await tools.infer_target(cluster, where, components=["AuthorizationPolicy"])
    assert inferred.target is None
    assert [c.name for c in inferred.candidates] == ["allow-probes", "deny-all"]
    assert "2 AuthorizationPolicy objects" in inferred.describe()


async def test_for_a_workload_only_what_it_concerns_is_a_candidate() -> None:
    # The Deployment mounts one ConfigMap; another one in the namespace is not a candidate.
    cluster = InMemoryCluster(concerned_world())
    where = await tools.gather_scope(cluster, API)
    assert (await tools.infer_target(cluster, where, components=["v1/Service"])).target == ref(
        "Service", "api"
    )
    configs = await tools.infer_target(cluster, where, components=["configmap"])
    assert [c.name for c in configs.candidates] == ["api-config", "api-env"] and configs.target is None
    assert (await tools.infer_target(cluster, where, components=["*"])).candidates == ()
