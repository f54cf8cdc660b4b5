"""What the intake reads from the cluster: the workload that owns an alert's Pod (a Pod of a
Deployment → the Deployment, through its ReplicaSet) and the business context from the namespace's
labels and annotations (``catalog.business``; ``kubernaut.io/*`` and ``kubernaut.ai/*`` by default).
Read-only (Pods, ReplicaSets, Jobs, Deployments, StatefulSets, DaemonSets, Namespaces; never
Secrets), cached for a short time because a storm asks the same questions a thousand times; the
caches are LRU-bounded (``MAX_CACHED``), since their keys come from alerts.

A Pod that no longer exists (replaced, evicted, its alert late) still resolves to its workload, so
its alerts deduplicate onto the workload's incident instead of opening one paid analysis per Pod
name: first from the alert's owner labels (kube-state-metrics' ``owner_kind``/``owner_name`` and
``created_by_kind``/``created_by_name``), then from the shape of the Pod's name (``<replicaset>-<5>``,
``<deployment>-<hash>-<5>``, ``<statefulset>-<ordinal>``, ``<daemonset or job>-<5>``). Neither is
trusted as text: a candidate counts only if an object of that kind and name exists in the Pod's
namespace (read from the API server), and its own owners are then followed as for a live Pod. A
gone Pod that resolves to nothing (a bare Pod, its owner deleted too, or a made-up name) becomes an
incident about its **Namespace** (as an alert aggregated by namespace does; off with the mapping's
``namespaceIncidents: false``), so invented or recycled Pod names cannot open one paid analysis
each."""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable, Mapping
from typing import Any

from aianalysis import errors, kube, metrics, resources
from aianalysis.catalog import business
from aianalysis.intake import mapping
from aianalysis.kit import lru
from aianalysis.kube import api_reader, owners, readers

CACHE_SECONDS = 30.0
MAX_CACHED = 4096
"""Entries per cache (owners, namespaces): the least recently used one leaves first."""
MAX_OWNER_DEPTH = 4
#: Kinds whose controller owner we follow.
_FOLLOWED = frozenset({"Pod", "ReplicaSet", "Job"})
#: Kinds a gone Pod may be attributed to (each must exist to count).
_POD_OWNERS = frozenset({"ReplicaSet", "Deployment", "StatefulSet", "DaemonSet", "Job"})
#: Owner labels of kube-state-metrics (``kube_pod_owner``, ``kube_pod_info``), kind label first.
_OWNER_LABELS = (("owner_kind", "owner_name"), ("created_by_kind", "created_by_name"))
#: The random suffixes Kubernetes generates (names, pod-template-hash) use this alphabet.
_GEN = "[bcdfghjklmnpqrstvwxz2456789]"
_NAME_SHAPES: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = (
    (re.compile(rf"^(.+)-{_GEN}{{5}}$"), ("ReplicaSet", "DaemonSet", "Job")),
    (re.compile(rf"^(.+)-{_GEN}{{6,10}}-{_GEN}{{5}}$"), ("Deployment",)),
    (re.compile(r"^(.+)-(?:0|[1-9][0-9]{0,5})$"), ("StatefulSet",)),
)


class NamespaceMissingError(errors.AIAnalysisError):
    reason = "NamespaceNotFound"


@dataclasses.dataclass
class _Cached:
    value: Any
    until: float


class Resolver:
    def __init__(
        self,
        api: kube.ApiClient | None = None,
        *,
        cluster_reader: readers.ClusterReader | None = None,
        clock: Callable[[], float] = time.monotonic,
        prefixes: tuple[str, ...] = business.DEFAULT_PREFIXES,
        orphans_to_namespace: bool = True,
    ) -> None:
        """Reads through ``api``, or ``cluster_reader`` (any read-only reader answering a missing
        object with a 404 as the API server does: the Kubernaut replay serves scenarios from memory)."""
        if cluster_reader is None:
            if api is None:
                raise TypeError("Resolver needs an api client or a cluster reader")
            cluster_reader = api_reader.KubernetesReader(api)
        self._reader = cluster_reader
        self._orphans_to_namespace = orphans_to_namespace
        self._prefixes = prefixes
        self._clock = clock
        self._owners: lru.LRU[tuple[str, str, str], _Cached] = lru.LRU(
            MAX_CACHED, on_evict=metrics.CACHE_EVICTIONS.labels(cache="intake_owners").inc
        )
        self._namespaces: lru.LRU[str, _Cached] = lru.LRU(
            MAX_CACHED, on_evict=metrics.CACHE_EVICTIONS.labels(cache="intake_namespaces").inc
        )

    @property
    def sizes(self) -> dict[str, int]:
        """How many entries the caches hold (tests, debugging)."""
        return {"owners": len(self._owners), "namespaces": len(self._namespaces)}

    async def workload(
        self, target: mapping.Target, labels: Mapping[str, str] | None = None
    ) -> mapping.Target:
        """The top controller owner of ``target`` (itself when it has none or cannot be read); a
        Pod that is gone resolves through an existing owner named by ``labels`` (the alert's) or by
        its name's shape."""
        if target.namespace is None or target.kind not in _FOLLOWED:
            return target
        key = (target.namespace, target.kind, target.name)
        hit = self._owners.get(key)
        if hit is not None and hit.until > self._clock():
            found: mapping.Target = hit.value
            return found
        start = owners.Owner(kind=target.kind, name=target.name, namespace=target.namespace)
        chain = await owners.walk(start, read=self._read, max_depth=MAX_OWNER_DEPTH + 1, controller_only=True)
        if target.kind == "Pod" and len(chain) == 1 and chain[0][1] is None:
            owner = await self._owner_of_gone_pod(target.name, target.namespace, labels or {})
            if owner is not None:
                chain = await owners.walk(
                    owner, read=self._read, max_depth=MAX_OWNER_DEPTH, controller_only=True
                )
            elif self._orphans_to_namespace:
                orphan = mapping.Target(kind="Namespace", name=target.namespace, namespace=target.namespace)
                self._owners[key] = _Cached(orphan, self._clock() + CACHE_SECONDS)
                return orphan
        top = chain[-1][0]
        resolved = mapping.Target(kind=top.kind, name=top.name, namespace=target.namespace)
        self._owners[key] = _Cached(resolved, self._clock() + CACHE_SECONDS)
        return resolved

    async def _owner_of_gone_pod(
        self, pod: str, namespace: str, labels: Mapping[str, str]
    ) -> owners.Owner | None:
        """The first candidate that exists: the alert's owner labels, then the name's shapes."""
        candidates: list[tuple[str, str]] = []
        for kind_label, name_label in _OWNER_LABELS:
            kind, name = labels.get(kind_label, ""), labels.get(name_label, "")
            if kind in _POD_OWNERS and name and name != "<none>":
                candidates.append((kind, name))
        for shape, kinds in _NAME_SHAPES:
            match = shape.match(pod)
            if match:
                candidates.extend((kind, match.group(1)) for kind in kinds)
        for kind, name in dict.fromkeys(candidates):
            if await self._exists(kind, name, namespace):
                return owners.Owner(kind=kind, name=name, namespace=namespace)
        return None

    async def _exists(self, kind: str, name: str, namespace: str) -> bool:
        if len(name) > 253:
            return False
        try:
            await self._reader.get_object(kind=kind, name=name, namespace=namespace)
        except readers.Unavailable as exc:
            if exc.status in (403, 404, 422):
                return False
            raise errors.ClusterError(f"reading {kind} {name}: {exc}") from exc
        return True

    async def business_context(
        self, namespace: str, defaults: mapping.BusinessDefaults
    ) -> resources.BusinessContext:
        """From the namespace's labels and annotations, else the defaults; raises
        :class:`NamespaceMissingError`."""
        hit = self._namespaces.get(namespace)
        if hit is None or hit.until <= self._clock():
            labels = await self._namespace_labels(namespace)
            hit = _Cached(labels, self._clock() + CACHE_SECONDS)
            self._namespaces[namespace] = hit
        if hit.value is None:
            raise NamespaceMissingError(f"namespace {namespace} does not exist")
        labels, annotations = hit.value
        derived = business.from_metadata(labels, annotations, prefixes=self._prefixes)
        values = {**defaults.model_dump(exclude_none=True), **derived.values}
        try:
            return resources.BusinessContext.model_validate(values)
        except ValueError:
            # A namespace label outside the vocabulary (priority "high", tolerance "yolo"): the
            # conservative defaults win rather than the alert being lost.
            return resources.BusinessContext.model_validate(defaults.model_dump())

    async def _read(self, ref: owners.Owner) -> Mapping[str, Any] | None:
        """An object whose controller we follow; None for other kinds, or when absent or forbidden."""
        if ref.kind not in _FOLLOWED or ref.namespace is None:
            return None
        try:
            return await self._reader.get_object(kind=ref.kind, name=ref.name, namespace=ref.namespace)
        except readers.Unavailable as exc:
            if exc.status in (403, 404):
                return None
            raise errors.ClusterError(f"reading {ref.kind} {ref.name}: {exc}") from exc

    async def _namespace_labels(self, namespace: str) -> tuple[dict[str, str], dict[str, str]] | None:
        try:
            found = await self._reader.get_object(kind="Namespace", name=namespace, namespace=None)
        except readers.Unavailable as exc:
            if exc.status == 404:
                return None
            raise errors.ClusterError(f"reading namespace {namespace}: {exc}") from exc
        meta = found.get("metadata") or {}
        return dict(meta.get("labels") or {}), dict(meta.get("annotations") or {})
