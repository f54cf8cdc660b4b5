"""Small state records kept in a ConfigMap of the operator's namespace (the LLM budget's spending),
so that what one process counted survives its restart and a failover to another replica.

A record is read with its resourceVersion and written only if it is still at that version (a
stale write is refused by the API server with 409, reported as :attr:`Saved.CONFLICT`: read
again, merge, write again). Only ``data`` is read or written; nothing else in the namespace."""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

from aianalysis.kube import errors as kube_errors
from aianalysis.kube import rest

REQUEST_TIMEOUT_SECONDS = 5.0


@dataclasses.dataclass(frozen=True, kw_only=True)
class Record:
    data: dict[str, str]
    resource_version: str | None
    """The version read (None: there is no record yet; writing creates it)."""


class Saved(enum.Enum):
    OK = "ok"
    CONFLICT = "conflict"


def _path(namespace: str, name: str | None = None) -> str:
    return rest.path("api", "v1", "namespaces", namespace, "configmaps", *([name] if name else []))


async def read(api: rest.ApiClient, *, namespace: str, name: str) -> Record:
    """The record as the API server has it (empty, without a version, when there is none)."""
    found: Any = await kube_errors.call(
        f"reading ConfigMap {namespace}/{name}",
        rest.get_json,
        api,
        _path(namespace, name),
        timeout=REQUEST_TIMEOUT_SECONDS,
        none_on=kube_errors.NOT_FOUND,
    )
    if found is None:
        return Record(data={}, resource_version=None)
    meta = found.get("metadata") or {}
    return Record(data=dict(found.get("data") or {}), resource_version=meta.get("resourceVersion"))


async def write(
    api: rest.ApiClient,
    *,
    namespace: str,
    name: str,
    data: dict[str, str],
    at: Record,
    labels: dict[str, str],
) -> Saved:
    """``data`` as the record, if the record is still as read in ``at`` (created when ``at`` had
    none); :attr:`Saved.CONFLICT` when another writer came first."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels}
    if at.resource_version is not None:
        metadata["resourceVersion"] = at.resource_version  # the API server refuses a stale replace
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}
    creating = at.resource_version is None
    done = await kube_errors.call(
        f"writing ConfigMap {namespace}/{name}",
        rest.send_json,
        api,
        "POST" if creating else "PUT",
        _path(namespace) if creating else _path(namespace, name),
        body,
        timeout=REQUEST_TIMEOUT_SECONDS,
        none_on=kube_errors.CONFLICT,
    )
    return Saved.OK if done is not None else Saved.CONFLICT
