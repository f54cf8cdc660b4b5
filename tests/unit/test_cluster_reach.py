"""Which cluster-scoped objects an analysis' tools may show (``tools._policy.ClusterReach``, pure):
what the incident concerns, never what a tenant's object merely names (issue 31, finding 7)."""

from __future__ import annotations

from typing import Any

from aianalysis.analysis.tools import _policy

HOME = _policy.ReadPolicy(incident_namespace="shop")


def pod(*, node: str | None = None, claim: str = "data") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "app"}],
        "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": claim}}],
    }
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": "web-0", "namespace": "shop"}, "spec": spec}


def volume(name: str, *, claim_namespace: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"claimRef": {"namespace": claim_namespace, "name": "data"}}}


def test_only_what_the_incident_leads_to_is_admitted() -> None:
    reach = _policy.ClusterReach(policy=HOME, gathered=frozenset({("node", "n1")}))
    assert reach.admits("Node", "n1") and not reach.admits("Node", "n2")
    assert reach.admits("Namespace", "shop") and not reach.admits("Namespace", "billing")
    reach.note({"spec": {"volumeName": "pv-a", "storageClassName": "fast"}})  # a claim of ours
    assert reach.admits("StorageClass", "fast")
    assert reach.admits("PersistentVolume", "pv-a", volume("pv-a", claim_namespace="shop"))
    assert not reach.admits("PersistentVolume", "pv-a", volume("pv-a", claim_namespace="billing"))
    attachment = {"metadata": {"name": "csi-1"}, "spec": {"source": {"persistentVolumeName": "pv-a"}}}
    assert reach.admits("VolumeAttachment", "csi-1", attachment)
    assert not reach.admits("VolumeAttachment", "csi-1")  # by name alone: nothing says whose it is


def test_an_unscheduled_pod_concerns_every_node_a_scheduled_one_its_own() -> None:
    scheduled = _policy.ClusterReach(policy=HOME)
    scheduled.note(pod(node="n1"))
    assert scheduled.admits("Node", "n1") and not scheduled.admits("Node", "n2")
    pending = _policy.ClusterReach(policy=HOME)
    pending.note(pod())
    assert pending.admits("Node", "n2") and not pending.admits("PersistentVolume", "pv-x")


def test_star_lifts_the_restriction() -> None:
    every = _policy.ClusterReach(policy=_policy.ReadPolicy(incident_namespace="shop", namespaces=("*",)))
    assert every.admits("Namespace", "billing") and every.admits("PersistentVolume", "pv-x")
