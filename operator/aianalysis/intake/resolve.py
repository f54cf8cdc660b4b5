"""What the intake reads from the cluster: the workload that owns an alert's Pod (a Pod of a
Deployment → the Deployment, through its ReplicaSet) and the business context from the namespace's
labels and annotations (``catalog.business``; ``kubernaut.io/*`` and ``kubernaut.ai/*`` by default).
Read-only (Pods, ReplicaSets, Jobs, Namespaces; never Secrets), cached for a short time because a
storm asks the same questions a thousand times."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from typing import Any

from aianalysis import errors, kube, resources
from aianalysis.catalog import business
from aianalysis.intake import mapping
from aianalysis.kube import api_reader, owners, reader

CACHE_SECONDS = 30.0
MAX_OWNER_DEPTH = 4
#: Kinds whose controller owner we follow.
_FOLLOWED = frozenset({"Pod", "ReplicaSet", "Job"})


class NamespaceMissingError(errors.AIAnalysisError):
    reason = "NamespaceNotFound"


@dataclasses.dataclass
class _Cached:
    value: Any
    until: float


class Resolver:
    def __init__(
        self,
        api: kube.ApiClient,
        *,
        clock: Callable[[], float] = time.monotonic,
        prefixes: tuple[str, ...] = business.DEFAULT_PREFIXES,
    ) -> None:
        self._reader = api_reader.KubernetesReader(api)
        self._prefixes = prefixes
        self._clock = clock
        self._owners: dict[tuple[str, str, str], _Cached] = {}
        self._namespaces: dict[str, _Cached] = {}

    async def workload(self, target: mapping.Target) -> mapping.Target:
        """The top controller owner of ``target`` (itself when it has none or cannot be read)."""
        if target.namespace is None or target.kind not in _FOLLOWED:
            return target
        key = (target.namespace, target.kind, target.name)
        hit = self._owners.get(key)
        if hit is not None and hit.until > self._clock():
            found: mapping.Target = hit.value
            return found
        start = owners.Owner(kind=target.kind, name=target.name, namespace=target.namespace)
        chain = await owners.owner_chain(
            start, read=self._read, max_depth=MAX_OWNER_DEPTH + 1, controller_only=True
        )
        top = chain[-1][0]
        resolved = mapping.Target(kind=top.kind, name=top.name, namespace=target.namespace)
        self._owners[key] = _Cached(resolved, self._clock() + CACHE_SECONDS)
        return resolved

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
        except reader.Unavailable as exc:
            if exc.status in (403, 404):
                return None
            raise errors.ClusterError(f"reading {ref.kind} {ref.name}: {exc}") from exc

    async def _namespace_labels(self, namespace: str) -> tuple[dict[str, str], dict[str, str]] | None:
        try:
            found = await self._reader.get_object(kind="Namespace", name=namespace, namespace=None)
        except reader.Unavailable as exc:
            if exc.status == 404:
                return None
            raise errors.ClusterError(f"reading namespace {namespace}: {exc}") from exc
        meta = found.get("metadata") or {}
        return dict(meta.get("labels") or {}), dict(meta.get("annotations") or {})
