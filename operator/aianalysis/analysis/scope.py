"""The remediation target of one analysis and what it may be (docs/architecture.md §4).

Pure: the analysis gathers the facts (``tools.gather_scope`` reads the incident's owner chain,
the Nodes its Pods run on and the PVCs they mount, once per analysis) and this module decides.

- **One target per analysis**: the answer's ``affected_resource``, else the incident's resource.
  An ``affected_resource`` whose kind or name is a placeholder (``Unknown``, ``unknown``, ``none``,
  ``n/a``) names nothing: the answer left the target unknown.
- **Inferred when left unknown**: when the answer names no target and the workflow's
  ``labels.component`` does not admit the incident's kind, the target is the one object of a kind
  the workflow acts on that the incident concerns (``tools.infer_target`` reads them: the objects
  around the incident, ``related``; for an incident about a whole Namespace, that namespace's
  objects of those kinds). Exactly one, read from the API server, still checked by the rules below;
  none or several and the answer stays refused (``component_mismatch``): which one to change is
  the answer's to say, not the operator's to guess.
  Its kind is canonicalised through the known-kinds table (``deployment`` → ``Deployment``), a
  missing namespace of a namespaced kind is the incident's, a namespace given for a
  cluster-scoped kind is ignored, and a missing apiVersion comes from the table.
- **In scope**: the incident's resource; what the cluster shows it concerns (``related``, gathered
  by ``tools.gather_scope``: its owner chain both ways, its Pods' Nodes, what its Pods reference —
  ConfigMaps, Secrets by name, PVCs, the ServiceAccount and its RoleBindings, the Certificates that
  issue those Secrets — what selects or scales them — Services, NetworkPolicies, PDBs, HPAs — and
  what the incident's object and those Certificates reference: a ClusterIssuer the scope read
  itself, whether or not the conversation did); an object in the incident's namespace the
  investigation tools returned in this conversation; a cluster-scoped object the tools returned
  that an object of the incident's namespace the tools returned references (a Certificate's
  ``issuerRef`` → its ClusterIssuer; any ``{kind, name}`` reference counts, see
  ``reference_key``). Never a namespaced object outside the incident's namespace, whatever the
  tools returned: an instruction injected into an alert cannot widen the blast radius to another
  tenant. Nor a cluster-scoped object nothing in the namespace leads to (a Node the incident's
  Pods do not run on).
- **Without a cluster** (``analyze``, ``eval`` without objects) nothing can be checked, so the
  incident's resource and objects in its namespace are in scope, and nothing cluster-scoped is.
- An unknown kind without a namespace counts as cluster-scoped (fail closed: only the incident's
  resource or an object a tool returned can then be in scope).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Set

from aianalysis import resources


def namespace_of(*, kind: str, name: str, namespace: str | None) -> str | None:
    """The namespace an object belongs to, for every namespace gate (an analysis' own namespace,
    the cross-namespace pairs, the executor, the intake, the approval policy): a namespaced object's
    namespace, a Namespace itself — never "the analysis' own" because its ``namespace`` field says
    so; None for any other cluster-scoped object (it belongs to the cluster)."""
    if kind.strip().casefold() == "namespace":
        return name
    return namespace or None


def foreign_namespace(
    home: str, *, kind: str, name: str, namespace: str | None, allowed: Set[tuple[str, str]] = frozenset()
) -> str | None:
    """The other namespace an object concerns when something in ``home`` may not concern it: not
    ``home`` and no allowed (home, other) pair (``AIANALYSIS_CROSS_NAMESPACE``). None when it may."""
    other = namespace_of(kind=kind, name=name, namespace=namespace)
    if other is None or other == home or (home, other) in allowed or (home, "*") in allowed:
        return None
    return other


def own_namespace(
    spec: resources.AIAnalysisSpec, *, namespace: str, allowed: Set[tuple[str, str]] = frozenset()
) -> resources.AIAnalysisSpec | str:
    """The spec whose incident namespace is the AIAnalysis' own ``namespace`` (what a user who may
    create an AIAnalysis there may already read), or why not: a resource in (or a Namespace that is)
    another namespace would make the operator read it with its own, wider rights (a confused deputy)
    and its approvers act there, unless the pair (own, other) is allowed by the operator's settings.
    A cluster-scoped resource (a Node) is analysed from the AIAnalysis' namespace."""
    resource = spec.resource
    if resource.kind.strip().casefold() != "namespace" and not resource.namespace:
        return spec.model_copy(update={"resource": resource.model_copy(update={"namespace": namespace})})
    other = foreign_namespace(
        namespace, kind=resource.kind, name=resource.name, namespace=resource.namespace, allowed=allowed
    )
    if other is not None:
        return (
            f"spec.resource {resource.kind} {resource.name} is in namespace {other!r}, not this AIAnalysis' "
            f"namespace {namespace!r}; an analysis may only concern its own namespace "
            "(AIANALYSIS_CROSS_NAMESPACE can allow named pairs)"
        )
    belongs = namespace_of(kind=resource.kind, name=resource.name, namespace=resource.namespace)
    return spec.model_copy(update={"resource": resource.model_copy(update={"namespace": belongs})})


#: (kind, namespace or "", name) — kinds compared case-insensitively.
Key = tuple[str, str, str]
REFERENCE = "->"


def reference_key(kind: str, name: str) -> Key:
    """The key recording, among what the tools returned, that an object of the incident's
    namespace references ``kind``/``name`` (kept apart from the objects themselves)."""
    return (REFERENCE + kind.strip().casefold(), "", name)


_LIKELY = {
    kind: rank
    for rank, kind in enumerate(
        ("deployment", "statefulset", "daemonset", "cronjob", "job", "node", "persistentvolumeclaim")
    )
}


PLACEHOLDERS = frozenset({"unknown", "none", "n/a", "na", "-", "?"})
"""Kinds or names that name nothing (what a model writes when it leaves the target unknown)."""


def names_object(affected: Mapping[str, object] | None) -> bool:
    """Whether an answer's ``affected_resource`` names an object (kind and name, neither a placeholder)."""
    if not affected:
        return False
    kind, name = affected.get("kind"), affected.get("name")
    return all(
        isinstance(value, str) and value.strip() and value.strip().casefold() not in PLACEHOLDERS
        for value in (kind, name)
    )


@dataclasses.dataclass(frozen=True, kw_only=True)
class KindInfo:
    kind: str
    api_version: str
    namespaced: bool


@dataclasses.dataclass(frozen=True, kw_only=True)
class ObjectRef:
    """One Kubernetes object, canonical kind, ``namespace`` None when cluster-scoped."""

    kind: str
    name: str
    namespace: str | None = None
    api_version: str | None = None

    @property
    def key(self) -> Key:
        return (self.kind.casefold(), self.namespace or "", self.name)

    def describe(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where}"

    def field(self, name: str) -> str | None:
        """The value of a target field (``kind``, ``name``, ``namespace``, ``apiVersion``)."""
        values = {
            "kind": self.kind,
            "name": self.name,
            "namespace": self.namespace,
            "apiVersion": self.api_version,
        }
        return values[name]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Scope:
    """Everything the target check needs about one incident.

    ``related`` maps each object found around the incident's resource (owner chain, Nodes, PVCs)
    to its description; ``cluster`` says whether a cluster could be read at all.
    """

    incident: ObjectRef
    cluster: bool
    kinds: Mapping[str, KindInfo] = dataclasses.field(default_factory=dict)
    related: Mapping[Key, str] = dataclasses.field(default_factory=dict)
    workload: ObjectRef | None = None
    """The workload the incident concerns (the top of its owner chain, or what the PDB/HPA/Service
    that is the incident selects); detected facts fall back to it for targets that run no Pods."""
    analysis_namespace: str | None = None
    """The AIAnalysis' own namespace: the home of an incident about a cluster-scoped object (a Node)."""

    @classmethod
    def of(
        cls,
        incident: resources.ResourceRef,
        *,
        cluster: bool,
        kinds: Mapping[str, KindInfo],
        related: Mapping[Key, str] | None = None,
        workload: ObjectRef | None = None,
    ) -> Scope:
        bare = cls(incident=ObjectRef(kind=incident.kind, name=incident.name), cluster=cluster, kinds=kinds)
        resolved = bare.resolve(kind=incident.kind, name=incident.name, namespace=incident.namespace)
        return cls(
            incident=resolved, cluster=cluster, kinds=kinds, related=dict(related or {}), workload=workload,
            analysis_namespace=incident.namespace,
        )  # fmt: skip

    @property
    def home(self) -> str | None:
        """The incident's namespace: its resource's, the Namespace itself when the incident is about
        a namespace (an alert aggregated ``by (namespace)``), else (a Node) the analysis' own."""
        incident = self.incident
        return namespace_of(kind=incident.kind, name=incident.name, namespace=incident.namespace) or (
            self.analysis_namespace
        )

    def kind_info(self, kind: str) -> KindInfo | None:
        return self.kinds.get(kind.strip().casefold())

    def resolve(
        self, *, kind: str, name: str, namespace: str | None = None, api_version: str | None = None
    ) -> ObjectRef:
        """The canonical form of an object named in an answer (see the module rules)."""
        info = self.kind_info(kind)
        if info is None:
            return ObjectRef(
                kind=kind.strip(), name=name, namespace=namespace or None, api_version=api_version
            )
        return ObjectRef(
            kind=info.kind,
            name=name,
            namespace=(namespace or self.home) if info.namespaced else None,
            api_version=api_version or info.api_version,
        )

    def target(self, affected: Mapping[str, object] | None) -> ObjectRef:
        """The analysis's target: ``affected_resource`` (a dict as in the answer) when it names an
        object, else the incident's."""
        if affected is None or not names_object(affected):
            return self.incident
        namespace, api_version = affected.get("namespace"), affected.get("api_version")
        return self.resolve(
            kind=str(affected["kind"]),
            name=str(affected["name"]),
            namespace=namespace if isinstance(namespace, str) else None,
            api_version=api_version if isinstance(api_version, str) else None,
        )

    def namespaced(self, ref: ObjectRef) -> bool:
        info = self.kind_info(ref.kind)
        return info.namespaced if info is not None else ref.namespace is not None

    def violation(self, target: ObjectRef, *, returned: Set[Key]) -> str | None:
        """Why ``target`` is out of scope, or None when it is in scope."""
        home = self.home
        belongs = namespace_of(kind=target.kind, name=target.name, namespace=target.namespace)
        if home is not None and belongs is not None and belongs != home:  # a Namespace belongs to itself
            return f"{target.describe()} is outside the incident's namespace {home!r}"
        if target.key == self.incident.key:
            return None
        if not self.cluster:
            if self.namespaced(target) and home is not None:
                return None
            return (
                f"{target.describe()} cannot be checked without a cluster: only the incident's resource "
                f"and objects in its namespace are in scope"
            )
        if target.key in self.related:
            return None
        if target.key in returned:
            if self.namespaced(target) or home is None:
                return None
            if reference_key(target.kind, target.name) in returned:
                return None
            return (
                f"{target.describe()} is cluster-scoped and nothing returned from the incident's namespace "
                f"{home!r} references it"
            )
        return (
            f"{target.describe()} is not something the incident concerns (its owner chain, its Pods' Nodes, "
            "what they reference or what selects or scales them), nor returned by an investigation tool"
        )

    def in_scope(self, limit: int = 6) -> list[str]:
        """The objects known to be in scope, for error messages: the incident's resource, then the
        likeliest targets (controllers before Nodes and PVCs, ReplicaSets and Pods last)."""
        ranked = sorted(self.related.items(), key=lambda item: _LIKELY.get(item[0][0], len(_LIKELY)))
        return [self.incident.describe(), *(described for _, described in ranked)][:limit]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Inference:
    """The target inferred for an answer that named none (module rules): ``target`` when exactly one
    object of the workflow's kinds (``kinds``) is a candidate, else None with the ``candidates``."""

    kinds: tuple[str, ...]
    candidates: tuple[ObjectRef, ...] = ()

    @property
    def target(self) -> ObjectRef | None:
        return self.candidates[0] if len(self.candidates) == 1 else None

    def describe(self, limit: int = 4) -> str:
        kinds = "/".join(self.kinds) or "-"
        if not self.candidates:
            return f"the incident concerns no {kinds}"
        names = ", ".join(ref.describe() for ref in self.candidates[:limit])
        more = f" and {len(self.candidates) - limit} more" if len(self.candidates) > limit else ""
        return f"the incident concerns {len(self.candidates)} {kinds} objects ({names}{more})"


def kind_table(entries: Mapping[str, tuple[str, bool]]) -> dict[str, KindInfo]:
    """``{"Deployment": ("apps/v1", True), ...}`` → the lookup table ``Scope`` uses."""
    return {
        kind.casefold(): KindInfo(kind=kind, api_version=api_version, namespaced=namespaced)
        for kind, (api_version, namespaced) in entries.items()
    }


__all__ = [
    "PLACEHOLDERS",
    "Inference",
    "Key",
    "KindInfo",
    "ObjectRef",
    "Scope",
    "foreign_namespace",
    "kind_table",
    "names_object",
    "namespace_of",
    "own_namespace",
    "reference_key",
]
