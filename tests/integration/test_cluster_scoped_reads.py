"""An analysis reads only the cluster-scoped objects its incident concerns (issue 31, finding 7):
its own Namespace (and those ``investigation_namespaces`` lists), the Nodes its Pods run on, the
PersistentVolumes bound to its claims — found by the scope before
the conversation or referenced by an object of its namespace the tools returned — never another
tenant's Namespace labels or PV specs. A clear tool error otherwise; lists show only those objects.
Real kube-apiserver (Nodes, PVs and bound claims are written by hand, as a kubelet and the PV
controller would)."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from typing import Any

import pytest

from aianalysis import catalog, kube, resources
from aianalysis.analysis import tools
from aianalysis.kube import api_reader
from aianalysis_dev import devcluster
from tests.integration.test_k8s_reader import create

pytestmark = pytest.mark.cluster


@pytest.fixture
def api(cluster: devcluster.Cluster) -> Iterator[kube.ApiClient]:
    with kube.api_client(str(cluster.kubeconfig)) as api_client:
        yield api_client


def cluster_object(cluster: devcluster.Cluster, obj: dict[str, Any]) -> None:
    cluster.kubectl("apply", "-f", "-", input=json.dumps(obj))


@pytest.fixture
def estate(cluster: devcluster.Cluster, namespace: str) -> dict[str, str]:
    """Ours: a Pod on node ``mine`` mounting a claim bound to PV ``mine`` of StorageClass ``mine``.
    Theirs: another tenant's Namespace with a secret-ish annotation, a Node, a PV, a StorageClass."""
    tag = secrets.token_hex(3)
    names = {
        "node": f"node-mine-{tag}", "pv": f"pv-mine-{tag}", "sc": f"sc-mine-{tag}",
        "other_node": f"node-other-{tag}", "other_pv": f"pv-other-{tag}", "other_sc": f"sc-other-{tag}",
        "other_ns": f"tenant-b-{tag}",
    }  # fmt: skip
    cluster.kubectl("create", "namespace", names["other_ns"])
    cluster.kubectl("annotate", "namespace", names["other_ns"], "billing.example/customer=globex-secret-deal")
    for which in ("sc", "other_sc"):
        storage_class = {"name": names[which]}
        cluster_object(
            cluster,
            {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": storage_class,
             "provisioner": "example.com/disk"},
        )  # fmt: skip
    for which in ("node", "other_node"):
        cluster_object(cluster, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": names[which]}})
    for which, sc, claim in (
        ("pv", "sc", (namespace, "data")),
        ("other_pv", "other_sc", (names["other_ns"], "db")),
    ):
        cluster_object(cluster, {
            "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": names[which]},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "storageClassName": names[sc], "hostPath": {"path": f"/srv/{names[which]}"},
                     "claimRef": {"kind": "PersistentVolumeClaim", "namespace": claim[0], "name": claim[1]}},
        })  # fmt: skip
    # A claim of ours that names their volume: a name the tenant wrote, not a binding.
    create(cluster, namespace, {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "grab"},
        "spec": {"accessModes": ["ReadWriteOnce"], "volumeName": names["other_pv"],
                 "resources": {"requests": {"storage": "1Gi"}}},
    })  # fmt: skip
    create(cluster, namespace, {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": names["sc"], "volumeName": names["pv"],
                 "resources": {"requests": {"storage": "1Gi"}}},
    })  # fmt: skip
    create(cluster, namespace, {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "db-0"},
        "spec": {"nodeName": names["node"], "containers": [{"name": "db", "image": "registry.example/db:1"}],
                 "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]},
    })  # fmt: skip
    return names


async def box_for(api: kube.ApiClient, namespace: str, **limits: Any) -> tools.ToolBox:
    """The tool box as the pipeline makes it: the scope gathered first, around the incident (Pod db-0)."""
    spec = resources.AIAnalysisSpec.model_validate(
        {
            "signal": {"type": "CrashLoopBackOff", "severity": "high"},
            "resource": {"kind": "Pod", "name": "db-0", "namespace": namespace},
        }
    )
    reader = api_reader.KubernetesReader(api)
    where = await tools.gather_scope(reader, spec.resource)
    return tools.ToolBox(
        spec=spec,
        catalog=catalog.Catalog(),
        reader=reader,
        max_chars=8000,
        limits=tools.Limits(**limits),
        cluster_scope=where.cluster_scoped,
    )


async def test_only_the_cluster_scoped_objects_the_incident_concerns_are_read(
    api: kube.ApiClient, namespace: str, estate: dict[str, str]
) -> None:
    box = await box_for(api, namespace)
    own = await box.call("get_resource", {"kind": "Namespace", "name": namespace})
    assert not own.is_error, own.text
    node = await box.call("get_resource", {"kind": "Node", "name": estate["node"]})  # the scope found it
    assert not node.is_error, node.text
    for kind, name in (
        ("Namespace", estate["other_ns"]),
        ("Node", estate["other_node"]),
        ("PersistentVolume", estate["other_pv"]),
        ("PersistentVolume", estate["pv"]),  # not yet: nothing read so far leads to it
    ):
        refused = await box.call("get_resource", {"kind": kind, "name": name})
        assert refused.is_error and "does not concern" in refused.text, (kind, refused.text)
        assert "globex" not in refused.text
    events = await box.call("list_events", {"kind": "Node", "name": estate["other_node"]})
    assert events.is_error and "does not concern" in events.text

    for name in ("data", "grab"):
        claim = await box.call("get_resource", {"kind": "PersistentVolumeClaim", "name": name})
        assert not claim.is_error, claim.text
    grabbed = await box.call("get_resource", {"kind": "PersistentVolume", "name": estate["other_pv"]})
    assert grabbed.is_error and "does not concern" in grabbed.text and "/srv/" not in grabbed.text
    pv = await box.call("get_resource", {"kind": "PersistentVolume", "name": estate["pv"]})  # its volumeName
    assert not pv.is_error, pv.text

    for kind, mine, theirs in (
        ("Node", estate["node"], estate["other_node"]),
        ("PersistentVolume", estate["pv"], estate["other_pv"]),
        ("Namespace", namespace, estate["other_ns"]),
    ):
        listed = await box.call("list_resources", {"kind": kind})
        found = await box.call("find_resources", {"kind": kind})
        for result in (listed, found):
            assert not result.is_error, result.text
            assert mine in result.text and theirs not in result.text, (kind, result.text)
    # A page of one: the cluster holds many Namespaces before this one ("default", "kube-system", …);
    # the incident's own is still what a list of one shows.
    one = await box.call("list_resources", {"kind": "Namespace", "limit": 1})
    assert namespace in one.text, one.text


async def test_investigation_namespaces_open_their_namespaces_and_star_opens_everything(
    api: kube.ApiClient, namespace: str, estate: dict[str, str]
) -> None:
    listed = await box_for(api, namespace, namespaces=(estate["other_ns"],))
    assert not (await listed.call("get_resource", {"kind": "Namespace", "name": estate["other_ns"]})).is_error
    assert (await listed.call("get_resource", {"kind": "Node", "name": estate["other_node"]})).is_error
    every = await box_for(api, namespace, namespaces=("*",))
    for kind, name in (("Node", estate["other_node"]), ("PersistentVolume", estate["other_pv"])):
        assert not (await every.call("get_resource", {"kind": kind, "name": name})).is_error
