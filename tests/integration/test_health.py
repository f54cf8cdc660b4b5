"""Supervised background work and honest health, against the real kube-apiserver: a retried
startup neither re-binds ports nor opens a second set of clients, and ``/healthz`` / ``/readyz``
go red when the catalog sync is dead or stale."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import kopf
import pytest
from kubernetes import client

from aianalysis import kube, settings
from aianalysis.catalog import sync as catalog_sync
from aianalysis.controller import (
    handlers,  # what `aianalysis run` imports before it starts kopf
    process,
)
from aianalysis_dev import devcluster
from tests.support import programs

pytestmark = pytest.mark.cluster


free_port = programs.free_port


async def probe(port: int, path: str) -> httpx.Response:
    async with httpx.AsyncClient() as http:
        return await http.get(f"http://127.0.0.1:{port}{path}", timeout=10)


async def test_a_retried_startup_neither_rebinds_ports_nor_opens_second_clients(
    cluster: devcluster.Cluster, crds: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    health, metrics_port = free_port(), free_port()
    for key, value in {
        "AIANALYSIS_PROVIDER": "offline",
        "AIANALYSIS_HEALTH_PORT": str(health),
        "AIANALYSIS_METRICS_PORT": str(metrics_port),
    }.items():
        monkeypatch.setenv(key, value)
    real_client = kube.api_client
    monkeypatch.setattr(kube, "api_client", lambda **options: real_client(str(cluster.kubeconfig), **options))
    real_load, calls = catalog_sync.CatalogSync.load, []

    def flaky_load(self: catalog_sync.CatalogSync) -> int:
        calls.append(1)
        if len(calls) == 1:
            raise client.ApiException(status=503, reason="the API server is starting")
        return real_load(self)

    monkeypatch.setattr(catalog_sync.CatalogSync, "load", flaky_load)
    config, memo = kopf.OperatorSettings(), kopf.Memo()
    try:
        with pytest.raises(client.ApiException):
            await handlers.startup(settings=config, memo=memo)
        first = memo.runtime
        not_ready = await probe(health, "/readyz")

        await handlers.startup(settings=config, memo=memo)  # what kopf does after a failed startup

        assert memo.runtime is first, "the same clients, not a second set"
        assert not_ready.status_code == 503 and "catalog: not loaded" in not_ready.text
        assert (await probe(health, "/readyz")).status_code == 200
        assert (await probe(health, "/healthz")).status_code == 200
        assert (await probe(metrics_port, "/metrics")).status_code == 200
        assert len(calls) == 2
    finally:
        await handlers.cleanup(memo=memo)


@pytest.fixture
async def runtime(cluster: devcluster.Cluster, crds: Any) -> AsyncIterator[process.Runtime]:
    made = process.Runtime.create(
        settings.Settings(
            llm=settings.LlmSettings(provider="offline"),
            catalog=settings.CatalogSettings(sync_stale_seconds=900),
        ),
        kube.api_client(str(cluster.kubeconfig)),
    )
    yield made
    await made.aclose()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the kill under test
async def test_a_dead_catalog_sync_takes_liveness_and_readiness_down(runtime: process.Runtime) -> None:
    def killed() -> None:
        raise SystemExit("the thread is killed")  # ends a thread silently, as an uncaught kill would

    runtime.catalog_sync._watch = killed  # type: ignore[method-assign]  # the fault under test
    port = free_port()
    await runtime.serve_health(port)
    await runtime.load_catalog()
    thread = runtime.catalog_sync._thread
    assert thread is not None
    await asyncio.to_thread(thread.join, 30)  # the barrier: the thread has ended

    live, ready = await probe(port, "/healthz"), await probe(port, "/readyz")

    assert not runtime.catalog_sync.alive
    assert live.status_code == 503 and "catalog sync" in live.text and "dead" in live.text
    assert ready.status_code == 503 and "dead" in ready.text


async def test_a_stale_catalog_sync_takes_readiness_down_but_not_liveness(
    runtime: process.Runtime,
) -> None:
    port = free_port()
    await runtime.serve_health(port)
    await runtime.load_catalog()
    fresh = await probe(port, "/readyz")

    runtime.catalog_sync.last_success = time.time() - 901  # drive the clock: nothing heard for 901 s

    stale_ready, stale_live = await probe(port, "/readyz"), await probe(port, "/healthz")
    assert fresh.status_code == 200
    assert stale_ready.status_code == 503 and "nothing heard from the API server" in stale_ready.text
    assert stale_live.status_code == 200, "a stale sync is not a reason to restart the process"


async def test_a_catalog_sync_that_heard_the_server_records_when(runtime: process.Runtime) -> None:
    before = time.time()
    await runtime.load_catalog()

    assert runtime.catalog_sync.last_success is not None and runtime.catalog_sync.last_success >= before
