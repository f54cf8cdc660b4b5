"""Facts detected on a remediation target (Kubernaut's ``detectedLabels``, after its detection
specification DD-HAPI-018 / DD-KA-018): one table of rules, read-only, evaluated once per target.

What a rule looks at (a ``Subject``): the target and the controllers above it (its *chain*), the
Pod template the chain runs, the target's Namespace, and, listed on demand, the HPAs,
PodDisruptionBudgets and NetworkPolicies of that namespace.

==================  ====================================================================================
fact                true when
==================  ====================================================================================
``helmManaged``     a chain object or the template says ``app.kubernetes.io/managed-by: Helm``, has a
                    ``helm.sh/chart`` label or a ``meta.helm.sh/release-name`` annotation
``gitOpsManaged``,  Argo CD (``argocd.argoproj.io/tracking-id``, ``/instance``, ``/managed-by``) or
``gitOpsTool``      Flux (``kustomize.toolkit.fluxcd.io/*``, ``helm.toolkit.fluxcd.io/*``,
                    ``fluxcd.io/sync-gc-mark``) markers on the chain or the template, else on the
                    namespace (Argo CD also ``argocd.argoproj.io/managed``, Flux also
                    ``fluxcd.io/sync-status``), else Argo CD's own record: an Application (any
                    namespace) lists the target or a chain object among the resources it manages
                    (``status.resources``; Argo CD 2's default tracking label
                    ``app.kubernetes.io/instance`` is no marker: Helm writes it too), or, reporting
                    none yet, deploys into the target's namespace on this cluster
                    (``spec.destination``); the tool is ``argocd`` or ``flux``
``hpaEnabled``      the target IS a HorizontalPodAutoscaler, or an HPA's ``scaleTargetRef`` is in the chain
``pdbProtected``    the target IS a PodDisruptionBudget, or a PDB's selector selects the template's labels
``stateful``        a StatefulSet or PersistentVolumeClaim is in the chain, or the template mounts a PVC
``networkIsolated`` the target IS a NetworkPolicy, or the namespace has any NetworkPolicy
``serviceMesh``     ``istio`` / ``linkerd``: the target is one of the mesh's own objects
                    (``*.istio.io``, ``*.linkerd.io``), or injection markers on the template, the chain
                    or the namespace (``sidecar.istio.io/inject``, ``sidecar.istio.io/status``,
                    ``istio-injection: enabled``, ``istio.io/rev``, ``linkerd.io/inject: enabled``)
==================  ====================================================================================

**The workload the incident concerns.** A target that runs no Pods (a PDB, an HPA, a
NetworkPolicy, a ConfigMap, a Node) takes, for each fact its own rules leave false or unknown, the
value detected on the incident's workload: relaxing the PDB of an Argo CD-managed Deployment is a
change to a GitOps-managed application.

Unknown stays unknown: a list the API server refuses leaves its fact ``None`` (never meets a
requirement); a target that cannot be read keeps only the facts its kind and namespace decide.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from aianalysis import catalog, errors
from aianalysis.analysis import scope
from aianalysis.kube import kind_table, owners, readers

MAX_OWNER_DEPTH = 4

_HELM_LABELS = ("helm.sh/chart",)
_HELM_ANNOTATIONS = ("meta.helm.sh/release-name",)
_ARGO_MARKERS = (
    "argocd.argoproj.io/tracking-id",
    "argocd.argoproj.io/instance",
    "argocd.argoproj.io/managed-by",
)
_ARGO_NAMESPACE_MARKERS = (*_ARGO_MARKERS, "argocd.argoproj.io/managed")
_FLUX_PREFIXES = ("kustomize.toolkit.fluxcd.io/", "helm.toolkit.fluxcd.io/")
_FLUX_MARKERS = ("fluxcd.io/sync-gc-mark",)
_FLUX_NAMESPACE_MARKERS = (*_FLUX_MARKERS, "fluxcd.io/sync-status")
_MESH_GROUPS = {"istio.io": "istio", "linkerd.io": "linkerd"}
ARGO_APPLICATION = kind_table.Kind(
    kind="Application", group="argoproj.io", version="v1alpha1", plural="applications", namespaced=True
)
MAX_APPLICATIONS = 500
_IN_CLUSTER = ("https://kubernetes.default.svc", "https://kubernetes.default.svc/")

JSON = Mapping[str, Any]


@dataclasses.dataclass
class Subject:
    """What the rules look at for one target (lists read at most once, on demand)."""

    target: scope.ObjectRef
    chain: Sequence[JSON]
    namespace: JSON | None
    reader: readers.ClusterReader
    _lists: dict[str, list[JSON] | None] = dataclasses.field(default_factory=dict)
    _applications: list[JSON] | None = None

    @property
    def read(self) -> bool:
        return bool(self.chain)

    @property
    def template(self) -> JSON | None:
        return pod_template(self.chain[0]) if self.chain else None

    def is_kind(self, kind: str) -> bool:
        return self.target.kind.casefold() == kind.casefold()

    def markers(self) -> dict[str, str]:
        """Labels and annotations of the chain and its Pod template, lower objects first."""
        found: dict[str, str] = {}
        for obj in self.chain:
            for meta in (obj.get("metadata") or {}, (pod_template(obj) or {}).get("metadata") or {}):
                for key, value in {**(meta.get("labels") or {}), **(meta.get("annotations") or {})}.items():
                    found.setdefault(str(key), str(value))
        return found

    def namespace_markers(self) -> dict[str, str]:
        meta = (self.namespace or {}).get("metadata") or {}
        return {
            str(k): str(v)
            for k, v in {**(meta.get("labels") or {}), **(meta.get("annotations") or {})}.items()
        }

    @property
    def home(self) -> str | None:
        """The target's namespace (the Namespace itself when the target is one)."""
        return self.target.name if self.is_kind("Namespace") else self.target.namespace

    async def listed(self, kind: str) -> list[JSON] | None:
        """Every ``kind`` in the target's namespace; None when it cannot be listed."""
        if kind not in self._lists:
            self._lists[kind] = await list_in(self.reader, kind, self.home)
        return self._lists[kind]

    async def applications(self) -> list[JSON]:
        """Argo CD's Applications, in every namespace (none when Argo CD is not installed or they
        cannot be listed: the markers alone decide then, as before)."""
        if self._applications is None:
            try:
                page = await self.reader.list_page(
                    kind=ARGO_APPLICATION, namespace=None, limit=MAX_APPLICATIONS
                )
            except (readers.Unavailable, errors.ClusterError):
                self._applications = []
            else:
                self._applications = list(page.items)
        return self._applications


FactRule = Callable[[Subject], Awaitable[bool | str | None]]


async def _helm(subject: Subject) -> bool | None:
    if not subject.read:
        return None
    markers = subject.markers()
    return markers.get("app.kubernetes.io/managed-by", "").casefold() == "helm" or any(
        key in markers for key in (*_HELM_LABELS, *_HELM_ANNOTATIONS)
    )


async def _gitops_tool(subject: Subject) -> str | None:
    """``argocd``/``flux``; "" when nothing says so (known negative); None when nothing was read."""
    own = _tool(subject.markers(), argo=_ARGO_MARKERS, flux=_FLUX_MARKERS)
    if own is not None:
        return own
    namespace = _tool(subject.namespace_markers(), argo=_ARGO_NAMESPACE_MARKERS, flux=_FLUX_NAMESPACE_MARKERS)
    if namespace is not None:
        return namespace
    if await _argo_manages(subject):
        return "argocd"
    return "" if subject.read else None


async def _argo_manages(subject: Subject) -> bool:
    """Whether an Argo CD Application says it manages the target (see the module table)."""
    ours = {
        (
            str(o.get("kind")),
            (o.get("metadata") or {}).get("namespace") or "",
            (o.get("metadata") or {}).get("name"),
        )
        for o in subject.chain
    }
    ours.add((subject.target.kind, subject.target.namespace or "", subject.target.name))
    for app in await subject.applications():
        listed = (app.get("status") or {}).get("resources") or ()
        if listed:
            if any((r.get("kind"), r.get("namespace") or "", r.get("name")) in ours for r in listed):
                return True
        elif subject.home is not None and _deploys_into(app, subject.home):
            return True
    return False


def _deploys_into(app: JSON, namespace: str) -> bool:
    destination = (app.get("spec") or {}).get("destination") or {}
    name, server = destination.get("name"), destination.get("server")
    here = name == "in-cluster" if name else server in _IN_CLUSTER  # another cluster's is not ours
    return here and destination.get("namespace") == namespace


async def _hpa(subject: Subject) -> bool | None:
    if subject.is_kind("HorizontalPodAutoscaler"):
        return True
    if not subject.read:
        return None
    owners = {(obj.get("kind"), (obj.get("metadata") or {}).get("name")) for obj in subject.chain}
    if not any(kind in kind_table.OWNER_KINDS for kind, _ in owners):
        return False
    hpas = await subject.listed("HorizontalPodAutoscaler")
    if hpas is None:
        return None
    refs = [(hpa.get("spec") or {}).get("scaleTargetRef") or {} for hpa in hpas]
    return any((ref.get("kind"), ref.get("name")) in owners for ref in refs)


async def _pdb(subject: Subject) -> bool | None:
    if subject.is_kind("PodDisruptionBudget"):
        return True
    if not subject.read:
        return None
    template = subject.template
    if template is None:
        return False
    pdbs = await subject.listed("PodDisruptionBudget")
    if pdbs is None:
        return None
    labels = (template.get("metadata") or {}).get("labels") or {}
    return any(selects((pdb.get("spec") or {}).get("selector"), labels) for pdb in pdbs)


async def _stateful(subject: Subject) -> bool | None:
    if subject.is_kind("StatefulSet") or subject.is_kind("PersistentVolumeClaim"):
        return True
    if not subject.read:
        return None
    if any(obj.get("kind") in ("StatefulSet", "PersistentVolumeClaim") for obj in subject.chain):
        return True
    volumes = ((subject.template or {}).get("spec") or {}).get("volumes") or ()
    return any(volume.get("persistentVolumeClaim") for volume in volumes)


async def _network(subject: Subject) -> bool | None:
    if subject.is_kind("NetworkPolicy"):
        return True
    if not subject.read:
        return None
    policies = await subject.listed("NetworkPolicy")
    return None if policies is None else bool(policies)


async def _mesh(subject: Subject) -> str | None:
    group = (subject.target.api_version or "").split("/")[0]
    for suffix, mesh in _MESH_GROUPS.items():
        if group.endswith(suffix):
            return mesh
    template_meta = (subject.template or {}).get("metadata") or {}
    markers = {
        **subject.namespace_markers(),
        **subject.markers(),
        **(template_meta.get("annotations") or {}),
    }
    if (
        markers.get("sidecar.istio.io/inject") == "true"
        or "sidecar.istio.io/status" in markers
        or markers.get("istio-injection") == "enabled"
        or "istio.io/rev" in markers
    ):
        return "istio"
    if markers.get("linkerd.io/inject") == "enabled" or "linkerd.io/proxy-version" in markers:
        return "linkerd"
    return None


#: The one table: ``TargetFacts`` field → rule.
RULES: dict[str, FactRule] = {
    "helm_managed": _helm,
    "gitops_tool": _gitops_tool,
    "hpa_enabled": _hpa,
    "pdb_protected": _pdb,
    "stateful": _stateful,
    "network_isolated": _network,
    "service_mesh": _mesh,
}


async def detect(
    reader: readers.ClusterReader | None,
    target: scope.ObjectRef,
    *,
    workload: scope.ObjectRef | None = None,
) -> catalog.TargetFacts:
    """The facts on ``target``; with ``workload`` (the incident's), a target that runs no Pods also
    takes what is detected on that workload. All unknown without a reader."""
    if reader is None:
        return catalog.TargetFacts()
    subject = await _subject(reader, target)
    own = await _evaluate(subject)
    if workload is None or workload.key == target.key or own[_RUNS_PODS]:
        return _facts(own)
    theirs = await _evaluate(await _subject(reader, workload, beside=subject))
    return _facts({field: _either(own.get(field), theirs.get(field)) for field in RULES})


async def _subject(
    reader: readers.ClusterReader, target: scope.ObjectRef, *, beside: Subject | None = None
) -> Subject:
    """What the rules look at for ``target``; the Namespace and the namespace's lists already read for
    a subject ``beside`` it in the same namespace are not read again."""
    chain = await owner_chain(reader, target)
    home = target.name if target.kind == "Namespace" else target.namespace
    if beside is not None and home and beside.home == home:
        return Subject(
            target=target, chain=chain, namespace=beside.namespace, reader=reader, _lists=beside._lists
        )
    namespace = None
    if home:
        namespace = (
            chain[0]
            if target.kind == "Namespace" and chain
            else await read(reader, scope.ObjectRef(kind="Namespace", name=home))
        )
    return Subject(target=target, chain=chain, namespace=namespace, reader=reader)


async def _evaluate(subject: Subject) -> dict[str, bool | str | None]:
    found = {field: await rule(subject) for field, rule in RULES.items()}
    found[_RUNS_PODS] = subject.template is not None
    return found


_RUNS_PODS = "_runs_pods"


def _either(mine: bool | str | None, theirs: bool | str | None) -> bool | str | None:
    """True (or a tool name) from either side wins; else a known negative; else unknown."""
    if mine:
        return mine
    if theirs:
        return theirs
    return mine if mine is not None else theirs


def _facts(found: Mapping[str, bool | str | None]) -> catalog.TargetFacts:
    tool = found.get("gitops_tool")
    mesh = found.get("service_mesh")
    return catalog.TargetFacts(
        helm_managed=_flag(found.get("helm_managed")),
        gitops_managed=None if tool is None else bool(tool),
        gitops_tool=str(tool) if tool else None,
        hpa_enabled=_flag(found.get("hpa_enabled")),
        pdb_protected=_flag(found.get("pdb_protected")),
        stateful=_flag(found.get("stateful")),
        network_isolated=_flag(found.get("network_isolated")),
        service_mesh=str(mesh) if mesh else None,
    )


def _flag(value: bool | str | None) -> bool | None:
    return None if value is None else bool(value)


def _tool(markers: Mapping[str, str], *, argo: Sequence[str], flux: Sequence[str]) -> str | None:
    if any(key in markers for key in argo):
        return "argocd"
    if any(key in markers for key in flux) or any(key.startswith(_FLUX_PREFIXES) for key in markers):
        return "flux"
    return None


# ---- reads shared with the scope -----------------------------------------------------------------


async def read(reader: readers.ClusterReader, ref: scope.ObjectRef) -> readers.JSONObject | None:
    if ref.kind not in kind_table.BY_KIND:
        return None
    try:
        return await reader.get_object(kind=ref.kind, name=ref.name, namespace=ref.namespace)
    except (readers.Unavailable, errors.ClusterError):
        return None


async def owner_chain(reader: readers.ClusterReader, start: scope.ObjectRef) -> list[readers.JSONObject]:
    """``start`` and the controllers above it (Pod → ReplicaSet → Deployment…), as read (the one
    owner-chain walk, ``kube.owners``)."""

    async def get(ref: owners.Owner) -> readers.JSONObject | None:
        return await read(reader, _object_ref(ref))

    first = owners.Owner(
        kind=start.kind, name=start.name, namespace=start.namespace, api_version=start.api_version
    )
    chain = await owners.walk(first, read=get, max_depth=MAX_OWNER_DEPTH)
    return [dict(obj) for _, obj in chain if obj is not None]


def owner_refs(obj: Mapping[str, Any]) -> list[scope.ObjectRef]:
    """Owners, the controlling one first; owners share the object's namespace."""
    return [_object_ref(owner) for owner in owners.owners_of(obj)]


def _object_ref(owner: owners.Owner) -> scope.ObjectRef:
    return scope.ObjectRef(
        kind=owner.kind, name=owner.name, namespace=owner.namespace, api_version=owner.api_version
    )


def pod_template(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The Pod (template) an object runs: the Pod itself, ``spec.template``, or a CronJob's."""
    spec = obj.get("spec") or {}
    if obj.get("kind") == "Pod":
        return {"metadata": obj.get("metadata") or {}, "spec": spec}
    if obj.get("kind") == "CronJob":
        found = ((spec.get("jobTemplate") or {}).get("spec") or {}).get("template")
        return found if isinstance(found, dict) else None
    template = spec.get("template")
    return template if isinstance(template, dict) and obj.get("kind") in _TEMPLATED else None


_TEMPLATED = frozenset((*kind_table.OWNER_KINDS, "Pod", "ReplicaSet"))


async def list_in(reader: readers.ClusterReader, kind: str, namespace: str | None) -> list[JSON] | None:
    """Every ``kind`` in ``namespace``; None when it cannot be listed."""
    if namespace is None or kind not in kind_table.BY_KIND:
        return None
    try:
        return list(await reader.list_objects(kind=kind, namespace=namespace))
    except (readers.Unavailable, errors.ClusterError):
        return None


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
