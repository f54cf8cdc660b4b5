"""What ships (2 of 2): the Helm chart and the kustomize base in deploy/ (the image: test_image.py).

The chart is linted and rendered with a ``helm`` built from Go modules (``hack/build-helm.sh``) and
every rendering is applied to the real API server with ``--dry-run=server``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from aianalysis import settings
from aianalysis.kube import kind_table
from aianalysis_dev import devcluster

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "aianalysis-operator"
DEPLOY = ROOT / "deploy"
RELEASE = "aianalysis-operator"
INSTALL_NAMESPACE = "aianalysis-system"  # deploy/'s namespace
HELM_ONLY_LABELS = ("helm.sh/chart", "app.kubernetes.io/managed-by")
READ_VERBS = {"get", "list", "watch"}

ANTHROPIC_VALUES: dict[str, Any] = {
    "provider": "anthropic",
    "model": "claude-opus-4-1",
    "apiKeySecret": {"name": "anthropic-credentials", "key": "token"},
}


def run(argv: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise AssertionError(
            f"{' '.join(argv)} failed ({result.returncode}):\n{result.stdout}{result.stderr}"
        )
    return result.stdout


# ---- the Helm chart -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def helm() -> Path:
    """The helm binary: from ``make`` (AIANALYSIS_HELM_BIN), else built or reused from the cache."""
    if bin_dir := os.environ.get("AIANALYSIS_HELM_BIN"):
        return Path(bin_dir) / "helm"
    return Path(run([str(ROOT / "hack" / "build-helm.sh")]).strip()) / "helm"


def run_helm(helm: Path, *args: str, values: dict[str, Any] | None = None, tmp: Path | None = None) -> str:
    argv = [str(helm), *args]
    if values is not None:
        assert tmp is not None
        path = tmp / f"values-{len(list(tmp.glob('values-*')))}.yaml"
        path.write_text(yaml.safe_dump(values))
        argv += ["--values", str(path)]
    return run(argv)


def render(
    helm: Path, tmp: Path, *, values: dict[str, Any] | None = None, namespace: str = INSTALL_NAMESPACE
) -> list[dict[str, Any]]:
    out = run_helm(helm, "template", RELEASE, str(CHART), "--namespace", namespace, values=values, tmp=tmp)
    return [doc for doc in yaml.safe_load_all(out) if doc]


def one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    [found] = [obj for obj in objects if obj["kind"] == kind]
    return found


def container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    [operator] = one(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    found: dict[str, Any] = operator
    return found


def env_of(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {item["name"]: item for item in container(objects)["env"]}


def apply_dry_run(cluster: devcluster.Cluster, manifests: str) -> list[str]:
    """Server-side apply with strict field validation, not persisted; the applied object names.
    ``--force-conflicts``: the admission policies the ``crds`` fixture applied from crds/ are in the
    rendering too (the same content; the server's defaults make their atomic fields another value)."""
    result = cluster.kubectl(
        "apply", "--server-side", "--dry-run=server", "--validate=strict", "--force-conflicts",
        "--field-manager=packaging-test", "-o", "name", "-f", "-", input=manifests,
    )  # fmt: skip
    return result.stdout.split()


def test_chart_lints_strictly_with_default_and_anthropic_values(helm: Path, tmp_path: Path) -> None:
    run_helm(helm, "lint", "--strict", str(CHART))
    run_helm(helm, "lint", "--strict", str(CHART), values=ANTHROPIC_VALUES, tmp=tmp_path)
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["apiVersion"] == "v2" and chart["appVersion"] == "0.1.0"


def test_chart_crds_are_byte_copies_of_the_repository_crds() -> None:
    repo = {p.name: p.read_bytes() for p in (ROOT / "crds").glob("*.yaml")}
    assert repo
    chart = {p.name: p.read_bytes() for p in (CHART / "crds").glob("*")}
    admission = {p.name: p.read_bytes() for p in (CHART / "admission").glob("*")}
    assert {**chart, **admission} == repo and not set(chart) & set(admission)
    # Helm's crds/ holds CRDs only; what ships with them is rendered from admission/ (always)
    for name, text in chart.items():
        assert {d["kind"] for d in yaml.safe_load_all(text) if d} == {"CustomResourceDefinition"}, name
    assert {p.name: p.read_bytes() for p in (DEPLOY / "crds").glob("*")} == repo


def test_default_rendering_is_accepted_by_the_apiserver(
    helm: Path, cluster: devcluster.Cluster, crds: Any, namespace: str, tmp_path: Path
) -> None:
    out = run_helm(helm, "template", RELEASE, str(CHART), "--namespace", namespace, "--include-crds")
    applied = apply_dry_run(cluster, out)
    kinds = sorted(name.split("/")[0].split(".")[0] for name in applied)
    assert kinds == sorted(
        ["customresourcedefinition"] * 4
        + ["validatingadmissionpolicy", "validatingadmissionpolicybinding"] * 2  # approval, rejection: always
        + ["serviceaccount", "clusterrole", "clusterrolebinding", "service", "deployment", "networkpolicy"]
        + ["role", "rolebinding", "configmap"]  # the LLM budget's record, and the rights on it
    )


def test_anthropic_rendering_reads_the_key_from_the_secret_and_is_accepted(
    helm: Path, cluster: devcluster.Cluster, crds: Any, namespace: str, tmp_path: Path
) -> None:
    objects = render(helm, tmp_path, values=ANTHROPIC_VALUES, namespace=namespace)
    env = env_of(objects)
    assert env["AIANALYSIS_PROVIDER"]["value"] == "anthropic"
    assert env["AIANALYSIS_MODEL"]["value"] == "claude-opus-4-1"
    assert env["ANTHROPIC_API_KEY"] == {
        "name": "ANTHROPIC_API_KEY",
        "valueFrom": {"secretKeyRef": {"name": "anthropic-credentials", "key": "token", "optional": False}},
    }
    apply_dry_run(cluster, yaml.safe_dump_all(objects))


def test_api_key_is_optional_when_offline_and_absent_by_default(helm: Path, tmp_path: Path) -> None:
    assert "ANTHROPIC_API_KEY" not in env_of(render(helm, tmp_path))
    offline = env_of(render(helm, tmp_path, values={"apiKeySecret": {"name": "maybe-later", "key": "k"}}))
    assert offline["ANTHROPIC_API_KEY"]["valueFrom"]["secretKeyRef"]["optional"] is True


def test_anthropic_without_a_secret_is_refused_with_a_clear_message(helm: Path, tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match=r"provider anthropic needs apiKeySecret\.name"):
        render(helm, tmp_path, values={"provider": "anthropic"})
    with pytest.raises(AssertionError, match="at '/provider': value must be one of 'offline', 'anthropic'"):
        render(helm, tmp_path, values={"provider": "bogus"})  # values.schema.json


PLATFORM_VALUES: dict[str, dict[str, Any]] = {
    "bedrock": {
        "provider": "bedrock",
        "model": "eu.anthropic.claude-sonnet-4-6",
        "bedrock": {"region": "eu-west-1"},
    },
    "vertex": {"provider": "vertex", "vertex": {"region": "europe-west1", "projectId": "incidents"}},
    "openai": {
        "provider": "openai",
        "model": "qwen3-coder",
        "openai": {
            "baseUrl": "http://vllm.llm:8000/v1",
            "apiKeySecret": {"name": "vllm-key", "key": "token"},
        },
    },
}


@pytest.mark.parametrize("provider", sorted(PLATFORM_VALUES))
def test_platform_provider_values_become_a_valid_operator_configuration(
    helm: Path, cluster: devcluster.Cluster, crds: Any, namespace: str, tmp_path: Path, provider: str
) -> None:
    objects = render(helm, tmp_path, values=PLATFORM_VALUES[provider], namespace=namespace)
    env = env_of(objects)
    plain = {name: item["value"] for name, item in env.items() if "value" in item}
    secret = {name: item["valueFrom"]["secretKeyRef"] for name, item in env.items() if "valueFrom" in item}
    config = settings.from_env({**plain, **{name: "from-a-secret" for name in secret}})
    assert config.llm.provider == provider and config.llm.model_check is True
    if provider == "bedrock":
        assert (config.llm.aws_region, config.llm.model) == ("eu-west-1", "eu.anthropic.claude-sonnet-4-6")
        assert secret == {}, "AWS credentials come from IRSA / the default chain, never a Secret of ours"
    if provider == "vertex":
        assert (config.llm.vertex_region, config.llm.vertex_project_id) == ("europe-west1", "incidents")
        assert secret == {}
    if provider == "openai":
        assert config.llm.openai_base_url == "http://vllm.llm:8000/v1"
        assert secret == {"OPENAI_API_KEY": {"name": "vllm-key", "key": "token"}}
    apply_dry_run(cluster, yaml.safe_dump_all(objects))


def test_prometheus_values_turn_on_the_prometheus_tools_with_token_ca_and_egress(
    helm: Path, cluster: devcluster.Cluster, crds: Any, namespace: str, tmp_path: Path
) -> None:
    values = {
        "prometheus": {
            "url": "https://thanos-query.monitoring.svc:9091",
            "tenant": "team-a",
            "labelProxyParam": "namespace",
            "tokenSecret": {"name": "prometheus-reader", "key": "token"},
            "caConfigMap": {"name": "prometheus-ca"},
        },
        "networkPolicy": {"prometheus": {"ports": [9091]}},
        "investigation": {"namespaces": ["ingress-nginx"], "budgetTokens": 12000},
    }
    objects = render(helm, tmp_path, values=values, namespace=namespace)
    env = env_of(objects)
    plain = {name: item["value"] for name, item in env.items() if "value" in item}
    assert env["AIANALYSIS_PROMETHEUS_TOKEN"]["valueFrom"]["secretKeyRef"] == {
        "name": "prometheus-reader",
        "key": "token",
    }
    config = settings.from_env({**plain, "AIANALYSIS_PROMETHEUS_TOKEN": "from-a-secret"})
    assert (config.prometheus.url, config.prometheus.tenant) == (
        "https://thanos-query.monitoring.svc:9091",
        "team-a",
    )
    assert config.prometheus.ca_file == "/etc/aianalysis/prometheus-ca/ca.crt"
    assert (
        config.investigation.namespaces == ("ingress-nginx",)
        and config.investigation.tool_output_budget_tokens == 12000
    )
    assert config.prometheus.label_proxy_param == "namespace"
    pod = next(o for o in objects if o["kind"] == "Deployment")["spec"]["template"]["spec"]
    assert {"name": "prometheus-ca", "configMap": {"name": "prometheus-ca"}} in pod["volumes"]
    policy = next(o for o in objects if o["kind"] == "NetworkPolicy")["spec"]
    assert any([p["port"] for p in rule["ports"]] == [9091] for rule in policy["egress"])
    apply_dry_run(cluster, yaml.safe_dump_all(objects))
    default = env_of(render(helm, tmp_path, namespace=namespace))
    assert not any(name.startswith("AIANALYSIS_PROMETHEUS") for name in default)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"provider": "bedrock"}, r"provider bedrock needs bedrock\.region"),
        ({"provider": "vertex"}, r"provider vertex needs vertex\.region"),
        ({"provider": "openai"}, r"provider openai needs openai\.baseUrl"),
    ],
)
def test_platform_provider_without_its_endpoint_is_refused(
    helm: Path, tmp_path: Path, values: dict[str, Any], message: str
) -> None:
    with pytest.raises(AssertionError, match=message):
        render(helm, tmp_path, values=values)


def test_install_notes_tell_how_to_watch_the_operator_and_switch_to_claude(
    helm: Path, tmp_path: Path
) -> None:
    """NOTES.txt renders only on install: a template error there would break every ``helm install``."""
    args = ("install", RELEASE, str(CHART), "--namespace", INSTALL_NAMESPACE, "--dry-run=client")
    notes = run_helm(helm, *args).split("NOTES:", 1)[1]
    assert f"rollout status deployment/{RELEASE}" in notes
    assert "--set provider=anthropic --set apiKeySecret.name=" in notes
    claude = run_helm(helm, *args, values=ANTHROPIC_VALUES, tmp=tmp_path).split("NOTES:", 1)[1]
    assert "provider: anthropic, model: claude-opus-4-1" in claude and "--set provider" not in claude


def test_default_env_is_a_valid_operator_configuration(helm: Path, tmp_path: Path) -> None:
    """The operator refuses to start on bad settings: the chart's env must parse, and mean the values."""
    env = {name: item["value"] for name, item in env_of(render(helm, tmp_path)).items()}
    config = settings.from_env(env)
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert config.llm.provider == values["provider"] == "offline"
    assert config.analysis.max_concurrent == values["maxConcurrentAnalyses"]
    assert config.analysis.confidence_floor == values["confidenceFloor"]
    assert config.analysis.max_recovery_attempts == values["maxRecoveryAttempts"]
    assert config.observability.log_format == values["logFormat"]
    assert (config.observability.metrics_port, config.observability.health_port) == (
        values["metrics"]["port"],
        values["health"]["port"],
    )
    assert set(env) >= {
        "AIANALYSIS_PROVIDER", "AIANALYSIS_MODEL", "AIANALYSIS_MAX_CONCURRENT_ANALYSES",
        "AIANALYSIS_CONFIDENCE_FLOOR", "AIANALYSIS_MAX_RECOVERY_ATTEMPTS", "AIANALYSIS_LOG_FORMAT",
        "AIANALYSIS_METRICS_PORT", "AIANALYSIS_HEALTH_PORT",
    }  # fmt: skip


def test_deployment_is_a_single_hardened_non_root_pod_probed_for_life_and_readiness(
    helm: Path, tmp_path: Path
) -> None:
    objects = render(helm, tmp_path)
    deployment = one(objects, "Deployment")
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 65532
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["serviceAccountName"] == one(objects, "ServiceAccount")["metadata"]["name"]
    operator = container(objects)
    security = operator["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    ports = {port["name"]: port["containerPort"] for port in operator["ports"]}
    health_port = int(env_of(objects)["AIANALYSIS_HEALTH_PORT"]["value"])
    assert ports == {
        "metrics": int(env_of(objects)["AIANALYSIS_METRICS_PORT"]["value"]),
        "health": health_port,
    }
    for probe in ("livenessProbe", "startupProbe"):
        assert operator[probe]["httpGet"] == {"path": "/healthz", "port": "health"}, probe
    assert operator["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    assert operator["resources"]["requests"] and operator["resources"]["limits"]["memory"]
    assert operator["volumeMounts"] == [{"name": "tmp", "mountPath": "/tmp"}]
    assert "args" not in operator, "all namespaces by default"
    watched = container(render(helm, tmp_path, values={"watchNamespaces": ["prod", "staging"]}))
    assert watched["args"] == ["--namespace=prod", "--namespace=staging"]


def test_metrics_service_selects_the_operator_and_the_service_monitor_is_optional(
    helm: Path, tmp_path: Path
) -> None:
    objects = render(helm, tmp_path)
    service = one(objects, "Service")
    pod_labels = one(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert service["spec"]["ports"] == [
        {"name": "metrics", "port": 9090, "targetPort": "metrics", "protocol": "TCP"}
    ]
    assert not [obj for obj in objects if obj["kind"] == "ServiceMonitor"]
    enabled = render(helm, tmp_path, values={"metrics": {"serviceMonitor": {"enabled": True}}})
    monitor = one(enabled, "ServiceMonitor")
    assert (
        monitor["spec"]["selector"]["matchLabels"].items()
        <= one(enabled, "Service")["metadata"]["labels"].items()
    )
    assert monitor["spec"]["endpoints"][0]["port"] == "metrics"


# ---- least-privilege RBAC -----------------------------------------------------------------------


def grants(rules: list[dict[str, Any]]) -> dict[tuple[str, str], set[str]]:
    """(apiGroup, resource) -> verbs."""
    out: dict[tuple[str, str], set[str]] = {}
    for rule in rules:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                out.setdefault((group, resource), set()).update(rule["verbs"])
    return out


def test_cluster_role_never_grants_secrets_wildcards_or_workload_writes(helm: Path, tmp_path: Path) -> None:
    rules = one(render(helm, tmp_path), "ClusterRole")["rules"]
    granted = grants(rules)
    assert not any("*" in rule[key] for rule in rules for key in ("apiGroups", "resources", "verbs"))
    assert not any(resource.split("/")[0] == "secrets" for _, resource in granted)
    assert not any("resourceNames" in rule or "nonResourceURLs" in rule for rule in rules)
    writes = {key: verbs - READ_VERBS for key, verbs in granted.items() if verbs - READ_VERBS}
    assert writes == {
        ("kubernaut.io", "aianalyses"): {"create"},  # no bookkeeping patches on incidents
        ("kubernaut.io", "workflowexecutions"): {"patch"},
        ("kubernaut.io", "aianalyses/status"): {"patch"},
        ("kubernaut.io", "workflowexecutions/status"): {"patch"},
        ("kubernaut.io", "remediationworkflows/status"): {"patch"},
        ("", "events"): {"create", "patch"},
        ("events.k8s.io", "events"): {"create", "patch"},
    }
    assert granted[("kubernaut.io", "remediationworkflows")] == READ_VERBS
    assert granted[("apiextensions.k8s.io", "customresourcedefinitions")] == {"list", "watch"}


def test_cluster_role_lets_the_investigation_tools_read_every_kind_they_offer(
    helm: Path, tmp_path: Path
) -> None:
    granted = grants(one(render(helm, tmp_path), "ClusterRole")["rules"])
    missing = [
        kind.kind for kind in kind_table.KINDS if "get" not in granted.get((kind.group, kind.plural), set())
    ]
    assert missing == []
    assert "get" in granted[("", "pods/log")]
    for owner in ("replicasets", "jobs", "pods"):  # list_pods_of_owner lists these
        assert (
            "list"
            in granted[("apps" if owner == "replicasets" else "batch" if owner == "jobs" else "", owner)]
        )
    without = grants(
        one(render(helm, tmp_path, values={"rbac": {"readConfigMaps": False}}), "ClusterRole")["rules"]
    )
    assert ("", "configmaps") not in without


# ---- the kustomize base -------------------------------------------------------------------------


def without_helm_labels(obj: dict[str, Any]) -> dict[str, Any]:
    labels = obj.get("metadata", {}).get("labels") or {}
    for key in HELM_ONLY_LABELS:
        labels.pop(key, None)
    return obj


def key(obj: dict[str, Any]) -> tuple[str, str]:
    return obj["kind"], obj["metadata"]["name"]


@pytest.fixture(scope="module")
def kustomized(cluster: devcluster.Cluster) -> list[dict[str, Any]]:
    out = cluster.kubectl("kustomize", str(DEPLOY)).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def test_deploy_is_up_to_date_with_the_chart(helm: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "hack" / "helm" / "render_deploy.py"), "--check", "--helm", str(helm)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, f"run `make manifests`:\n{result.stdout}{result.stderr}"


def test_kustomize_base_renders_the_charts_objects_with_default_values(
    helm: Path, kustomized: list[dict[str, Any]], tmp_path: Path
) -> None:
    chart = {key(obj): without_helm_labels(obj) for obj in render(helm, tmp_path)}
    crds = {
        key(doc): doc
        for p in sorted((ROOT / "crds").glob("*.yaml"))
        for doc in yaml.safe_load_all(p.read_text())
    }
    base = {key(obj): obj for obj in kustomized}
    namespace = base.pop(("Namespace", INSTALL_NAMESPACE))
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    for (kind, _), obj in base.items():
        # kustomize does not know these kinds are cluster-scoped and names its namespace on them; the
        # API server drops a namespace on a cluster-scoped object (test_kustomize_base_is_accepted...)
        if kind.startswith("ValidatingAdmissionPolicy"):
            assert obj["metadata"].pop("namespace") == INSTALL_NAMESPACE
    assert base == {**chart, **crds}


def test_kustomize_and_chart_cluster_roles_have_the_same_rules(
    helm: Path, kustomized: list[dict[str, Any]], tmp_path: Path
) -> None:
    from_file = [doc for doc in yaml.safe_load_all((DEPLOY / "rbac.yaml").read_text()) if doc]
    assert one(from_file, "ClusterRole")["rules"] == one(render(helm, tmp_path), "ClusterRole")["rules"]
    assert one(kustomized, "ClusterRole")["rules"] == one(from_file, "ClusterRole")["rules"]


def test_kustomize_base_is_accepted_by_the_apiserver(
    cluster: devcluster.Cluster, crds: Any, kustomized: list[dict[str, Any]]
) -> None:
    # Namespaced objects need their namespace to exist even in a dry run: create it for real.
    cluster.kubectl(
        "apply", "--server-side", "--field-manager=packaging-test", "-f", str(DEPLOY / "namespace.yaml")
    )
    applied = apply_dry_run(cluster, yaml.safe_dump_all(kustomized))
    assert len(applied) == len(kustomized) == 18  # the budget's record (deploy/state.yaml) among them


def test_more_than_one_replica_elects_a_leader_with_rights_on_one_lease_only(
    helm: Path, tmp_path: Path
) -> None:
    docs = render(helm, tmp_path, values={"replicaCount": 2})
    [role] = [d for d in docs if d["kind"] == "Role" and d["metadata"]["name"].endswith("-leader-election")]
    deployment = one(docs, "Deployment")
    env = {e["name"]: e.get("value") for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}

    assert deployment["spec"]["replicas"] == 2
    assert env["AIANALYSIS_LEADER_ELECTION_NAMESPACE"] == role["metadata"]["namespace"]
    # The chart makes the Lease (helm uninstall removes it): no create, which no name could limit.
    assert {(tuple(r["verbs"]), tuple(r.get("resourceNames", []))) for r in role["rules"]} == {
        (("get", "update"), ("aianalysis-operator",)),
    }
    [lease] = [d for d in docs if d["kind"] == "Lease"]
    assert (lease["metadata"]["name"], lease["metadata"]["namespace"]) == (
        "aianalysis-operator",
        env["AIANALYSIS_LEADER_ELECTION_NAMESPACE"],
    )
    assert all(
        r["resources"] == ["leases"] and r["apiGroups"] == ["coordination.k8s.io"] for r in role["rules"]
    )
    single = render(helm, tmp_path)
    assert [d["metadata"]["name"] for d in single if d["kind"] == "Role"] == [
        "aianalysis-operator-llm-budget"
    ], "one replica (the default): no election Role (only the LLM budget's record)"
