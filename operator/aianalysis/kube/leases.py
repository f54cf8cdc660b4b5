"""``coordination.k8s.io/v1`` Leases as plain records: read one, create one, replace one only if it
is still at the version read (the API server refuses a stale replace with 409, reported as False).
Blocking calls (the leader election runs them in a thread); failures are mapped by
:mod:`aianalysis.kube.calls`."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

from aianalysis import resources
from aianalysis.kube import calls, rest

REQUEST_TIMEOUT_SECONDS = 5.0
"""One Lease request (read, write) at most this long: well under a leader's renew deadline."""


@dataclasses.dataclass(kw_only=True)
class Lease:
    namespace: str
    name: str
    holder_identity: str | None = None
    lease_duration_seconds: int | None = None
    acquire_time: datetime.datetime | None = None
    renew_time: datetime.datetime | None = None
    lease_transitions: int | None = None
    resource_version: str | None = None
    """The version read (None: not in the cluster yet, :func:`write` creates it)."""
    labels: dict[str, str] = dataclasses.field(default_factory=dict)
    annotations: dict[str, str] = dataclasses.field(default_factory=dict)
    """Kept as read: a replace must not strip what made the Lease (the chart's release labels and
    Helm's ownership annotations, without which ``helm upgrade`` refuses it)."""


def fetch(api: rest.ApiClient, *, namespace: str, name: str) -> Lease | None:
    """The Lease as the API server has it; None when there is none."""
    found: Any = calls.blocking(
        f"reading lease {namespace}/{name}",
        rest.get_json,
        api,
        _path(namespace, name),
        timeout=REQUEST_TIMEOUT_SECONDS,
        none_on=calls.NOT_FOUND,
    )
    if found is None:
        return None
    spec, meta = found.get("spec") or {}, found.get("metadata") or {}
    return Lease(
        namespace=namespace,
        name=name,
        holder_identity=spec.get("holderIdentity"),
        lease_duration_seconds=spec.get("leaseDurationSeconds"),
        acquire_time=resources.parse_timestamp(spec.get("acquireTime")),
        renew_time=resources.parse_timestamp(spec.get("renewTime")),
        lease_transitions=spec.get("leaseTransitions"),
        resource_version=meta.get("resourceVersion"),
        labels=dict(meta.get("labels") or {}),
        annotations=dict(meta.get("annotations") or {}),
    )


def store(api: rest.ApiClient, lease: Lease) -> bool:
    """Create ``lease``, or replace it if it is still at ``lease.resource_version``; False when
    another writer won (it exists already, or changed since it was read)."""
    metadata: dict[str, Any] = {"name": lease.name, "namespace": lease.namespace}
    if lease.labels:
        metadata["labels"] = lease.labels
    if lease.annotations:
        metadata["annotations"] = lease.annotations
    if lease.resource_version is not None:
        metadata["resourceVersion"] = lease.resource_version  # a stale replace is refused (409)
    spec = {
        "holderIdentity": lease.holder_identity,
        "leaseDurationSeconds": lease.lease_duration_seconds,
        "acquireTime": _micro_time(lease.acquire_time),
        "renewTime": _micro_time(lease.renew_time),
        "leaseTransitions": lease.lease_transitions,
    }
    body = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": metadata,
        "spec": {key: value for key, value in spec.items() if value is not None},
    }
    creating = lease.resource_version is None
    done = calls.blocking(
        f"writing lease {lease.namespace}/{lease.name}",
        rest.send_json,
        api,
        "POST" if creating else "PUT",
        _path(lease.namespace) if creating else _path(lease.namespace, lease.name),
        body,
        timeout=REQUEST_TIMEOUT_SECONDS,
        none_on=calls.CONFLICT,
    )
    return done is not None


def _path(namespace: str, name: str | None = None) -> str:
    return rest.path(
        "apis", "coordination.k8s.io", "v1", "namespaces", namespace, "leases", *([name] if name else [])
    )


def _micro_time(moment: datetime.datetime | None) -> str | None:
    """A Lease's MicroTime: RFC 3339 with microseconds."""
    return None if moment is None else resources.timestamp(moment, microseconds=True)
