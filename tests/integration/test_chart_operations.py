"""The chart as an SRE meets it: kube-score on its renderings, its NetworkPolicy and
PodDisruptionBudget, and the operations kit (PrometheusRule alerts, Grafana dashboard).

kube-score and promtool are built from Go modules (``hack/build-kube-score.sh``,
``hack/build-promtool.sh``), like helm. promtool checks the alert rules' syntax and runs unit tests
that make each alert fire on the series it is about and stay silent on a healthy operator.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from aianalysis import metrics
from aianalysis_dev import devcluster

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "aianalysis-operator"
RELEASE = "aianalysis-operator"
NAMESPACE = "aianalysis-system"

#: Every optional part of the chart on: what kube-score and the API server see at most.
ALL_FEATURES: dict[str, Any] = {
    "provider": "anthropic",
    "apiKeySecret": {"name": "anthropic-credentials", "key": "token"},
    "replicaCount": 2,
    "watchNamespaces": ["prod", "staging"],
    "metrics": {
        "serviceMonitor": {"enabled": True},
        "prometheusRule": {"enabled": True, "alertLabels": {"team": "sre"}},
        "grafanaDashboard": {"enabled": True, "folder": "Operators"},
    },
    "networkPolicy": {
        "metricsFrom": [
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
        ],
        "apiServer": {"cidrs": ["10.0.0.1/32"], "ports": [6443]},
        "llm": {"cidrs": ["192.0.2.0/24"]},
    },
}

#: Metrics the alerts and the dashboard use that other work streams declare (CONTRACTS.md); until
#: they land in metrics.py, the panels show no data and the alerts stay silent.
CONTRACT_METRICS = {
    "aianalysis_catalog_workflows_refused": "issue 9a",
    "aianalysis_catalog_sync_last_success_timestamp_seconds": "issue 10",
    "aianalysis_analyses_waiting": "issue 10 (concurrency) and 11 (budget)",
    "aianalysis_llm_budget_used": "issue 11",
}


# ---- tools ------------------------------------------------------------------------------------


def go_tool(env: str, script: str, name: str) -> Path:
    """A binary from ``make`` (its directory in ``env``), else built or reused from the cache."""
    if bin_dir := os.environ.get(env):
        return Path(bin_dir) / name
    built = subprocess.run([str(ROOT / "hack" / script)], capture_output=True, text=True, check=True)
    return Path(built.stdout.strip()) / name


@pytest.fixture(scope="module")
def helm() -> Path:
    return go_tool("AIANALYSIS_HELM_BIN", "build-helm.sh", "helm")


@pytest.fixture(scope="module")
def kube_score() -> Path:
    return go_tool("AIANALYSIS_KUBE_SCORE_BIN", "build-kube-score.sh", "kube-score")


@pytest.fixture(scope="module")
def promtool() -> Path:
    return go_tool("AIANALYSIS_PROMTOOL_BIN", "build-promtool.sh", "promtool")


def run(argv: list[str | Path], *, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in argv], input=input, capture_output=True, text=True, check=False)


def template(helm: Path, tmp: Path, values: dict[str, Any] | None = None) -> str:
    argv: list[str | Path] = [helm, "template", RELEASE, CHART, "--namespace", NAMESPACE]
    if values is not None:
        path = tmp / f"values-{len(list(tmp.glob('values-*')))}.yaml"
        path.write_text(yaml.safe_dump(values))
        argv += ["--values", path]
    result = run(argv)
    assert result.returncode == 0, result.stderr
    return result.stdout


def render(helm: Path, tmp: Path, values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(template(helm, tmp, values)) if doc]


def of_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [obj for obj in objects if obj["kind"] == kind]


def one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    [found] = of_kind(objects, kind)
    return found


# ---- kube-score --------------------------------------------------------------------------------

GRADES = {1: "CRITICAL", 5: "WARNING", 7: "OK", 10: "OK"}


def kube_score_findings(kube_score: Path, manifests: str) -> list[tuple[str, str, str, str]]:
    """(grade, object, check id, first comment) of every check that is not skipped and not OK."""
    result = run(
        [kube_score, "score", "--output-format", "json", "--kubernetes-version", "v1.36", "-"],
        input=manifests,
    )
    assert result.stdout, result.stderr
    findings = []
    for scored in json.loads(result.stdout):
        name = f"{scored['type_meta']['kind']}/{scored['object_meta']['name']}"
        for check in scored["checks"]:
            if check["skipped"]:  # an optional check, a kube-score/ignore annotation, not applicable
                continue
            grade = GRADES[check["grade"]]
            if grade != "OK":
                comment = (check.get("comments") or [{}])[0].get("summary", "")
                findings.append((grade, name, check["check"]["id"], comment))
    return findings


#: ALL_FEATURES plus the other processes' objects: the executor's Deployment and the intake's.
WITH_EXECUTOR_AND_INTAKE: dict[str, Any] = {
    **ALL_FEATURES,
    "executor": {"enabled": True, "namespaces": ["team-a"]},
    "intake": {
        "enabled": True,
        "tokenSecret": {"name": "aianalysis-intake"},
        "namespaces": ["team-a"],
        "tls": {"secretName": "aianalysis-intake-tls"},
    },
}


@pytest.mark.parametrize(
    "values",
    [None, ALL_FEATURES, WITH_EXECUTOR_AND_INTAKE],
    ids=["default-values", "all-features", "with-executor-and-intake"],
)
def test_kube_score_finds_nothing_critical(
    helm: Path, kube_score: Path, tmp_path: Path, values: dict[str, Any] | None
) -> None:
    findings = kube_score_findings(kube_score, template(helm, tmp_path, values))
    assert [f for f in findings if f[0] == "CRITICAL"] == []
    assert findings == [], "no warning either: fix it, or ignore it on the object and say why"


def test_kube_score_checks_are_ignored_only_where_a_choice_says_why(helm: Path, tmp_path: Path) -> None:
    single = one(render(helm, tmp_path), "Deployment")
    assert single["metadata"]["annotations"] == {
        "kube-score/ignore": "deployment-replicas,deployment-strategy"
    }
    assert single["spec"]["strategy"] == {"type": "Recreate"}
    why = (CHART / "templates" / "deployment.yaml").read_text().split("type: Recreate")[0]
    assert "analyse every incident twice" in why and "standby is\n    # never Ready" in why
    # Several replicas: a standby is never Ready, so a RollingUpdate would never finish
    # (tests/node/test_chart.py saw it stall): Recreate too.
    several = one(render(helm, tmp_path, ALL_FEATURES), "Deployment")
    assert several["metadata"]["annotations"] == {"kube-score/ignore": "deployment-strategy"}
    assert several["spec"]["strategy"] == {"type": "Recreate"}
    spread = several["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
    [term] = spread["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"


# ---- NetworkPolicy, PodDisruptionBudget, probes, ephemeral storage -----------------------------


def ports_of(rule: dict[str, Any]) -> set[Any]:
    return {port["port"] for port in rule["ports"]}


def test_network_policy_admits_only_metrics_and_health_and_reaches_only_dns_and_the_api_server(
    helm: Path, tmp_path: Path
) -> None:
    objects = render(helm, tmp_path)
    policy = one(objects, "NetworkPolicy")["spec"]
    pod = one(objects, "Deployment")["spec"]["template"]
    assert policy["podSelector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    assert sorted(policy["policyTypes"]) == ["Egress", "Ingress"]
    container_ports = {port["name"] for port in pod["spec"]["containers"][0]["ports"]}
    assert (
        {p for rule in policy["ingress"] for p in ports_of(rule)} == container_ports == {"metrics", "health"}
    )
    dns, api_server = policy["egress"]  # offline provider: no LLM egress at all
    assert ports_of(dns) == {53} and {p["protocol"] for p in dns["ports"]} == {"UDP", "TCP"}
    assert ports_of(api_server) == {443, 6443} and "to" not in api_server  # any address, those ports


def test_network_policy_follows_the_provider_and_the_configured_addresses(helm: Path, tmp_path: Path) -> None:
    policy = one(render(helm, tmp_path, ALL_FEATURES), "NetworkPolicy")["spec"]
    metrics_rule = next(rule for rule in policy["ingress"] if ports_of(rule) == {"metrics"})
    assert metrics_rule["from"] == ALL_FEATURES["networkPolicy"]["metricsFrom"]
    _dns, api_server, llm = policy["egress"]
    assert (ports_of(api_server), api_server["to"]) == ({6443}, [{"ipBlock": {"cidr": "10.0.0.1/32"}}])
    assert (ports_of(llm), llm["to"]) == ({443}, [{"ipBlock": {"cidr": "192.0.2.0/24"}}])
    assert of_kind(render(helm, tmp_path, {"networkPolicy": {"enabled": False}}), "NetworkPolicy") == []


def test_a_disruption_budget_exists_exactly_when_several_replicas_run(helm: Path, tmp_path: Path) -> None:
    assert of_kind(render(helm, tmp_path), "PodDisruptionBudget") == []
    objects = render(helm, tmp_path, {"replicaCount": 3})
    budget = one(objects, "PodDisruptionBudget")["spec"]
    pod_labels = one(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert budget["selector"]["matchLabels"].items() <= pod_labels.items()
    assert budget["maxUnavailable"] == 1
    assert budget["unhealthyPodEvictionPolicy"] == "AlwaysAllow", (
        "a crash-looping replica must not block drains"
    )


def test_readiness_and_liveness_are_different_endpoints_on_the_health_port(
    helm: Path, tmp_path: Path
) -> None:
    [container] = one(render(helm, tmp_path), "Deployment")["spec"]["template"]["spec"]["containers"]
    live, ready = container["livenessProbe"]["httpGet"], container["readinessProbe"]["httpGet"]
    assert (live["path"], ready["path"]) == ("/healthz", "/readyz")
    assert live["port"] == ready["port"] == "health"


def test_ephemeral_storage_is_requested_and_limited_above_the_tmp_volume(helm: Path, tmp_path: Path) -> None:
    pod = one(render(helm, tmp_path), "Deployment")["spec"]["template"]["spec"]
    resources = pod["containers"][0]["resources"]
    [tmp] = pod["volumes"]
    assert resources["requests"]["ephemeral-storage"] == tmp["emptyDir"]["sizeLimit"] == "64Mi"
    assert resources["limits"]["ephemeral-storage"] == "256Mi"


def test_every_optional_object_is_accepted_by_the_apiserver(
    helm: Path, tmp_path: Path, cluster: devcluster.Cluster, crds: Any, namespace: str
) -> None:
    """Built-in kinds only: this API server has no monitoring.coreos.com CRDs."""
    objects = render(helm, tmp_path, ALL_FEATURES)
    builtin = [obj for obj in objects if not obj["apiVersion"].startswith("monitoring.coreos.com/")]
    for obj in builtin:
        if "namespace" in obj["metadata"]:
            obj["metadata"]["namespace"] = namespace
    # A dry run of what the API server accepts: the cluster-scoped admission policies the CRDs'
    # fixture already applied (another field manager) are taken over, not refused as a conflict.
    result = cluster.kubectl(
        "apply", "--server-side", "--force-conflicts", "--dry-run=server", "--validate=strict",
        "--field-manager=chart-test", "-o", "name", "-f", "-", input=yaml.safe_dump_all(builtin),
    )  # fmt: skip
    applied = {line.split("/")[0].split(".")[0] for line in result.stdout.split()}
    assert {"networkpolicy", "poddisruptionbudget", "configmap", "deployment"} <= applied


# ---- PrometheusRule: promtool ------------------------------------------------------------------


@pytest.fixture(scope="module")
def rule_groups(helm: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    objects = render(helm, tmp_path_factory.mktemp("rules"), ALL_FEATURES)
    spec: dict[str, Any] = one(objects, "PrometheusRule")["spec"]
    return spec


def alerts(groups: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {rule["alert"]: rule for group in groups["groups"] for rule in group["rules"] if "alert" in rule}


def test_alert_rules_pass_promtool_check(promtool: Path, rule_groups: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump(rule_groups))
    result = run([promtool, "check", "rules", path])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 5 rules found" in result.stdout
    assert set(alerts(rule_groups)) == {
        "AIAnalysisFailing",
        "AIAnalysisLLMProviderErrors",
        "AIAnalysisAnalysesWaitingTooLong",
        "AIAnalysisCatalogWorkflowsRefused",
        "AIAnalysisCatalogSyncStale",
    }


def test_rules_are_optional_and_labelled_for_prometheus(helm: Path, tmp_path: Path) -> None:
    assert of_kind(render(helm, tmp_path), "PrometheusRule") == []
    values = {
        "metrics": {"prometheusRule": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}}}
    }
    rule = one(render(helm, tmp_path, values), "PrometheusRule")
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"


FIRING = {"namespace": "ops", "job": "aianalysis", "team": "sre"}


def series(metric: str, values: str, **labels: str) -> dict[str, str]:
    """One promtool input series of the operator in namespace ``ops``."""
    inner = ", ".join(f'{k}="{v}"' for k, v in {"namespace": "ops", "job": "aianalysis", **labels}.items())
    return {"series": f"{metric}{{{inner}}}", "values": values}


ANALYSES, LLM = "aianalysis_analyses_total", "aianalysis_llm_requests_total"
WAITING, REFUSED = "aianalysis_analyses_waiting", "aianalysis_catalog_workflows_refused"
SYNCED = "aianalysis_catalog_sync_last_success_timestamp_seconds"

WARNING = [{**FIRING, "severity": "warning"}]

#: promtool unit tests: (alert, evaluated at, input series, labels of the alerts expected to fire).
ALERT_CASES: list[tuple[str, str, list[dict[str, str]], list[dict[str, str]]]] = [
    (
        "AIAnalysisFailing", "40m",
        [series(ANALYSES, "0+3x60", outcome="failed", review_reason="none"),
         series(ANALYSES, "0+7x60", outcome="selected", review_reason="none")],
        [{**FIRING, "severity": "critical"}],
    ),
    (
        "AIAnalysisFailing", "40m",  # 5% failed: under the 10% default
        [series(ANALYSES, "0+1x60", outcome="failed", review_reason="none"),
         series(ANALYSES, "0+19x60", outcome="selected", review_reason="none")],
        [],
    ),
    (
        "AIAnalysisLLMProviderErrors", "40m",
        [series(LLM, "0+5x60", provider="anthropic", outcome="unavailable"),
         series(LLM, "0+5x60", provider="anthropic", outcome="ok")],
        [{**FIRING, "provider": "anthropic", "severity": "warning"}],
    ),
    ("AIAnalysisLLMProviderErrors", "40m", [series(LLM, "0+5x60", provider="anthropic", outcome="ok")], []),
    (
        "AIAnalysisAnalysesWaitingTooLong", "40m",
        [series(WAITING, "3x60", reason="budget")],
        [{**FIRING, "reason": "budget", "severity": "warning"}],
    ),
    (
        "AIAnalysisAnalysesWaitingTooLong", "40m",  # the queue drained at 20m: never 30m in a row
        [series(WAITING, "3x19 0 3x40", reason="concurrency")],
        [],
    ),
    ("AIAnalysisCatalogWorkflowsRefused", "30m", [series(REFUSED, "2x60")], WARNING),
    ("AIAnalysisCatalogWorkflowsRefused", "30m", [series(REFUSED, "0x60")], []),
    (
        "AIAnalysisCatalogSyncStale", "30m",  # last success at t=0, never again
        [series(SYNCED, "0x60")],
        [{**FIRING, "severity": "warning"}],
    ),
    ("AIAnalysisCatalogSyncStale", "30m", [series(SYNCED, "0+60x60")], []),  # a success every minute
]  # fmt: skip


def test_every_alert_fires_on_its_series_and_stays_silent_on_a_healthy_operator(
    promtool: Path, rule_groups: dict[str, Any], tmp_path: Path
) -> None:
    # Annotations are free text for people (promtool check validates their templates above); the
    # unit tests are about when an alert fires and with which labels.
    bare = copy.deepcopy(rule_groups)
    for group in bare["groups"]:
        for rule in group["rules"]:
            rule.pop("annotations", None)
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(bare))
    tests = [
        {
            "interval": "1m",
            "input_series": series,
            "alert_rule_test": [
                {
                    "eval_time": at,
                    "alertname": alert,
                    "exp_alerts": [{"exp_labels": labels} for labels in firing],
                }
            ],
        }
        for alert, at, series, firing in ALERT_CASES
    ]
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump({"rule_files": ["rules.yaml"], "tests": tests}))
    result = run([promtool, "test", "rules", tmp_path / "tests.yaml"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert {alert for alert, _, _, firing in ALERT_CASES if firing} == set(alerts(rule_groups))
    assert {alert for alert, _, _, firing in ALERT_CASES if not firing} == set(alerts(rule_groups))


# ---- Grafana dashboard ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dashboard_map(helm: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    objects = render(helm, tmp_path_factory.mktemp("dashboard"), ALL_FEATURES)
    (found,) = [o for o in of_kind(objects, "ConfigMap") if o["metadata"]["name"] != "aianalysis-llm-budget"]
    return found


def expressions(dashboard: dict[str, Any]) -> list[str]:
    return [
        target["expr"]
        for panel in dashboard["panels"]
        for target in panel.get("targets", [])
        if "expr" in target
    ]


def test_dashboard_is_a_config_map_the_grafana_sidecar_picks_up(
    helm: Path, dashboard_map: dict[str, Any], tmp_path: Path
) -> None:
    assert dashboard_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert dashboard_map["metadata"]["annotations"] == {"grafana_folder": "Operators"}
    [(name, text)] = dashboard_map["data"].items()
    assert name.endswith(".json")
    dashboard = json.loads(text)
    assert dashboard["uid"] == "aianalysis-operator"
    assert {panel["title"] for panel in dashboard["panels"]} >= {
        "Analyses by outcome", "Human review reasons", "LLM requests by outcome", "Catalog sync age",
    }  # fmt: skip
    names = [o["metadata"]["name"] for o in of_kind(render(helm, tmp_path), "ConfigMap")]
    assert names == ["aianalysis-llm-budget"], "the dashboard is optional, off by default"


def test_dashboard_queries_are_valid_promql(
    promtool: Path, dashboard_map: dict[str, Any], tmp_path: Path
) -> None:
    """promtool parses each panel query as the expression of a recording rule."""
    queries = expressions(json.loads(next(iter(dashboard_map["data"].values()))))
    rules = [
        {"record": f"dashboard:query_{i}", "expr": query.replace("$__rate_interval", "5m")}
        for i, query in enumerate(queries)
    ]
    path = tmp_path / "dashboard-rules.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    result = run([promtool, "check", "rules", path])
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(queries)} rules found" in result.stdout


def declared_metric_names() -> set[str]:
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum"), "info": ("_info",)}
    names = set()
    for family in metrics.REGISTRY.collect():
        names.update(family.name + suffix for suffix in suffixes.get(family.type, ("",)))
    return names


def test_alerts_and_dashboard_use_only_metrics_the_operator_exports(
    dashboard_map: dict[str, Any], rule_groups: dict[str, Any]
) -> None:
    queries = expressions(json.loads(next(iter(dashboard_map["data"].values()))))
    queries += [rule["expr"] for rule in alerts(rule_groups).values()]
    used = {name for query in queries for name in re.findall(r"\baianalysis_[a-z_]+", query)}
    unknown = used - declared_metric_names() - set(CONTRACT_METRICS)
    assert unknown == set()
    assert "aianalysis_analyses_total" in used and "aianalysis_analysis_duration_seconds_bucket" in used
