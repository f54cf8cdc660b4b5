"""Raw I/O on the operator's custom objects (AIAnalysis, WorkflowExecution) through the API
server: read, create, write status."""

from __future__ import annotations

import asyncio
from typing import Any

from kubernetes import client as k8s

from aianalysis import errors, resources


async def get_aianalysis(api: k8s.ApiClient, namespace: str, name: str) -> dict[str, Any] | None:
    """The AIAnalysis as the API server has it now; None when there is none under that name."""
    custom = k8s.CustomObjectsApi(api)
    try:
        found: Any = await asyncio.to_thread(
            custom.get_namespaced_custom_object,
            resources.GROUP,
            resources.VERSION,
            namespace,
            resources.AIANALYSIS_PLURAL,
            name,
        )
    except k8s.ApiException as exc:
        if exc.status == 404:
            return None
        raise errors.ClusterError(
            f"reading AIAnalysis {namespace}/{name} failed: {exc.status} {exc.reason}"
        ) from exc
    return dict(found)


async def create_aianalysis(api: k8s.ApiClient, namespace: str, body: dict[str, Any]) -> bool:
    """Creates it; False when it exists already (the name is the idempotency key)."""
    custom = k8s.CustomObjectsApi(api)
    try:
        await asyncio.to_thread(
            custom.create_namespaced_custom_object,
            resources.GROUP,
            resources.VERSION,
            namespace,
            resources.AIANALYSIS_PLURAL,
            body,
        )
    except k8s.ApiException as exc:
        if exc.status == 409:
            return False
        raise errors.ClusterError(f"creating recovery analysis failed: {exc.status} {exc.reason}") from exc
    return True


async def patch_status(
    api: k8s.ApiClient,
    namespace: str,
    plural: str,
    name: str,
    fields: dict[str, Any],
    *,
    resource_version: str | None = None,
) -> bool:
    """Merge-patch the status; with ``resource_version``, only if the object is still at that version
    (False on 409 Conflict)."""
    custom = k8s.CustomObjectsApi(api)
    patch: dict[str, Any] = {"status": fields}
    if resource_version is not None:
        patch["metadata"] = {"resourceVersion": resource_version}
    try:
        await asyncio.to_thread(
            custom.patch_namespaced_custom_object_status,
            resources.GROUP,
            resources.VERSION,
            namespace,
            plural,
            name,
            patch,
        )
    except k8s.ApiException as exc:
        if exc.status == 409 and resource_version is not None:
            return False
        raise errors.ClusterError(
            f"status write of {plural}/{namespace}/{name} failed: {exc.status}"
        ) from exc
    return True
