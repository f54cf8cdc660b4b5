"""Read-only looks at a remediation target for the effectiveness assessment (and the executor's
baseline and guards before it, the analysis' history after): the object itself, its Pods, the
executions, and the API server's clock. Nothing here writes."""

from __future__ import annotations

import asyncio
import datetime
import email.utils
import json
from typing import Any

from aianalysis import errors, resources
from aianalysis.kube import api_reader, calls, readers, rest

#: Kinds whose health is the health of their Pods.
POD_OWNERS = frozenset({"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"})
TIMEOUT_SECONDS = 15.0


async def current(
    api: rest.ApiClient, *, kind: str, name: str, namespace: str | None
) -> dict[str, Any] | None:
    """The target as the API server has it; None when it does not exist. A kind the reader cannot
    read (or may not) raises :class:`readers.Unavailable`."""
    try:
        return await api_reader.KubernetesReader(api).get_object(kind=kind, name=name, namespace=namespace)
    except readers.NotFound:
        return None


async def pods_of(
    api: rest.ApiClient, *, kind: str, name: str, namespace: str | None
) -> list[dict[str, Any]] | None:
    """The Pods whose health is the target's (a Pod: itself); None for kinds that run no Pods."""
    if namespace is None:
        return None
    if kind == "Pod":
        pod = await current(api, kind="Pod", name=name, namespace=namespace)
        return [pod] if pod is not None else []
    if kind not in POD_OWNERS:
        return None
    try:
        return await api_reader.KubernetesReader(api).list_pods_of_owner(
            kind=kind, name=name, namespace=namespace
        )
    except readers.NotFound:
        return []


async def executions(api: rest.ApiClient, *, namespace: str | None) -> list[dict[str, Any]]:
    """WorkflowExecutions of one namespace, or of all (``namespace`` None)."""
    G, V, P = resources.GROUP, resources.VERSION, resources.WORKFLOWEXECUTION_PLURAL
    url_path = (
        rest.path("apis", G, V, P)
        if namespace is None
        else rest.path("apis", G, V, "namespaces", namespace, P)
    )

    def call() -> bytes:
        try:
            return rest.get_bytes(api, url_path, timeout=TIMEOUT_SECONDS)
        except rest.ApiError as exc:
            raise errors.ClusterError(
                f"listing workflowexecutions: {exc.status} {exc.reason}", status=exc.status
            ) from exc
        except calls.UNREACHABLE as exc:
            raise errors.ClusterError(
                f"listing workflowexecutions: unreachable ({type(exc).__name__})"
            ) from exc

    found = json.loads(await asyncio.to_thread(call))
    return list(found.get("items") or [])


async def server_time(api: rest.ApiClient) -> datetime.datetime:
    """The API server's clock (the ``Date`` header of a cheap request; one-second resolution)."""

    def call() -> str:
        try:
            response = rest.request(api, "GET", "/version", timeout=TIMEOUT_SECONDS)
        except (rest.ApiError, *calls.UNREACHABLE) as exc:
            raise errors.ClusterError(f"reading the API server's clock: {type(exc).__name__}") from exc
        return str(response.headers.get("Date") or "")

    stamp = await asyncio.to_thread(call)
    try:
        return email.utils.parsedate_to_datetime(stamp).astimezone(datetime.UTC)
    except (TypeError, ValueError) as exc:
        raise errors.ClusterError(f"the API server sent no usable Date header ({stamp!r})") from exc
