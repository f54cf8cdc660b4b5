"""Several executor replicas deciding at the same moment cannot overshoot a cap together: the start
lock (a Lease) serialises "count the executions → mark this one started" across processes. Two
"replicas" (their own API clients and identities, the executor's ``preflight`` as it runs before a
Job) race on the real kube-apiserver; exactly one may start, the other is blocked with the guard's
reason. A dead holder's Lease is overtaken once it expired; a live one is waited for, boundedly."""

from __future__ import annotations

import asyncio
import datetime
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes import client

from aianalysis import errors, kube, resources, settings
from aianalysis.executor import guards, preflight, startlock
from aianalysis.kube import client as kube_client
from aianalysis.kube import config as kube_config
from aianalysis.kube import leases, objects, rest
from aianalysis_dev import devcluster
from tests.support import hanging, typed

pytestmark = pytest.mark.cluster

G, V, WFE = resources.GROUP, resources.VERSION, resources.WORKFLOWEXECUTION_PLURAL
ROUNDS = 3


@pytest.fixture
async def replicas(cluster: devcluster.Cluster, crds: list[str]) -> AsyncIterator[list[Any]]:
    """Two API clients: two executor processes."""
    made = [kube.api_client(str(cluster.kubeconfig)) for _ in range(2)]
    yield made
    for api in made:
        api.close()


def execution(api: Any, namespace: str, name: str, target: str) -> dict[str, Any]:
    body: dict[str, Any] = client.CustomObjectsApi(typed.client()).create_namespaced_custom_object(
        G, V, namespace, WFE,
        {
            "apiVersion": f"{G}/{V}", "kind": "WorkflowExecution", "metadata": {"name": name},
            "spec": {
                "analysisRef": "api-fix",
                "workflowRef": {"workflowId": "restart-pods", "version": "1.0.0"},
                "targetResource": {"kind": "Deployment", "name": target, "namespace": namespace},
            },
        },
    )  # fmt: skip
    return body


def running_elsewhere(api: Any) -> int:
    """Executions the guards count as running in the whole (shared) test cluster right now."""
    listed: Any = client.CustomObjectsApi(typed.client()).list_cluster_custom_object(G, V, WFE)
    runs = [guards.run_of(body) for body in listed["items"]]
    return len([r for r in runs if r.ran and r.phase not in guards.TERMINAL])


async def race(
    replicas: list[Any], bodies: list[dict[str, Any]], config: list[settings.Settings]
) -> list[Any]:
    async def decide(api: Any, body: dict[str, Any], s: settings.Settings) -> Any:
        spec = resources.WorkflowExecutionSpec.model_validate(body["spec"])
        return await preflight.before_job(api, body, spec, settings=s, now=resources.utcnow())

    return list(await asyncio.gather(*(decide(*args) for args in zip(replicas, bodies, config, strict=True))))


@pytest.mark.parametrize("guard", ["ConcurrencyLimit", "TargetBusy"])
async def test_two_replicas_starting_at_once_never_overshoot(
    replicas: list[Any], namespace: str, guard: str
) -> None:
    for n in range(ROUNDS):
        cap = running_elsewhere(replicas[0]) + 1  # room for exactly one more, cluster-wide
        config = [
            settings.Settings(
                llm=settings.LlmSettings(provider="offline"),
                leadership=settings.LeadershipSettings(identity=f"executor-{who}"),
                guards=settings.GuardsSettings(max_concurrent=cap, start_lock_namespace=namespace),
            )
            for who in "ab"
        ]
        targets = ["api", "api"] if guard == "TargetBusy" else ["api", "web"]
        bodies = [
            execution(replicas[0], namespace, f"{target}-{n}-{who}", f"{target}-{n}")
            for who, target in zip("ab", targets, strict=True)
        ]
        steps = await race(replicas, bodies, config)
        started = [s for s in steps if isinstance(s, preflight.Go)]
        blocked = [s.block for s in steps if isinstance(s, preflight.Blocked)]
        assert len(started) == 1 and [b.reason for b in blocked] == [guard], steps
    lease = leases.fetch(replicas[0], namespace=namespace, name=startlock.NAME)
    assert lease is not None and lease.holder_identity is None  # released after every start


async def test_a_dead_holder_is_overtaken_and_a_live_one_waited_for_boundedly(
    replicas: list[Any], namespace: str
) -> None:
    now = datetime.datetime.now(datetime.UTC)
    ghost = leases.Lease(
        namespace=namespace, name=startlock.NAME, holder_identity="executor-gone",
        lease_duration_seconds=1, acquire_time=now, renew_time=now, lease_transitions=0,
    )  # fmt: skip
    assert leases.store(replicas[0], ghost)
    lock = startlock.StartLock(api=replicas[1], namespace=namespace, identity="executor-b", wait_seconds=10)
    async with lock.held():  # waits out the dead holder's second, then holds it
        held = leases.fetch(replicas[0], namespace=namespace, name=startlock.NAME)
        assert held is not None and held.holder_identity == "executor-b" and held.lease_transitions == 1
        other = startlock.StartLock(
            api=replicas[0], namespace=namespace, identity="executor-a", wait_seconds=0.5
        )
        with pytest.raises(errors.ClusterError, match=r"start lock .* is held by executor-b") as refused:
            async with other.held():
                pass
        assert refused.value.retryable  # the executor's handler tries again later


async def test_a_call_wedged_while_the_lock_is_held_ends_before_the_hold_could_be_overtaken(
    replicas: list[Any], namespace: str
) -> None:
    """A call that never gets an answer (here: to a server that accepts and never answers; the
    client allows 30 s) inside the held section ends ``HOLD_MARGIN_SECONDS`` before the Lease
    could be overtaken: the pass fails retryably, the lock is given back, the next start takes it."""
    hold = 8
    lock = startlock.StartLock(api=replicas[0], namespace=namespace, identity="executor-a", hold_seconds=hold)
    with (
        hanging.Silent() as silent,
        rest.ApiClient(
            kube_config.Connection(server=silent.url), pool_size=1, timeouts=kube_client.timeouts()
        ) as wedged,
    ):
        began = time.monotonic()
        with pytest.raises(errors.ClusterError) as failed:
            async with lock.held():
                await objects.get(wedged, namespace, WFE, "counted-under-the-lock")
        took = time.monotonic() - began
    assert failed.value.retryable and "no answer within" in str(failed.value)
    assert took <= hold - startlock.HOLD_MARGIN_SECONDS + 1.5, f"{took:.1f}s"
    assert kube_client.timeouts().request_seconds > hold  # the call alone would have outlived the hold
    nxt = startlock.StartLock(api=replicas[1], namespace=namespace, identity="executor-b", wait_seconds=2)
    async with nxt.held():
        held = leases.fetch(replicas[1], namespace=namespace, name=startlock.NAME)
        assert held is not None and held.holder_identity == "executor-b"
