"""End to end with a real Alertmanager: alerts posted to Alertmanager's own API are routed to the
operator's intake and become AIAnalysis objects. Pods of one Deployment are one analysis; a repeat
after completion, within the cooldown, starts no conversation; a resolved alert ends an analysis
that is still waiting; a wrong token creates nothing. The operator is the real process, the LLM the
scripted Messages API server (through the real SDK)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from tests.e2e.conftest import OperatorProcess, analyses, free_port, wait_for
from tests.support import alertmanager as am
from tests.support import messages_server as ms
from tests.support import tls
from tests.support.fake_llm import GoodLLM

TOKEN = "intake-e2e-token"

CATALOG_WORKFLOW = {
    "apiVersion": "kubernaut.io/v1alpha1",
    "kind": "RemediationWorkflow",
    "metadata": {"name": "intake-e2e-restart-v1"},
    "spec": {
        "workflowId": "intake-e2e-restart",
        "version": "1.0.0",
        "title": "Restart the pods of a workload",
        "description": "Rolls the pods of the owning Deployment to clear a crash loop.",
        "labels": {"signalTypes": ["CrashLoopBackOff"]},
        "riskLevel": "low",
        "parameters": [{"name": "TARGET_NAMESPACE", "type": "string", "required": True}],
        "execution": {"containerImage": "registry.example/wf/restart@sha256:" + "0" * 64},
    },
}


@pytest.fixture
def llm_server() -> Iterator[ms.MessagesServer]:
    with ms.MessagesServer(policy=GoodLLM()) as server:
        yield server


@pytest.fixture
def workloads(cluster: Any, namespace: str) -> Callable[..., list[str]]:
    """Creates a Deployment → ReplicaSet → Pods chain (what kube-controller-manager would) and labels
    the namespace with its business context; returns the Pod names."""
    cluster.kubectl(
        "label", "namespace", namespace, "kubernaut.io/environment=production", "kubernaut.io/priority=P1",
        "kubernaut.io/business-category=payments",
    )  # fmt: skip
    cluster.kubectl("apply", "-f", "-", input=json.dumps(CATALOG_WORKFLOW))

    def make(name: str, pods: int) -> list[str]:
        with cluster.api_client() as api:
            apps, core = kubernetes.client.AppsV1Api(api), kubernetes.client.CoreV1Api(api)
            selector = {"matchLabels": {"app": name}}
            template = {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]},
            }
            deployment = apps.create_namespaced_deployment(
                namespace,
                {"metadata": {"name": name}, "spec": {"selector": selector, "template": template}},
            )
            rs_name = f"{name}-5d9f8b6c5"
            rs = apps.create_namespaced_replica_set(
                namespace,
                {
                    "metadata": {
                        "name": rs_name,
                        "ownerReferences": [owner("apps/v1", "Deployment", deployment)],
                    },
                    "spec": {"selector": selector, "template": template},
                },
            )
            names = [f"{rs_name}-{i:05d}" for i in range(pods)]
            for pod in names:
                core.create_namespaced_pod(
                    namespace,
                    {
                        "metadata": {
                            "name": pod,
                            "labels": {"app": name},
                            "ownerReferences": [owner("apps/v1", "ReplicaSet", rs)],
                        },
                        "spec": template["spec"],
                    },
                )
        return names

    return make


def owner(api_version: str, kind: str, obj: Any) -> dict[str, Any]:
    meta = obj.metadata
    return {"apiVersion": api_version, "kind": kind, "name": meta.name, "uid": meta.uid, "controller": True}


@pytest.fixture
def stack(
    cluster: Any, namespace: str, tmp_path: Path, start_operator: Any, llm_server: ms.MessagesServer
) -> Iterator[Callable[..., tuple[OperatorProcess, am.Alertmanager]]]:
    """The operator with its intake on, serving TLS, and Alertmanager pointed at it (loopback only)
    over HTTPS: the bearer token never crosses in the clear."""
    started: list[am.Alertmanager] = []
    served = tls.server_files(tmp_path)

    def start(**env: str) -> tuple[OperatorProcess, am.Alertmanager]:
        port = free_port()
        allowed = tmp_path / "intake-mapping.yaml"
        allowed.write_text(json.dumps({"namespaces": [namespace]}))
        operator = start_operator(
            AIANALYSIS_PROVIDER="anthropic",
            ANTHROPIC_API_KEY="sk-test-intake",
            AIANALYSIS_ANTHROPIC_BASE_URL=llm_server.base_url,
            AIANALYSIS_LLM_MAX_RETRIES="1",
            AIANALYSIS_INTAKE_PORT=str(port),
            AIANALYSIS_INTAKE_TOKEN=TOKEN,
            AIANALYSIS_INTAKE_MAPPING_FILE=str(allowed),
            AIANALYSIS_INTAKE_TLS_CERT_FILE=str(served.cert),
            AIANALYSIS_INTAKE_TLS_KEY_FILE=str(served.key),
            **env,
        )
        settings = am.config(intake_port=port, token=TOKEN, wrong_token="not-the-token", ca_file=served.ca)
        manager = am.Alertmanager(tmp_path, settings).start()
        started.append(manager)
        return operator, manager

    yield start
    for manager in started:
        manager.stop()


def crashloop(namespace: str, pod: str, **extra: str) -> dict[str, Any]:
    labels = {
        "alertname": "KubePodCrashLooping",
        "namespace": namespace,
        "pod": pod,
        "container": "app",
        "reason": "CrashLoopBackOff",
        "severity": "critical",
        "job": "kube-state-metrics",
        **extra,
    }
    return am.alert(
        labels,
        summary="Pod is crash looping.",
        description=f"Pod {namespace}/{pod} (app) is in waiting state (reason: CrashLoopBackOff).",
    )


def wide_column(cluster: Any, namespace: str, name: str, column: str) -> str:
    """One cell of ``kubectl get aia NAME -o wide`` (columns are aligned: cut at the header's offset)."""
    header, row = cluster.kubectl("get", "aia", name, "-n", namespace, "-o", "wide").stdout.splitlines()[:2]
    return row[header.index(column) :].split()[0]


def conversations(server: ms.MessagesServer) -> int:
    return sum(1 for r in server.requests if len(r.body["messages"]) == 1)


def status_of(item: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = item.get("status") or {}
    return found


def intake_metric(operator: OperatorProcess, outcome: str) -> float:
    prefix = f'aianalysis_intake_alerts_total{{outcome="{outcome}"}} '
    return sum(
        float(line[len(prefix) :]) for line in operator.metrics().splitlines() if line.startswith(prefix)
    )


def test_pods_of_one_deployment_become_one_analysis_and_a_repeat_in_cooldown_starts_no_conversation(
    cluster: Any, namespace: str, stack: Any, workloads: Any, llm_server: ms.MessagesServer
) -> None:
    pods = workloads("checkout", pods=4)
    operator, manager = stack()
    logs = lambda: operator.logs() + manager.logs()  # noqa: E731

    manager.post(*(crashloop(namespace, pod) for pod in pods[:3]))

    def completed_with_three() -> list[dict[str, Any]] | None:
        items = analyses(cluster, namespace)
        st = status_of(items[0]) if len(items) == 1 else {}
        done = st.get("phase") == "Completed" and (st.get("intake") or {}).get("occurrences") == 3
        return items if done else None

    [item] = wait_for(completed_with_three, what="one completed analysis with 3 occurrences", logs=logs)
    spec, meta, st = item["spec"], item["metadata"], item["status"]
    assert spec["resource"] == {"kind": "Deployment", "name": "checkout", "namespace": namespace}
    assert spec["signal"]["type"] == "CrashLoopBackOff"
    assert spec["signal"]["severity"] == "critical"
    assert spec["signal"]["alertName"] == "KubePodCrashLooping"
    assert spec["signal"]["source"] == "alertmanager"
    assert spec["signal"]["errorMessage"] == "Pod is crash looping."
    assert "CrashLoopBackOff" in spec["signal"]["description"]
    assert spec["signal"]["labels"]["pod"] in pods[:3]
    assert spec["signal"]["firingTime"] and spec["signal"]["receivedTime"]
    assert spec["businessContext"] == {
        "environment": "production",
        "priority": "P1",
        "businessCategory": "payments",
        "riskTolerance": "low",
    }
    assert meta["name"].startswith("checkout-crashloopbackoff-") and meta["name"].endswith("-1")
    assert meta["labels"]["kubernaut.io/alert-name"] == "KubePodCrashLooping"
    assert len(meta["labels"]["kubernaut.io/alert-fingerprint"]) == 16
    assert st["selectedWorkflow"]["workflowId"] == "intake-e2e-restart"
    assert conversations(llm_server) == 1

    selector = "kubernaut.io/alert-name=KubePodCrashLooping"
    found = cluster.kubectl("get", "aia", "-n", namespace, "-l", selector, "-o", "name").stdout.split()
    assert found == [f"aianalysis.kubernaut.io/{meta['name']}"]
    assert wide_column(cluster, namespace, meta["name"], "OCCURRENCES") == "3"
    assert wide_column(cluster, namespace, meta["name"], "LAST SEEN").endswith("s")  # an age, e.g. 4s

    # The same incident fires again (a fourth Pod) after the analysis completed, within the cooldown.
    manager.post(crashloop(namespace, pods[3]))
    wait_for(
        lambda: status_of(analyses(cluster, namespace)[0]).get("intake", {}).get("occurrences") == 4,
        what="the repeat to be counted",
        logs=logs,
    )
    assert len(analyses(cluster, namespace)) == 1
    assert conversations(llm_server) == 1, "a repeat within the cooldown starts no conversation"
    assert intake_metric(operator, "created") == 1
    assert intake_metric(operator, "repeat") >= 3  # Alertmanager re-sends a group when it changes


def test_a_resolved_alert_ends_a_waiting_analysis_without_a_conversation(
    cluster: Any, namespace: str, stack: Any, workloads: Any, llm_server: ms.MessagesServer
) -> None:
    [pod] = workloads("ledger", pods=1)
    operator, manager = stack(AIANALYSIS_LLM_BUDGET_CONVERSATIONS_PER_HOUR="0")
    logs = lambda: operator.logs() + manager.logs()  # noqa: E731

    manager.post(crashloop(namespace, pod))
    wait_for(
        lambda: [a for a in analyses(cluster, namespace) if status_of(a).get("reason") == "BudgetExhausted"],
        what="the analysis to wait for budget",
        logs=logs,
    )
    resolved = crashloop(namespace, pod)
    resolved["endsAt"] = am.alert({}, resolved=True)["endsAt"]
    manager.post(resolved)

    [item] = wait_for(
        lambda: [a for a in analyses(cluster, namespace) if status_of(a).get("reason") == "AlertResolved"],
        what="the resolved alert to end the analysis",
        logs=logs,
    )
    st = item["status"]
    assert st["phase"] == "Completed" and not st.get("selectedWorkflow")
    assert "no LLM conversation" in st["message"]
    assert conversations(llm_server) == 0
    assert intake_metric(operator, "cancelled") == 1


def test_a_wrong_token_creates_nothing(
    cluster: Any, namespace: str, stack: Any, workloads: Any, llm_server: ms.MessagesServer
) -> None:
    intruder_pods = workloads("intruded", pods=1)
    sentinel_pods = workloads("sentinel", pods=1)
    operator, manager = stack()
    logs = lambda: operator.logs() + manager.logs()  # noqa: E731

    manager.post(crashloop(namespace, intruder_pods[0], tenant="intruder"))
    wait_for(
        lambda: manager.metric("alertmanager_notifications_failed_total", integration="webhook") >= 1,
        what="Alertmanager to see its notification refused",
        logs=logs,
    )
    manager.post(crashloop(namespace, sentinel_pods[0]))  # a positive barrier through the same path
    wait_for(lambda: analyses(cluster, namespace), what="the sentinel's analysis", logs=logs)

    [item] = analyses(cluster, namespace)
    assert item["spec"]["resource"]["name"] == "sentinel"
    assert "401" in manager.logs()
