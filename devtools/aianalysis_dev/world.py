"""The demo's world: the workloads its incidents name, with the failure state a real cluster shows.

There is no kubelet, scheduler or deployment controller in the local control plane, so this module
writes what they would: each object of a scenario's ``cluster`` list is created (owners first, so
``ownerReferences`` get the owner's real uid), then its ``status`` is written through the
``/status`` subresource exactly as a kubelet or controller reports it (Pod phases and container
states, ReplicaSet/Deployment counts, Node conditions, HPA metrics). Events are posted as the
kubelet would. The scenario files are the same format ``aianalysis eval`` reads
(``examples/eval/README.md``), so the demo's incidents are also measured by ``aianalysis eval``.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, dynamic
from kubernetes.dynamic import exceptions

CLUSTER_SCOPED = frozenset({"Node", "PersistentVolume", "Namespace", "StorageClass"})
API_VERSION = "kubernaut.io/v1alpha1"


@dataclasses.dataclass(frozen=True)
class Incident:
    """One demo incident: the AIAnalysis to create and what a correct analysis holds."""

    name: str
    spec: dict[str, Any]
    expect: dict[str, Any]
    objects: tuple[dict[str, Any], ...]


def load(folder: Path, *, namespace: str) -> list[Incident]:
    """The scenario files of ``folder``, rewritten into ``namespace``."""
    incidents = []
    for path in sorted(folder.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        spec = copy.deepcopy(doc["analysis"])
        if spec["resource"].get("namespace"):
            spec["resource"]["namespace"] = namespace
        labels = spec.get("signal", {}).get("labels") or {}
        if "namespace" in labels:
            labels["namespace"] = namespace
        objects = tuple(_placed(obj, namespace) for obj in doc.get("cluster") or ())
        incidents.append(Incident(name=doc["name"], spec=spec, expect=doc["expect"], objects=objects))
    return incidents


def analysis(incident: Incident) -> dict[str, Any]:
    """The AIAnalysis object of an incident."""
    return {
        "apiVersion": API_VERSION,
        "kind": "AIAnalysis",
        "metadata": {"name": incident.name},
        "spec": incident.spec,
    }


def stage(api: client.ApiClient, incidents: Iterable[Incident]) -> int:
    """Create every incident's objects with their status; objects several incidents share (a Node)
    are created once. Returns how many objects were written."""
    dyn = dynamic.DynamicClient(api)  # type: ignore[no-untyped-call]  # the client is untyped
    uids: dict[tuple[str, str | None, str], str] = {}
    written = 0
    for incident in incidents:
        for obj in incident.objects:
            key = _key(obj)
            if key in uids:
                continue
            uids[key] = _create(dyn, obj, uids)
            written += 1
    return written


def _create(
    dyn: dynamic.DynamicClient, obj: Mapping[str, Any], uids: Mapping[tuple[str, str | None, str], str]
) -> str:
    body = copy.deepcopy(dict(obj))
    status = body.pop("status", None)
    meta = body["metadata"]
    meta.pop("uid", None)
    namespace = meta.get("namespace")
    for ref in meta.get("ownerReferences") or ():
        ref["uid"] = uids[(ref["kind"], namespace, ref["name"])]
        ref.setdefault("controller", True)
    resource = dyn.resources.get(api_version=body["apiVersion"], kind=body["kind"])
    try:
        created = resource.create(body=body, namespace=namespace)
    except exceptions.ConflictError:
        created = resource.get(name=meta["name"], namespace=namespace)
    if status and body["kind"] != "Event":
        resource.status.patch(
            body={"status": status},
            name=meta["name"],
            namespace=namespace,
            content_type="application/merge-patch+json",
        )
    return str(created.metadata.uid)


def _placed(obj: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    placed = copy.deepcopy(dict(obj))
    meta = placed.setdefault("metadata", {})
    if placed["kind"] not in CLUSTER_SCOPED:
        meta["namespace"] = namespace
    if placed["kind"] == "Event":
        placed.setdefault("involvedObject", {})["namespace"] = namespace
    return placed


def _key(obj: Mapping[str, Any]) -> tuple[str, str | None, str]:
    meta = obj["metadata"]
    return (str(obj["kind"]), meta.get("namespace"), str(meta["name"]))
