"""What an SRE-depth investigation costs in input tokens, replayed through the real tools.

Three incidents are staged on the bench's real API server, with a real Prometheus scraping a small
exporter (``AIANALYSIS_PROMETHEUS_BIN``, ``make prometheus``): a Deployment crash-looping after a bad
rollout, a Node under disk pressure, an HPA at its maximum, among other workloads. For each, a
scripted model (the local Messages API server) makes the calls an SRE would make, several per turn
as Claude does, searches the catalog and submits. The requests the real Anthropic SDK sent are
measured:

- input tokens per incident: every request's whole prompt (tools, system, messages), summed;
- cache reads: the provider marks the tools, the system prompt and (top-level ``cache_control``)
  the conversation so far, so request n reads what request n-1 sent; the first request of an
  incident reads the tools and system prompt that earlier incidents wrote (a warm cache);
- tool-output tokens per call, from the tool box's audit record (``status.investigation``).

Tokens are characters / 4 (``bench.caching``'s method: no Claude tokenizer offline). No kubelet
runs, so Pod logs cannot be served: the scripts do not ask for them (a 100-line log adds about
2,000 tokens to one incident).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import statistics
import tempfile
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s
from tests.support import messages_server as ms
from tests.support import prometheus as prom

from aianalysis import catalog, resources, settings
from aianalysis.analysis import llm, pipeline
from aianalysis.kube import api_reader
from bench import caching, harness

GOAL_MEDIAN_TOKENS = 40_000
GOAL_CACHE_SHARE = 0.8
NOW = "2026-11-20T10:00:00Z"


@dataclasses.dataclass
class Incident:
    name: str
    spec: resources.AIAnalysisSpec
    turns: list[list[tuple[str, dict[str, Any]]]]
    summary: str


# ---- staging ---------------------------------------------------------------------------------


class Stage:
    def __init__(self, cluster: harness.Cluster) -> None:
        self.api = cluster.api
        self.core = k8s.CoreV1Api(cluster.typed)
        self.apps = k8s.AppsV1Api(cluster.typed)
        self.scaling = k8s.AutoscalingV2Api(cluster.typed)
        self.namespace = cluster.namespace("shop")

    def deployment(self, name: str, *, replicas: int, image: str, memory: str = "256Mi") -> dict[str, Any]:
        body = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "labels": {"app": name}},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": _template(name, image, memory, {}),
            },
        }
        created = self.apps.create_namespaced_deployment(self.namespace, body)
        return {"kind": "Deployment", "name": name, "uid": created.metadata.uid}

    def replica_set(
        self,
        owner: dict[str, Any],
        *,
        revision: int,
        image: str,
        env: dict[str, str],
        cause: str | None = None,
    ) -> dict[str, Any]:
        name = f"{owner['name']}-{revision}a{revision}b"
        labels = {"app": owner["name"], "pod-template-hash": f"{revision}a{revision}b"}
        annotations = {"deployment.kubernetes.io/revision": str(revision)}
        if cause:
            annotations["kubernetes.io/change-cause"] = cause
        template = _template(owner["name"], image, "256Mi", env)
        template["metadata"]["labels"] = labels
        body = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": name,
                "labels": labels,
                "annotations": annotations,
                "ownerReferences": [_ref(owner, "apps/v1")],
            },
            "spec": {"replicas": 3, "selector": {"matchLabels": labels}, "template": template},
        }
        created = self.apps.create_namespaced_replica_set(self.namespace, body)
        return {
            "kind": "ReplicaSet",
            "name": name,
            "uid": created.metadata.uid,
            "labels": labels,
            "image": image,
        }

    def pod(
        self, owner: dict[str, Any], index: int, *, node: str, state: str, namespace: str | None = None
    ) -> str:
        name = f"{owner['name']}-{index:02d}x"
        where = namespace or self.namespace
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "labels": owner.get("labels") or {"app": owner["name"]},
                "ownerReferences": [_ref(owner, "apps/v1")],
            },
            "spec": {
                "nodeName": node,
                "containers": [
                    {
                        "name": "app",
                        "image": owner.get("image", "registry.example/app:1"),
                        "resources": {
                            "requests": {"cpu": "100m", "memory": "128Mi"},
                            "limits": {"cpu": "500m", "memory": "256Mi"},
                        },
                    }
                ],
            },
        }
        self.core.create_namespaced_pod(where, body)
        self.core.patch_namespaced_pod_status(name, where, {"status": _pod_status(state)})
        return name

    def event(
        self,
        involved: dict[str, Any],
        *,
        reason: str,
        kind: str,
        message: str,
        count: int,
        namespace: str | None = None,
    ) -> None:
        where = namespace or self.namespace
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{involved['name']}."},
            "involvedObject": {**involved, "namespace": where if involved["kind"] != "Node" else ""},
            "type": kind,
            "reason": reason,
            "message": message,
            "count": count,
            "firstTimestamp": NOW,
            "lastTimestamp": NOW,
            "source": {"component": "kubelet"},
        }
        self.core.create_namespaced_event(where, body)

    def node(self, name: str, *, disk_pressure: bool) -> None:
        taints = (
            [{"key": "node.kubernetes.io/disk-pressure", "effect": "NoSchedule"}] if disk_pressure else []
        )
        with contextlib.suppress(k8s.ApiException):
            self.core.create_node(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                    "spec": {"taints": taints},
                }
            )
        conditions = [
            {"type": "Ready", "status": "True", "reason": "KubeletReady", "lastTransitionTime": NOW},
            {
                "type": "MemoryPressure",
                "status": "False",
                "reason": "KubeletHasSufficientMemory",
                "lastTransitionTime": NOW,
            },
            {
                "type": "DiskPressure",
                "status": "True" if disk_pressure else "False",
                "reason": "KubeletHasDiskPressure" if disk_pressure else "KubeletHasNoDiskPressure",
                "message": "ephemeral-storage available 4% below the 10% eviction threshold"
                if disk_pressure
                else "",
                "lastTransitionTime": NOW,
            },
        ]
        capacity = {"cpu": "8", "memory": "32Gi", "ephemeral-storage": "100Gi", "pods": "110"}
        self.core.patch_node_status(
            name, {"status": {"conditions": conditions, "capacity": capacity, "allocatable": capacity}}
        )


def _template(name: str, image: str, memory: str, env: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": name}},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": image,
                    "env": [{"name": k, "value": v} for k, v in {"LOG_LEVEL": "info", **env}.items()],
                    "resources": {
                        "requests": {"cpu": "100m", "memory": "128Mi"},
                        "limits": {"cpu": "500m", "memory": memory},
                    },
                }
            ]
        },
    }


def _ref(owner: dict[str, Any], api_version: str) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": owner["kind"],
        "name": owner["name"],
        "uid": owner["uid"],
        "controller": True,
    }


def _pod_status(state: str) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "app", "image": "app", "imageID": "", "ready": state == "running"}
    if state == "crashloop":
        container.update(
            restartCount=6,
            state={
                "waiting": {
                    "reason": "CrashLoopBackOff",
                    "message": "back-off 2m40s restarting failed container",
                }
            },
            lastState={"terminated": {"reason": "Error", "exitCode": 1, "startedAt": NOW, "finishedAt": NOW}},
        )
    else:
        container.update(restartCount=0, state={"running": {"startedAt": NOW}})
    status: dict[str, Any] = {"phase": "Running", "startTime": NOW, "containerStatuses": [container]}
    if state == "evicted":
        status = {
            "phase": "Failed",
            "reason": "Evicted",
            "message": "The node was low on resource: ephemeral-storage.",
        }
    return status


def stage(cluster: harness.Cluster, exporter: prom.Exporter) -> list[Incident]:
    s = Stage(cluster)
    ns = s.namespace
    for node in ("node-a", "node-c"):
        s.node(node, disk_pressure=False)
    s.node("node-b", disk_pressure=True)
    # Neighbours: a namespace with a dozen healthy workloads.
    for i, name in enumerate(("cart", "catalog", "search", "payments", "auth", "mailer", "images", "ledger")):
        owner = s.deployment(name, replicas=2, image=f"registry.example/{name}:2.{i}")
        rs = s.replica_set(owner, revision=1, image=f"registry.example/{name}:2.{i}", env={})
        for j in range(2):
            s.pod(rs, j, node=("node-a", "node-c")[j], state="running")
    # 1. checkout: revision 2 crash-loops, revision 1's Pods still run.
    checkout = s.deployment("checkout", replicas=3, image="registry.example/checkout:1.15")
    good = s.replica_set(checkout, revision=1, image="registry.example/checkout:1.14", env={})
    bad = s.replica_set(
        checkout,
        revision=2,
        image="registry.example/checkout:1.15",
        env={"PRICING_MODE": "v2"},
        cause="deploy 1.15 (pricing v2)",
    )
    for j in range(2):
        s.pod(good, j, node="node-a", state="running")
    crashing = [s.pod(bad, j, node=("node-a", "node-c")[j % 2], state="crashloop") for j in range(3)]
    for pod in crashing:
        s.event(
            {"kind": "Pod", "name": pod},
            reason="BackOff",
            kind="Warning",
            message="Back-off restarting failed container app",
            count=14,
        )
        s.event(
            {"kind": "Pod", "name": pod},
            reason="Pulled",
            kind="Normal",
            message="Container image already present on machine",
            count=7,
        )
    s.event(
        {"kind": "Deployment", "name": "checkout"},
        reason="ScalingReplicaSet",
        kind="Normal",
        message="Scaled up replica set checkout-2a2b to 3",
        count=1,
    )
    # 2. node-b under disk pressure: evictions.
    for j in range(4):
        s.pod(
            {"kind": "ReplicaSet", "name": "images-1a1b", "uid": f"00000000-0000-0000-0000-00000000000{j}"},
            10 + j,
            node="node-b",
            state="evicted",
        )
    s.event(
        {"kind": "Node", "name": "node-b"},
        reason="EvictionThresholdMet",
        kind="Warning",
        message="Attempting to reclaim ephemeral-storage",
        count=9,
        namespace="default",
    )
    s.event(
        {"kind": "Node", "name": "node-b"},
        reason="FreeDiskSpaceFailed",
        kind="Warning",
        message="Failed to garbage collect required amount of images. Attempted to free 12 GB, "
        "but only found 0 bytes eligible to free.",
        count=4,
        namespace="default",
    )
    # 3. api at its HPA's maximum.
    api = s.deployment("api", replicas=10, image="registry.example/api:3.2")
    api_rs = s.replica_set(api, revision=1, image="registry.example/api:3.2", env={})
    for j in range(10):
        s.pod(api_rs, j, node=("node-a", "node-c")[j % 2], state="running")
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "api"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"},
            "minReplicas": 2,
            "maxReplicas": 10,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}},
                }
            ],
        },
    }
    s.scaling.create_namespaced_horizontal_pod_autoscaler(ns, hpa)
    s.scaling.patch_namespaced_horizontal_pod_autoscaler_status(
        "api",
        ns,
        {
            "status": {
                "currentReplicas": 10,
                "desiredReplicas": 10,
                "currentMetrics": [
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "current": {"averageUtilization": 96, "averageValue": "480m"},
                        },
                    }
                ],
                "conditions": [
                    {
                        "type": "AbleToScale",
                        "status": "True",
                        "reason": "ReadyForNewScale",
                        "lastTransitionTime": NOW,
                    },
                    {
                        "type": "ScalingLimited",
                        "status": "True",
                        "reason": "TooManyReplicas",
                        "message": "the desired replica count is more than the maximum replica count",
                        "lastTransitionTime": NOW,
                    },
                ],
            }
        },
    )
    s.event(
        {"kind": "HorizontalPodAutoscaler", "name": "api"},
        reason="SuccessfulRescale",
        kind="Normal",
        message="New size: 10; reason: cpu resource utilization (percentage of request) above target",
        count=3,
    )
    exporter.extra = _metrics(ns)
    return _incidents(ns, crashing[0])


def _metrics(ns: str) -> list[str]:
    lines = ["# TYPE node_filesystem_avail_bytes gauge", "# TYPE node_filesystem_size_bytes gauge"]
    for node, free in (("node-a", 61e9), ("node-b", 4.1e9), ("node-c", 55e9)):
        for mount, share in (("/", 1.0), ("/var/lib/containerd", 0.8)):
            lines.append(f'node_filesystem_avail_bytes{{node="{node}",mountpoint="{mount}"}} {free * share}')
            lines.append(f'node_filesystem_size_bytes{{node="{node}",mountpoint="{mount}"}} 100e9')
    lines.append("# TYPE kube_pod_container_status_restarts_total counter")
    for j in range(3):
        lines.append(
            f'kube_pod_container_status_restarts_total{{namespace="{ns}",pod="checkout-2a2b-{j:02d}x"}} 6'
        )
    lines.append("# TYPE container_cpu_usage_seconds_total counter")
    for j in range(10):
        lines.append(
            f'container_cpu_usage_seconds_total{{namespace="{ns}",pod="api-1a1b-{j:02d}x"}} {1000 + 37 * j}'
        )
    return lines


def _incidents(ns: str, crashing: str) -> list[Incident]:
    def spec(kind: str, name: str, signal: str, namespace: str | None) -> resources.AIAnalysisSpec:
        return resources.AIAnalysisSpec.model_validate(
            {
                "signal": {"type": signal, "severity": "high", "alertName": signal},
                "resource": {"kind": kind, "name": name, "namespace": namespace},
                "businessContext": {"environment": "production", "priority": "P1", "riskTolerance": "medium"},
            }
        )

    catalog_turns = lambda query, signal, action, workflow: [  # noqa: E731
        [
            ("list_action_types", {}),
            ("search_workflow_catalog", {"query": query, "signal_type": signal, "action_type": action}),
        ],
        [("get_workflow_details", {"workflow_id": workflow})],
    ]
    return [
        Incident(
            name="crashloop-after-rollout",
            spec=spec("Deployment", "checkout", "CrashLoopBackOff", ns),
            turns=[
                [
                    ("list_resources", {"kind": "Pod", "label_selector": "app=checkout"}),
                    ("rollout_history", {"kind": "Deployment", "name": "checkout"}),
                    ("list_namespace_events", {"type": "Warning"}),
                ],
                [
                    ("list_events", {"kind": "Pod", "name": crashing}),
                    ("get_resource", {"kind": "Deployment", "name": "checkout"}),
                    (
                        "prometheus_query_range",
                        {
                            "query": f'sum by (pod) (kube_pod_container_status_restarts_total{{namespace="{ns}"}})',  # noqa: E501
                            "range": "30m",
                        },
                    ),
                ],
                *catalog_turns(
                    "pods of the new revision crash after the rollout, roll back",
                    "CrashLoopBackOff",
                    "RollbackDeployment",
                    "rollback-deployment",
                ),
            ],
            summary="Only revision 2's Pods crash-loop since the rollout that set PRICING_MODE=v2.",
        ),
        Incident(
            name="node-disk-pressure",
            spec=spec("Node", "node-b", "NodeDiskPressure", None),
            turns=[
                [
                    ("list_resources", {"kind": "Node"}),
                    ("list_events", {"kind": "Node", "name": "node-b", "namespace": "default"}),
                    ("find_resources", {"kind": "Pod", "field_selector": "spec.nodeName=node-b"}),
                ],
                [
                    (
                        "prometheus_query",
                        {"query": "node_filesystem_avail_bytes / node_filesystem_size_bytes"},
                    ),
                    ("top", {"resource": "nodes"}),
                    ("get_resource", {"kind": "Node", "name": "node-b"}),
                ],
                *catalog_turns(
                    "node disk almost full, image garbage collection failing, clean up disk",
                    "NodeDiskPressure",
                    None,
                    "node-disk-cleanup",
                ),
            ],
            summary="node-b's root filesystem is 96% full and image GC frees nothing; Pods are evicted.",
        ),
        Incident(
            name="hpa-maxed",
            spec=spec("HorizontalPodAutoscaler", "api", "KubeHpaMaxedOut", ns),
            turns=[
                [
                    ("get_resource", {"kind": "HorizontalPodAutoscaler", "name": "api"}),
                    ("list_resources", {"kind": "Pod", "label_selector": "app=api"}),
                    ("top", {"resource": "pods"}),
                ],
                [
                    (
                        "prometheus_query_range",
                        {
                            "query": f'sum by (pod) (rate(container_cpu_usage_seconds_total{{namespace="{ns}"}}[1m]))',  # noqa: E501
                            "range": "30m",
                        },
                    ),
                    ("list_namespace_events", {"involved_kind": "HorizontalPodAutoscaler"}),
                ],
                *catalog_turns(
                    "HPA at max replicas with CPU above target, raise the maximum",
                    "KubeHpaMaxedOut",
                    None,
                    "hpa-raise-max-replicas",
                ),
            ],
            summary="api runs at its HPA maximum of 10 with CPU at 96% of requests (target 70%).",
        ),
    ]


# ---- the run ---------------------------------------------------------------------------------


def _conversation(incident: Incident) -> list[ms.Reply]:
    steps = [
        ms.reply_tools(*(ms.tool_use(name, arguments) for name, arguments in turn)) for turn in incident.turns
    ]
    answer = {
        "analysis_summary": incident.summary,
        "root_cause_assessment": incident.summary,
        "rca_severity": "high",
        "selected_workflow": None,
        "needs_human_review": True,
        "human_review_reason": "no_eligible_workflow",
    }
    return [*steps, ms.submit(answer)]


def _tokens(bodies: list[dict[str, Any]], warm_prefix_chars: int) -> dict[str, int]:
    totals = [sum(size for size, _ in caching._segments(body)) for body in bodies]
    cached = [warm_prefix_chars, *totals[:-1]]
    reads = sum(min(c, t) for c, t in zip(cached, totals, strict=True))
    return {
        "requests": len(bodies),
        "input_tokens": sum(totals) // caching.CHARS_PER_TOKEN,
        "cache_read_tokens": reads // caching.CHARS_PER_TOKEN,
    }


async def _replay(
    cluster: harness.Cluster,
    server: ms.MessagesServer,
    incidents: list[Incident],
    prom_url: str,
    transcript: list[str],
) -> list[dict[str, Any]]:
    config = settings.Settings(
        llm=settings.LlmSettings(provider="anthropic", api_key="bench", anthropic_base_url=server.base_url),
        investigation=settings.InvestigationSettings(namespaces=("*",)),
        prometheus=settings.PrometheusSettings(url=prom_url),
    )
    found = catalog.load_paths([harness.ROOT / "examples" / "catalog"])
    provider = llm.make_provider(config)
    reader = api_reader.KubernetesReader(cluster.api)
    metrics = pipeline.metrics_reader(config)
    rows = []
    try:
        for incident in incidents:
            before = len(server.requests)
            server.add(*_conversation(incident))
            decision = await pipeline.analyze(
                incident.spec,
                catalog=found,
                provider=provider,
                reader=reader,
                settings=config,
                metrics=metrics,
            )
            bodies = [r.body for r in server.requests[before:]]
            transcript.append(f"#### {incident.name}")
            for body in bodies[1:]:
                transcript += [
                    f"--- {name}{' (error)' if error else ''}\n{text}"
                    for name, text, error in ms.tool_outputs(body)
                ]
            prefix = caching.share(bodies[0])["prefix_tokens"]
            row: dict[str, Any] = {
                "incident": incident.name,
                **_tokens(bodies, prefix * caching.CHARS_PER_TOKEN),
            }
            calls = decision.investigation.calls if decision.investigation else []
            if decision.investigation is not None:
                audit = yaml.safe_dump({"investigation": decision.investigation.wire()}, sort_keys=False)
                transcript.append(f"--- status.investigation\n{audit}")
            row.update(
                cached_share=round(row["cache_read_tokens"] / row["input_tokens"], 3),
                static_prefix_tokens=prefix,
                tool_calls=[
                    f"{c.tool}:{c.result_tokens}{' (error)' if c.error else ''}"
                    f"{' (cut)' if c.truncated else ''}"
                    for c in calls
                ],
                tool_output_tokens=[c.result_tokens for c in calls],
            )
            rows.append(row)
    finally:
        await provider.aclose()
        if metrics is not None:
            await metrics.aclose()
    return rows


def run(cluster: harness.Cluster, *, log_dir: Path) -> dict[str, Any]:
    if not os.environ.get("AIANALYSIS_PROMETHEUS_BIN"):
        os.environ["AIANALYSIS_PROMETHEUS_BIN"] = str(prom.binary().parent)
    with contextlib.ExitStack() as stack:
        exporter = stack.enter_context(prom.Exporter())
        incidents = stage(cluster, exporter)
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-prometheus-")))
        server_prom = stack.enter_context(prom.running(workdir, exporter))
        server_prom.wait(lambda: bool(server_prom.query("node_filesystem_avail_bytes")), 60, "scraping")
        server = stack.enter_context(ms.MessagesServer())
        transcript: list[str] = []
        rows = asyncio.run(_replay(cluster, server, incidents, server_prom.url, transcript))
    log_dir.mkdir(parents=True, exist_ok=True)
    (log_dir / "investigation-tool-outputs.txt").write_text("\n".join(transcript) + "\n")
    tokens = [row["input_tokens"] for row in rows]
    per_call = [t for row in rows for t in row["tool_output_tokens"]]
    return {
        "incidents": rows,
        "median_input_tokens": statistics.median(tokens),
        "cache_share": round(sum(r["cache_read_tokens"] for r in rows) / sum(tokens), 3),
        "min_cache_share": min(r["cached_share"] for r in rows),
        "tool_output_tokens_per_call_median": statistics.median(per_call),
        "tool_output_tokens_per_call_max": max(per_call),
        "token_estimate": f"characters / {caching.CHARS_PER_TOKEN}",
        "goal_median_tokens": GOAL_MEDIAN_TOKENS,
        "goal_cache_share": GOAL_CACHE_SHARE,
    }
