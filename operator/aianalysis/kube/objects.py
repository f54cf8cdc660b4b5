"""Raw I/O on the product's custom objects (AIAnalysis, WorkflowExecution, RemediationWorkflow)
through the API server: read, list, create, delete, write status. Failures are classified by
:mod:`aianalysis.kube.calls` (one map): a refusal that cannot pass is
:class:`errors.ClusterRejectedError`, anything else — 5xx, 429, a dropped connection while the API
server restarts — :class:`errors.ClusterError` (retryable).

Every status write names the object it was computed for: its ``uid`` (and, where the write must
not race another, its ``resourceVersion``) travel in the patch's metadata, so the API server
refuses a write that would land on another object created under the same name since.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import functools
import logging
from collections.abc import Mapping
from typing import Any

from aianalysis import errors, metrics, resources
from aianalysis.kube import calls, rest

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Ref:
    """The object a reconciliation is for: its name now, and its uid for good."""

    namespace: str
    name: str
    uid: str

    @classmethod
    def of(cls, body: Mapping[str, Any]) -> Ref:
        meta = body.get("metadata") or {}
        return cls(
            namespace=meta.get("namespace") or "", name=meta.get("name") or "", uid=meta.get("uid") or ""
        )


class Written(enum.Enum):
    """What became of a status write."""

    OK = "ok"
    CONFLICT = "conflict"
    """The object changed since ``resource_version``: re-read it and decide again."""
    DROPPED = "dropped"
    """The object it was computed for is gone (deleted, or replaced by another under its name)."""


async def get(api: rest.ApiClient, namespace: str, plural: str, name: str) -> dict[str, Any] | None:
    """The object as the API server has it now; None when there is none under that name
    (``namespace`` empty: a cluster-scoped object)."""
    return await asyncio.to_thread(get_blocking, api, namespace, plural, name)


def get_blocking(api: rest.ApiClient, namespace: str, plural: str, name: str) -> dict[str, Any] | None:
    """:func:`get` for callers on a thread of their own (the catalog sync)."""
    what = f"reading {plural} {_where(namespace, name)}"
    url_path = _path(resources.GROUP, resources.VERSION, plural, namespace=namespace, name=name)
    found: Any = calls.blocking(what, rest.get_json, api, url_path, none_on=calls.NOT_FOUND)
    return None if found is None else dict(found)


async def list_objects(
    api: rest.ApiClient,
    *,
    plural: str,
    namespace: str,
    label_selector: str | None = None,
    page_size: int = 500,
) -> list[dict[str, Any]]:
    """Every object of ``plural`` in ``namespace`` (matching ``label_selector``), page by page."""
    url_path = _path(resources.GROUP, resources.VERSION, plural, namespace=namespace)
    items: list[dict[str, Any]] = []
    token: str | None = None
    while True:
        query = {"limit": page_size, "continue": token, "labelSelector": label_selector or None}
        page: Any = await calls.call(
            f"listing {plural} in {namespace}", rest.get_json, api, url_path, query=query
        )
        items.extend(page.get("items") or [])
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return items


async def get_aianalysis(api: rest.ApiClient, namespace: str, name: str) -> dict[str, Any] | None:
    return await get(api, namespace, resources.AIANALYSIS_PLURAL, name)


async def create(api: rest.ApiClient, body: Mapping[str, Any], *, plural: str) -> dict[str, Any] | None:
    """The product's one create: ``body`` (namespaced when its metadata names a namespace; of any
    named API group — ``batch/v1`` Jobs too — its ``apiVersion`` says which, ours by default) as
    created, or None when one of that name exists (the name is the idempotency key)."""
    group, _, version = str(body.get("apiVersion") or resources.API_VERSION).rpartition("/")
    assert group, "the core API group has no custom-object path"
    meta = body.get("metadata") or {}
    namespace = meta.get("namespace") or ""
    what = f"creating {plural} {_where(namespace, meta.get('name'))}"
    url_path = _path(group, version, plural, namespace=namespace)
    created: Any = await calls.call(
        what, rest.send_json, api, "POST", url_path, dict(body), none_on=calls.CONFLICT
    )
    return None if created is None else dict(created)


async def write_status(
    api: rest.ApiClient,
    *,
    namespace: str,
    plural: str,
    name: str,
    uid: str,
    fields: Mapping[str, Any],
    current: Mapping[str, Any] | None,
    resource_version: str | None = None,
) -> tuple[Written, str | None]:
    """The product's one status writer (:func:`write_status_blocking`), on a thread."""
    return await asyncio.to_thread(
        functools.partial(
            write_status_blocking, api, namespace=namespace, plural=plural, name=name, uid=uid,
            fields=fields, current=current, resource_version=resource_version,
        )
    )  # fmt: skip


async def write_status_at(
    api: rest.ApiClient, body: Mapping[str, Any], *, plural: str, fields: Mapping[str, Any]
) -> Written:
    """:func:`write_status` onto the object ``body`` as the caller read it — its uid, its
    resourceVersion and its status — so no read is needed before the write."""
    meta = body["metadata"]
    written, _ = await write_status(
        api, namespace=meta.get("namespace") or "", plural=plural, name=meta["name"], uid=meta["uid"],
        fields=fields, current=body.get("status") or None, resource_version=meta["resourceVersion"],
    )  # fmt: skip
    return written


def write_status_blocking(
    api: rest.ApiClient,
    *,
    namespace: str,
    plural: str,
    name: str,
    uid: str,
    fields: Mapping[str, Any],
    current: Mapping[str, Any] | None,
    resource_version: str | None = None,
) -> tuple[Written, str | None]:
    """Merge ``fields`` into the status (``None`` removes a field) of the object ``uid`` — never of
    another one under its name — and, with ``resource_version``, only if it is still at that
    version. ``current`` is the status as last read (None: it had none); ``namespace`` empty: a
    cluster-scoped object. A caller holding a fresh body passes its resourceVersion and status:
    no read before the write.

    A JSON patch whose first operation tests ``/metadata/uid`` (a merge patch's metadata is ignored
    on the status subresource); a failed test is refused with 422, so a refusal is told apart by
    reading the object again: :attr:`Written.DROPPED` (gone or replaced), :attr:`Written.CONFLICT`
    (changed since read), else the refusal is raised. With :attr:`Written.OK`, the object's
    resourceVersion after the write: a writer that writes again binds the next write to it without
    reading first."""
    ops: list[dict[str, Any]] = [{"op": "test", "path": "/metadata/uid", "value": uid}]
    if resource_version is not None:
        ops.append({"op": "test", "path": "/metadata/resourceVersion", "value": resource_version})
    ops.extend(status_operations(current, fields))
    what = f"status write of {plural} {_where(namespace, name)}"
    try:
        url_path = (
            _path(resources.GROUP, resources.VERSION, plural, namespace=namespace, name=name) + "/status"
        )
        answer = calls.blocking(
            what, rest.send_json, api, "PATCH", url_path, ops,
            content_type="application/json-patch+json",
        )  # fmt: skip
    except errors.ClusterRejectedError as exc:
        if exc.status not in (calls.NOT_FOUND, calls.INVALID):
            raise
        now = get_blocking(api, namespace, plural, name)
        if now is None or (now.get("metadata") or {}).get("uid") != uid:
            return _dropped(what, "object_deleted" if now is None else "object_replaced"), None
        moved = resource_version is not None and now["metadata"].get("resourceVersion") != resource_version
        if moved or (now.get("status") or None) != (dict(current) if current else None):
            return Written.CONFLICT, None  # changed since it was read: read again and decide again
        raise
    version = (answer.get("metadata") or {}).get("resourceVersion") if isinstance(answer, dict) else None
    return Written.OK, version if isinstance(version, str) else None


def _path(group: str, version: str, plural: str, *, namespace: str, name: str = "") -> str:
    """A custom object's (or its collection's) URL path; ``namespace`` empty: cluster-scoped. Plain
    REST calls, each bounded by the client's request timeout (see :mod:`aianalysis.kube.rest`)."""
    where = ("namespaces", namespace) if namespace else ()
    return rest.path("apis", group, version, *where, plural, *((name,) if name else ()))


def _where(namespace: str, name: object) -> str:
    return f"{namespace}/{name}" if namespace else str(name)


def merged(current: Mapping[str, Any] | None, fields: Mapping[str, Any]) -> dict[str, Any]:
    """The status after :func:`write_status` of ``fields`` onto ``current``."""
    out = dict(current or {})
    for key, value in fields.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _without_nulls(value)
    return out


def status_operations(current: Mapping[str, Any] | None, fields: Mapping[str, Any]) -> list[dict[str, Any]]:
    """JSON-patch operations turning status ``current`` into ``merged(current, fields)``."""
    if not current:
        return [{"op": "add", "path": "/status", "value": merged(None, fields)}]
    ops: list[dict[str, Any]] = []
    for key, value in fields.items():
        path = "/status/" + key.replace("~", "~0").replace("/", "~1")
        if value is None:
            if key in current:
                ops.append({"op": "remove", "path": path})
        else:
            ops.append({"op": "add", "path": path, "value": _without_nulls(value)})
    return ops


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _dropped(what: str, reason: str) -> Written:
    log.warning("%s dropped: the object it was computed for is gone (%s)", what, reason)
    metrics.STATUS_WRITES_DROPPED.labels(reason=reason).inc()
    return Written.DROPPED
