"""What a tool call returns: the text the LLM reads and, beside it, what that text shows as values.

An investigation tool reads objects, events or log lines, redacts them, and renders them as text
for the LLM (fenced, capped to what the analysis' budget has left). It also returns what it read
as values (``ToolResult.data``): the same redacted objects, rows, events and lines the text shows,
before the character cap. A reader that is not a language model (the offline provider) reads
those instead of parsing the rendering back, so a changed column or header cannot silently
change what it sees. Only the LLM's text is capped: the cap is a token budget, and the values
are already in memory.

Values are plain: JSON-like objects as the API server sent them (redacted; for ``get_resource``
compacted as shown), and small frozen records for rows. Untrusted free text (log lines, event
messages) is given without control or invisible characters, as the LLM sees it.
"""

from __future__ import annotations

import dataclasses

from aianalysis.kube import readers


@dataclasses.dataclass(frozen=True)
class ToolResult:
    text: str
    is_error: bool = False
    data: object = None
    """What the text shows, as values (one of the results below); None when the tool has none
    (errors, the Prometheus tools)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Absent:
    """The data of an error result: the API server said the object does not exist (404). For
    the LLM an error like any other; for a reader of the values, an answer (a ConfigMap the
    workload needs is missing), unlike a read that failed."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ObjectResult:
    """``get_resource``: the object as shown (redacted; ids, nulls and API defaults left out; status
    first)."""

    body: readers.JSONObject


@dataclasses.dataclass(frozen=True, kw_only=True)
class EventRow:
    """One line of ``list_events``: ``TIME TYPE REASON (xCOUNT, SOURCE): MESSAGE``."""

    time: str
    type: str
    reason: str
    count: int
    source: str
    message: str
    """Redacted, whitespace collapsed, without control characters."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class EventsResult:
    """``list_events``: the events shown, oldest first (the most recent ``MAX_EVENTS``)."""

    events: tuple[EventRow, ...]


@dataclasses.dataclass(frozen=True, kw_only=True)
class LogsResult:
    """``get_pod_logs``: the log's lines, redacted, without control characters (empty: nothing
    was logged)."""

    lines: tuple[str, ...]


@dataclasses.dataclass(frozen=True, kw_only=True)
class PodsResult:
    """``list_pods_of_owner``: the Pods the text summarises (redacted), by name."""

    pods: tuple[readers.JSONObject, ...]


@dataclasses.dataclass(frozen=True, kw_only=True)
class ListResult:
    """``list_resources``, ``find_resources``: the objects of the table, one row each (redacted)."""

    items: tuple[readers.JSONObject, ...]


@dataclasses.dataclass(frozen=True, kw_only=True)
class UsageRow:
    """One row of ``top``: a Pod's or a Node's use, from the metrics API."""

    name: str
    cpu: float
    """Cores."""
    cpu_share: float | None
    """Percent of the Node's allocatable CPU, or of the Pod's CPU limits (None: no limit)."""
    memory: float
    """Bytes."""
    memory_share: float | None
    """Percent of the Node's allocatable memory, or of the Pod's memory limits (None: no limit)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class UsageResult:
    """``top``: the rows shown, highest use first."""

    rows: tuple[UsageRow, ...]


@dataclasses.dataclass(frozen=True, kw_only=True)
class CatalogResult:
    """The catalog tools: the JSON answer the text is, as values."""

    payload: readers.JSONObject
