"""The LLM budget on the real apiserver, with the scripted Messages API and the real SDK: with a
budget of N conversations per hour the N+1-th analysis waits visibly (``Pending``, ``Ready=False``
reason ``BudgetExhausted``) and starts when the budget window moves. The window is moved by a
manual clock the test advances, not by sleeping an hour."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from kubernetes import client

from aianalysis import kube, metrics, resources, settings
from aianalysis.controller import analysis_reconciler as aianalysis_reconciler
from aianalysis.controller import budget_store, llm_budget, process
from aianalysis.kube import objects as custom_objects
from aianalysis_dev import devcluster
from tests.support import analyses, typed
from tests.support import messages_server as ms
from tests.support.clock import ManualClock
from tests.support.fake_llm import GoodLLM

pytestmark = pytest.mark.cluster

G, V, AIA = resources.GROUP, resources.VERSION, resources.AIANALYSIS_PLURAL
BUDGET = 2

WORKFLOW = analyses.RESTART_PODS


@pytest.fixture
def llm_server() -> Iterator[ms.MessagesServer]:
    with ms.MessagesServer(policy=GoodLLM()) as server:
        yield server


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def runtime(
    cluster: devcluster.Cluster, crds: list[str], llm_server: ms.MessagesServer, clock: ManualClock
) -> AsyncIterator[process.Runtime]:
    config = settings.Settings(
        llm=settings.LlmSettings(
            provider="anthropic",
            api_key="sk-test-budget",
            anthropic_base_url=llm_server.base_url,
            max_retries=0,
        ),
        budget=settings.BudgetSettings(conversations_per_hour=BUDGET),
    )
    made = process.Runtime.create(config, kube.api_client(str(cluster.kubeconfig)), clock=clock)
    made.catalog.upsert("restart-pods-v1", WORKFLOW)
    yield made
    await made.aclose()


def conversations(server: ms.MessagesServer) -> int:
    """Conversations started: requests that carry only the incident prompt."""
    return sum(1 for r in server.requests if len(r.body["messages"]) == 1)


def create(runtime: process.Runtime, namespace: str, name: str) -> dict[str, Any]:
    body = {
        "apiVersion": f"{G}/{V}",
        "kind": "AIAnalysis",
        "metadata": {"name": name},
        "spec": {
            "signal": {"type": "CrashLoopBackOff", "severity": "high"},
            "resource": {"kind": "Deployment", "name": name, "namespace": namespace},
        },
    }
    created: dict[str, Any] = client.CustomObjectsApi(typed.client()).create_namespaced_custom_object(
        G, V, namespace, AIA, body
    )
    return created


def read(runtime: process.Runtime, namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = client.CustomObjectsApi(typed.client()).get_namespaced_custom_object(
        G, V, namespace, AIA, name
    )
    return found


async def reconcile(runtime: process.Runtime, namespace: str, body: dict[str, Any]) -> Any:
    return await aianalysis_reconciler.drive(runtime, custom_objects.Ref.of(body))


async def wait_until(predicate: Any, *, what: str) -> None:
    deadline = time.monotonic() + 30.0
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def test_the_analysis_over_budget_waits_then_proceeds_when_the_window_moves(
    runtime: process.Runtime, namespace: str, llm_server: ms.MessagesServer, clock: ManualClock
) -> None:
    for i in range(BUDGET):
        await reconcile(runtime, namespace, create(runtime, namespace, f"within-{i}"))
    assert conversations(llm_server) == BUDGET

    over = asyncio.create_task(reconcile(runtime, namespace, create(runtime, namespace, "over-budget")))
    await wait_until(
        lambda: (
            (read(runtime, namespace, "over-budget").get("status") or {}).get("reason") == "BudgetExhausted"
        ),
        what="the waiting status",
    )

    waiting = read(runtime, namespace, "over-budget")["status"]
    assert waiting["phase"] == "Pending"
    [ready] = waiting["conditions"]
    assert (ready["type"], ready["status"], ready["reason"]) == ("Ready", "False", "BudgetExhausted")
    assert f"{BUDGET} of {BUDGET} conversations in the last hour" in ready["message"]
    assert conversations(llm_server) == BUDGET, "no conversation started over budget"
    assert metrics.REGISTRY.get_sample_value("aianalysis_analyses_waiting", {"reason": "budget"}) == 1
    assert not over.done()

    await clock.advance(llm_budget.HOUR_SECONDS)
    await asyncio.wait_for(over, 30)

    done = read(runtime, namespace, "over-budget")["status"]
    assert done["phase"] == "Completed" and done["selectedWorkflow"]["workflowId"] == "restart-pods"
    assert done["attempt"] == 1
    assert conversations(llm_server) == BUDGET + 1
    assert metrics.REGISTRY.get_sample_value("aianalysis_analyses_waiting", {"reason": "budget"}) == 0


async def test_an_analysis_that_ended_while_waiting_never_spends_budget(
    runtime: process.Runtime, namespace: str, llm_server: ms.MessagesServer, clock: ManualClock
) -> None:
    for i in range(BUDGET):
        await reconcile(runtime, namespace, create(runtime, namespace, f"within-{i}"))
    body = create(runtime, namespace, "resolved-meanwhile")
    waiter = asyncio.create_task(reconcile(runtime, namespace, body))
    await wait_until(lambda: runtime.budget.waiting == 1, what="the analysis to wait")

    # What the intake does when the alert resolves: end it, then withdraw its ticket.
    client.CustomObjectsApi(typed.client()).patch_namespaced_custom_object_status(
        G, V, namespace, AIA, "resolved-meanwhile",
        {"status": {"phase": "Completed", "reason": "AlertResolved", "message": "resolved"}},
    )  # fmt: skip
    assert runtime.budget.withdraw(body["metadata"]["uid"])

    assert await asyncio.wait_for(waiter, 30) is None
    assert read(runtime, namespace, "resolved-meanwhile")["status"]["reason"] == "AlertResolved"
    assert runtime.budget.ledger.used(clock.now())["conversations"] == BUDGET
    assert conversations(llm_server) == BUDGET


async def test_a_restarted_operator_keeps_the_budget_spent_by_its_previous_life(
    cluster: devcluster.Cluster,
    crds: list[str],
    namespace: str,
    llm_server: ms.MessagesServer,
    clock: ManualClock,
) -> None:
    config = settings.Settings(
        llm=settings.LlmSettings(
            provider="anthropic",
            api_key="sk-test-budget",
            anthropic_base_url=llm_server.base_url,
            max_retries=0,
        ),
        budget=settings.BudgetSettings(conversations_per_hour=BUDGET, namespace=namespace),
    )

    def start() -> process.Runtime:
        made = process.Runtime.create(config, kube.api_client(str(cluster.kubeconfig)), clock=clock)
        made.catalog.upsert("restart-pods-v1", WORKFLOW)
        return made

    first = start()
    await first.budget.load()
    for i in range(BUDGET):
        await reconcile(first, namespace, create(first, namespace, f"before-restart-{i}"))
    await first.aclose()
    recorded = client.CoreV1Api(typed.client()).read_namespaced_config_map(budget_store.NAME, namespace)
    assert len(json.loads(recorded.data["conversations"])) == BUDGET

    second = start()  # the next life of the operator (or the standby taking over)
    await second.budget.load()
    after = asyncio.create_task(reconcile(second, namespace, create(second, namespace, "after-restart")))
    await wait_until(
        lambda: (
            (read(second, namespace, "after-restart").get("status") or {}).get("reason") == "BudgetExhausted"
        ),
        what="the analysis after the restart to wait",
    )
    assert (
        f"{BUDGET} of {BUDGET} conversations in the last hour"
        in (read(second, namespace, "after-restart")["status"]["message"])
    )
    assert conversations(llm_server) == BUDGET, "the restart did not reset the window"

    await clock.advance(llm_budget.HOUR_SECONDS)
    await asyncio.wait_for(after, 30)
    assert read(second, namespace, "after-restart")["status"]["phase"] == "Completed"
    assert conversations(llm_server) == BUDGET + 1
    await second.aclose()


async def test_the_chart_s_empty_record_is_written_and_keeps_helm_s_labels_and_annotations(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    """The chart makes the record (``helm uninstall`` removes it; the Role needs no create): the
    first write fills it and keeps what made it — Helm's ownership annotations included."""
    chart_labels = {"app.kubernetes.io/managed-by": "Helm"}
    annotations = {"meta.helm.sh/release-name": "aianalysis-operator"}
    meta = client.V1ObjectMeta(
        name=budget_store.NAME, namespace=namespace, labels=chart_labels, annotations=annotations
    )
    core = client.CoreV1Api(typed.client())
    core.create_namespaced_config_map(namespace, client.V1ConfigMap(metadata=meta))
    store = budget_store.ConfigMapStore(kube.api_client(str(cluster.kubeconfig)), namespace)
    data, version = await store.read()
    assert data == {} and await store.write({"conversations": "[]"}, version)
    written = core.read_namespaced_config_map(budget_store.NAME, namespace)
    assert written.data == {"conversations": "[]"} and written.metadata.annotations == annotations
    assert written.metadata.labels == {**chart_labels, **budget_store.LABELS}
