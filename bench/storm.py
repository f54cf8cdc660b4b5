"""An alert storm through the Alertmanager intake: 1,000 alerts over 20 incident keys (20
Deployments, 5 crash-looping Pods each, every Pod's alert firing 10 times), posted as
Alertmanager would (version-4 payloads of 10 alerts, 8 senders at once) to a real operator process.

Figures: analyses created (goal 20: one per incident), LLM conversations (goal 20), the intake's
p50/p99 answer latency, accepted alerts per second, and that every alert was counted (the
occurrences of the 20 analyses add up to 1,000).
"""

from __future__ import annotations

import concurrent.futures
import datetime
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from kubernetes import client as k8s

from aianalysis.intake import server
from aianalysis_dev import devcluster
from bench import harness, workload

TOKEN = "bench-intake-token"


def _post_all(
    url: str, bodies: list[dict[str, Any]], *, senders: int
) -> tuple[list[tuple[float, int]], float]:
    """Every payload, ``senders`` at once: each answer's (seconds, status), and the total seconds."""
    with httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as http:

        def send(body: dict[str, Any]) -> tuple[float, int]:
            began = time.monotonic()
            code = http.post(url, json=body).status_code
            return time.monotonic() - began, code

        began = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(senders) as pool:
            answers = list(pool.map(send, bodies))
        return answers, time.monotonic() - began


def _floor(bodies: list[dict[str, Any]], *, senders: int) -> tuple[list[tuple[float, int]], float]:
    """The same payloads to a bare aiohttp endpoint (``bench.sink``) in its own process."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.sink"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        cwd=harness.ROOT,
    )  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdin is not None
        url = proc.stdout.readline().strip()
        return _post_all(url, bodies, senders=senders)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(10)


def _workloads(
    cluster: harness.Cluster, namespace: str, *, deployments: int, pods: int
) -> dict[str, list[str]]:
    apps, core = k8s.AppsV1Api(cluster.typed), k8s.CoreV1Api(cluster.typed)
    template = {"spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]}}

    def one(index: int) -> tuple[str, list[str]]:
        name = f"svc-{index:02d}"
        labels = {"app": name}
        spec = {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, **template}}
        dep = apps.create_namespaced_deployment(namespace, {"metadata": {"name": name}, "spec": spec})
        rs = apps.create_namespaced_replica_set(
            namespace, {"metadata": {"name": f"{name}-7c9d", "ownerReferences": [_owner("Deployment", dep)]},
                        "spec": spec},
        )  # fmt: skip
        names = [f"{name}-7c9d-{p:05d}" for p in range(pods)]
        for pod in names:
            core.create_namespaced_pod(
                namespace,
                {
                    "metadata": {
                        "name": pod,
                        "labels": labels,
                        "ownerReferences": [_owner("ReplicaSet", rs)],
                    },
                    **template,
                },
            )
        return name, names

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        return dict(pool.map(one, range(deployments)))


def _owner(kind: str, obj: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "name": obj.metadata.name,
        "uid": obj.metadata.uid,
        "controller": True,
    }


def _payloads(
    namespace: str, pods: dict[str, list[str]], *, repeats: int, batch: int
) -> list[dict[str, Any]]:
    now = datetime.datetime.now(datetime.UTC)
    alerts = [
        {
            "status": "firing",
            "labels": {"alertname": "KubePodCrashLooping", "namespace": namespace, "pod": pod,
                       "container": "app", "reason": "CrashLoopBackOff", "severity": "critical"},
            "annotations": {"summary": "Pod is crash looping.", "description": f"Pod {pod} restarts."},
            "startsAt": (now - datetime.timedelta(minutes=repeat)).isoformat(),  # each Pod re-fires
            "fingerprint": f"{abs(hash(pod)) % 16**16:016x}",
        }
        for repeat in range(repeats)
        for names in pods.values()
        for pod in names
    ]  # fmt: skip
    return [
        {"version": "4", "status": "firing", "receiver": "aianalysis", "groupKey": f"storm-{i}",
         "commonLabels": {}, "alerts": alerts[i : i + batch]}
        for i in range(0, len(alerts), batch)
    ]  # fmt: skip


def run(
    cluster: harness.Cluster,
    *,
    deployments: int = 20,
    pods: int = 5,
    repeats: int = 10,
    batch: int = 10,
    senders: int = 8,
    log_dir: Path,
) -> dict[str, Any]:
    cluster.ensure(workload.catalog_objects())
    namespace = cluster.namespace("storm")
    labels = {"kubernaut.io/environment": "production"}
    cluster.core.patch_namespace(namespace, {"metadata": {"labels": labels}})
    chains = _workloads(cluster, namespace, deployments=deployments, pods=pods)
    bodies = _payloads(namespace, chains, repeats=repeats, batch=batch)
    alerts = sum(len(b["alerts"]) for b in bodies)
    (port,) = devcluster.free_ports(1)
    with harness.LlmServer(delay=0.0) as llm:
        allowed = log_dir / "intake-mapping.yaml"
        allowed.write_text(json.dumps({"namespaces": [namespace]}))
        env = {
            **llm.operator_env(), "AIANALYSIS_INTAKE_PORT": str(port), "AIANALYSIS_INTAKE_TOKEN": TOKEN,
            "AIANALYSIS_INTAKE_MAPPING_FILE": str(allowed),
            "AIANALYSIS_INTAKE_ALLOW_PLAIN_HTTP": "true",  # loopback, figures comparable with earlier runs
        }  # fmt: skip
        with harness.Operator(cluster, env=env, log_dir=log_dir) as operator:
            operator.wait_catalog(len(workload.SIGNALS), timeout=60)
            url = f"http://127.0.0.1:{port}{server.PATH}"
            floor, floor_s = _floor(bodies, senders=senders)
            with harness.TerminalWatch(cluster, namespace) as watcher:
                answers, sending = _post_all(url, bodies, senders=senders)
                processed = _wait(
                    lambda: operator.metric("aianalysis_intake_alerts_total") >= alerts,
                    timeout=300,
                    what="processing",
                )
                watcher.wait(deployments, timeout=300)
            items = cluster.custom.list_namespaced_custom_object(
                harness.G, harness.V, namespace, harness.AIA
            )["items"]
            _wait(lambda: _occurrences(cluster, namespace) >= alerts, timeout=60, what="occurrence writes")
            occurrences = _occurrences(cluster, namespace)
            outcomes = {
                name: operator.metric(f'aianalysis_intake_alerts_total{{outcome="{name}"}}')
                for name in ("created", "repeat", "rate_limited", "error", "no_namespace")
            }
    latencies = [seconds for seconds, _ in answers]
    bare = [seconds for seconds, _ in floor]
    return {
        "alerts": alerts,
        "incident_keys": deployments,
        "payloads": len(bodies),
        "senders": senders,
        "accepted_payloads": sum(1 for _, code in answers if code == 200),
        "analyses_created": len(items),
        "conversations": round((llm.stats.get("requests") or 0) / workload.REQUESTS_PER_ANALYSIS, 1),
        "llm_requests": llm.stats.get("requests"),
        "occurrences_total": occurrences,
        "outcomes": outcomes,
        "intake_p50_ms": round(harness.percentile(latencies, 0.5) * 1000, 2),
        "intake_p99_ms": round(harness.percentile(latencies, 0.99) * 1000, 2),
        "accepted_alerts_per_s": round(alerts / sending, 1),
        "floor_p50_ms": round(harness.percentile(bare, 0.5) * 1000, 2),
        "floor_p99_ms": round(harness.percentile(bare, 0.99) * 1000, 2),
        "floor_alerts_per_s": round(alerts / floor_s, 1),
        "processed_s": round(processed, 2),
        "goal_analyses": deployments,
        "goal_conversations": deployments,
    }


def _occurrences(cluster: harness.Cluster, namespace: str) -> int:
    items = cluster.custom.list_namespaced_custom_object(harness.G, harness.V, namespace, harness.AIA)[
        "items"
    ]
    return sum(int(((i.get("status") or {}).get("intake") or {}).get("occurrences") or 0) for i in items)


def _wait(ready: Any, *, timeout: float, what: str) -> float:
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        if ready():
            return time.monotonic() - began
        time.sleep(0.2)
    raise RuntimeError(f"storm: {what} not done after {timeout:.0f}s")
