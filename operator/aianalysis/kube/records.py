"""Small state records kept in a ConfigMap of the operator's namespace (the LLM budget's spending),
so that what one process counted survives its restart and a failover to another replica.

A record is read with its resourceVersion and written only if it is still at that version (a
stale write is refused by the API server with 409, reported as :attr:`Saved.CONFLICT`: read
again, merge, write again). Only ``data`` is read or written; nothing else in the namespace."""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

from kubernetes import client as k8s

from aianalysis.kube import errors as kube_errors

REQUEST_TIMEOUT_SECONDS = 5.0


@dataclasses.dataclass(frozen=True, kw_only=True)
class Record:
    data: dict[str, str]
    resource_version: str | None
    """The version read (None: there is no record yet; writing creates it)."""


class Saved(enum.Enum):
    OK = "ok"
    CONFLICT = "conflict"


async def read(api: k8s.ApiClient, *, namespace: str, name: str) -> Record:
    """The record as the API server has it (empty, without a version, when there is none)."""
    found: Any = await kube_errors.call(
        f"reading ConfigMap {namespace}/{name}",
        k8s.CoreV1Api(api).read_namespaced_config_map,
        name,
        namespace,
        none_on=kube_errors.NOT_FOUND,
        _request_timeout=REQUEST_TIMEOUT_SECONDS,
    )
    if found is None:
        return Record(data={}, resource_version=None)
    return Record(data=dict(found.data or {}), resource_version=found.metadata.resource_version)


async def write(
    api: k8s.ApiClient, *, namespace: str, name: str, data: dict[str, str], at: Record, labels: dict[str, str]
) -> Saved:
    """``data`` as the record, if the record is still as read in ``at`` (created when ``at`` had
    none); :attr:`Saved.CONFLICT` when another writer came first."""
    core = k8s.CoreV1Api(api)
    body = k8s.V1ConfigMap(
        metadata=k8s.V1ObjectMeta(
            name=name, namespace=namespace, labels=labels, resource_version=at.resource_version
        ),
        data=data,
    )
    what = f"writing ConfigMap {namespace}/{name}"
    if at.resource_version is None:
        done = await kube_errors.call(
            what, core.create_namespaced_config_map, namespace, body,
            none_on=kube_errors.CONFLICT, _request_timeout=REQUEST_TIMEOUT_SECONDS,
        )  # fmt: skip
    else:
        done = await kube_errors.call(
            what, core.replace_namespaced_config_map, name, namespace, body,
            none_on=kube_errors.CONFLICT, _request_timeout=REQUEST_TIMEOUT_SECONDS,
        )  # fmt: skip
    return Saved.OK if done is not None else Saved.CONFLICT
