"""What the investigation tools need from a cluster, as a protocol (the real one is ``kube.api_reader``).

A reader returns plain JSON-like data, exactly as the API server sent it; the tool box redacts,
summarises, fences and caps it. Outcomes a reader must distinguish:
- the data: returned;
- a definitive "you can't have this" from the API server (404 not found, 403 forbidden, 400 "no
  logs for this container"...): :class:`Unavailable` with a message meant for the LLM;
- a failure that may pass (connection refused, 429, 5xx): ``errors.ClusterError``.
"""

from __future__ import annotations

from typing import Any, Protocol

from aianalysis import errors

JSONObject = dict[str, Any]


class Unavailable(errors.AIAnalysisError):
    """The API server answered, and the answer is that this cannot be read. Shown to the LLM as the
    tool's error text; not an operator fault, and asking again would not help."""

    reason = "NotAvailable"

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        """The API server's HTTP status (None: refused before asking, e.g. a kind not in the table)."""


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
