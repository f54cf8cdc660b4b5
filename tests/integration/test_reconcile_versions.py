"""An analysis starts only from the latest version of its AIAnalysis (real kube-apiserver): a stale
body — what kopf hands over when its watch lags behind its own patches — must not start a second
conversation for an object that was analysed already."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes import client

from aianalysis import kube, resources, settings
from aianalysis.controller import analysis_reconciler as aianalysis_reconciler
from aianalysis.controller import runtime as runtime_mod
from aianalysis.kube import objects as custom_objects
from aianalysis_dev import devcluster

pytestmark = pytest.mark.cluster

G, V, AIA = resources.GROUP, resources.VERSION, resources.AIANALYSIS_PLURAL

WORKFLOW = resources.RemediationWorkflowSpec.model_validate(
    {
        "workflowId": "restart-pods",
        "version": "1.0.0",
        "title": "Restart the pods",
        "description": "Restarts the pods of the owning workload.",
        "labels": {"signalTypes": ["CrashLoopBackOff"]},
        "riskLevel": "low",
        "parameters": [{"name": "TARGET_NAMESPACE", "type": "string", "required": True}],
        "execution": {"containerImage": "registry.example/wf/restart:1"},
    }
)


def analysis(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{G}/{V}",
        "kind": "AIAnalysis",
        "metadata": {"name": name},
        "spec": {
            "signal": {"type": "CrashLoopBackOff", "severity": "high"},
            "resource": {"kind": "Deployment", "name": "api", "namespace": namespace},
        },
    }


@pytest.fixture
async def runtime(cluster: devcluster.Cluster, crds: list[str]) -> AsyncIterator[runtime_mod.Runtime]:
    made = runtime_mod.Runtime.create(
        settings.Settings(provider="offline"), kube.api_client(str(cluster.kubeconfig))
    )
    made.catalog.upsert("restart-pods-v1", WORKFLOW)
    yield made
    await made.aclose()


def custom(runtime: runtime_mod.Runtime) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(runtime.api)


async def test_an_analysed_object_is_not_analysed_again(runtime: runtime_mod.Runtime, namespace: str) -> None:
    created = custom(runtime).create_namespaced_custom_object(G, V, namespace, AIA, analysis("a1", namespace))
    ref = custom_objects.Ref.of(created)
    first = await aianalysis_reconciler.drive(runtime, ref)
    done = custom(runtime).get_namespaced_custom_object(G, V, namespace, AIA, "a1")

    again = await aianalysis_reconciler.drive(runtime, ref)

    after = custom(runtime).get_namespaced_custom_object(G, V, namespace, AIA, "a1")
    assert first is not None and done["status"]["phase"] == "Completed"
    assert again is None
    assert after["metadata"]["resourceVersion"] == done["metadata"]["resourceVersion"]
    assert after["status"]["attempt"] == 1


async def test_an_object_changed_since_the_event_is_still_analysed_once(
    runtime: runtime_mod.Runtime, namespace: str
) -> None:
    body = custom(runtime).create_namespaced_custom_object(G, V, namespace, AIA, analysis("a2", namespace))
    custom(runtime).patch_namespaced_custom_object(
        G, V, namespace, AIA, "a2", {"metadata": {"labels": {"x": "y"}}}
    )

    transition = await aianalysis_reconciler.drive(runtime, custom_objects.Ref.of(body))

    after = custom(runtime).get_namespaced_custom_object(G, V, namespace, AIA, "a2")
    assert transition is not None
    assert after["status"]["phase"] == "Completed" and after["status"]["attempt"] == 1


def _object_reads(cluster: devcluster.Cluster) -> int:
    """GETs of single AIAnalyses the API server has answered so far (``apiserver_request_total``)."""
    text = cluster.kubectl("get", "--raw", "/metrics").stdout
    return sum(
        int(float(line.rsplit(" ", 1)[1]))
        for line in text.splitlines()
        if line.startswith("apiserver_request_total{")
        and 'resource="aianalyses"' in line
        and 'verb="GET"' in line
        and 'subresource=""' in line
    )


async def test_the_watch_events_body_spares_every_read_of_the_object(
    runtime: runtime_mod.Runtime, namespace: str, cluster: devcluster.Cluster
) -> None:
    body = custom(runtime).create_namespaced_custom_object(G, V, namespace, AIA, analysis("a3", namespace))
    before = _object_reads(cluster)

    transition = await aianalysis_reconciler.drive(runtime, custom_objects.Ref.of(body), body=body)

    reads = _object_reads(cluster) - before
    after = custom(runtime).get_namespaced_custom_object(G, V, namespace, AIA, "a3")
    assert transition is not None and transition.reason == after["status"]["reason"]
    assert after["status"]["phase"] == "Completed" and after["status"]["attempt"] == 1
    assert reads == 0, f"{reads} read(s) of the object the event had already delivered"


async def test_a_stale_event_body_never_starts_a_second_conversation(
    runtime: runtime_mod.Runtime, namespace: str
) -> None:
    created = custom(runtime).create_namespaced_custom_object(G, V, namespace, AIA, analysis("a4", namespace))
    ref = custom_objects.Ref.of(created)
    await aianalysis_reconciler.drive(runtime, ref, body=created)
    done = custom(runtime).get_namespaced_custom_object(G, V, namespace, AIA, "a4")

    # A lagging watch hands over the body as created (no status) after the analysis ended.
    again = await aianalysis_reconciler.drive(runtime, ref, body=created)

    after = custom(runtime).get_namespaced_custom_object(G, V, namespace, AIA, "a4")
    assert done["status"]["phase"] == "Completed"
    assert again is None
    assert after["metadata"]["resourceVersion"] == done["metadata"]["resourceVersion"]
    assert after["status"]["attempt"] == 1


async def test_an_event_body_behind_a_users_edit_is_analysed_once(
    runtime: runtime_mod.Runtime, namespace: str
) -> None:
    body = custom(runtime).create_namespaced_custom_object(G, V, namespace, AIA, analysis("a5", namespace))
    custom(runtime).patch_namespaced_custom_object(
        G, V, namespace, AIA, "a5", {"metadata": {"labels": {"x": "y"}}}
    )

    transition = await aianalysis_reconciler.drive(runtime, custom_objects.Ref.of(body), body=body)

    after = custom(runtime).get_namespaced_custom_object(G, V, namespace, AIA, "a5")
    assert transition is not None
    assert after["status"]["phase"] == "Completed" and after["status"]["attempt"] == 1
    assert after["metadata"]["labels"] == {"x": "y"}


async def test_a_stale_event_body_waiting_for_a_slot_never_writes_over_the_result(
    runtime: runtime_mod.Runtime, namespace: str
) -> None:
    created = custom(runtime).create_namespaced_custom_object(G, V, namespace, AIA, analysis("a6", namespace))
    ref = custom_objects.Ref.of(created)
    await aianalysis_reconciler.drive(runtime, ref, body=created)
    done = custom(runtime).get_namespaced_custom_object(G, V, namespace, AIA, "a6")
    slots = runtime.settings.max_concurrent_analyses
    for _ in range(slots):  # every slot is taken: the stale task would show Pending
        await runtime.semaphore.acquire()
    try:
        again = await asyncio.wait_for(aianalysis_reconciler.drive(runtime, ref, body=created), timeout=60)
    finally:
        for _ in range(slots):
            runtime.semaphore.release()

    after = custom(runtime).get_namespaced_custom_object(G, V, namespace, AIA, "a6")
    assert again is None
    assert after["status"] == done["status"]
    assert after["metadata"]["resourceVersion"] == done["metadata"]["resourceVersion"]
