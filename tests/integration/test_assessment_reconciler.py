"""The operator's effectiveness assessment against the real kube-apiserver, in-process so that time
and the operator's clock are driven by the test (never slept on): the window resumes from status
after a restart, and untrustworthy observations — a target deleted during the window, someone else
changing it, a Prometheus that is down, a clock off the API server's — end ``unknown`` with their
reason, never ``effective``. The target is a Pod whose status is written as a kubelet would."""

from __future__ import annotations

import datetime
import json
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes import client

from aianalysis import kube, resources, settings
from aianalysis.assessment import fingerprint
from aianalysis.controller import assessment_reconciler as assessor
from aianalysis.controller import process
from aianalysis.kube import objects as custom_objects
from aianalysis_dev import devcluster
from tests.support import typed

pytestmark = pytest.mark.cluster

G, V, WFE = resources.GROUP, resources.VERSION, resources.WORKFLOWEXECUTION_PLURAL
WINDOW = 2
"""Seconds, set through the setting: the product waits it out itself (``drive``); the test never sleeps."""


def utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def stamp(moment: datetime.datetime) -> str:
    return moment.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def make_runtime(cluster: devcluster.Cluster, *, prometheus_url: str | None = None) -> process.Runtime:
    config = settings.Settings(
        llm=settings.LlmSettings(provider="offline"),
        retries=settings.RetriesSettings(delay_seconds=0.01),
        assessment=settings.AssessmentSettings(window_seconds=WINDOW),
        prometheus=settings.PrometheusSettings(url=prometheus_url),
    )
    return process.Runtime.create(config, kube.api_client(str(cluster.kubeconfig)))


@pytest.fixture
async def runtime(cluster: devcluster.Cluster, crds: list[str]) -> AsyncIterator[process.Runtime]:
    made = await make_runtime(cluster)
    yield made
    await made.aclose()


def healthy_pod(api: client.ApiClient, namespace: str, name: str = "api-0") -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_pod(
        namespace,
        {
            "metadata": {"name": name, "labels": {"app": "api"}},
            "spec": {"containers": [{"name": "app", "image": "registry.example/api:1"}]},
        },
    )
    started = stamp(utcnow() - datetime.timedelta(hours=1))
    core.patch_namespaced_pod_status(
        name,
        namespace,
        {
            "status": {
                "phase": "Running",
                "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [
                    {
                        "name": "app",
                        "image": "registry.example/api:1",
                        "imageID": "",
                        "ready": True,
                        "restartCount": 7,
                        "state": {"running": {"startedAt": started}},
                        # restarts from before the execution: they do not count against it
                        "lastState": {
                            "terminated": {
                                "reason": "OOMKilled",
                                "exitCode": 137,
                                "startedAt": started,
                                "finishedAt": started,
                            }
                        },
                    }
                ],
            }
        },
    )


def completed_execution(
    api: client.ApiClient,
    namespace: str,
    *,
    name: str = "api-fix-exec-1",
    before_hash: str | None = None,
    dry_run: bool = False,
) -> custom_objects.Ref:
    """A WorkflowExecution the executor finished just now (its status written as the executor does)."""
    custom = client.CustomObjectsApi(api)
    created = custom.create_namespaced_custom_object(
        G,
        V,
        namespace,
        WFE,
        {
            "apiVersion": f"{G}/{V}",
            "kind": "WorkflowExecution",
            "metadata": {"name": name},
            "spec": {
                "analysisRef": "api-fix",
                "workflowRef": {"workflowId": "restart-pods", "version": "1.0.0"},
                "targetResource": {"kind": "Pod", "name": "api-0", "namespace": namespace},
            },
        },
    )
    now = utcnow()
    status: dict[str, Any] = {"phase": "Completed", "startedAt": stamp(now), "completedAt": stamp(now)}
    if before_hash:
        status["assessment"] = {
            "before": {"at": stamp(now - datetime.timedelta(seconds=30)), "specHash": before_hash}
        }
    if dry_run:
        status["dryRun"] = True
    custom.patch_namespaced_custom_object_status(G, V, namespace, WFE, name, {"status": status})
    return custom_objects.Ref.of(created)  # type: ignore[arg-type]


def assessment(api: client.ApiClient, namespace: str, name: str = "api-fix-exec-1") -> dict[str, Any]:
    body: Any = client.CustomObjectsApi(api).get_namespaced_custom_object(G, V, namespace, WFE, name)
    found: dict[str, Any] = body["status"].get("assessment") or {}
    return found


def after_window(runtime: process.Runtime, namespace: str) -> datetime.datetime:
    due = datetime.datetime.fromisoformat(
        assessment(typed.client(), namespace)["assessAfter"].replace("Z", "+00:00")
    )
    return due + datetime.timedelta(seconds=1)


async def start_window(runtime: process.Runtime, ref: custom_objects.Ref) -> assessor.Wait:
    step = await assessor.advance(runtime, ref)
    assert isinstance(step, assessor.Wait)
    return step


async def assess_at(runtime: process.Runtime, ref: custom_objects.Ref, moment: datetime.datetime) -> Any:
    return await assessor.advance(runtime, ref, now=lambda: moment)


async def assess(runtime: process.Runtime, ref: custom_objects.Ref) -> Any:
    """The rest of the window on the real clock (the product's own wait), then the verdict."""
    return await assessor.assess_when_due(runtime, ref)


async def test_healthy_target_is_effective_and_the_window_resumes_from_status(
    cluster: devcluster.Cluster, runtime: process.Runtime, namespace: str
) -> None:
    healthy_pod(typed.client(), namespace)
    ref = completed_execution(typed.client(), namespace)
    waited = await start_window(runtime, ref)
    stabilizing = assessment(typed.client(), namespace)
    assert stabilizing["phase"] == "Stabilizing" and stabilizing["windowSeconds"] == WINDOW
    assert 0 < waited.seconds <= WINDOW and stabilizing["afterSpecHash"].startswith("sha256:")

    # "a restart": another runtime reads the same status and waits only what is left of the window
    restarted = await make_runtime(cluster)
    try:
        step = await assessor.advance(restarted, ref)
        assert isinstance(step, assessor.Wait) and step.seconds <= WINDOW
        assert assessment(typed.client(), namespace)["assessAfter"] == stabilizing["assessAfter"]
        done = await assess(restarted, ref)
    finally:
        await restarted.aclose()
    final = assessment(typed.client(), namespace)
    assert (final["phase"], final["verdict"], final["reason"], final["score"]) == (
        "Assessed",
        "effective",
        "Healthy",
        1.0,
    )
    evidence = {e["check"]: e for e in final["evidence"]}
    assert "1/1 pods ready; 0 restarts since the execution" in evidence["podHealth"]["detail"]
    assert evidence["alert"]["result"] == "skipped" and evidence["targetSpec"]["result"] == "pass"
    assert done.type == "Normal" and done.reason == "AssessedEffective"
    assert (
        stabilizing["assessAfter"]
        <= final["assessedAt"]
        < stamp(
            datetime.datetime.fromisoformat(stabilizing["assessAfter"].replace("Z", "+00:00"))
            + datetime.timedelta(seconds=WINDOW + 5)
        )
    ), "the window was resumed, not started again"
    assert await assessor.advance(runtime, ref) is None  # assessed once


async def test_target_deleted_during_the_window_is_unknown(runtime: process.Runtime, namespace: str) -> None:
    healthy_pod(typed.client(), namespace)
    ref = completed_execution(typed.client(), namespace)
    await start_window(runtime, ref)
    client.CoreV1Api(typed.client()).delete_namespaced_pod("api-0", namespace, grace_period_seconds=0)
    await assess(runtime, ref)
    final = assessment(typed.client(), namespace)
    assert (final["verdict"], final["reason"]) == ("unknown", "TargetDeleted") and "score" not in final


@pytest.mark.parametrize("who", ["another writer", "a revert"])
async def test_a_target_changed_during_the_window_is_drift_or_a_revert(
    runtime: process.Runtime, namespace: str, who: str
) -> None:
    healthy_pod(typed.client(), namespace)
    core = client.CoreV1Api(typed.client())
    pod: Any = core.read_namespaced_pod("api-0", namespace, _preload_content=False)
    body = json.loads(pod.data)
    original = fingerprint.fingerprint(body)
    # the workflow changed the target (a label here), so "after" differs from "before"
    core.patch_namespaced_pod("api-0", namespace, {"metadata": {"labels": {"fixed-by": "restart-pods"}}})
    ref = completed_execution(typed.client(), namespace, before_hash=original)
    await start_window(runtime, ref)
    if who == "a revert":  # someone puts it back as it was before the execution
        core.patch_namespaced_pod("api-0", namespace, {"metadata": {"labels": {"fixed-by": None}}})
    else:
        core.patch_namespaced_pod("api-0", namespace, {"metadata": {"labels": {"tuned-by": "someone"}}})
    await assess(runtime, ref)
    final = assessment(typed.client(), namespace)
    expected = ("ineffective", "Reverted") if who == "a revert" else ("unknown", "SpecDrift")
    assert (final["verdict"], final["reason"]) == expected, final
    assert final["currentSpecHash"] != final["afterSpecHash"]


async def test_a_prometheus_that_is_down_makes_healthy_pods_unknown(
    cluster: devcluster.Cluster, namespace: str, crds: list[str]
) -> None:
    runtime = await make_runtime(cluster, prometheus_url=f"http://127.0.0.1:{closed_port()}")
    try:
        healthy_pod(typed.client(), namespace)
        ref = completed_execution(typed.client(), namespace, before_hash="sha256:0")
        await start_window(runtime, ref)
        await assess(runtime, ref)
    finally:
        await runtime.aclose()
    final = assessment(typed.client(), namespace)
    assert (final["verdict"], final["reason"]) == ("unknown", "MetricsUnavailable"), final
    assert {e["check"]: e["result"] for e in final["evidence"]}["metrics"] == "unknown"


async def test_clock_skew_between_operator_and_api_server_is_unknown(
    runtime: process.Runtime, namespace: str
) -> None:
    healthy_pod(typed.client(), namespace)
    ref = completed_execution(typed.client(), namespace)
    await start_window(runtime, ref)
    skewed = after_window(runtime, namespace) + datetime.timedelta(minutes=10)  # 10 min ahead of the server
    await assess_at(runtime, ref, skewed)
    final = assessment(typed.client(), namespace)
    assert (final["verdict"], final["reason"]) == ("unknown", "ClockSkew"), final
    assert "off the API server" in final["message"]


async def test_a_dry_run_is_not_executed(runtime: process.Runtime, namespace: str) -> None:
    ref = completed_execution(typed.client(), namespace, dry_run=True)
    done = await assessor.advance(runtime, ref)
    final = assessment(typed.client(), namespace)
    assert (final["phase"], final["verdict"], final["reason"]) == ("NotExecuted", "not_executed", "DryRun")
    assert done is not None and done.reason == "NotExecuted"


@pytest.mark.parametrize(
    ("resolved", "seen", "alert", "verdict"),
    [(5, -60, "pass", "effective"), (5, 10, "fail", "partial"), (None, -60, "unknown", "effective")],
    ids=["resolved", "fired-again", "no-notification"],
)
async def test_the_alert_state_comes_from_the_intakes_notifications(
    runtime: process.Runtime, namespace: str, resolved: int | None, seen: int, alert: str, verdict: str
) -> None:
    custom = client.CustomObjectsApi(typed.client())
    custom.create_namespaced_custom_object(
        G,
        V,
        namespace,
        resources.AIANALYSIS_PLURAL,
        {
            "apiVersion": f"{G}/{V}",
            "kind": "AIAnalysis",
            "metadata": {"name": "api-fix"},
            "spec": {
                "signal": {"type": "OOMKilled", "severity": "high", "alertName": "PodOOMKilled"},
                "resource": {"kind": "Pod", "name": "api-0", "namespace": namespace},
            },
        },
    )
    healthy_pod(typed.client(), namespace)
    ref = completed_execution(typed.client(), namespace)
    now = utcnow()
    intake: dict[str, Any] = {"occurrences": 2, "lastSeenAt": stamp(now + datetime.timedelta(seconds=seen))}
    if resolved is not None:
        intake["resolvedAt"] = stamp(now + datetime.timedelta(seconds=resolved))
    custom.patch_namespaced_custom_object_status(
        G, V, namespace, resources.AIANALYSIS_PLURAL, "api-fix", {"status": {"intake": intake}}
    )
    await start_window(runtime, ref)
    await assess(runtime, ref)
    final = assessment(typed.client(), namespace)
    evidence = {e["check"]: e for e in final["evidence"]}
    assert evidence["alert"]["result"] == alert and final["verdict"] == verdict, final
    if alert == "unknown":
        assert "no data" in evidence["alert"]["detail"]  # never counted as resolved


async def test_an_execution_that_ended_long_before_the_operator_saw_it_is_not_judged(
    runtime: process.Runtime, namespace: str
) -> None:
    healthy_pod(typed.client(), namespace)
    ref = completed_execution(typed.client(), namespace)
    later = utcnow() + datetime.timedelta(hours=2)  # e.g. the operator was installed since
    await assess_at(runtime, ref, later)
    final = assessment(typed.client(), namespace)
    assert (final["phase"], final["verdict"], final["reason"]) == ("Assessed", "unknown", "NotObserved")
    assert await assessor.advance(runtime, ref) is None
