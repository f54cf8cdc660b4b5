"""The workload an incident concerns, read from the cluster: where the facts of a target that runs
no Pods (a PDB, an HPA, a ConfigMap, a Node) come from (``_detect``), and where the scope starts
(``tools.gather_scope``). One reading for both, so the analysis and the executor agree.

The incident's owner chain is the first start; when the incident's object is itself a selector or a
scaler (a Service, NetworkPolicy, PodDisruptionBudget, HorizontalPodAutoscaler), each workload it
selects or scales is another. The concerned workload is the top of the first start that runs Pods.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aianalysis.analysis import scope
from aianalysis.analysis.facts import _detect
from aianalysis.kube import kind_table, readers

#: Kinds whose objects select Pods by label, and where their selector is.
SELECTORS: dict[str, tuple[str, ...]] = {
    "Service": ("spec", "selector"),
    "NetworkPolicy": ("spec", "podSelector"),
    "PodDisruptionBudget": ("spec", "selector"),
}
#: Workload kinds a selecting object may lead to (their Pod template's labels are matched).
_WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet")


def target_kinds() -> dict[str, scope.KindInfo]:
    """The investigation tools' kinds as the target check's table, plus Secrets: never read, but a
    remediation may act on one the workload references (by name)."""
    table = {k.kind: (k.api_version, k.namespaced) for k in kind_table.KINDS}
    return scope.kind_table({**table, "Secret": ("v1", True)})


async def workload_starts(
    reader: readers.ClusterReader, incident: scope.ObjectRef
) -> list[list[readers.JSONObject]]:
    """The incident's owner chain (when it could be read) and one start per workload its object
    selects or scales (see the module doc)."""
    chain = await _detect.owner_chain(reader, incident)
    starts = [chain] if chain else []
    if chain and chain[0].get("kind") in (*SELECTORS, "HorizontalPodAutoscaler"):
        starts += [[workload] for workload in await _selected_workloads(reader, chain[0])]
    return starts


def concerned_workload(starts: Sequence[Sequence[readers.JSONObject]]) -> scope.ObjectRef | None:
    """The workload the incident concerns: the top of its own chain when that runs Pods, else the
    first workload its selector or scaler leads to."""
    for start in starts:
        top = start[-1] if start else None
        if top is not None and _detect.pod_template(top) is not None:
            return named_ref(top, kind=str(top.get("kind")))
    return None


async def _selected_workloads(
    reader: readers.ClusterReader, obj: Mapping[str, Any]
) -> list[readers.JSONObject]:
    """The workloads a selecting or scaling object (PDB, Service, NetworkPolicy, HPA) concerns."""
    namespace = (obj.get("metadata") or {}).get("namespace")
    if not namespace:
        return []
    kind = str(obj.get("kind"))
    if kind == "HorizontalPodAutoscaler":
        ref = (obj.get("spec") or {}).get("scaleTargetRef") or {}
        found = await _detect.read(
            reader, scope.ObjectRef(kind=str(ref.get("kind")), name=str(ref.get("name")), namespace=namespace)
        )
        return [found] if found is not None else []
    selector = at(obj, SELECTORS[kind])
    if kind == "Service":
        selector = {"matchLabels": selector} if selector else None
    workloads: list[readers.JSONObject] = []
    for workload_kind in _WORKLOADS:
        for workload in await listed(reader, workload_kind, namespace):
            template = _detect.pod_template({**workload, "kind": workload_kind}) or {}
            if _detect.selects(selector, (template.get("metadata") or {}).get("labels") or {}):
                workloads.append({**workload, "kind": workload_kind})
    return workloads


async def listed(reader: readers.ClusterReader, kind: str, namespace: str) -> list[readers.JSONObject]:
    """Every ``kind`` in ``namespace`` (none when it cannot be listed). Items of a list response
    carry no kind or apiVersion: they are named here."""
    found = await _detect.list_in(reader, kind, namespace)
    api_version = kind_table.BY_KIND[kind].api_version
    return [
        {**obj, "kind": obj.get("kind") or kind, "apiVersion": obj.get("apiVersion") or api_version}
        for obj in found or ()
    ]


def at(obj: Mapping[str, Any], path: Sequence[str]) -> Any:
    """The value at ``path`` in nested mappings (None when a step is missing)."""
    value: Any = obj
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def named_ref(obj: Mapping[str, Any], *, kind: str) -> scope.ObjectRef:
    meta = obj.get("metadata") or {}
    return scope.ObjectRef(
        kind=kind,
        name=str(meta.get("name") or ""),
        namespace=meta.get("namespace"),
        api_version=obj.get("apiVersion"),
    )
