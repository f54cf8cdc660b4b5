"""What the investigation tools need from a cluster (``ClusterReader``, the real one is
``kube.api_reader.KubernetesReader``) and from a metrics backend (``MetricsReader``, the real one is
``aianalysis.prometheus.PrometheusClient``), as protocols. Other callers (the offline provider's
deterministic investigation) use the same protocols, so a fake in a unit test and the real reader
are interchangeable.

A reader returns plain JSON-like data, exactly as the API server sent it; the tool box redacts,
summarises, fences and caps it. Outcomes a reader must distinguish:
- the data: returned;
- a definitive "you can't have this" from the API server (404 not found, 403 forbidden, 400 "no
  logs for this container"...): :class:`Unavailable` with a message meant for the LLM;
- a failure that may pass (connection refused, 429, 5xx): ``errors.ClusterError``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

from aianalysis import errors
from aianalysis.kube import kind_table

JSONObject = dict[str, Any]


class Unavailable(errors.AIAnalysisError):
    """The API server answered, and the answer is that this cannot be read. Shown to the LLM as the
    tool's error text; not an operator fault, and asking again would not help."""

    reason = "NotAvailable"

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        """The API server's HTTP status (None: refused before asking, e.g. a kind not in the table)."""


class NotFound(Unavailable):
    """The object does not exist (404)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Page:
    """One bounded page of a list: at most the ``limit`` asked for. ``more`` is True when the API
    server holds more objects (it returned a ``continue`` token; readers never follow it), and
    ``remaining`` is its ``remainingItemCount`` when it computed one."""

    items: list[JSONObject]
    more: bool = False
    remaining: int | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class ServedGroup:
    """An API group the server serves (discovery), with its preferred version."""

    group: str
    version: str


class ClusterReader(Protocol):
    """Read-only access to the cluster for the investigation tools. ``kind`` is a canonical kind
    name from the tool box's table (``Deployment``, ``Pod``...), never ``Secret``."""

    async def get_object(self, *, kind: str, name: str, namespace: str | None) -> JSONObject:
        """One object as the API server returns it (raises :class:`Unavailable` when not found)."""
        ...

    async def list_events(self, *, kind: str, name: str, namespace: str | None) -> list[JSONObject]:
        """Core v1 Events whose involvedObject is that object, any order (may be empty)."""
        ...

    async def pod_logs(
        self, *, name: str, namespace: str, container: str | None, previous: bool, tail_lines: int
    ) -> str:
        """The last ``tail_lines`` lines of one container's log."""
        ...

    async def list_pods_of_owner(self, *, kind: str, name: str, namespace: str) -> list[JSONObject]:
        """Pods controlled by the owner, following ownerReferences (Deployment -> ReplicaSets ->
        Pods, CronJob -> Jobs -> Pods, others directly)."""
        ...

    async def list_objects(self, *, kind: str, namespace: str) -> list[JSONObject]:
        """Every object of a namespaced kind in one namespace (bounded; used to find the HPAs and
        PodDisruptionBudgets that concern a remediation target)."""
        ...

    # ---- lists, custom kinds and discovery (list_resources, find_resources, rollout_history,
    # list_namespace_events, list_custom_kinds, top) ----------------------------------------------
    # These take a ``kind_table.Kind`` (group, version, plural, scope) rather than a name, so they serve
    # the fixed table's kinds, ControllerRevisions, the metrics API's NodeMetrics/PodMetrics and any
    # custom kind discovery found alike. The tool box decides what may be read (policy); a reader
    # reads what it is given.

    async def list_page(
        self,
        *,
        kind: kind_table.Kind,
        namespace: str | None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int,
    ) -> Page:
        """One page of objects (selectors applied by the API server; a malformed selector is
        :class:`Unavailable` with the server's message). ``namespace`` None: all namespaces for a
        namespaced kind, the cluster for a cluster-scoped one."""
        ...

    async def read(self, *, kind: kind_table.Kind, name: str, namespace: str | None) -> JSONObject:
        """One object of any served kind (``get_object`` for a kind from discovery)."""
        ...

    async def api_groups(self) -> list[ServedGroup]:
        """The API groups the server serves (``/apis``), each with its preferred version."""
        ...

    async def group_kinds(self, *, group: str, version: str) -> list[kind_table.Kind]:
        """The readable (get + list) kinds of one group version, subresources left out."""
        ...


class MetricsReader(Protocol):
    """Read-only access to a Prometheus-compatible HTTP API (Prometheus, Thanos, Cortex, Mimir).
    Each method returns the ``data`` of a successful answer as Prometheus sent it. Outcomes: the
    data; :class:`Unavailable` when the backend refused for good (malformed PromQL, 4xx), with its
    message; ``errors.ClusterError`` when it may pass (down, timeout, 429, 5xx). Times are Unix
    seconds."""

    async def query(self, *, promql: str, time: float) -> Any:
        """``/api/v1/query``: ``{"resultType", "result"}``."""
        ...

    async def query_range(self, *, promql: str, start: float, end: float, step: int) -> Any:
        """``/api/v1/query_range``: ``{"resultType": "matrix", "result"}``."""
        ...

    async def label_values(self, *, label: str, match: str | None, start: float, end: float) -> Any:
        """``/api/v1/label/<label>/values``: a list of strings (``__name__`` = metric names)."""
        ...

    async def alerts(self) -> Any:
        """``/api/v1/alerts``: ``{"alerts": [...]}``."""
        ...

    async def rules(self) -> Any:
        """``/api/v1/rules``: ``{"groups": [...]}``."""
        ...

    async def aclose(self) -> None:
        """Release the connection pool (at the process' cleanup)."""
        ...


class ReadOnce:
    """A :class:`ClusterReader` for one analysis: each object is read from ``reader`` once — the
    scope, the facts on a target, the business context and the tools that ask again for the same
    object get the first answer (or its definitive :class:`Unavailable`); a failure that may pass is
    not kept. Everything else goes to ``reader`` as it is."""

    def __init__(self, reader: ClusterReader) -> None:
        self._reader = reader
        self._objects: dict[tuple[str, str, str | None], JSONObject | Unavailable] = {}

    async def get_object(self, *, kind: str, name: str, namespace: str | None) -> JSONObject:
        key = (kind, name, namespace)
        if key not in self._objects:
            try:
                self._objects[key] = await self._reader.get_object(kind=kind, name=name, namespace=namespace)
            except Unavailable as exc:
                self._objects[key] = exc
        found = self._objects[key]
        if isinstance(found, Unavailable):
            raise found
        return found

    async def list_events(self, *, kind: str, name: str, namespace: str | None) -> list[JSONObject]:
        return await self._reader.list_events(kind=kind, name=name, namespace=namespace)

    async def pod_logs(
        self, *, name: str, namespace: str, container: str | None, previous: bool, tail_lines: int
    ) -> str:
        return await self._reader.pod_logs(
            name=name, namespace=namespace, container=container, previous=previous, tail_lines=tail_lines
        )

    async def list_pods_of_owner(self, *, kind: str, name: str, namespace: str) -> list[JSONObject]:
        return await self._reader.list_pods_of_owner(kind=kind, name=name, namespace=namespace)

    async def list_objects(self, *, kind: str, namespace: str) -> list[JSONObject]:
        return await self._reader.list_objects(kind=kind, namespace=namespace)

    async def list_page(
        self,
        *,
        kind: kind_table.Kind,
        namespace: str | None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int,
    ) -> Page:
        return await self._reader.list_page(
            kind=kind, namespace=namespace, label_selector=label_selector, field_selector=field_selector,
            limit=limit,
        )  # fmt: skip

    async def read(self, *, kind: kind_table.Kind, name: str, namespace: str | None) -> JSONObject:
        return await self._reader.read(kind=kind, name=name, namespace=namespace)

    async def api_groups(self) -> list[ServedGroup]:
        return await self._reader.api_groups()

    async def group_kinds(self, *, group: str, version: str) -> list[kind_table.Kind]:
        return await self._reader.group_kinds(group=group, version=version)
