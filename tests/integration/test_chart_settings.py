"""The chart's values → environment mapping, checked against the settings models: every variable the
chart (and deploy/, rendered from it) sets on a Deployment is one a setting reads, its rendered value
passes that setting's model and is the value the process gets, and what comes from a Secret is a
secret setting. A typo in a template or a renamed setting fails here, not in a crash-looping Pod.
(Chart basics: tests/integration/test_packaging.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import pydantic
import pytest
import yaml

from aianalysis import settings
from tests.integration.test_packaging import DEPLOY, helm, render

__all__ = ["helm"]  # the module-scoped fixture, shared

SETTING = {name: entry for entry in settings.reference() for name in (entry.env, *entry.also)}
"""Every variable a setting reads → that setting."""
PLACEHOLDER = "from-a-secret"

#: Every optional part of the chart turned on, each value away from its default where the schema lets
#: it be, so that a variable the chart renders only then is checked too.
EVERYTHING: dict[str, Any] = {
    "provider": "anthropic",
    "model": "claude-opus-4-1",
    "modelCheck": False,
    "anthropicBaseUrl": "https://llm-gateway.internal:8443",
    "apiKeySecret": {"name": "anthropic-credentials", "key": "token"},
    "maxConcurrentAnalyses": 3,
    "confidenceFloor": 0.8,
    "businessLabelPrefixes": ["example.com/", "kubernaut.io/"],
    "signalTypes": {"PaymentsErrorBudgetBurn": "HighErrorRate", "QueueBacklog": "Backlog"},
    "maxRecoveryAttempts": 2,
    "dryRun": True,
    "privilegedRoles": ["team-*-breakglass", "ops-approver"],
    "assessment": {"windowSeconds": 120, "maxClockSkewSeconds": 10, "historySeconds": 3600,
                   "recurrenceThreshold": 0},
    "logFormat": "json",
    "metrics": {"port": 9191},
    "health": {"port": 8181},
    "investigation": {"budgetTokens": 12000, "auditMaxRecords": 100,
                      "namespaces": ["ingress-nginx", "monitoring"]},
    "prometheus": {
        "url": "https://thanos-query.monitoring.svc:9091",
        "tenant": "team-a",
        "timeoutSeconds": 5,
        "maxSeries": 7,
        "tokenSecret": {"name": "prometheus-reader", "key": "token"},
        "caConfigMap": {"name": "prometheus-ca"},
    },
    "notifications": {
        "alertmanagerUrls": ["http://alertmanager-0.monitoring.svc:9093", "http://alertmanager-1.monitoring.svc:9093"],
        "consoleUrl": "https://aianalysis.example.com",
        "kinds": ["awaiting_approval", "human_review"],
        "intervalSeconds": 30, "pendingSeconds": 0, "maxAge": "7d", "timeoutSeconds": 5, "attempts": 2,
        "cluster": "eu-1", "tokenSecret": {"name": "alertmanager-token"},
        "caConfigMap": {"name": "alertmanager-ca"},
    },
    "replicaCount": 2,
    "leaderElection": {"enabled": True, "leaseDurationSeconds": 20},
    "llmBudget": {"conversationsPerHour": None, "tokensPerDay": 1000000},
    "intake": {"enabled": True, "tokenSecret": {"name": "aianalysis-intake", "key": "token"},
               "namespaces": ["shop", "payments"], "tls": {"secretName": "aianalysis-intake-tls"},
               "cooldown": "90m", "queueLimit": 100},
    "executor": {
        "enabled": True,
        "namespaces": ["shop", "payments"],
        "backoffLimit": 1,
        "defaultDeadlineSeconds": 600,
        "deadlineMultiplier": 1.5,
        "autoExecute": {"enabled": True, "minConfidence": 0.95, "namespaces": ["shop", "payments"],
                        "maxRisk": "medium", "environments": ["staging", "dev"]},
        "guards": {"cooldownSeconds": 0, "failureThreshold": 2, "failureBackoffSeconds": 60,
                   "failureBackoffMaxSeconds": 600, "managedLabel": "example.com/managed",
                   "requireManagedLabel": False, "maxConcurrent": 0, "maxPerHour": 3},
    },
}  # fmt: skip

#: The other shapes of the provider and Prometheus settings (one provider at a time).
VARIANTS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "everything": EVERYTHING,
    "bedrock": {
        "provider": "bedrock",
        "model": "eu.anthropic.claude-sonnet-4-6",
        "bedrock": {"region": "eu-west-1", "baseUrl": "https://vpce-1.bedrock-runtime.eu-west-1.vpce.amazonaws.com"},
        "prometheus": {"url": "http://prometheus.monitoring.svc:9090", "serviceAccountToken": True},
        "notifications": {"alertmanagerUrls": ["https://alertmanager.example.com"],
                          "serviceAccountToken": True},
    },
    "vertex": {"provider": "vertex", "vertex": {"region": "europe-west1", "projectId": "incidents",
                                                "baseUrl": "https://europe-west1-aiplatform.p.googleapis.com"}},
    "openai": {"provider": "openai", "model": "qwen3-coder",
               "openai": {"baseUrl": "http://vllm.llm:8000/v1",
                          "apiKeySecret": {"name": "vllm-key", "key": "token"}}},
}  # fmt: skip


def deployments_env(objects: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each Deployment's name → the env of its one container."""
    found = {}
    for obj in objects:
        if obj["kind"] == "Deployment":
            [container] = obj["spec"]["template"]["spec"]["containers"]
            found[obj["metadata"]["name"]] = container.get("env", [])
    assert found, "no Deployment rendered"
    return found


def read_alone(entry: settings.Setting, text: str) -> Any:
    """What the setting's own field type makes of ``text`` (its parsing and its checks, nothing else)."""
    model = dict(settings.groups())[entry.group]
    info = model.model_fields[entry.field]
    typed = Annotated[info.annotation, *info.metadata] if info.metadata else info.annotation
    return pydantic.TypeAdapter(typed).validate_python(text)


def check_against_the_models(deployment: str, env: list[dict[str, Any]]) -> settings.Settings:
    names = [item["name"] for item in env]
    assert len(names) == len(set(names)), f"{deployment}: a variable set twice"
    unknown = sorted(set(names) - set(SETTING))
    assert not unknown, f"{deployment} sets variables no setting reads: {unknown}"
    plain = {item["name"]: item["value"] for item in env if "value" in item}
    from_secrets = {item["name"]: item["valueFrom"] for item in env if "valueFrom" in item}
    assert set(plain) | set(from_secrets) == set(names)
    for name, source in from_secrets.items():
        assert set(source) == {"secretKeyRef"} and SETTING[name].secret, f"{deployment}: {name} from {source}"
    for name in plain:
        assert not SETTING[name].secret, f"{deployment}: the secret {name} is a plain value in the manifest"

    # The whole environment, as the process reads it: one ConfigError naming each bad variable.
    config = settings.from_env({**plain, **dict.fromkeys(from_secrets, PLACEHOLDER)})

    for name, text in plain.items():
        entry = SETTING[name]
        got = getattr(getattr(config, entry.group), entry.field)
        assert got == read_alone(entry, text), f"{deployment}: {name}={text!r} did not reach {entry.field}"
    return config


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_variable_the_chart_sets_is_a_setting_and_its_value_passes_the_model(
    helm: Path, tmp_path: Path, variant: str
) -> None:
    rendered = deployments_env(render(helm, tmp_path, values=VARIANTS[variant]))
    configs = {name: check_against_the_models(name, env) for name, env in rendered.items()}
    if variant == "everything":
        operator, executor = configs["aianalysis-operator"], configs["aianalysis-operator-executor"]
        assert operator.llm.provider == "anthropic" and operator.intake.port == 8081
        assert operator.budget.conversations_per_hour is None, "null in the values: unlimited"
        assert operator.intake.cooldown_seconds == 5400 and operator.leadership.lease_duration_seconds == 20
        assert operator.catalog.signal_types == (
            "PaymentsErrorBudgetBurn=HighErrorRate",
            "QueueBacklog=Backlog",
        )
        assert executor.auto_execute.enabled and executor.auto_execute.max_risk == "medium"
        assert executor.guards.managed_label == "example.com/managed" and executor.guards.max_per_hour == 3
        assert operator.safety.dry_run and executor.safety.dry_run, "dry run on both processes"
        assert operator.notify.alertmanager_urls == (
            "http://alertmanager-0.monitoring.svc:9093",
            "http://alertmanager-1.monitoring.svc:9093",
        )
        assert operator.notify.token_file == "/etc/aianalysis/alertmanager-token/token"
        assert operator.notify.max_age == 7 * 86400 and not executor.notify.alertmanager_urls


def test_each_variable_the_chart_sets_carries_its_value_to_the_process(helm: Path, tmp_path: Path) -> None:
    """With every value away from the settings' defaults, every variable differs from its default:
    no template renders a fixed text where a value should go, or a value to the wrong variable."""
    rendered = deployments_env(render(helm, tmp_path, values=EVERYTHING))
    defaults = settings.Settings()
    compared = []
    for deployment, env in rendered.items():
        for item in env:
            entry = SETTING[item["name"]]
            value = getattr(getattr(defaults, entry.group), entry.field)
            if "value" in item:
                assert read_alone(entry, item["value"]) != value, (
                    f"{deployment}: {item['name']} left at its default"
                )
                compared.append(item["name"])
    assert compared, f"no Deployment sets a variable to a value: {rendered}"


def test_deploy_sets_only_settings_and_values_the_models_accept() -> None:
    """deploy/ is rendered from the chart (``make manifests``) and applied as it is: check it too."""
    objects = [
        doc for path in sorted(DEPLOY.glob("*.yaml")) for doc in yaml.safe_load_all(path.read_text()) if doc
    ]
    rendered = deployments_env(objects)
    config = check_against_the_models("deploy/", rendered["aianalysis-operator"])
    assert config.llm.provider == "offline" and config.budget.namespace == "aianalysis-system"
