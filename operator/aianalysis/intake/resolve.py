"""What the intake reads from the cluster: the workload that owns an alert's Pod (a Pod of a
Deployment → the Deployment, through its ReplicaSet) and the business context from the namespace's
labels and annotations (``catalog.business``; ``kubernaut.io/*`` and ``kubernaut.ai/*`` by default).
Read-only (Pods, ReplicaSets, Jobs, Namespaces; never Secrets), cached for a short time because a
storm asks the same questions a thousand times."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client as k8s

from aianalysis import errors, resources
from aianalysis.catalog import business
from aianalysis.intake import mapping

CACHE_SECONDS = 30.0
MAX_OWNER_DEPTH = 4
#: Kinds whose controller owner we follow (and how to read them).
_READERS: dict[str, tuple[str, str]] = {
    "Pod": ("CoreV1Api", "read_namespaced_pod"),
    "ReplicaSet": ("AppsV1Api", "read_namespaced_replica_set"),
    "Job": ("BatchV1Api", "read_namespaced_job"),
}


class NamespaceMissingError(errors.AIAnalysisError):
    reason = "NamespaceNotFound"


@dataclasses.dataclass
class _Cached:
    value: Any
    until: float


class Resolver:
    def __init__(
        self,
        api: k8s.ApiClient,
        *,
        clock: Callable[[], float] = time.monotonic,
        prefixes: tuple[str, ...] = business.DEFAULT_PREFIXES,
    ) -> None:
        self._api = api
        self._prefixes = prefixes
        self._clock = clock
        self._owners: dict[tuple[str, str, str], _Cached] = {}
        self._namespaces: dict[str, _Cached] = {}

    async def workload(self, target: mapping.Target) -> mapping.Target:
        """The top controller owner of ``target`` (itself when it has none or cannot be read)."""
        if target.namespace is None or target.kind not in _READERS:
            return target
        key = (target.namespace, target.kind, target.name)
        hit = self._owners.get(key)
        if hit is not None and hit.until > self._clock():
            found: mapping.Target = hit.value
            return found
        resolved = target
        for _ in range(MAX_OWNER_DEPTH):
            owner = await self._controller_of(resolved)
            if owner is None:
                break
            resolved = owner
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

    async def _controller_of(self, target: mapping.Target) -> mapping.Target | None:
        reader = _READERS.get(target.kind)
        if reader is None or target.namespace is None:
            return None
        api_class, method = reader
        api = getattr(k8s, api_class)(self._api)
        try:
            # Raw JSON: only the owner references are needed, and building the client's typed Pod
            # model costs more CPU than the request itself (a storm asks this a hundred times).
            raw = await asyncio.to_thread(
                getattr(api, method), target.name, target.namespace, _preload_content=False
            )
        except k8s.ApiException as exc:
            if exc.status in (403, 404):
                return None
            raise errors.ClusterError(f"reading {target.kind} {target.name}: {exc.status}") from exc
        meta = json.loads(raw.data).get("metadata") or {}
        for ref in meta.get("ownerReferences") or []:
            if ref.get("controller") and ref.get("kind") and ref.get("name"):
                return mapping.Target(kind=ref["kind"], name=ref["name"], namespace=target.namespace)
        return None

    async def _namespace_labels(self, namespace: str) -> tuple[dict[str, str], dict[str, str]] | None:
        try:
            ns = await asyncio.to_thread(k8s.CoreV1Api(self._api).read_namespace, namespace)
        except k8s.ApiException as exc:
            if exc.status == 404:
                return None
            raise errors.ClusterError(f"reading namespace {namespace}: {exc.status}") from exc
        meta = ns.metadata
        return dict((meta.labels if meta else None) or {}), dict((meta.annotations if meta else None) or {})
