"""The Prometheus tools against a real Prometheus (hack/build-prometheus.sh) scraping a tiny exporter
this test runs on loopback: instant and range queries summarised and bounded, metric and label
lookup, firing alerts and rules; and what the LLM gets when Prometheus is wrong, down, slow or
answers too much."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aianalysis import catalog, resources
from aianalysis.analysis import tools
from tests.support import prometheus

SPEC = resources.AIAnalysisSpec.model_validate(
    {
        "signal": {"type": "OOMKilled", "severity": "high"},
        "resource": {"kind": "Deployment", "name": "shop", "namespace": "shop"},
    }
)


NODE_SPEC = resources.AIAnalysisSpec.model_validate(
    {
        "signal": {"type": "NodeNotReady", "severity": "high"},
        "resource": {"kind": "Node", "name": "worker-1", "namespace": "shop"},
    }
)
# Another tenant's series and alert, and a cluster-level series (no namespace label).
TENANTS = [
    "# TYPE kube_secret_info gauge",
    'kube_secret_info{namespace="other",secret="db-creds"} 1',
    'kube_secret_info{namespace="shop",secret="shop-tls"} 1',
    "# TYPE node_load1 gauge",
    'node_load1{node="worker-1"} 0.5',
]
RULES = {
    "groups": [
        *prometheus.RULES["groups"],
        {
            "name": "tenants",
            "rules": [
                {"alert": "OtherSecretsSeen", "expr": 'kube_secret_info{namespace="other"} > 0'},
                {"alert": "NodeBusy", "expr": "node_load1 > 0"},
            ],
        },
    ]
}


@pytest.fixture(scope="module")
def exporter() -> Iterator[prometheus.Exporter]:
    with prometheus.Exporter(wide=150, namespace="shop") as running:
        running.values.update({"shop-1": 50.0, "shop-2": 500.0})
        running.extra = TENANTS
        yield running


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, exporter: prometheus.Exporter
) -> Iterator[prometheus.Prometheus]:
    with prometheus.running(tmp_path_factory.mktemp("prometheus"), exporter, rules=RULES) as running:
        # Wait for state, not time: two scrapes of the exporter, and the alert rule evaluated.
        running.wait(
            lambda: (
                len(running.query("shop_memory_bytes[1m]")) == 2
                and all(len(s["values"]) >= 2 for s in running.query("shop_memory_bytes[1m]"))
            ),
            60,
            "scraping",
        )
        running.wait(
            lambda: (
                {a["metric"]["alertname"] for a in running.query('ALERTS{alertstate="firing"}')}
                == {"ShopMemoryHigh", "OtherSecretsSeen", "NodeBusy"}
            ),
            60,
            "firing the alerts",
        )
        yield running


def box(
    url: str, *, spec: resources.AIAnalysisSpec = SPEC, limits: tools.Limits | None = None, **config: Any
) -> tools.ToolBox:
    client = tools.PrometheusClient(tools.PrometheusConfig(url=url, **config))
    return tools.ToolBox(
        spec=spec, catalog=catalog.Catalog(), reader=None, max_chars=8000, metrics=client, limits=limits
    )


async def test_prometheus_tools_are_offered_only_when_configured(server: prometheus.Prometheus) -> None:
    without = tools.ToolBox(spec=SPEC, catalog=catalog.Catalog(), reader=None, max_chars=8000)
    assert not {d["name"] for d in without.definitions()} & set(tools.PROMETHEUS_TOOL_NAMES)
    assert set(tools.PROMETHEUS_TOOL_NAMES) <= {d["name"] for d in box(server.url).definitions()}
    refused = await without.call("prometheus_query", {"query": "up"})
    assert refused.is_error and "unknown tool" in refused.text


async def test_instant_query_lists_series_highest_first(server: prometheus.Prometheus) -> None:
    result = await box(server.url).call("prometheus_query", {"query": "shop_memory_bytes"})
    assert not result.is_error, result.text
    first, second = (line for line in result.text.splitlines() if line.startswith("shop_memory_bytes{"))
    assert 'pod="shop-2"' in first and first.endswith(" 500") and 'pod="shop-1"' in second


async def test_range_query_is_a_summary_per_series(server: prometheus.Prometheus) -> None:
    result = await box(server.url).call(
        "prometheus_query_range", {"query": "shop_memory_bytes", "range": "5m", "step": "1s"}
    )
    assert not result.is_error, result.text
    assert re.search(r'pod="shop-2"\}: 500, flat \(\d+ points\)', result.text)


async def test_huge_results_are_bounded_and_say_how_to_narrow(server: prometheus.Prometheus) -> None:
    result = await box(server.url).call("prometheus_query", {"query": "shop_requests_total"})
    assert "150 series, the 20 highest (by last value) shown, 130 left out" in result.text
    assert "sum by (pod)" in result.text
    assert len([line for line in result.text.splitlines() if line.startswith("shop_requests_total{")]) == 20
    capped = await box(server.url, max_response_bytes=2_000).call(
        "prometheus_query", {"query": "shop_requests_total"}
    )
    assert capped.is_error and "answered more than 2,000 bytes: narrow the query" in capped.text


async def test_metric_names_label_values_alerts_and_rules(server: prometheus.Prometheus) -> None:
    toolbox = box(server.url)
    names = await toolbox.call("prometheus_metrics", {"contains": "shop_"})
    assert "shop_memory_bytes" in names.text and "shop_requests_total" in names.text
    pods = await toolbox.call("prometheus_label_values", {"label": "pod", "metric": "shop_memory_bytes"})
    assert "shop-1" in pods.text and "shop-2" in pods.text
    alerts = await toolbox.call("prometheus_alerts", {})
    assert "ShopMemoryHigh [firing]" in alerts.text and "Pod shop-2 uses 500 bytes" in alerts.text
    assert "<untrusted-data" in alerts.text
    rules = await toolbox.call("prometheus_rules", {"name_contains": "shop"})
    assert "alerting ShopMemoryHigh: shop_memory_bytes &gt; 100" in rules.text
    # A recording rule without a namespace label is cluster-level: not shown to a namespaced incident.
    assert "recording shop:memory:sum" not in rules.text


async def test_bad_promql_and_enormous_ranges_are_clear_errors(server: prometheus.Prometheus) -> None:
    toolbox = box(server.url)
    malformed = await toolbox.call("prometheus_query", {"query": "sum(rate(shop_requests_total[5m]"})
    # Parsed (to be scoped) before it is sent: the parser's words, and Prometheus is not asked.
    assert malformed.is_error and "not valid PromQL" in malformed.text
    assert "unclosed left parenthesis" in malformed.text
    rejected = await toolbox.call("prometheus_query", {"query": 'label_replace(up, "a", "b", "c", "[")'})
    assert rejected.is_error and "Prometheus query rejected the request" in rejected.text
    enormous = await toolbox.call("prometheus_query_range", {"query": "up", "range": "30d"})
    assert enormous.is_error and "longer than the 7d allowed" in enormous.text
    dense = await toolbox.call("prometheus_query_range", {"query": "up", "range": "2d", "step": "1s"})
    assert dense.is_error and "use a step of at least 173s" in dense.text
    assert toolbox.ledger.audit().calls[0].error


async def test_prometheus_down_or_slow_is_reported_and_the_conversation_goes_on() -> None:
    down = box(f"http://127.0.0.1:{prometheus.free_port()}")
    result = await down.call("prometheus_query", {"query": "up"})
    assert result.is_error and "Prometheus query is not reachable" in result.text
    assert "it may work later" in result.text
    with prometheus.silent_server() as port:
        slow = box(f"http://127.0.0.1:{port}", timeout_seconds=0.5)
        result = await slow.call("prometheus_query", {"query": "up"})
    assert result.is_error and "did not answer within 0.5s" in result.text


async def test_token_tenant_and_token_file_are_sent(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("from-file\n")
    with prometheus.RecordingServer() as recorder:
        toolbox = box(recorder.url, token_file=token_file, tenant="team-a")
        await toolbox.call("prometheus_alerts", {})
    assert recorder.headers[0]["Authorization"] == "Bearer from-file"
    assert recorder.headers[0]["X-Scope-OrgID"] == "team-a"


# ---- tenancy: the operator's credentials read only what the incident's namespace may -----------


async def test_another_namespaces_series_are_refused(server: prometheus.Prometheus) -> None:
    toolbox = box(server.url)
    refused = await toolbox.call("prometheus_query", {"query": 'kube_secret_info{namespace="other"}'})
    assert refused.is_error and "namespace" in refused.text and "shop" in refused.text
    assert "db-creds" not in refused.text
    # Without a namespace matcher the query is scoped, not widened: only the incident's own series.
    scoped = await toolbox.call("prometheus_query", {"query": "kube_secret_info"})
    assert not scoped.is_error, scoped.text
    # (the secret label is redacted: a label named "secret" is taken for one)
    assert "kube_secret_info at now: 1 series" in scoped.text and 'namespace="shop"' in scoped.text
    summed = await toolbox.call("prometheus_query", {"query": "count by (namespace) (kube_secret_info)"})
    assert 'namespace="shop"' in summed.text and "other" not in summed.text


async def test_lookups_alerts_and_rules_show_only_the_incidents_namespace(
    server: prometheus.Prometheus,
) -> None:
    toolbox = box(server.url)
    secrets = await toolbox.call("prometheus_label_values", {"label": "secret", "metric": "kube_secret_info"})
    assert "shop-tls" in secrets.text and "db-creds" not in secrets.text
    namespaces = await toolbox.call("prometheus_label_values", {"label": "namespace"})
    assert "shop" in namespaces.text and "other" not in namespaces.text
    names = await toolbox.call("prometheus_metrics", {"contains": "load"})
    assert "node_load1" not in names.text
    alerts = await toolbox.call("prometheus_alerts", {})
    assert "ShopMemoryHigh" in alerts.text
    assert "OtherSecretsSeen" not in alerts.text and "NodeBusy" not in alerts.text
    rules = await toolbox.call("prometheus_rules", {})
    assert "ShopMemoryHigh" in rules.text and "OtherSecretsSeen" not in rules.text


async def test_a_node_incident_also_sees_cluster_level_series(server: prometheus.Prometheus) -> None:
    node = box(server.url, spec=NODE_SPEC)
    load = await node.call("prometheus_query", {"query": "node_load1"})
    assert not load.is_error and 'node="worker-1"' in load.text and "0.5" in load.text
    alerts = await node.call("prometheus_alerts", {})
    assert "NodeBusy" in alerts.text and "OtherSecretsSeen" not in alerts.text
    secrets = await node.call("prometheus_label_values", {"label": "secret", "metric": "kube_secret_info"})
    assert "shop-tls" in secrets.text and "db-creds" not in secrets.text
    rules = await node.call("prometheus_rules", {})
    assert "recording shop:memory:sum" in rules.text and "OtherSecretsSeen" not in rules.text
    # A namespaced incident does not: the node's series have no namespace label.
    namespaced = await box(server.url).call("prometheus_query", {"query": "node_load1"})
    assert "no data" in namespaced.text


async def test_behind_prom_label_proxy_every_request_names_the_namespaces() -> None:
    """With AIANALYSIS_PROMETHEUS_LABEL_PROXY_PARAM the URL is a prom-label-proxy (-label=namespace),
    which enforces the same scope from the query parameter (one per namespace); ours still runs."""
    with prometheus.RecordingServer() as recorder:
        limits = tools.Limits(namespaces=("monitoring",), prometheus_label_proxy_param="namespace")
        toolbox = box(recorder.url, limits=limits)
        await toolbox.call("prometheus_alerts", {})
        await toolbox.call("prometheus_query", {"query": "up"})
        plain = box(recorder.url)
        await plain.call("prometheus_alerts", {})
    alerts, query, unproxied = (urllib.parse.urlsplit(path) for path in recorder.paths)
    assert urllib.parse.parse_qs(alerts.query) == {"namespace": ["shop", "monitoring"]}
    sent = urllib.parse.parse_qs(query.query)
    assert sent["namespace"] == ["shop", "monitoring"] and sent["query"] == [
        'up{namespace=~"shop|monitoring"}'
    ]
    assert unproxied.query == ""
