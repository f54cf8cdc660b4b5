"""The chart's intake and budget values: what a cluster admin sets, the operator must accept, and
the apiserver must take. (Chart basics: tests/integration/test_packaging.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from aianalysis import settings
from aianalysis.controller import budget_store
from aianalysis.intake import mapping
from aianalysis_dev import devcluster
from tests.integration.test_packaging import apply_dry_run, container, env_of, helm, one, render

__all__ = ["helm"]  # the module-scoped fixture, shared

pytestmark = pytest.mark.cluster

INTAKE = {
    "intake": {
        "enabled": True,
        "tokenSecret": {"name": "aianalysis-intake", "key": "token"},
        "tls": {"secretName": "aianalysis-intake-tls"},
        "cooldown": "30m",
        "namespaces": ["shop", "payments"],
        "mapping": {"cluster": "prod-eu-1", "signalTypes": {"PaymentsErrorBudgetBurn": "HighErrorRate"}},
    },
    "llmBudget": {"conversationsPerHour": 20, "tokensPerDay": 2000000},
}


TLS = INTAKE["intake"]["tls"]


def test_intake_is_off_and_the_budget_limited_and_kept_in_the_cluster_by_default(
    helm: Path, tmp_path: Path
) -> None:
    objects = render(helm, tmp_path)
    env = env_of(objects)
    assert not any(name.startswith("AIANALYSIS_INTAKE") for name in env)
    plain = {name: item["value"] for name, item in env.items() if "value" in item}
    config = settings.from_env({**plain, "AIANALYSIS_API_KEY": "k"})
    assert (config.budget.conversations_per_hour, config.budget.tokens_per_day) == (30, 3_000_000)
    assert config.budget.namespace == "aianalysis-system"
    [role] = [o for o in objects if o["kind"] == "Role" and o["metadata"]["name"].endswith("-llm-budget")]
    assert role["metadata"]["namespace"] == "aianalysis-system"
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": [budget_store.NAME],
         "verbs": ["get", "update"]},
    ]  # fmt: skip
    # The record is the chart's (helm uninstall removes it), so the Role needs no create.
    assert [
        (o["metadata"]["name"], o["metadata"]["namespace"]) for o in objects if o["kind"] == "ConfigMap"
    ] == [(budget_store.NAME, "aianalysis-system")]
    assert [o["metadata"]["name"] for o in objects if o["kind"] == "NetworkPolicy"] == [
        "aianalysis-operator"
    ], "only the operator's own policy: nothing admits an intake port"
    assert [o["metadata"]["name"] for o in objects if o["kind"] == "Service"] == [
        "aianalysis-operator-metrics"
    ]


def test_enabled_intake_reads_its_token_from_the_secret_and_the_operator_accepts_the_env(
    helm: Path, tmp_path: Path
) -> None:
    objects = render(helm, tmp_path, values=INTAKE)
    env = env_of(objects)
    assert env["AIANALYSIS_INTAKE_TOKEN"]["valueFrom"] == {
        "secretKeyRef": {"name": "aianalysis-intake", "key": "token"}
    }
    plain = {name: item["value"] for name, item in env.items() if "value" in item}
    config = settings.from_env({**plain, "AIANALYSIS_INTAKE_TOKEN": "from-the-secret"})
    assert config.intake.port == 8081 and config.intake.cooldown_seconds == 1800
    assert (config.budget.conversations_per_hour, config.budget.tokens_per_day) == (20, 2_000_000)
    assert {"name": "intake", "containerPort": 8081, "protocol": "TCP"} in container(objects)["ports"]

    (configmap,) = [o for o in objects if o["kind"] == "ConfigMap" and "mapping.yaml" in o.get("data", {})]
    mapping_file = tmp_path / "mapping.yaml"
    mapping_file.write_text(configmap["data"]["mapping.yaml"])
    loaded = mapping.load_config(str(mapping_file))
    assert loaded.cluster == "prod-eu-1" and loaded.signal_types["PaymentsErrorBudgetBurn"] == "HighErrorRate"
    assert loaded.cluster_scoped_namespace == "aianalysis-system"
    assert loaded.namespaces == ["shop", "payments"]
    assert plain["AIANALYSIS_INTAKE_MAPPING_FILE"] == "/etc/aianalysis/intake/mapping.yaml"
    # TLS from the kubernetes.io/tls Secret, mounted where the settings name its files
    assert (config.intake.tls_cert_file, config.intake.tls_key_file) == (
        "/etc/aianalysis/intake-tls/tls.crt", "/etc/aianalysis/intake-tls/tls.key"
    ) and not config.intake.allow_plain_http  # fmt: skip
    [deployment] = [o for o in objects if o["kind"] == "Deployment"]
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    assert volumes["intake-tls"]["secret"]["secretName"] == "aianalysis-intake-tls"
    mounts = {m["name"]: m for m in container(objects)["volumeMounts"]}
    assert mounts["intake-tls"] == {
        "name": "intake-tls",
        "mountPath": "/etc/aianalysis/intake-tls",
        "readOnly": True,
    }


def test_intake_without_tls_is_refused_unless_plain_http_is_asked_for(helm: Path, tmp_path: Path) -> None:
    """The bearer token travels over TLS; plain HTTP only when the admin says so (a dev cluster)."""
    values = {"intake": {k: v for k, v in INTAKE["intake"].items() if k != "tls"}}
    with pytest.raises(AssertionError, match=r"intake\.tls\.secretName"):
        render(helm, tmp_path, values=values)
    plain_http = render(
        helm, tmp_path, values={"intake": {**values["intake"], "tls": {"allowPlainHttp": True}}}
    )
    env = env_of(plain_http)
    assert env["AIANALYSIS_INTAKE_ALLOW_PLAIN_HTTP"]["value"] == "true"
    assert "AIANALYSIS_INTAKE_TLS_CERT_FILE" not in env


def test_the_network_policy_admits_only_the_configured_sources_on_the_intake_port(
    helm: Path, tmp_path: Path
) -> None:
    objects = render(helm, tmp_path, values=INTAKE)
    [policy] = [
        o["spec"]
        for o in objects
        if o["kind"] == "NetworkPolicy" and o["metadata"]["name"] == "aianalysis-operator-intake"
    ]
    service = [o for o in objects if o["kind"] == "Service" and o["metadata"]["name"].endswith("-intake")]

    assert policy["policyTypes"] == ["Ingress"]
    [rule] = policy["ingress"]
    assert rule["ports"] == [{"port": "intake", "protocol": "TCP"}]
    assert rule["from"] == [
        {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
            "podSelector": {"matchLabels": {"app.kubernetes.io/name": "alertmanager"}},
        }
    ]
    assert (
        policy["podSelector"]["matchLabels"] == one(objects, "Deployment")["spec"]["selector"]["matchLabels"]
    )
    assert service[0]["spec"]["ports"] == [
        {"name": "intake", "port": 8081, "targetPort": "intake", "protocol": "TCP"}
    ]


def test_intake_without_a_token_secret_is_refused_with_a_clear_message(helm: Path, tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match=r"intake\.enabled needs intake\.tokenSecret\.name"):
        render(helm, tmp_path, values={"intake": {"enabled": True, "namespaces": ["shop"], "tls": TLS}})


def test_intake_without_namespaces_is_refused_with_a_clear_message(helm: Path, tmp_path: Path) -> None:
    """Which namespaces alerts may open analyses in is explicit: none is never a silent default."""
    values = {"intake": {"enabled": True, "tokenSecret": {"name": "aianalysis-intake"}, "tls": TLS}}
    with pytest.raises(AssertionError, match=r"intake\.namespaces"):
        render(helm, tmp_path, values=values)
    anywhere = render(helm, tmp_path, values={"intake": {**values["intake"], "namespaces": ["*"]}})
    (mapping_map,) = [o for o in anywhere if o["kind"] == "ConfigMap" and "mapping.yaml" in o.get("data", {})]
    assert "namespaces:\n- '*'" in mapping_map["data"]["mapping.yaml"]


def test_the_intake_rendering_is_accepted_by_the_apiserver(
    helm: Path, cluster: devcluster.Cluster, crds: Any, namespace: str, tmp_path: Path
) -> None:
    objects = render(helm, tmp_path, values=INTAKE, namespace=namespace)
    applied = apply_dry_run(cluster, yaml.safe_dump_all(objects))
    assert {name.split("/")[0] for name in applied} >= {
        "configmap",
        "service",
        "networkpolicy.networking.k8s.io",
        "deployment.apps",
    }
