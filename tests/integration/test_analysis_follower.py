"""The operator follows only unfinished AIAnalyses (real kube-apiserver, the CRD's selectable field
``status.phase``): a terminal analysis is never listed nor watched, a deleted in-flight analysis
has its task cancelled, and one that another writer ends while it waits is not analysed again —
its task finds the terminal status and writes nothing. Negative assertions wait for a sentinel
object the same watch delivers after the events under test, never a fixed sleep."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from kubernetes import client

from aianalysis import kube, resources, settings
from aianalysis.controller import handlers, process
from aianalysis.kube import objects as custom_objects
from aianalysis_dev import devcluster
from tests.support import analyses, typed

pytestmark = pytest.mark.cluster

G, V, AIA = resources.GROUP, resources.VERSION, resources.AIANALYSIS_PLURAL

WORKFLOW = analyses.RESTART_PODS
analysis = analyses.crashloop


ENDED_ELSEWHERE = {
    "phase": "Failed",
    "reason": "EndedElsewhere",
    "message": "another writer ended it",
    "completedAt": "2026-11-20T10:00:00Z",
}


class Seen:
    """What the operator's follower handed over, in order, besides doing what the operator does."""

    def __init__(self, runtime: process.Runtime) -> None:
        self.runtime = runtime
        self.events: list[tuple[str, str]] = []

    @property
    def seen(self) -> list[str]:
        return [name for what, name in self.events if what == "seen"]

    @property
    def left(self) -> list[str]:
        return [name for what, name in self.events if what == "left"]

    def on_seen(self, ref: custom_objects.Ref, version: str | None, body: dict[str, Any] | None) -> None:
        self.events.append(("seen", ref.name))
        handlers._analyze(self.runtime, ref, version, body)

    def on_left(self, ref: custom_objects.Ref) -> None:
        self.events.append(("left", ref.name))
        handlers._left(self.runtime, ref)


@pytest.fixture
async def runtime(cluster: devcluster.Cluster, crds: list[str]) -> AsyncIterator[process.Runtime]:
    made = process.Runtime.create(
        settings.Settings(
            llm=settings.LlmSettings(provider="offline"), analysis=settings.AnalysisSettings(max_concurrent=1)
        ),
        kube.api_client(str(cluster.kubeconfig)),
    )
    made.catalog.upsert("restart-pods-v1", WORKFLOW)
    yield made
    await made.aclose()


def custom(runtime: process.Runtime) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(typed.client())


def create(runtime: process.Runtime, namespace: str, name: str, *, status: Any = None) -> dict[str, Any]:
    created: dict[str, Any] = custom(runtime).create_namespaced_custom_object(
        G, V, namespace, AIA, analysis(name, namespace)
    )
    if status is not None:
        created = custom(runtime).patch_namespaced_custom_object_status(
            G, V, namespace, AIA, name, {"status": status}
        )
    return created


def read(runtime: process.Runtime, namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = custom(runtime).get_namespaced_custom_object(G, V, namespace, AIA, name)
    return found


async def until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 30.0 + handlers.LEFT_GRACE_SECONDS
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def task_ended(task: asyncio.Task[None], what: str) -> None:
    """Returns once ``task`` ended and its done callbacks ran — the workers' bookkeeping among them,
    which was added before ``asyncio.wait``'s own (polling ``task.done`` could look in between)."""
    done, _ = await asyncio.wait([task], timeout=30.0 + handlers.LEFT_GRACE_SECONDS)
    if not done:
        raise AssertionError(f"timed out waiting for {what}")


async def follow(runtime: process.Runtime, namespace: str) -> Seen:
    seen = Seen(runtime)
    await runtime.follow_analyses(namespaces=[namespace], on_seen=seen.on_seen, on_left=seen.on_left)
    return seen


async def test_terminal_analyses_are_never_listed_nor_watched(
    runtime: process.Runtime, namespace: str
) -> None:
    completed = {**ENDED_ELSEWHERE, "phase": "Completed", "reason": "Completed"}
    create(runtime, namespace, "done-before", status=completed)
    create(runtime, namespace, "failed-before", status=ENDED_ELSEWHERE)
    create(runtime, namespace, "open-before")
    seen = await follow(runtime, namespace)
    assert runtime.analyses is not None and runtime.analyses.listed
    listed = list(seen.seen)
    # An object must first be created to be given a terminal status: the watch sees it leave.
    create(runtime, namespace, "done-after", status=completed)
    create(runtime, namespace, "sentinel")
    await until(lambda: "sentinel" in seen.seen, "the sentinel")

    assert listed == ["open-before"]
    assert "done-before" not in seen.seen and "failed-before" not in seen.seen
    assert "done-after" in seen.left, "a watch event moved it out of the selection"


async def test_a_deleted_in_flight_analysis_has_its_task_cancelled(
    runtime: process.Runtime, namespace: str
) -> None:
    await runtime.semaphore.acquire()  # the one slot is taken: the analysis waits in it
    created = create(runtime, namespace, "deleted")
    uid = created["metadata"]["uid"]
    seen = await follow(runtime, namespace)
    await until(
        lambda: (read(runtime, namespace, "deleted").get("status") or {}).get("reason") == "ConcurrencyLimit",
        "the analysis waiting for a slot",
    )
    task = runtime.workers._tasks[uid]

    custom(runtime).delete_namespaced_custom_object(G, V, namespace, AIA, "deleted")
    await task_ended(task, "its task to end")

    assert task.cancelled(), "cancelled while it still waited for a slot, not ended by itself"
    assert "deleted" in seen.left
    assert len(runtime.workers) == 0 and uid not in runtime.workers._finished_at


async def test_an_analysis_ended_by_another_writer_is_not_analysed_again(
    runtime: process.Runtime, namespace: str
) -> None:
    await runtime.semaphore.acquire()
    created = create(runtime, namespace, "ended")
    uid = created["metadata"]["uid"]
    seen = await follow(runtime, namespace)
    await until(
        lambda: (read(runtime, namespace, "ended").get("status") or {}).get("reason") == "ConcurrencyLimit",
        "the analysis waiting for a slot",
    )
    task = runtime.workers._tasks[uid]
    ended = custom(runtime).patch_namespaced_custom_object_status(
        G, V, namespace, AIA, "ended", {"status": ENDED_ELSEWHERE}
    )
    await until(lambda: "ended" in seen.left, "the watch to see it leave")
    create(runtime, namespace, "sentinel")
    await until(lambda: "sentinel" in seen.seen, "the sentinel")
    # Past the grace the operator asked whether it was deleted: it was not, so the task runs on.
    await until(lambda: not runtime.workers._checks, "the deletion check to end")

    assert not task.done(), "not cancelled: the object still exists"
    runtime.semaphore.release()
    await task_ended(task, "its task to end")
    after = read(runtime, namespace, "ended")

    assert not task.cancelled()
    assert after["metadata"]["resourceVersion"] == ended["metadata"]["resourceVersion"], "nothing written"
    assert after["status"]["reason"] == "EndedElsewhere"
    assert ("seen", "ended") not in seen.events[seen.events.index(("left", "ended")) :], "never again"
    assert uid not in runtime.workers._tasks
    assert uid not in runtime.workers._finished_at, "nothing kept of an object the watch excludes"
