"""The remediation target's scope and facts read from a real kube-apiserver (read-only): the owner
chain in both directions, and the HPA/PDB/StatefulSet facts a workflow's detectedLabels need."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from aianalysis import catalog, kube, resources
from aianalysis.analysis import scope, tools
from aianalysis.kube import api_reader as k8s
from aianalysis_dev import devcluster
from tests.integration.test_k8s_reader import Chain, create

pytestmark = pytest.mark.cluster


@pytest.fixture
def api(cluster: devcluster.Cluster) -> Iterator[kube.ApiClient]:
    with kube.api_client(str(cluster.kubeconfig)) as api_client:
        yield api_client


def ref(kind: str, name: str, namespace: str | None) -> scope.ObjectRef:
    return scope.Scope.of(
        resources.ResourceRef(kind="Namespace", name="x"), cluster=True, kinds=tools.target_kinds()
    ).resolve(kind=kind, name=name, namespace=namespace)


async def test_the_owner_chain_of_a_pod_is_in_scope_and_a_neighbour_is_not(
    api: kube.ApiClient, cluster: devcluster.Cluster, namespace: str
) -> None:
    Chain(cluster, namespace)
    incident = resources.ResourceRef(kind="Pod", name="web-5d8f-a", namespace=namespace)

    where = await tools.gather_scope(k8s.KubernetesReader(api), incident)

    for kind, name in [("ReplicaSet", "web-5d8f"), ("Deployment", "web"), ("Pod", "web-5d8f-b")]:
        assert where.violation(ref(kind, name, namespace), returned=set()) is None, kind
    for kind, name in [("StatefulSet", "db"), ("Pod", "web-orphan")]:
        assert where.violation(ref(kind, name, namespace), returned=set()) is not None, name


async def test_facts_are_detected_from_the_hpa_and_pdb_that_concern_the_target(
    api: kube.ApiClient, cluster: devcluster.Cluster, namespace: str
) -> None:
    Chain(cluster, namespace)
    create(
        cluster,
        namespace,
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 2,
                "maxReplicas": 5,
            },
        },
    )
    create(
        cluster,
        namespace,
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
        },
    )
    reader = k8s.KubernetesReader(api)

    web = await tools.detect_facts(reader, ref("Deployment", "web", namespace))
    pod = await tools.detect_facts(reader, ref("Pod", "web-5d8f-a", namespace))
    db = await tools.detect_facts(reader, ref("StatefulSet", "db", namespace))

    assert (web.hpa_enabled, web.pdb_protected, web.stateful, web.helm_managed) == (True, True, False, False)
    assert (pod.hpa_enabled, pod.pdb_protected) == (True, True)  # through its ReplicaSet and Deployment
    assert (db.hpa_enabled, db.pdb_protected, db.stateful) == (False, False, True)
    assert await tools.detect_facts(reader, ref("Deployment", "ghost", namespace)) == catalog.TargetFacts()


async def test_facts_and_scope_on_the_right_object_on_a_real_api_server(
    api: kube.ApiClient, cluster: devcluster.Cluster, namespace: str
) -> None:
    """A PDB incident concerns the Deployment it selects; the PDB itself is pdbProtected; any
    NetworkPolicy isolates the namespace; Argo CD's namespace label marks it GitOps-managed; the
    Service and NetworkPolicy selecting the Pods are remediation targets, another Service is not."""
    Chain(cluster, namespace)
    cluster.kubectl("label", "namespace", namespace, "argocd.argoproj.io/instance=shop")
    for obj in [
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web-pdb"},
            "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
        },
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "deny-all"},
            "spec": {"podSelector": {}, "policyTypes": ["Ingress"]},
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "elsewhere"},
            "spec": {"selector": {"app": "nothing"}, "ports": [{"port": 80}]},
        },
    ]:
        create(cluster, namespace, obj)
    reader = k8s.KubernetesReader(api)
    incident = resources.ResourceRef(kind="PodDisruptionBudget", name="web-pdb", namespace=namespace)

    where = await tools.gather_scope(reader, incident)
    pdb = await tools.detect_facts(reader, where.incident, workload=where.workload)
    web = await tools.detect_facts(reader, ref("Deployment", "web", namespace))

    assert where.workload == ref("Deployment", "web", namespace)
    assert (pdb.pdb_protected, pdb.network_isolated, pdb.gitops_tool) == (True, True, "argocd")
    assert (web.pdb_protected, web.network_isolated, web.gitops_managed) == (True, True, True)
    for kind, name in [("Deployment", "web"), ("Service", "web"), ("NetworkPolicy", "deny-all")]:
        assert where.violation(ref(kind, name, namespace), returned=set()) is None, kind
    assert where.violation(ref("Service", "elsewhere", namespace), returned=set()) is not None
