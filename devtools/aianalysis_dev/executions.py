"""What a workflow executor would write, for the demo and the end-to-end tests: a WorkflowExecution
of an analysis's selected workflow, then its ``Failed`` status."""

from __future__ import annotations

import json
import time
from typing import Any

from aianalysis_dev import devcluster


def fail_execution(
    cluster: devcluster.Cluster,
    namespace: str,
    *,
    analysis: dict[str, Any],
    name: str,
    reason: str,
    message: str,
    step_index: int = 0,
    step_name: str = "apply",
    exit_code: int = 1,
    execution_time: str = "1m0s",
) -> None:
    """What an executor would write: a WorkflowExecution of the analysis's selected workflow, then
    its ``Failed`` status with a Kubernetes reason code (through ``/status``, as a kubelet would)."""
    selected = analysis["status"]["selectedWorkflow"]
    execution = {
        "apiVersion": "kubernaut.io/v1alpha1",
        "kind": "WorkflowExecution",
        "metadata": {"name": name},
        "spec": {
            "analysisRef": analysis["metadata"]["name"],
            "workflowRef": {k: selected[k] for k in ("workflowId", "version", "containerImage")},
            "parameters": selected.get("parameters") or {},
            "targetResource": analysis["spec"]["resource"],
        },
    }
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(execution))
    failure = {
        "phase": "Failed",
        "failureDetails": {
            "failedStepIndex": step_index,
            "failedStepName": step_name,
            "reason": reason,
            "message": message,
            "exitCode": exit_code,
            "failedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "executionTime": execution_time,
        },
    }
    cluster.kubectl(
        "patch", "workflowexecution", name, "-n", namespace, "--subresource=status", "--type=merge",
        "-p", json.dumps({"status": failure}),
    )  # fmt: skip
