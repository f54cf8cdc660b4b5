"""One tool call of the offline investigation, and what it read as values.

The investigation calls the conversation's tools exactly as an LLM would (so what it reads is
redacted, budgeted, counted in ``status.llm.toolCalls`` and recorded as "returned" for the target
check), but it reads each tool's values (``ToolResult.data``), never its text: a changed column
or header cannot change what the rules see. Nothing here raises for what the cluster answers: an
unreadable object is simply not evidence.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from aianalysis.analysis import conversation, tools
from aianalysis.analysis.offline import workload

Call = Callable[[str, dict[str, Any]], Awaitable[conversation.ToolOutcome]]

TOP_TOOL = "top"
#: Listing tools another module may offer; the first one present is used.
LIST_TOOLS: tuple[str, ...] = ("list_resources", "list_objects")


class Reads:
    """The investigation's reads through ``call`` (the tool box, counted by the caller).
    ``listing`` and ``top``: whether the tool box offers a listing tool and ``top``; without
    them, the facts only they give stay unknown."""

    def __init__(self, call: Call, *, tool_names: Sequence[str]) -> None:
        self._call = call
        self._list_tool = next((name for name in LIST_TOOLS if name in tool_names), None)
        self.listing = self._list_tool is not None
        self.top = TOP_TOOL in tool_names
        self.cluster = False
        """Whether a cluster answered a read (with an object, or that it has none)."""

    async def get(self, kind: str, name: str, namespace: str | None) -> dict[str, Any] | None:
        """One object as ``get_resource`` showed it, or None."""
        outcome = await self._call("get_resource", _where(kind, name, namespace))
        self.cluster = self.cluster or not outcome.is_error or isinstance(outcome.data, tools.Absent)
        return outcome.data.body if isinstance(outcome.data, tools.ObjectResult) else None

    async def lookup(self, kind: str, name: str, namespace: str | None) -> tuple[bool | None, Any]:
        """Whether it exists (True/False when the cluster said so, None when it could not tell),
        and the object as read."""
        outcome = await self._call("get_resource", _where(kind, name, namespace))
        if isinstance(outcome.data, tools.Absent):
            return False, None
        if isinstance(outcome.data, tools.ObjectResult):
            return True, outcome.data.body
        return None, None

    async def listed(self, arguments: dict[str, Any]) -> tuple[dict[str, Any], ...] | None:
        """The objects a listing tool returned, in its order (None: no listing tool, or it failed)."""
        if self._list_tool is None:
            return None
        outcome = await self._call(self._list_tool, arguments)
        return outcome.data.items if isinstance(outcome.data, tools.ListResult) else None

    async def names(self, arguments: dict[str, Any]) -> list[str] | None:
        """The names of the objects a listing tool returned, in its order (None: as :meth:`listed`)."""
        found = await self.listed(arguments)
        return None if found is None else [workload.name_of(item) for item in found]

    async def usage(self, arguments: dict[str, Any]) -> tuple[tools.UsageRow, ...] | None:
        """The rows ``top`` returned (None: it failed, e.g. no metrics API)."""
        outcome = await self._call(TOP_TOOL, arguments)
        return outcome.data.rows if isinstance(outcome.data, tools.UsageResult) else None

    async def pods_of(self, kind: str, name: str, namespace: str) -> tuple[dict[str, Any], ...]:
        """The Pods ``list_pods_of_owner`` returned (none when it failed)."""
        outcome = await self._call("list_pods_of_owner", {"kind": kind, "name": name, "namespace": namespace})
        return outcome.data.pods if isinstance(outcome.data, tools.PodsResult) else ()

    async def events(self, kind: str, name: str, namespace: str | None) -> tuple[tools.EventRow, ...]:
        """The events ``list_events`` returned about one object, oldest first (none when it failed)."""
        outcome = await self._call("list_events", _where(kind, name, namespace))
        return outcome.data.events if isinstance(outcome.data, tools.EventsResult) else ()

    async def logs(self, arguments: dict[str, Any]) -> tuple[str, ...]:
        """The lines ``get_pod_logs`` returned (none when it failed or nothing was logged)."""
        outcome = await self._call("get_pod_logs", arguments)
        return outcome.data.lines if isinstance(outcome.data, tools.LogsResult) else ()


def _where(kind: str, name: str, namespace: str | None) -> dict[str, Any]:
    return {"kind": kind, "name": name} | ({"namespace": namespace} if namespace else {})
