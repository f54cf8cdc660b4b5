"""Alertmanager payloads (shaped like kube-prometheus' alerts) → what the AIAnalysis will say."""

from __future__ import annotations

from typing import Any

import pytest

from aianalysis import errors
from aianalysis.intake import mapping, payload

RECEIVED = "2026-11-22T10:00:05Z"


def alert(
    name: str, *, status: str = "firing", fp: str = "a1b2c3d4e5f60718", **labels: str
) -> dict[str, Any]:
    return {
        "status": status,
        "labels": {"alertname": name, "job": "kube-state-metrics", "prometheus": "monitoring/k8s", **labels},
        "annotations": {
            "summary": f"{name} summary",
            "description": f"{name} description",
            "runbook_url": "https://runbooks.example/x",
        },
        "startsAt": "2026-11-22T09:58:00Z",
        "endsAt": "0001-01-01T00:00:00Z" if status == "firing" else "2026-11-22T10:03:00Z",
        "generatorURL": "http://prometheus/graph?g0.expr=x",
        "fingerprint": fp,
    }


def webhook(*alerts: dict[str, Any], common: dict[str, str] | None = None) -> payload.WebhookPayload:
    return payload.WebhookPayload.model_validate(
        {
            "version": "4",
            "groupKey": '{}:{alertname="x"}',
            "truncatedAlerts": 0,
            "status": "firing",
            "receiver": "aianalysis",
            "groupLabels": {"alertname": "x"},
            "commonLabels": common or {},
            "commonAnnotations": {},
            "externalURL": "http://alertmanager:9093",
            "alerts": list(alerts),
        }
    )


def mapped(hook: payload.WebhookPayload, config: mapping.MappingConfig | None = None) -> list[Any]:
    cfg = config or mapping.MappingConfig()
    return [
        mapping.map_alert(a, common_labels=hook.common_labels, config=cfg, received=RECEIVED)
        for a in hook.alerts
    ]


def test_a_crashlooping_pod_becomes_a_crashloopbackoff_signal_on_that_pod() -> None:
    hook = webhook(
        alert(
            "KubePodCrashLooping",
            namespace="shop",
            pod="cart-7d9f8b6c5-x2x9z",
            container="cart",
            reason="CrashLoopBackOff",
            severity="warning",
            cluster="prod-eu-1",
        )
    )
    [m] = mapped(hook)

    assert isinstance(m, mapping.Mapped)
    assert m.signal.type == "CrashLoopBackOff"
    assert m.signal.severity == "medium"
    assert m.signal.alert_name == "KubePodCrashLooping"
    assert m.signal.source == "alertmanager"
    assert m.signal.error_message == "KubePodCrashLooping summary"
    assert m.signal.description == "KubePodCrashLooping description"
    assert m.signal.firing_time == "2026-11-22T09:58:00Z"
    assert m.signal.received_time == RECEIVED
    assert m.signal.labels and m.signal.labels["container"] == "cart"
    assert m.target == mapping.Target(kind="Pod", name="cart-7d9f8b6c5-x2x9z", namespace="shop")
    assert m.analysis_namespace == "shop"
    assert m.cluster == "prod-eu-1"
    assert m.fingerprint == "a1b2c3d4e5f60718" and m.status == "firing"


@pytest.mark.parametrize(
    ("name", "labels", "signal", "kind"),
    [
        ("KubeContainerOOMKilled", {"pod": "api-1"}, "OOMKilled", "Pod"),
        ("ContainerOOMKilledRecently", {"pod": "api-1"}, "OOMKilled", "Pod"),
        ("KubePodNotReady", {"pod": "api-1"}, "Unhealthy", "Pod"),
        ("KubeJobFailed", {"job_name": "nightly-export"}, "BackoffLimitExceeded", "Job"),
        ("KubePersistentVolumeFillingUp", {"persistentvolumeclaim": "data-db-0"}, "PersistentVolumeFillingUp",
         "PersistentVolumeClaim"),
        ("KubeDeploymentRolloutStuck", {"deployment": "api", "reason": "ProgressDeadlineExceeded"},
         "RolloutStuck", "Deployment"),
        ("KubeStatefulSetReplicasMismatch", {"statefulset": "db"}, "ReplicasMismatch", "StatefulSet"),
        ("KubePodDisruptionBudgetAtLimit", {"poddisruptionbudget": "api-pdb"}, "PDBAtLimit",
         "PodDisruptionBudget"),
        ("KubeHpaMaxedOut", {"horizontalpodautoscaler": "api"}, "HPAMaxedOut", "HorizontalPodAutoscaler"),
        ("KubeReplicaSetStuck", {"replicaset": "api-5f6d"}, "KubeReplicaSetStuck", "ReplicaSet"),
        ("RouteBackendDown", {"route": "shop"}, "RouteBackendDown", "Route"),
        ("BuildsFailing", {"buildconfig": "web"}, "BuildsFailing", "BuildConfig"),
        ("OperatorInstallFailed", {"subscription": "etcd"}, "OperatorInstallFailed", "Subscription"),
        ("CertNotReady", {"target_kind": "Certificate", "target_name": "web-tls"}, "CertNotReady",
         "Certificate"),
        ("PoolExhausted", {}, "PoolExhausted", "Namespace"),
    ],
)  # fmt: skip
def test_kube_prometheus_alert_names_map_to_signal_types_and_resources(
    name: str, labels: dict[str, str], signal: str, kind: str
) -> None:
    [m] = mapped(webhook(alert(name, namespace="prod", **labels)))
    assert isinstance(m, mapping.Mapped)
    assert (m.signal.type, m.target.kind, m.target.namespace) == (signal, kind, "prod")


def test_a_namespace_aggregated_alert_is_an_incident_about_the_namespace_unless_disabled() -> None:
    [m] = mapped(webhook(alert("MeshDenyRateHigh", namespace="shop")))
    assert isinstance(m, mapping.Mapped)
    assert m.target == mapping.Target(kind="Namespace", name="shop", namespace="shop")
    assert m.analysis_namespace == "shop"
    [off] = mapped(
        webhook(alert("MeshDenyRateHigh", namespace="shop")), mapping.MappingConfig(namespace_incidents=False)
    )
    assert isinstance(off, mapping.Unmapped)


def test_a_node_alert_with_a_namespace_label_is_analysed_there() -> None:
    [m] = mapped(webhook(alert("KubeNodeNotReady", node="worker-3", namespace="compute")))
    assert isinstance(m, mapping.Mapped)
    assert m.target == mapping.Target(kind="Node", name="worker-3", namespace=None)
    assert m.analysis_namespace == "compute"


def test_the_scrape_job_label_is_never_taken_for_a_kubernetes_job() -> None:
    [m] = mapped(webhook(alert("KubePodCrashLooping", namespace="shop", pod="p")))
    assert isinstance(m, mapping.Mapped) and m.target.kind == "Pod"  # job="kube-state-metrics" is ignored


def test_node_alerts_go_to_the_configured_namespace_and_target_the_node() -> None:
    config = mapping.MappingConfig(cluster_scoped_namespace="aianalysis-system")
    [m] = mapped(webhook(alert("KubeNodeNotReady", node="worker-3", severity="critical")), config)
    assert isinstance(m, mapping.Mapped)
    assert m.target == mapping.Target(kind="Node", name="worker-3", namespace=None)
    assert (m.signal.type, m.signal.severity, m.analysis_namespace) == (
        "NodeNotReady",
        "critical",
        "aianalysis-system",
    )


def test_node_alerts_without_a_namespace_for_them_are_unmapped_with_the_reason() -> None:
    [m] = mapped(webhook(alert("KubeNodeNotReady", node="worker-3")))
    assert isinstance(m, mapping.Unmapped) and "clusterScopedNamespace" in m.reason


def test_missing_labels_are_reported_not_guessed() -> None:
    hook = webhook(
        alert("Watchdog", fp="0000000000000001"),
        alert("KubePodCrashLooping", fp="0000000000000002", pod="p"),  # no namespace
        alert("KubePodCrashLooping", fp="0000000000000003", namespace="shop", pod="p"),
    )
    results = mapped(hook)

    assert isinstance(results[0], mapping.Unmapped) and "no resource label" in results[0].reason
    assert isinstance(results[1], mapping.Unmapped) and "no namespace" in results[1].reason
    assert isinstance(results[2], mapping.Mapped), "the other alerts of the payload are still processed"
    assert [r.fingerprint for r in results[:2]] == ["0000000000000001", "0000000000000002"]


def test_a_grouped_payload_takes_shared_labels_from_common_labels() -> None:
    hook = webhook(
        alert("KubePodCrashLooping", fp="1", pod="api-1"),
        alert("KubePodCrashLooping", fp="2", pod="api-2"),
        common={"alertname": "KubePodCrashLooping", "namespace": "shop", "severity": "critical"},
    )
    results = mapped(hook)
    assert all(isinstance(r, mapping.Mapped) for r in results)
    assert [(r.target.name, r.target.namespace, r.signal.severity) for r in results] == [
        ("api-1", "shop", "critical"),
        ("api-2", "shop", "critical"),
    ]


def test_resolved_alerts_keep_their_status() -> None:
    [m] = mapped(webhook(alert("KubePodCrashLooping", status="resolved", namespace="shop", pod="p")))
    assert isinstance(m, mapping.Mapped) and m.status == "resolved"


@pytest.mark.parametrize(
    ("given", "severity"), [("critical", "critical"), ("warning", "medium"), ("info", "low"), ("", "medium"),
                            ("bogus", "medium")]
)  # fmt: skip
def test_severities_follow_prometheus_conventions(given: str, severity: str) -> None:
    labels = {"severity": given} if given else {}
    [m] = mapped(webhook(alert("KubePodCrashLooping", namespace="n", pod="p", **labels)))
    assert isinstance(m, mapping.Mapped) and m.signal.severity == severity


def test_message_annotation_is_used_when_summary_and_description_are_absent() -> None:
    raw = alert("KubePodCrashLooping", namespace="n", pod="p")
    raw["annotations"] = {"message": "Pod n/p is restarting 2.1 times / 10 minutes."}
    [m] = mapped(webhook(raw))
    assert isinstance(m, mapping.Mapped)
    assert m.signal.error_message == m.signal.description == "Pod n/p is restarting 2.1 times / 10 minutes."


def test_alert_text_is_bounded() -> None:
    raw = alert("KubePodCrashLooping", namespace="n", pod="p")
    raw["annotations"]["description"] = "x" * 100_000
    [m] = mapped(webhook(raw))
    assert isinstance(m, mapping.Mapped) and m.signal.description is not None
    assert len(m.signal.description) == mapping.MAX_TEXT


def test_a_mapping_file_adds_names_and_keeps_the_defaults(tmp_path: Any) -> None:
    path = tmp_path / "mapping.yaml"
    path.write_text(
        "signalTypes: {PaymentsErrorBudgetBurn: HighErrorRate}\n"
        "severities: {page: critical}\n"
        "cluster: prod-eu-1\n"
        "businessContextDefaults: {environment: production, riskTolerance: medium}\n"
    )
    config = mapping.load_config(str(path))

    assert config.signal_types["PaymentsErrorBudgetBurn"] == "HighErrorRate"
    assert config.signal_types["KubePodCrashLooping"] == "CrashLoopBackOff"
    assert config.severities["page"] == "critical" and config.severities["warning"] == "medium"
    assert config.business_context_defaults.risk_tolerance == "medium"
    [m] = mapped(
        webhook(alert("PaymentsErrorBudgetBurn", namespace="pay", deployment="api", severity="page")), config
    )
    assert isinstance(m, mapping.Mapped)
    assert (m.signal.type, m.signal.severity, m.cluster) == ("HighErrorRate", "critical", "prod-eu-1")


def test_the_default_business_context_is_conservative() -> None:
    assert mapping.MappingConfig().business_context_defaults.risk_tolerance == "low"


@pytest.mark.parametrize(
    "text", ["signalTypes: [a, b]\n", "severities: {page: urgent}\n", "unknownKey: 1\n", "- a list\n",
             "signalTypePatterns: [{pattern: '(', signalType: X}]\n"]
)  # fmt: skip
def test_a_bad_mapping_file_is_a_clear_configuration_error(tmp_path: Any, text: str) -> None:
    path = tmp_path / "mapping.yaml"
    path.write_text(text)
    with pytest.raises(errors.ConfigError, match="intake mapping"):
        mapping.load_config(str(path))


def test_label_values_are_made_valid_for_kubernetes() -> None:
    assert mapping.label_value("Kube Pod/Crash:Looping") == "Kube-Pod-Crash-Looping"
    assert len(mapping.label_value("A" * 100)) == 63


def test_an_alert_about_a_namespace_outside_the_allowlist_is_unmapped_with_the_reason() -> None:
    """The alert's namespace label is data: it cannot open an analysis (and its reads) anywhere."""
    config = mapping.MappingConfig(namespaces=["shop"])
    hook = webhook(
        alert("KubePodCrashLooping", fp="0000000000000001", namespace="shop", pod="p"),
        alert("KubePodCrashLooping", fp="0000000000000002", namespace="kube-system", pod="coredns-1"),
    )
    inside, outside = mapped(hook, config)
    assert isinstance(inside, mapping.Mapped) and inside.analysis_namespace == "shop"
    assert (
        isinstance(outside, mapping.Unmapped)
        and "kube-system is not in the intake's namespace allowlist" in outside.reason
    )


def test_an_alert_about_another_namespace_object_opens_no_analysis_unless_the_pair_is_allowed() -> None:
    """``target_kind: Namespace, target_name: kube-system`` on an alert of team-a: the Namespace is
    in kube-system, not team-a (the same rule as the operator's and the executor's)."""
    hook = webhook(
        alert("QuotaExhausted", namespace="team-a", target_kind="Namespace", target_name="kube-system")
    )
    [refused] = mapped(hook)
    assert isinstance(refused, mapping.Unmapped)
    assert (
        "Namespace kube-system is in namespace kube-system, not the alert's namespace team-a"
        in refused.reason
    )
    [paired] = [
        mapping.map_alert(
            a, common_labels={}, config=mapping.MappingConfig(), received=RECEIVED, allowed={("team-a", "*")}
        )
        for a in hook.alerts
    ]
    assert isinstance(paired, mapping.Mapped) and paired.target.name == "kube-system"
    [own] = mapped(
        webhook(alert("QuotaExhausted", namespace="team-a", target_kind="namespace", target_name="team-a"))
    )
    assert isinstance(own, mapping.Mapped) and own.analysis_namespace == "team-a"
