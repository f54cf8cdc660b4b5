"""An analysis starts only from the latest version of its AIAnalysis (real kube-apiserver): a stale
body — what kopf hands over when its watch lags behind its own patches — must not start a second
conversation for an object that was analysed already."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from kubernetes import client

from aianalysis import kube, resources, settings
from aianalysis.controller import analysis_reconciler as aianalysis_reconciler
from aianalysis.controller import process
from aianalysis.kube import objects as custom_objects
from aianalysis_dev import devcluster
from tests.support import analyses, typed

pytestmark = pytest.mark.cluster

G, V, AIA = resources.GROUP, resources.VERSION, resources.AIANALYSIS_PLURAL

WORKFLOW = analyses.RESTART_PODS
analysis = analyses.crashloop


@pytest.fixture
async def runtime(cluster: devcluster.Cluster, crds: list[str]) -> AsyncIterator[process.Runtime]:
    made = process.Runtime.create(
        settings.Settings(llm=settings.LlmSettings(provider="offline")),
        kube.api_client(str(cluster.kubeconfig)),
    )
    made.catalog.upsert("restart-pods-v1", WORKFLOW)
    yield made
    await made.aclose()


def custom(runtime: process.Runtime) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(typed.client())


async def test_an_analysed_object_is_not_analysed_again(runtime: process.Runtime, namespace: str) -> None:
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
    runtime: process.Runtime, namespace: str
) -> None:
    body = custom(runtime).create_namespaced_custom_object(G, V, namespace, AIA, analysis("a2", namespace))
    custom(runtime).patch_namespaced_custom_object(
        G, V, namespace, AIA, "a2", {"metadata": {"labels": {"x": "y"}}}
    )

    transition = await aianalysis_reconciler.drive(runtime, custom_objects.Ref.of(body))

    after = custom(runtime).get_namespaced_custom_object(G, V, namespace, AIA, "a2")
    assert transition is not None
    assert after["status"]["phase"] == "Completed" and after["status"]["attempt"] == 1


def _object_requests(cluster: devcluster.Cluster) -> dict[str, int]:
    """Requests for single AIAnalyses the API server has answered so far, by verb."""
    text = cluster.kubectl("get", "--raw", "/metrics").stdout
    counts: dict[str, int] = {}
    for line in text.splitlines():
        if line.startswith("apiserver_request_total{") and 'resource="aianalyses"' in line:
            verb = line.split('verb="', 1)[1].split('"', 1)[0]
            counts[verb] = counts.get(verb, 0) + int(float(line.rsplit(" ", 1)[1]))
    return counts


async def test_an_analysis_reads_its_object_once_and_writes_its_two_statuses(
    runtime: process.Runtime, namespace: str, cluster: devcluster.Cluster
) -> None:
    body = custom(runtime).create_namespaced_custom_object(G, V, namespace, AIA, analysis("a3", namespace))
    before = _object_requests(cluster)

    transition = await aianalysis_reconciler.drive(runtime, custom_objects.Ref.of(body))

    after = _object_requests(cluster)
    used = {verb: after.get(verb, 0) - before.get(verb, 0) for verb in after}
    done = custom(runtime).get_namespaced_custom_object(G, V, namespace, AIA, "a3")
    assert transition is not None and done["status"]["phase"] == "Completed"
    # One read at the start; Investigating, then the result, each bound to the version the last
    # write returned — no read between them.
    assert used.get("GET") == 1 and used.get("PATCH") == 2, used


async def test_an_analysis_ended_by_another_writer_while_it_waited_is_left_as_it_is(
    runtime: process.Runtime, namespace: str
) -> None:
    created = custom(runtime).create_namespaced_custom_object(G, V, namespace, AIA, analysis("a6", namespace))
    slots = runtime.settings.analysis.max_concurrent
    for _ in range(slots):  # every slot is taken: the analysis shows Pending and waits
        await runtime.semaphore.acquire()
    task = asyncio.create_task(aianalysis_reconciler.drive(runtime, custom_objects.Ref.of(created)))
    try:
        for _ in range(400):
            st = custom(runtime).get_namespaced_custom_object(G, V, namespace, AIA, "a6").get("status") or {}
            if st.get("phase") == "Pending":
                break
            await asyncio.sleep(0.05)
        theirs = {"phase": "Failed", "reason": "Cancelled", "message": "the alert resolved meanwhile"}
        custom(runtime).patch_namespaced_custom_object_status(G, V, namespace, AIA, "a6", {"status": theirs})
        ended = custom(runtime).get_namespaced_custom_object(G, V, namespace, AIA, "a6")
    finally:
        for _ in range(slots):
            runtime.semaphore.release()
    transition = await asyncio.wait_for(task, timeout=60)

    after = custom(runtime).get_namespaced_custom_object(G, V, namespace, AIA, "a6")
    assert st.get("phase") == "Pending"
    assert transition is None
    assert after["status"] == ended["status"] and "attempt" not in after["status"]
    assert after["metadata"]["resourceVersion"] == ended["metadata"]["resourceVersion"]


async def test_a_body_the_watch_delivered_late_never_starts_a_second_conversation(
    runtime: process.Runtime, namespace: str
) -> None:
    created = custom(runtime).create_namespaced_custom_object(G, V, namespace, AIA, analysis("a7", namespace))
    ref = custom_objects.Ref.of(created)
    await aianalysis_reconciler.drive(runtime, ref, given=[created])
    done = custom(runtime).get_namespaced_custom_object(G, V, namespace, AIA, "a7")

    # A lagging watch hands over the body as created (no status) after the analysis ended.
    again = await aianalysis_reconciler.drive(runtime, ref, given=[created])

    after = custom(runtime).get_namespaced_custom_object(G, V, namespace, AIA, "a7")
    assert done["status"]["phase"] == "Completed"
    assert again is None
    assert after["metadata"]["resourceVersion"] == done["metadata"]["resourceVersion"]
    assert after["status"]["attempt"] == 1


async def test_the_body_of_a_new_object_spares_every_read_of_it(
    runtime: process.Runtime, namespace: str, cluster: devcluster.Cluster
) -> None:
    body = custom(runtime).create_namespaced_custom_object(G, V, namespace, AIA, analysis("a8", namespace))
    given = [body]
    before = _object_requests(cluster)

    transition = await aianalysis_reconciler.drive(runtime, custom_objects.Ref.of(body), given=given)

    after = _object_requests(cluster)
    used = {verb: after.get(verb, 0) - before.get(verb, 0) for verb in after}
    assert transition is not None and not given, "the first read took the body out"
    assert used.get("GET", 0) == 0 and used.get("PATCH") == 2, used
