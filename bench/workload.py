"""What the benchmarks create: a small catalog every analysis can be solved from, AIAnalysis bodies,
and the scripted model's policy (search the catalog, then submit the top hit).

Every workflow takes the same two required parameters, so the scripted model can fill them
without reading ``get_workflow_details``: each analysis costs exactly two Messages API requests
(search, submit), and every answer passes validation (the workflow was shown by the search tool
in this conversation, is eligible, and its parameters are complete).
"""

from __future__ import annotations

import json
from typing import Any

from tests.support import messages_server as ms

from aianalysis import resources

API_VERSION = f"{resources.GROUP}/{resources.VERSION}"
SIGNALS = ("OOMKilled", "CrashLoopBackOff", "ImagePullBackOff", "Evicted", "NodeNotReady", "HighLatency")
REQUESTS_PER_ANALYSIS = 2
"""search_workflow_catalog, then submit_selection."""

ANSWER_PARAMETERS = {"TARGET_NAMESPACE": "bench", "TARGET_RESOURCE_NAME": "app"}


def catalog_objects() -> list[dict[str, Any]]:
    """One RemediationWorkflow per signal, eligible for the analyses' business context."""
    return [
        {
            "apiVersion": API_VERSION,
            "kind": "RemediationWorkflow",
            "metadata": {"name": f"bench-{signal.lower()}-v1"},
            "spec": {
                "workflowId": f"bench-{signal.lower()}",
                "version": "1.0.0",
                "title": f"Remediate {signal}",
                "description": f"Restarts and resizes the workload affected by {signal}.",
                "labels": {"signalTypes": [signal], "environment": ["production"]},
                "riskLevel": "low",
                "parameters": [
                    {"name": "TARGET_NAMESPACE", "type": "string", "required": True},
                    {"name": "TARGET_RESOURCE_NAME", "type": "string", "required": True},
                    {
                        "name": "STRATEGY",
                        "type": "string",
                        "enum": ["rolling", "recreate"],
                        "default": "rolling",
                    },
                ],
                "execution": {
                    "engine": "job",
                    "containerImage": f"registry.example/bench/{signal.lower()}@sha256:{'0' * 64}",
                },
            },
        }
        for signal in SIGNALS
    ]


def analysis_body(
    number: int, *, signals: tuple[str, ...] = SIGNALS, name_prefix: str = "bench"
) -> dict[str, Any]:
    """An AIAnalysis (no namespace: the creator sets it) for a realistic incident, in its own
    namespace."""
    signal = signals[number % len(signals)]
    return {
        "apiVersion": API_VERSION,
        "kind": "AIAnalysis",
        "metadata": {"name": f"{name_prefix}-{number:05d}"},
        "spec": {
            "signal": {
                "type": signal,
                "severity": "critical",
                "alertName": f"Kube{signal}",
                "source": "prometheus-alertmanager",
                "labels": {"team": "payments", "container": "app"},
                "errorMessage": f"Last State: Terminated, Reason: {signal}, Exit Code: 137",
                "description": f"app-{number} pods restarted 5 times in 10 minutes ({signal}).",
                "firingTime": "2026-11-20T10:00:00Z",
                "receivedTime": "2026-11-20T10:00:05Z",
            },
            # No namespace: the AIAnalysis' own (an analysis may only concern its own namespace).
            "resource": {"kind": "Deployment", "name": f"app-{number}"},
            "cluster": "bench-1",
            "businessContext": {
                "environment": "production",
                "priority": "P1",
                "businessCategory": "payments",
                "riskTolerance": "low",
            },
        },
    }


def answer(hit: dict[str, Any]) -> dict[str, Any]:
    return {
        "analysis_summary": "The workload exceeds its limits under normal load.",
        "root_cause_assessment": "Resource limits are below the steady-state working set.",
        "rca_severity": "high",
        "contributing_factors": ["limit below working set"],
        "selected_workflow": {
            "workflow_id": hit["workflow_id"],
            "version": hit["version"],
            "confidence": 0.9,
            "rationale": "The catalog's best match for the signal.",
            "parameters": dict(ANSWER_PARAMETERS),
        },
    }


class Policy:
    """The scripted model: search first, then submit the top hit. ``delay`` seconds per reply."""

    def __init__(self, *, delay: float) -> None:
        self.delay = delay
        self.unexpected = 0
        """Requests that were neither a first turn nor a search result (corrections, ...)."""

    def __call__(self, body: dict[str, Any]) -> ms.Step:
        outputs = ms.tool_outputs(body)
        if len(body.get("messages", [])) == 1:
            query = {"query": "restart resize workload limits"}
            return ms.reply_tools(ms.tool_use("search_workflow_catalog", query), delay=self.delay)
        searched = [text for name, text, is_error in outputs if name == "search_workflow_catalog"]
        if searched:
            hits = json.loads(searched[0]).get("workflows") or []
            if hits:
                return ms.submit(answer(hits[0]), delay=self.delay)
        self.unexpected += 1
        return ms.reply_text("I cannot find a workflow.", delay=self.delay)
