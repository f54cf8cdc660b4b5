"""The LLM's tools: the workflow catalog (search, details) and read-only investigation of the
cluster (one object, its events, pod logs, the pods of an owner; lists, search, rollout history,
namespace events, custom kinds, resource usage) and of Prometheus (queries, metric and label
lookup, alerts, rules).

``ToolBox`` serves one conversation; each call returns a ``ToolResult``: the text the LLM reads
and, for the investigation and catalog tools, what that text shows as values (``ObjectResult``,
``EventsResult``, ``LogsResult``, ``PodsResult``, ``ListResult``, ``UsageResult``,
``CatalogResult``; ``Absent`` for an object the API server says does not exist).
``ClusterReader`` and ``MetricsReader`` (``kube.readers``) are what it needs from a cluster and
from Prometheus; ``kube.api_reader.KubernetesReader`` and
``kube.prometheus.PrometheusClient`` are the real ones.
"""

from __future__ import annotations

from aianalysis.analysis.facts import target_kinds, with_business_context
from aianalysis.analysis.redact import REDACTED, redact_text
from aianalysis.analysis.tools._box import (
    CATALOG_TOOL_NAMES,
    PROMETHEUS_TOOL_NAMES,
    TOOL_NAMES,
    Limits,
    ToolBox,
    catalog_toolbox,
)
from aianalysis.analysis.tools._results import (
    Absent,
    CatalogResult,
    EventRow,
    EventsResult,
    ListResult,
    LogsResult,
    ObjectResult,
    PodsResult,
    ToolResult,
    UsageResult,
    UsageRow,
)
from aianalysis.analysis.tools._scope import detect_facts, gather_scope, infer_target, selects
from aianalysis.kube.readers import (
    ClusterReader,
    JSONObject,
    MetricsReader,
    NotFound,
    Page,
    ReadOnce,
    ServedGroup,
    Unavailable,
)
from aianalysis.prometheus import PrometheusClient, PrometheusConfig

__all__ = [
    "CATALOG_TOOL_NAMES",
    "PROMETHEUS_TOOL_NAMES",
    "REDACTED",
    "TOOL_NAMES",
    "Absent",
    "CatalogResult",
    "ClusterReader",
    "EventRow",
    "EventsResult",
    "JSONObject",
    "Limits",
    "ListResult",
    "LogsResult",
    "MetricsReader",
    "NotFound",
    "ObjectResult",
    "Page",
    "PodsResult",
    "PrometheusClient",
    "PrometheusConfig",
    "ReadOnce",
    "ServedGroup",
    "ToolBox",
    "ToolResult",
    "Unavailable",
    "UsageResult",
    "UsageRow",
    "catalog_toolbox",
    "detect_facts",
    "gather_scope",
    "infer_target",
    "redact_text",
    "selects",
    "target_kinds",
    "with_business_context",
]
