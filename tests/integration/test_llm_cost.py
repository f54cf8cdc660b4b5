"""The cost of an analysis in money, end to end in process: the reconciler on the real API server,
Claude through the real SDK against the scripted Messages API billing known token counts, the
status (and ``kubectl get aia -o wide``) carrying what they cost at the price table, the metric
summing it per namespace."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aianalysis import kube, metrics, resources, settings
from aianalysis.controller import analysis_reconciler, process
from aianalysis.kube import objects
from aianalysis_dev import devcluster
from tests.integration.test_aianalysis_reconciler import create, read
from tests.support import analyses
from tests.support import messages_server as ms
from tests.support.fake_llm import GoodLLM

pytestmark = pytest.mark.cluster

BILLED = ms.usage(1200, 150, cache_read=900, cache_write=300)
"""Each of the scripted model's three turns (search, details, submit) bills these."""


@pytest.fixture
def server() -> Iterator[ms.MessagesServer]:
    with ms.MessagesServer(policy=GoodLLM(usage=BILLED)) as running:
        yield running


async def analyse(
    cluster: devcluster.Cluster, server: ms.MessagesServer, namespace: str, name: str, **cost: Any
) -> dict[str, Any]:
    config = settings.Settings(
        llm=settings.LlmSettings(
            provider="anthropic", api_key="sk-test-cost", anthropic_base_url=server.base_url,
            model="claude-sonnet-4-6", max_retries=1, model_check=False,
        ),
        cost=settings.CostSettings(**cost),
        retries=settings.RetriesSettings(delay_seconds=0.01),
    )  # fmt: skip
    runtime = process.Runtime.create(config, kube.api_client(str(cluster.kubeconfig)))
    runtime.catalog.upsert("restart-pods-v1", analyses.RESTART_PODS)
    try:
        created = create(runtime, namespace, name)
        await analysis_reconciler.drive(runtime, objects.Ref.of(created))
        return read(runtime, namespace, name)
    finally:
        await runtime.aclose()


def cost_metric(namespace: str, currency: str) -> float:
    labels = {
        "namespace": namespace,
        "provider": "anthropic",
        "model": "claude-sonnet-4-6",
        "currency": currency,
    }
    return metrics.REGISTRY.get_sample_value("aianalysis_llm_cost_total", labels) or 0.0


async def test_the_status_carries_what_the_billed_tokens_cost(
    cluster: devcluster.Cluster, crds: list[str], namespace: str, server: ms.MessagesServer
) -> None:
    before = cost_metric(namespace, "USD")

    body = await analyse(cluster, server, namespace, "priced")

    llm = body["status"]["llm"]
    assert body["status"]["phase"] == "Completed" and llm["requests"] == 3
    assert (llm["inputTokens"], llm["outputTokens"], llm["cacheReadTokens"], llm["cacheWriteTokens"]) == (
        3600, 450, 2700, 900,
    )  # fmt: skip
    # Sonnet list prices per million tokens: input $3, output $15, cache read $0.30, cache write $3.75.
    expected = (3600 * 3 + 450 * 15 + 2700 * 0.30 + 900 * 3.75) / 1_000_000
    assert llm["cost"] == {
        "amount": pytest.approx(expected, abs=1e-9),
        "currency": "USD",
        "priceTableDate": "2026-11-27",
    }
    assert llm["cost"]["amount"] == 0.021735
    assert cost_metric(namespace, "USD") - before == pytest.approx(0.021735)
    header, row = cluster.kubectl("get", "aia", "priced", "-n", namespace, "-o", "wide").stdout.splitlines()
    assert row[header.index("COST") :].split()[0] == "0.021735"


async def test_a_prices_file_prices_the_next_analysis_in_its_currency(
    cluster: devcluster.Cluster, crds: list[str], namespace: str, server: ms.MessagesServer, tmp_path: Path
) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text(
        "currency: EUR\ndate: '2026-12-01'\nsource: negotiated\n"
        "models: {claude-sonnet-4-6: {input: 2, output: 10, cacheRead: 0.2, cacheWrite: 2.5}}\n"
    )
    before = cost_metric(namespace, "EUR")

    body = await analyse(cluster, server, namespace, "eur", prices_file=str(prices))

    expected = round((3600 * 2 + 450 * 10 + 2700 * 0.2 + 900 * 2.5) / 1_000_000, 6)
    assert body["status"]["llm"]["cost"] == {
        "amount": expected,
        "currency": "EUR",
        "priceTableDate": "2026-12-01",
    }
    assert cost_metric(namespace, "EUR") - before == pytest.approx(expected)
    assert resources.AIAnalysisStatus.parse_known(body["status"]).llm is not None, "the model reads it back"
