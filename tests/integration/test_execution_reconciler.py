"""The WorkflowExecution reconciler against the real kube-apiserver: the executor owns the object,
so our condition is merged into what is there — a condition the executor writes between our read
and our write is kept — and no finalizer is ever added."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes import client

from aianalysis import kube, resources, settings
from aianalysis.controller import execution_reconciler, process
from aianalysis.kube import objects as custom_objects
from aianalysis_dev import devcluster
from tests.support import typed

pytestmark = pytest.mark.cluster

G, V, WFE = resources.GROUP, resources.VERSION, resources.WORKFLOWEXECUTION_PLURAL
EXECUTOR_CONDITION = {
    "type": "Executed",
    "status": "False",
    "reason": "StepFailed",
    "message": "step 2 failed",
    "lastTransitionTime": "2026-11-22T10:00:00Z",
}


@pytest.fixture
async def runtime(cluster: devcluster.Cluster, crds: list[str]) -> AsyncIterator[process.Runtime]:
    made = process.Runtime.create(
        settings.Settings(
            llm=settings.LlmSettings(provider="offline"), retries=settings.RetriesSettings(delay_seconds=0.01)
        ),
        kube.api_client(str(cluster.kubeconfig)),
    )
    yield made
    await made.aclose()


async def no_sleep(_: float) -> None:
    return None


async def test_a_condition_the_executor_writes_meanwhile_is_kept(
    runtime: process.Runtime,
    namespace: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    custom = client.CustomObjectsApi(typed.client())
    body = {
        "apiVersion": f"{G}/{V}",
        "kind": "WorkflowExecution",
        "metadata": {"name": "raced"},
        "spec": {"analysisRef": "gone", "workflowRef": {"workflowId": "restart-pods", "version": "1.0.0"}},
    }
    created = custom.create_namespaced_custom_object(G, V, namespace, WFE, body)
    custom.patch_namespaced_custom_object_status(
        G, V, namespace, WFE, "raced", {"status": {"phase": "Failed", "failureDetails": {"reason": "Error"}}}
    )
    real_get, reads = custom_objects.get, []

    async def get_then_executor_writes(*args: Any) -> dict[str, Any] | None:
        found = await real_get(*args)
        if args[2] == WFE:
            reads.append(1)
            if len(reads) == 1:  # between our read and our write, the executor adds its condition
                custom.patch_namespaced_custom_object_status(
                    G, V, namespace, WFE, "raced", {"status": {"conditions": [EXECUTOR_CONDITION]}}
                )
        return found

    monkeypatch.setattr(custom_objects, "get", get_then_executor_writes)

    transition = await execution_reconciler.start_recovery(
        runtime, custom_objects.Ref.of(created), sleep=no_sleep
    )

    after = custom.get_namespaced_custom_object(G, V, namespace, WFE, "raced")
    types = [c["type"] for c in after["status"]["conditions"]]
    assert transition is not None and transition.reason == "AnalysisNotFound"
    assert types == ["Executed", execution_reconciler.RECOVERY_CONDITION], "the executor's condition kept"
    assert "changed meanwhile" in caplog.text, "the first write was refused as stale, the next try merged"
    assert not after["metadata"].get("finalizers")
