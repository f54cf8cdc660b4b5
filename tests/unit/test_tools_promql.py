"""Tenancy of the Prometheus tools: every selector of a PromQL query is scoped to the incident's
namespace on its AST (as prom-label-proxy does), a namespace matcher naming another namespace is
refused, and cluster-level series (without a namespace label) only for cluster-scoped incidents."""

from __future__ import annotations

import promql_parser
import pytest

from aianalysis.analysis.tools import _promql

SHOP = _promql.Tenancy(namespaces=("shop",))
NODE = _promql.Tenancy(namespaces=("shop",), cluster=True)
WIDE = _promql.Tenancy(namespaces=("shop", "monitoring"))


def selectors(query: str) -> list[promql_parser.VectorSelector]:
    found: list[promql_parser.VectorSelector] = []

    def visit(node: promql_parser.Expr) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            found.append(node)
        elif isinstance(node, promql_parser.MatrixSelector):
            found.append(node.vector_selector)
        for child in (getattr(node, name, None) for name in ("expr", "lhs", "rhs", "param")):
            if isinstance(child, promql_parser.Expr):
                visit(child)
        for arg in getattr(node, "args", None) or ():
            if isinstance(arg, promql_parser.Expr):
                visit(arg)

    visit(promql_parser.parse(query))
    return found


def namespace_matchers(selector: promql_parser.VectorSelector) -> list[str]:
    return [str(m) for m in selector.matchers.matchers if m.name == "namespace"]


SHAPES = [
    "up",
    "rate(http_requests_total[5m])",
    'sum by (pod) (rate(container_cpu_usage_seconds_total{container!=""}[5m] offset 1h))',
    "a or b unless c and d",
    "max_over_time(rate(a[1m])[1h:5m])",
    '{__name__=~"kube_.+"}',
    "a @ 1700000000",
    "rate(a[5m] @ end() offset -1m)",
    'label_replace(a, "namespace", "other", "", "")',
    "histogram_quantile(0.9, sum by (le) (rate(b_bucket[5m])))",
    "-a",
    "(a)",
    "topk(scalar(b), a)",
    'count_values("v", a)',
    "a > bool 1",
    "a * on (pod) group_left (node) b",
    "absent(a)",
    "sum without (x) (a)",
    "quantile_over_time(0.5, a[10m:1m] offset 1m)",
    "time() - a",
    'kube_pod_info{namespace="shop"}',
]


@pytest.mark.parametrize("query", SHAPES)
def test_every_selector_gets_the_incidents_namespace(query: str) -> None:
    scoped = SHOP.enforce(query)
    found = selectors(scoped)
    assert found and len(found) == len(selectors(query))
    for selector in found:
        assert 'namespace="shop"' in namespace_matchers(selector), scoped


@pytest.mark.parametrize("query", ["vector(1)", "1 + 2", "time()"])
def test_queries_without_selectors_read_no_series_and_pass(query: str) -> None:
    assert selectors(SHOP.enforce(query)) == []


@pytest.mark.parametrize(
    "query",
    [
        'kube_secret_info{namespace="other"}',
        'up{namespace!="shop"}',
        'up{namespace=~"shop|other"}',
        'up{namespace=~".+"}',
        'up{namespace!~"shop"}',
        'sum(rate(a{namespace="shop"}[5m])) / sum(rate(a{namespace="other"}[5m]))',
        'max_over_time(a{namespace="kube-system"}[1h:1m])',
        'up{namespace=""}',
    ],
)
def test_a_namespace_matcher_for_another_namespace_is_refused(query: str) -> None:
    with pytest.raises(_promql.BadRequest, match=r"namespace .*shop"):
        SHOP.enforce(query)


def test_several_allowed_namespaces_become_one_anchored_regex() -> None:
    (selector,) = selectors(WIDE.enforce("up"))
    assert namespace_matchers(selector) == ['namespace=~"shop|monitoring"']
    (kept,) = selectors(WIDE.enforce('up{namespace="monitoring"}'))
    assert 'namespace="monitoring"' in namespace_matchers(kept)
    with pytest.raises(_promql.BadRequest):
        WIDE.enforce('up{namespace="other"}')


def test_a_cluster_scoped_incident_also_reads_series_without_a_namespace() -> None:
    (selector,) = selectors(NODE.enforce('node_memory_MemAvailable_bytes{node="worker-1"}'))
    assert namespace_matchers(selector) == ['namespace=~"|shop"']
    assert selectors(NODE.enforce('up{namespace=""}'))
    with pytest.raises(_promql.BadRequest):
        NODE.enforce('kube_secret_info{namespace="other"}')


def test_no_namespace_and_no_cluster_refuses_every_query() -> None:
    with pytest.raises(_promql.BadRequest, match="no namespace"):
        _promql.Tenancy(namespaces=()).enforce("up")


def test_every_namespace_leaves_the_query_alone() -> None:
    everything = _promql.Tenancy(namespaces=("shop",), every=True)
    assert everything.enforce('kube_secret_info{namespace="other"}') == 'kube_secret_info{namespace="other"}'


@pytest.mark.parametrize("query", ["sum(rate(a[5m]", 'a{x="1" or y="2"}', ""])
def test_what_cannot_be_scoped_is_refused_with_the_reason(query: str) -> None:
    with pytest.raises(_promql.BadRequest):
        SHOP.enforce(query)


def test_label_lookups_are_scoped_too() -> None:
    assert SHOP.selector(None) == '{namespace="shop"}'
    assert SHOP.selector("kube_pod_info") == 'kube_pod_info{namespace="shop"}'
    # Every selector needs one matcher that cannot match the empty string.
    assert NODE.selector(None) == '{__name__=~".+",namespace=~"|shop"}'
    assert _promql.Tenancy(namespaces=(), every=True).selector(None) is None


def test_series_labels_decide_what_alerts_and_rules_are_shown() -> None:
    assert SHOP.admits({"namespace": "shop", "alertname": "X"})
    assert not SHOP.admits({"namespace": "other"})
    assert not SHOP.admits({"alertname": "NodeDown"})
    assert NODE.admits({"alertname": "NodeDown"}) and not NODE.admits({"namespace": "other"})
