"""List-then-watch of custom objects of this API group, the way a client-go informer does it:
:func:`pages` lists page by page (``limit``/``continue``), :func:`watch` follows the changes from
the list's resourceVersion until the server ends the watch or ``stopping`` is set. Cluster-scoped
kinds, or a namespaced kind in one namespace or all of them (``namespace`` empty); a
``field_selector`` is applied by the API server (on the CRD's ``selectableFields``): an object that
stops matching it arrives as ``DELETED``, one that starts matching as ``ADDED``. Blocking (the
caller runs them on a thread of its own); failures are mapped by :mod:`aianalysis.kube.calls` — a
watch from a version the server no longer has is ``ClusterRejectedError`` with status ``GONE``
(410): list again."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from typing import Any

from aianalysis import resources
from aianalysis.kube import calls, rest

GONE = calls.GONE


@dataclasses.dataclass(frozen=True, kw_only=True)
class Listing:
    items: list[dict[str, Any]]
    resource_version: str
    """The list's version: a watch started from the last page's sees every later change."""


def pages(
    api: rest.ApiClient,
    *,
    plural: str,
    page_size: int,
    namespace: str = "",
    field_selector: str | None = None,
) -> Iterator[Listing]:
    """Every object of ``plural`` (this API group; in ``namespace``, or all of them) that matches
    ``field_selector``, one page at a time."""
    url_path = _collection(plural, namespace)
    token: str | None = None
    while True:
        query = {"limit": page_size, "continue": token, "fieldSelector": field_selector}
        page: Any = calls.blocking(f"listing {plural}", rest.get_json, api, url_path, query=query)
        yield Listing(items=list(page["items"]), resource_version=page["metadata"]["resourceVersion"])
        token = page["metadata"].get("continue")
        if not token:
            return


def watch(
    api: rest.ApiClient,
    *,
    plural: str,
    resource_version: str,
    timeout_seconds: int,
    stopping: threading.Event,
    namespace: str = "",
    field_selector: str | None = None,
) -> Iterator[tuple[str, dict[str, Any], str | None]]:
    """``(type, object, resourceVersion)`` for each change after ``resource_version`` (bookmarks
    included), until the server ends the watch at ``timeout_seconds`` or ``stopping`` is set."""
    url_path = _collection(plural, namespace)
    query: rest.Query = {
        "resourceVersion": resource_version,
        "allowWatchBookmarks": True,
        "fieldSelector": field_selector,
    }
    version: str | None = resource_version
    try:
        for event in rest.watch_lines(api, url_path, query=query, timeout_seconds=timeout_seconds):
            if stopping.is_set():
                return
            obj = event.get("object") or {}
            version = (obj.get("metadata") or {}).get("resourceVersion") or version
            yield event["type"], obj, version
    except (rest.ApiError, *calls.UNREACHABLE) as exc:
        raise calls.classify(exc, what=f"watching {plural}") from exc


def _collection(plural: str, namespace: str) -> str:
    where = ("namespaces", namespace) if namespace else ()
    return rest.path("apis", resources.GROUP, resources.VERSION, *where, plural)
