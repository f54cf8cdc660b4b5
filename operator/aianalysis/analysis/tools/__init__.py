"""The LLM's tools: the workflow catalog (search, details) and read-only Kubernetes investigation
(get a resource, list its events, tail pod logs, list the pods of an owner).

``ToolBox`` serves one conversation; ``ClusterReader`` is what it needs from a cluster, and
``aianalysis.kube.api_reader.KubernetesReader`` is the real one over the ``kubernetes`` client.
"""

from __future__ import annotations

from aianalysis.analysis.redact import REDACTED
from aianalysis.analysis.tools._box import (
    CATALOG_TOOL_NAMES,
    NO_CLUSTER,
    TOOL_NAMES,
    ToolBox,
    ToolResult,
    catalog_toolbox,
)
from aianalysis.analysis.tools._scope import detect_facts, gather_scope
from aianalysis.kube.reader import ClusterReader, JSONObject, Unavailable

__all__ = [
    "CATALOG_TOOL_NAMES",
    "NO_CLUSTER",
    "REDACTED",
    "TOOL_NAMES",
    "ClusterReader",
    "JSONObject",
    "ToolBox",
    "ToolResult",
    "Unavailable",
    "catalog_toolbox",
    "detect_facts",
    "gather_scope",
]
