"""The assessment's before/after metrics and alert check against a real Prometheus
(hack/build-prometheus.sh) scraping a tiny exporter on loopback that serves the kube-state-metrics
series the standard queries read, with an alerting rule on them; the operator's own Prometheus
client (the investigation tools' one), the real kube-apiserver for the execution and its target
Pod. The product waits out a short window itself; the test waits for Prometheus' state, never time.

- the target's Pods were not ready before the execution and are now: the metric improved, the
  alert that fired before it no longer fires → effective, alert resolved;
- the alert still fires → never "resolved"; an alert with no series before or after → "no data",
  unknown, never resolved;
- Prometheus goes down during the window → unknown (MetricsUnavailable), never effective.
"""

from __future__ import annotations

import datetime
import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from aianalysis import resources
from aianalysis.controller import assessment_reconciler as assessor
from aianalysis.kube import objects as custom_objects
from aianalysis_dev import devcluster
from tests.integration.test_assessment_reconciler import assessment, healthy_pod, make_runtime, stamp
from tests.support import prometheus, typed

pytestmark = pytest.mark.cluster

G, V, WFE = resources.GROUP, resources.VERSION, resources.WORKFLOWEXECUTION_PLURAL
ALERT = "ApiPodNotReady"
RULES = {
    "groups": [
        {
            "name": "kube",
            "rules": [
                {
                    "alert": ALERT,
                    "expr": 'kube_pod_status_ready{condition="false"} > 0',
                    "labels": {"severity": "warning"},
                }
            ],
        }
    ]
}


class KubeStateMetrics:
    """What kube-state-metrics would export for Pod ``api-0`` of each test namespace."""

    def __init__(self, exporter: prometheus.Exporter) -> None:
        self.exporter = exporter
        self.not_ready: dict[str, int] = {}

    def set(self, namespace: str, *, not_ready: bool) -> None:
        self.not_ready[namespace] = int(not_ready)
        ready = ["# TYPE kube_pod_status_ready gauge"]
        restarts = ["# TYPE kube_pod_container_status_restarts_total counter"]
        for ns, value in sorted(self.not_ready.items()):
            pod = f'namespace="{ns}",pod="api-0"'
            ready += [
                f'kube_pod_status_ready{{{pod},condition="false"}} {value}',
                f'kube_pod_status_ready{{{pod},condition="true"}} {1 - value}',
            ]
            restarts.append(f'kube_pod_container_status_restarts_total{{{pod},container="app"}} 7')
        self.exporter.extra = [*ready, *restarts]


@pytest.fixture(scope="module")
def exporter() -> Iterator[prometheus.Exporter]:
    with prometheus.Exporter() as running:
        yield running


@pytest.fixture(scope="module")
def ksm(exporter: prometheus.Exporter) -> KubeStateMetrics:
    return KubeStateMetrics(exporter)


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, exporter: prometheus.Exporter
) -> Iterator[prometheus.Prometheus]:
    with prometheus.running(tmp_path_factory.mktemp("prometheus"), exporter, rules=RULES) as running:
        running.wait(lambda: bool(running.query("up == 1")), 60, "scraping")
        yield running


def not_ready(ns: str) -> str:
    return f'sum(kube_pod_status_ready{{namespace="{ns}",pod="api-0",condition="false"}})'


def firing(ns: str) -> str:
    return f'ALERTS{{alertname="{ALERT}",alertstate="firing",namespace="{ns}"}}'


def moment_when(server: prometheus.Prometheus, ns: str, *, broken: bool) -> float:
    """The latest whole second at which Prometheus holds the Pod (not) ready and the alert (not)
    firing, and the restart counter's increase is computable — waited for, not slept."""
    found: list[float] = []

    def holds() -> bool:
        at = float(math.floor(time.time()))
        ready = server.query(not_ready(ns), at)
        alert = server.query(firing(ns), at)
        restarts = server.query(
            f'increase(kube_pod_container_status_restarts_total{{namespace="{ns}"}}[5m])', at
        )
        if ready and float(ready[0]["value"][1]) == float(broken) and bool(alert) == broken and restarts:
            found.append(at)
            return True
        return False

    server.wait(holds, 60, f"the Pod {'not ' if broken else ''}ready in Prometheus")
    return found[-1]


def execution(
    api: client.ApiClient, ns: str, *, alert_name: str, before: float, completed: float
) -> custom_objects.Ref:
    """The incident's analysis (its alert; no intake notifications: Prometheus decides) and its
    execution, ended, with the baseline time the executor records right before the Job."""
    custom = client.CustomObjectsApi(api)
    custom.create_namespaced_custom_object(
        G, V, ns, resources.AIANALYSIS_PLURAL,
        {
            "apiVersion": f"{G}/{V}", "kind": "AIAnalysis", "metadata": {"name": "api-fix"},
            "spec": {
                "signal": {"type": "NotReady", "severity": "high", "alertName": alert_name},
                "resource": {"kind": "Pod", "name": "api-0", "namespace": ns},
            },
        },
    )  # fmt: skip
    created = custom.create_namespaced_custom_object(
        G, V, ns, WFE,
        {
            "apiVersion": f"{G}/{V}", "kind": "WorkflowExecution", "metadata": {"name": "api-fix-exec-1"},
            "spec": {
                "analysisRef": "api-fix",
                "workflowRef": {"workflowId": "restart-pods", "version": "1.0.0"},
                "targetResource": {"kind": "Pod", "name": "api-0", "namespace": ns},
            },
        },
    )  # fmt: skip
    at = lambda t: stamp(datetime.datetime.fromtimestamp(t, datetime.UTC))  # noqa: E731
    status: dict[str, Any] = {
        "phase": "Completed",
        "startedAt": at(before),
        "completedAt": at(completed),
        "assessment": {"before": {"at": at(before), "targetFound": True}},
    }
    custom.patch_namespaced_custom_object_status(G, V, ns, WFE, "api-fix-exec-1", {"status": status})
    return custom_objects.Ref.of(created)  # type: ignore[arg-type]


def evidence(final: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["check"]: e for e in final["evidence"]}


@pytest.mark.parametrize(
    ("fixed", "alert_name", "alert", "verdict"),
    [
        (True, ALERT, "pass", "effective"),
        (False, ALERT, "fail", "partial"),
        (True, "ApiNeverFired", "unknown", "effective"),
    ],
    ids=["improved-and-resolved", "still-firing", "no-data"],
)
async def test_before_after_metrics_and_the_alert_come_from_prometheus(
    cluster: devcluster.Cluster,
    crds: list[str],
    namespace: str,
    server: prometheus.Prometheus,
    ksm: KubeStateMetrics,
    fixed: bool,
    alert_name: str,
    alert: str,
    verdict: str,
) -> None:
    runtime = await make_runtime(cluster, prometheus_url=server.url)
    try:
        healthy_pod(typed.client(), namespace)
        ksm.set(namespace, not_ready=True)  # the incident: not ready, the alert fires
        before = moment_when(server, namespace, broken=True)
        ksm.set(namespace, not_ready=not fixed)  # the workflow ran
        completed = moment_when(server, namespace, broken=not fixed)
        ref = execution(typed.client(), namespace, alert_name=alert_name, before=before, completed=completed)
        await assessor.assess_when_due(runtime, ref)  # the window (2 s), then the verdict
    finally:
        await runtime.aclose()
    final = assessment(typed.client(), namespace)
    found = evidence(final)
    assert (found["alert"]["result"], final["verdict"]) == (alert, verdict), final
    if fixed:
        assert found["metrics"]["result"] == "pass" and found["metrics"]["score"] == 1.0
        assert (
            "notReady: 1 → 0" in found["metrics"]["detail"]
            and "restarts: 0 → 0" in found["metrics"]["detail"]
        )
    if alert == "pass":
        assert (final["reason"], final["score"]) == ("Healthy", 1.0)
        assert "fired before the execution and does not now" in found["alert"]["detail"]
    if alert == "fail":
        assert final["reason"] == "AlertStillFiring" and f"{ALERT} is firing" in found["alert"]["detail"]
    if alert == "unknown":  # no series before or after: no data, never counted as resolved
        assert "no data" in found["alert"]["detail"] and final["score"] == 1.0


async def test_prometheus_down_during_the_window_is_unknown_never_effective(
    cluster: devcluster.Cluster,
    crds: list[str],
    namespace: str,
    tmp_path: Path,
    exporter: prometheus.Exporter,
    ksm: KubeStateMetrics,
) -> None:
    """Its own Prometheus (the module's keeps serving the others): up at the baseline, stopped
    before the window ends. Healthy Pods, yet the verdict is unknown with the reason."""
    with prometheus.running(tmp_path, exporter, rules=RULES) as own:
        runtime = await make_runtime(cluster, prometheus_url=own.url)
        try:
            healthy_pod(typed.client(), namespace)
            ksm.set(namespace, not_ready=False)
            before = moment_when(own, namespace, broken=False)
            ref = execution(typed.client(), namespace, alert_name=ALERT, before=before, completed=time.time())
            step = await assessor.advance(runtime, ref)  # the window starts while Prometheus is up
            assert isinstance(step, assessor.Wait)
            own.stop()
            await assessor.assess_when_due(runtime, ref)
        finally:
            await runtime.aclose()
    final = assessment(typed.client(), namespace)
    found = evidence(final)
    assert (final["verdict"], final["reason"]) == ("unknown", "MetricsUnavailable"), final
    assert found["podHealth"]["result"] == "pass"  # healthy, and still not called effective
    assert found["metrics"]["result"] == "unknown" and "not reachable" in found["metrics"]["detail"]
    assert found["alert"]["result"] == "unknown" and "Prometheus did not answer" in found["alert"]["detail"]
