"""Read-only cluster reads behind the remediation-target rules: what surrounds the incident's
resource (``gather_scope``) and the facts detected on a target (``detect_facts``).

Both tolerate failures: a read the API server refuses or that fails leaves that part unknown
(an owner not added to the scope, a fact left ``None``) and never fails the analysis. Unknown
scope makes the target check stricter, unknown facts never satisfy a workflow's requirement.

Facts (Kubernaut's ``detectedLabels``), looked for on the target and the controllers above it:
- ``helm_managed``: label ``app.kubernetes.io/managed-by: Helm``, a ``helm.sh/chart`` label or a
  ``meta.helm.sh/release-name`` annotation;
- ``gitops_managed`` / ``gitops_tool``: Argo CD's tracking annotation or instance label
  (``argocd``), Flux's ``kustomize.toolkit.fluxcd.io/*`` or ``helm.toolkit.fluxcd.io/*`` labels
  (``flux``);
- ``hpa_enabled``: an HPA in the namespace whose ``scaleTargetRef`` is the target or a controller
  above it;
- ``pdb_protected``: a PodDisruptionBudget whose selector matches the target's Pod labels;
- ``stateful``: a StatefulSet or PVC in the chain, or Pods that mount a PVC;
- ``service_mesh``: an Istio or Linkerd injection marker on the Pod template or the namespace.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aianalysis import catalog, errors, resources
from aianalysis.analysis import scope
from aianalysis.kube import kinds as _kinds
from aianalysis.kube import owners
from aianalysis.kube import reader as _reader

MAX_OWNER_DEPTH = 4
MAX_PODS = 50

_HELM_LABELS = ("helm.sh/chart",)
_HELM_ANNOTATIONS = ("meta.helm.sh/release-name",)
_ARGO_MARKERS = (
    "argocd.argoproj.io/tracking-id",
    "argocd.argoproj.io/instance",
    "argocd.argoproj.io/managed-by",
)
_FLUX_PREFIXES = ("kustomize.toolkit.fluxcd.io/", "helm.toolkit.fluxcd.io/")


def kinds() -> dict[str, scope.KindInfo]:
    """The investigation tools' kinds as the target check's table."""
    return scope.kind_table({k.kind: (k.api_version, k.namespaced) for k in _kinds.KINDS})


async def gather_scope(reader: _reader.ClusterReader | None, incident: resources.ResourceRef) -> scope.Scope:
    """The incident's scope: with a reader, its owner chain (both directions), the Nodes its Pods
    run on and the PVCs they mount; without one, the no-cluster scope."""
    table = kinds()
    if reader is None:
        return scope.Scope.of(incident, cluster=False, kinds=table)
    base = scope.Scope.of(incident, cluster=True, kinds=table)
    related: dict[scope.Key, str] = {}
    chain = await _owner_chain(reader, base.incident)
    pods = await _pods_below(reader, chain)
    # Items of a list response carry no ``kind``: the Pods are named as Pods.
    for obj, kind in [*((o, str(o.get("kind") or "")) for o in chain), *((pod, "Pod") for pod in pods)]:
        _add(related, _ref(obj, kind=kind))
        for ref in _owner_refs(obj):
            _add(related, ref)
    for pod in pods:
        for ref in _pod_neighbours(pod):
            _add(related, ref)
    related.pop(base.incident.key, None)
    return scope.Scope.of(incident, cluster=True, kinds=table, related=related)


async def detect_facts(reader: _reader.ClusterReader | None, target: scope.ObjectRef) -> catalog.TargetFacts:
    """The facts on ``target``; all unknown without a reader or when the target cannot be read."""
    if reader is None:
        return catalog.TargetFacts()
    chain = await _owner_chain(reader, target)
    if not chain:
        return catalog.TargetFacts()
    markers = _markers(chain)
    gitops_tool = _gitops_tool(markers)
    template = _pod_template(chain[0])
    namespace = target.namespace
    return catalog.TargetFacts(
        helm_managed=_helm_managed(markers),
        gitops_managed=gitops_tool is not None,
        gitops_tool=gitops_tool,
        hpa_enabled=await _hpa(reader, chain, namespace),
        pdb_protected=await _pdb(reader, template, namespace),
        stateful=_stateful(chain, template),
        service_mesh=await _mesh(reader, template, namespace),
    )


# ---- owner chain ---------------------------------------------------------------------------------


async def _read(reader: _reader.ClusterReader, ref: scope.ObjectRef) -> _reader.JSONObject | None:
    if ref.kind not in _kinds.BY_KIND:
        return None
    try:
        return await reader.get_object(kind=ref.kind, name=ref.name, namespace=ref.namespace)
    except (_reader.Unavailable, errors.ClusterError):
        return None


async def _owner_chain(reader: _reader.ClusterReader, start: scope.ObjectRef) -> list[_reader.JSONObject]:
    """``start`` and the controllers above it (Pod → ReplicaSet → Deployment…), as read."""

    async def read(ref: owners.Owner) -> _reader.JSONObject | None:
        return await _read(reader, _object_ref(ref))

    first = owners.Owner(
        kind=start.kind, name=start.name, namespace=start.namespace, api_version=start.api_version
    )
    chain = await owners.owner_chain(first, read=read, max_depth=MAX_OWNER_DEPTH)
    return [dict(obj) for _, obj in chain if obj is not None]


async def _pods_below(
    reader: _reader.ClusterReader, chain: Sequence[_reader.JSONObject]
) -> list[_reader.JSONObject]:
    """The Pods of the topmost controller in the chain (the incident's own Pod when it is one)."""
    pods = [obj for obj in chain if obj.get("kind") == "Pod"]
    for obj in reversed(chain):
        kind, meta = obj.get("kind"), obj.get("metadata") or {}
        if kind in _kinds.OWNER_KINDS and meta.get("namespace"):
            try:
                found = await reader.list_pods_of_owner(
                    kind=str(kind), name=meta["name"], namespace=meta["namespace"]
                )
            except (_reader.Unavailable, errors.ClusterError):
                continue
            return [*pods, *found[:MAX_PODS]]
    return pods


def _ref(obj: Mapping[str, Any], *, kind: str) -> scope.ObjectRef:
    meta = obj.get("metadata") or {}
    return scope.ObjectRef(
        kind=kind,
        name=str(meta.get("name") or ""),
        namespace=meta.get("namespace"),
        api_version=obj.get("apiVersion"),
    )


def _owner_refs(obj: Mapping[str, Any]) -> list[scope.ObjectRef]:
    """Owners, the controlling one first; owners share the object's namespace."""
    return [_object_ref(owner) for owner in owners.owners_of(obj)]


def _object_ref(owner: owners.Owner) -> scope.ObjectRef:
    return scope.ObjectRef(
        kind=owner.kind, name=owner.name, namespace=owner.namespace, api_version=owner.api_version
    )


def _pod_neighbours(pod: Mapping[str, Any]) -> list[scope.ObjectRef]:
    spec, namespace = pod.get("spec") or {}, (pod.get("metadata") or {}).get("namespace")
    found = (
        [scope.ObjectRef(kind="Node", name=spec["nodeName"], api_version="v1")]
        if spec.get("nodeName")
        else []
    )
    for volume in spec.get("volumes") or ():
        claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
        if claim:
            found.append(
                scope.ObjectRef(
                    kind="PersistentVolumeClaim", name=claim, namespace=namespace, api_version="v1"
                )
            )
    return found


def _add(related: dict[scope.Key, str], ref: scope.ObjectRef) -> None:
    if ref.kind and ref.name:
        related.setdefault(ref.key, ref.describe())


# ---- facts ---------------------------------------------------------------------------------------


def _markers(chain: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Labels and annotations of the chain and the Pod template, lower objects first."""
    found: dict[str, str] = {}
    for obj in chain:
        for meta in (obj.get("metadata") or {}, (_pod_template(obj) or {}).get("metadata") or {}):
            for key, value in {**(meta.get("labels") or {}), **(meta.get("annotations") or {})}.items():
                found.setdefault(str(key), str(value))
    return found


def _helm_managed(markers: Mapping[str, str]) -> bool:
    return markers.get("app.kubernetes.io/managed-by", "").casefold() == "helm" or any(
        key in markers for key in (*_HELM_LABELS, *_HELM_ANNOTATIONS)
    )


def _gitops_tool(markers: Mapping[str, str]) -> str | None:
    if any(key in markers for key in _ARGO_MARKERS):
        return "argocd"
    if any(key.startswith(_FLUX_PREFIXES) for key in markers):
        return "flux"
    return None


def _pod_template(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The Pod (template) an object runs: the Pod itself, ``spec.template``, or a CronJob's."""
    spec = obj.get("spec") or {}
    if obj.get("kind") == "Pod":
        return {"metadata": obj.get("metadata") or {}, "spec": spec}
    if obj.get("kind") == "CronJob":
        return ((spec.get("jobTemplate") or {}).get("spec") or {}).get("template")
    template = spec.get("template")
    return template if isinstance(template, dict) else None


async def _list(
    reader: _reader.ClusterReader, kind: str, namespace: str | None
) -> list[_reader.JSONObject] | None:
    if namespace is None:
        return None
    try:
        return await reader.list_objects(kind=kind, namespace=namespace)
    except (_reader.Unavailable, errors.ClusterError):
        return None


async def _hpa(
    reader: _reader.ClusterReader, chain: Sequence[Mapping[str, Any]], namespace: str | None
) -> bool | None:
    names = {(obj.get("kind"), (obj.get("metadata") or {}).get("name")) for obj in chain}
    if not any(kind in _kinds.OWNER_KINDS for kind, _ in names):
        return False
    hpas = await _list(reader, "HorizontalPodAutoscaler", namespace)
    if hpas is None:
        return None
    refs = [(hpa.get("spec") or {}).get("scaleTargetRef") or {} for hpa in hpas]
    return any((ref.get("kind"), ref.get("name")) in names for ref in refs)


async def _pdb(
    reader: _reader.ClusterReader, template: Mapping[str, Any] | None, namespace: str | None
) -> bool | None:
    if template is None:
        return False
    pdbs = await _list(reader, "PodDisruptionBudget", namespace)
    if pdbs is None:
        return None
    labels = (template.get("metadata") or {}).get("labels") or {}
    return any(selects((pdb.get("spec") or {}).get("selector"), labels) for pdb in pdbs)


def selects(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A LabelSelector against labels (policy/v1: an empty selector selects every Pod; a null one none)."""
    if selector is None:
        return False
    if any(labels.get(key) != value for key, value in (selector.get("matchLabels") or {}).items()):
        return False
    return all(_expression(term, labels) for term in selector.get("matchExpressions") or ())


def _expression(term: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator, values = str(term.get("key")), term.get("operator"), term.get("values") or []
    if operator == "In":
        return labels.get(key) in values
    if operator == "NotIn":
        return labels.get(key) not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    return False


def _stateful(chain: Sequence[Mapping[str, Any]], template: Mapping[str, Any] | None) -> bool:
    if any(obj.get("kind") in ("StatefulSet", "PersistentVolumeClaim") for obj in chain):
        return True
    volumes = ((template or {}).get("spec") or {}).get("volumes") or ()
    return any(volume.get("persistentVolumeClaim") for volume in volumes)


async def _mesh(
    reader: _reader.ClusterReader, template: Mapping[str, Any] | None, namespace: str | None
) -> str | None:
    """Istio or Linkerd from injection markers; None when nothing says either way."""
    meta = (template or {}).get("metadata") or {}
    markers = {**(meta.get("labels") or {}), **(meta.get("annotations") or {})}
    if namespace is not None:
        ns = await _read(reader, scope.ObjectRef(kind="Namespace", name=namespace))
        ns_meta = (ns or {}).get("metadata") or {}
        markers = {**(ns_meta.get("labels") or {}), **(ns_meta.get("annotations") or {}), **markers}
    if (
        markers.get("sidecar.istio.io/inject") == "true"
        or markers.get("istio-injection") == "enabled"
        or "istio.io/rev" in markers
    ):
        return "istio"
    if markers.get("linkerd.io/inject") == "enabled":
        return "linkerd"
    return None
