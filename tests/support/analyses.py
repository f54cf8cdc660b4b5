"""One small catalog entry and one AIAnalysis that it solves, for the reconciler's tests on the real
control plane: the offline provider picks ``restart-pods`` for a crash-looping Deployment."""

from __future__ import annotations

from typing import Any

from aianalysis import resources

RESTART_PODS = resources.RemediationWorkflowSpec.model_validate(
    {
        "workflowId": "restart-pods",
        "version": "1.0.0",
        "title": "Restart the pods",
        "description": "Restarts the pods of the owning workload.",
        "labels": {"signalTypes": ["CrashLoopBackOff"]},
        "riskLevel": "low",
        "parameters": [{"name": "TARGET_NAMESPACE", "type": "string", "required": True}],
        "execution": {"containerImage": "registry.example/wf/restart@sha256:" + "0" * 64},
    }
)


def crashloop(name: str, namespace: str) -> dict[str, Any]:
    """An AIAnalysis named ``name`` about the Deployment ``api`` of ``namespace`` crash-looping."""
    return {
        "apiVersion": resources.API_VERSION,
        "kind": "AIAnalysis",
        "metadata": {"name": name},
        "spec": {
            "signal": {"type": "CrashLoopBackOff", "severity": "high"},
            "resource": {"kind": "Deployment", "name": "api", "namespace": namespace},
        },
    }
