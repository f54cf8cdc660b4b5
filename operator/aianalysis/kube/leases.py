"""``coordination.k8s.io/v1`` Leases as plain records: read one, create one, replace one only if it
is still at the version read (the API server refuses a stale replace with 409, reported as False).
Blocking calls (the leader election runs them in a thread); failures are mapped by
:mod:`aianalysis.kube.errors`."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

from kubernetes import client as k8s

from aianalysis.kube import errors as kube_errors

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


def read(api: k8s.ApiClient, *, namespace: str, name: str) -> Lease | None:
    """The Lease as the API server has it; None when there is none."""
    read = k8s.CoordinationV1Api(api).read_namespaced_lease
    found: Any = kube_errors.blocking(
        f"reading lease {namespace}/{name}",
        read,
        name,
        namespace,
        none_on=kube_errors.NOT_FOUND,
        _request_timeout=REQUEST_TIMEOUT_SECONDS,
    )
    if found is None:
        return None
    spec = found.spec
    return Lease(
        namespace=namespace,
        name=name,
        holder_identity=spec.holder_identity,
        lease_duration_seconds=spec.lease_duration_seconds,
        acquire_time=spec.acquire_time,
        renew_time=spec.renew_time,
        lease_transitions=spec.lease_transitions,
        resource_version=found.metadata.resource_version,
    )


def write(api: k8s.ApiClient, lease: Lease) -> bool:
    """Create ``lease``, or replace it if it is still at ``lease.resource_version``; False when
    another writer won (it exists already, or changed since it was read)."""
    coordination = k8s.CoordinationV1Api(api)
    body = k8s.V1Lease(
        metadata=k8s.V1ObjectMeta(
            name=lease.name, namespace=lease.namespace, resource_version=lease.resource_version
        ),
        spec=k8s.V1LeaseSpec(
            holder_identity=lease.holder_identity,
            lease_duration_seconds=lease.lease_duration_seconds,
            acquire_time=lease.acquire_time,
            renew_time=lease.renew_time,
            lease_transitions=lease.lease_transitions,
        ),
    )
    what = f"writing lease {lease.namespace}/{lease.name}"
    if lease.resource_version is None:
        done = kube_errors.blocking(
            what,
            coordination.create_namespaced_lease,
            lease.namespace,
            body,
            none_on=kube_errors.CONFLICT,
            _request_timeout=REQUEST_TIMEOUT_SECONDS,
        )
    else:
        done = kube_errors.blocking(
            what, coordination.replace_namespaced_lease, lease.name, lease.namespace, body,
            none_on=kube_errors.CONFLICT, _request_timeout=REQUEST_TIMEOUT_SECONDS,
        )  # fmt: skip
    return done is not None
