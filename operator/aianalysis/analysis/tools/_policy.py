"""What the investigation tools may read beyond the fixed kinds: which namespaces, which custom
resource groups. Both come from settings; neither is the LLM's choice.

- Namespaces: the incident's, plus ``investigation_namespaces`` (``*`` = every namespace).
- Cluster-scoped objects (:class:`ClusterReach`): only those the incident concerns — a Namespace
  readable above, what the scope found around the incident before the conversation (the incident
  itself, its Pods' Nodes, a ClusterIssuer its Certificates name...), and what an object of the
  incident's namespace (or an admitted cluster-scoped one) the tools returned references
  (``{kind, name}`` references, a Pod's ``nodeName``, a claim's ``volumeName``, ``storageClassName``,
  ``priorityClassName``, ``ingressClassName``...). Another tenant's Namespace labels or a PV nothing
  of the incident leads to are not the analysis' business. ``*`` lifts this too.
- Custom resources: kinds the API server serves (discovery) in an allowlisted API group
  (``investigation_custom_groups``; ``*.toolkit.fluxcd.io`` matches every Flux group), never a
  kind whose name says it holds secrets (``ExternalSecret``, ``SealedSecret``...).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from collections.abc import Iterator, Mapping
from typing import Any

from aianalysis import settings

SECRET_KIND = re.compile(r"secret|credential|token|password", re.IGNORECASE)


class Denied(Exception):
    """A read the policy does not allow; the message says what is allowed."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReadPolicy:
    incident_namespace: str | None
    namespaces: tuple[str, ...] = ()
    """Namespaces readable besides the incident's; ``("*",)`` = all."""
    custom_groups: tuple[str, ...] = settings.DEFAULT_CUSTOM_GROUPS

    @property
    def every_namespace(self) -> bool:
        return "*" in self.namespaces

    def allowed_namespaces(self) -> list[str]:
        """The namespaces one may search (without ``*``)."""
        found = [self.incident_namespace] if self.incident_namespace else []
        return [*found, *(n for n in self.namespaces if n != "*" and n not in found)]

    def check_namespace(self, namespace: str) -> None:
        if self.every_namespace or namespace in self.allowed_namespaces():
            return
        allowed = ", ".join(self.allowed_namespaces()) or "none"
        raise Denied(
            f"namespace {namespace!r} is outside what this analysis may read (allowed: {allowed}; "
            "the operator's investigation_namespaces setting widens it)"
        )

    def group_allowed(self, group: str) -> bool:
        return any(fnmatch.fnmatchcase(group, pattern) for pattern in self.custom_groups)


FIELD_KINDS: Mapping[str, str] = {
    "nodeName": "Node",
    "volumeName": "PersistentVolume",
    "persistentVolumeName": "PersistentVolume",
    "storageClassName": "StorageClass",
    "ingressClassName": "IngressClass",
    "priorityClassName": "PriorityClass",
    "runtimeClassName": "RuntimeClass",
}
"""Spec fields that name a cluster-scoped object by name alone (the kind is the field's)."""
MAX_NODES = 2000


def named_references(
    obj: Mapping[str, Any], *, fields: Mapping[str, str] = FIELD_KINDS
) -> Iterator[tuple[str, str]]:
    """Every (kind, name) an object's spec names: ``{kind, name}`` pairs (``issuerRef``, ``roleRef``,
    ``claimRef``...) and the ``fields`` that name an object alone (:data:`FIELD_KINDS`), in Pod
    templates too; bounded in the nodes visited."""
    stack: list[Any] = [obj.get("spec")]
    visited = 0
    while stack and visited < MAX_NODES:
        node = stack.pop()
        visited += 1
        if isinstance(node, Mapping):
            kind, name = node.get("kind"), node.get("name")
            if isinstance(kind, str) and isinstance(name, str) and kind and name:
                yield kind, name
            for key, value in node.items():
                if key in fields and isinstance(value, str) and value:
                    yield fields[key], value
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


@dataclasses.dataclass(kw_only=True)
class ClusterReach:
    """Which cluster-scoped objects one conversation may read (see the module rules)."""

    policy: ReadPolicy
    gathered: frozenset[tuple[str, str]] = frozenset()
    """(kind casefolded, name) of the cluster-scoped objects the scope found around the incident."""
    referenced: set[tuple[str, str]] = dataclasses.field(default_factory=set)
    """(kind casefolded, name) named by the objects the tools returned (home namespace or admitted)."""
    every_node: bool = False
    """A Pod of the incident's namespace the tools returned is not scheduled: where it could run is
    the question, so every Node concerns it (Nodes are shared infrastructure, not a tenant's)."""

    def admits(self, kind: str, name: str, obj: Mapping[str, Any] | None = None) -> bool:
        """Whether the cluster-scoped object may be shown. Names alone can be written by the tenant
        (a claim may name any volumeName), so once read (``obj``) the object must agree: a
        PersistentVolume must be bound to a claim of a readable namespace; a VolumeAttachment is
        admitted with the PersistentVolume it attaches. A Namespace only by the read policy."""
        if self.policy.every_namespace:
            return True
        key = (kind.casefold(), name)
        if key[0] == "namespace":
            return name in self.policy.allowed_namespaces() or key in self.gathered
        spec: Mapping[str, Any] = (obj or {}).get("spec") or {}
        if key[0] == "volumeattachment":
            source = (spec.get("source") or {}).get("persistentVolumeName")
            return obj is not None and isinstance(source, str) and self.admits("PersistentVolume", source)
        if key[0] == "node" and self.every_node:
            return True
        if key not in self.gathered and key not in self.referenced:
            return False
        if key[0] == "persistentvolume" and obj is not None:
            claim = spec.get("claimRef") or {}
            return claim.get("namespace") in self.policy.allowed_namespaces()
        return True

    def candidates(self, kind: str) -> list[str] | None:
        """The names of ``kind`` this conversation may be shown, when they can be told in advance
        (None: every object is a candidate — the read policy's ``*``, every Node for an unscheduled
        Pod, VolumeAttachments by the volume they attach). A list asks for these by name: a page of
        the whole cluster filtered afterwards could miss them among other tenants' objects."""
        folded = kind.casefold()
        if (
            self.policy.every_namespace
            or folded == "volumeattachment"
            or (folded == "node" and self.every_node)
        ):
            return None
        names = {name for k, name in (*self.gathered, *self.referenced) if k == folded}
        if folded == "namespace":
            names.update(self.policy.allowed_namespaces())
        return sorted(names)

    def check(self, kind: str, name: str, obj: Mapping[str, Any] | None = None) -> None:
        if not self.admits(kind, name, obj):
            raise Denied(
                f"{kind} {name} is cluster-scoped and does not concern this incident: only its own "
                "Namespace, the Nodes its Pods run on, the PersistentVolumes bound to its claims and "
                "what the objects of its namespace you read name (a Pod's nodeName, a claim's volumeName, "
                "an issuerRef...) are readable — read the object that references it first"
            )

    def note(self, obj: Mapping[str, Any]) -> None:
        """Remember what a returned object (of the home namespace, or admitted) names."""
        self.referenced.update((kind.casefold(), name) for kind, name in named_references(obj))
        spec = obj.get("spec") or {}
        if isinstance(spec, Mapping) and spec.get("containers") and not spec.get("nodeName"):
            self.every_node = True  # an unscheduled Pod
