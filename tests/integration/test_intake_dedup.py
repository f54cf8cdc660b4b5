"""Deduplication against the real apiserver, without an operator (nothing analyses here, so every
analysis stays as the intake left it): one analysis per incident, repeats counted, the cooldown
measured on an injected clock, state recovered from the cluster after a restart, resolved alerts
ending analyses that have not started, and Pods resolved to their Deployment."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import kubernetes
import pytest
from kubernetes import client

from aianalysis import kube, resources
from aianalysis.intake import dedup, mapping, payload, resolve
from aianalysis_dev import devcluster
from tests.support import typed

pytestmark = pytest.mark.cluster

G, V, AIA = resources.GROUP, resources.VERSION, resources.AIANALYSIS_PLURAL
COOLDOWN = 3600.0
CONFIG = mapping.MappingConfig(namespaces=["*"])


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def api(cluster: devcluster.Cluster, crds: list[str]) -> AsyncIterator[client.ApiClient]:
    made = kube.api_client(str(cluster.kubeconfig))
    yield made
    made.close()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def tracker(api: kube.ApiClient, clock: Clock) -> Callable[..., dedup.Tracker]:
    def make(**kwargs: Any) -> dedup.Tracker:
        return dedup.Tracker(api, cooldown_seconds=COOLDOWN, clock=clock, **kwargs)

    return make


def mapped(namespace: str, pod: str, *, status: str = "firing") -> mapping.Mapped:
    raw = payload.Alert.model_validate(
        {
            "status": status,
            "labels": {
                "alertname": "KubePodCrashLooping",
                "namespace": namespace,
                "pod": pod,
                "severity": "warning",
            },
            "annotations": {"summary": "crash looping"},
            "startsAt": "2026-11-22T09:58:00Z",
            "fingerprint": f"fp{abs(hash(pod)) % 10**14:014d}",
        }
    )
    result = mapping.map_alert(raw, common_labels={}, config=CONFIG, received="2026-11-22T10:00:00Z")
    assert isinstance(result, mapping.Mapped)
    return result


def incoming(namespace: str, pod: str, *, status: str = "firing", workload: str = "api") -> dedup.Incoming:
    alert = mapped(namespace, pod, status=status)
    return dedup.Incoming(
        alert=alert,
        workload=mapping.Target(kind="Deployment", name=workload, namespace=namespace),
        business=resources.BusinessContext(),
        received=alert.signal.received_time or "",
    )


def items(api: kube.ApiClient, namespace: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = client.CustomObjectsApi(typed.client()).list_namespaced_custom_object(
        G, V, namespace, AIA
    )["items"]
    return sorted(found, key=lambda i: i["metadata"]["name"])


def end(api: kube.ApiClient, namespace: str, name: str, *, completed_at: str) -> None:
    client.CustomObjectsApi(typed.client()).patch_namespaced_custom_object_status(
        G, V, namespace, AIA, name, {"status": {"phase": "Completed", "reason": "WorkflowSelected",
                                                 "completedAt": completed_at}},
    )  # fmt: skip


async def test_repeats_count_on_one_analysis_and_the_cooldown_starts_a_new_one_after_it(
    api: kube.ApiClient, namespace: str, tracker: Callable[..., dedup.Tracker], clock: Clock
) -> None:
    intake = tracker()
    outcomes = [await intake.handle(incoming(namespace, f"api-{i}")) for i in range(5)]
    await intake.aclose()

    [first] = items(api, namespace)
    assert outcomes == ["created", "repeat", "repeat", "repeat", "repeat"]
    assert first["status"]["intake"]["occurrences"] == 5
    assert first["metadata"]["labels"][dedup.INCIDENT_LABEL] == dedup.incident_hash(
        f"{namespace}/Deployment/api/CrashLoopBackOff"
    )

    end(api, namespace, first["metadata"]["name"], completed_at="2027-01-15T08:00:00Z")  # = clock.now
    restarted = tracker()  # a restart: state comes from the cluster
    assert await restarted.handle(incoming(namespace, "api-9")) == "repeat"
    clock.now += COOLDOWN - 1
    assert await restarted.handle(incoming(namespace, "api-9")) == "repeat"  # re-sent: not counted again
    clock.now += 2
    assert await restarted.handle(incoming(namespace, "api-9")) == "created"
    await restarted.aclose()

    names = [i["metadata"]["name"] for i in items(api, namespace)]
    assert len(names) == 2 and names[0].endswith("-1") and names[1].endswith("-2")
    assert [i["status"]["intake"]["occurrences"] for i in items(api, namespace)] == [6, 1]


async def test_a_resolved_alert_ends_an_analysis_that_has_not_started_and_the_next_firing_starts_anew(
    api: kube.ApiClient, namespace: str, tracker: Callable[..., dedup.Tracker]
) -> None:
    cancelled: list[str] = []
    intake = tracker(on_cancelled=cancelled.append)
    await intake.handle(incoming(namespace, "api-1"))
    await intake.handle(incoming(namespace, "api-2"))

    assert await intake.handle(incoming(namespace, "api-1", status="resolved")) == "resolved", (
        "api-2 still fires"
    )
    assert await intake.handle(incoming(namespace, "api-2", status="resolved")) == "cancelled"
    [ended] = items(api, namespace)
    assert ended["status"]["phase"] == "Completed" and ended["status"]["reason"] == dedup.RESOLVED_REASON
    assert not ended["status"].get("selectedWorkflow")
    assert cancelled == [ended["metadata"]["uid"]]

    assert await intake.handle(incoming(namespace, "api-1")) == "created", (
        "a cancelled analysis has no cooldown"
    )
    await intake.aclose()
    assert len(items(api, namespace)) == 2


async def test_a_resolved_alert_leaves_a_started_analysis_alone(
    api: kube.ApiClient, namespace: str, tracker: Callable[..., dedup.Tracker]
) -> None:
    intake = tracker()
    await intake.handle(incoming(namespace, "api-1"))
    [item] = items(api, namespace)
    client.CustomObjectsApi(typed.client()).patch_namespaced_custom_object_status(
        G, V, namespace, AIA, item["metadata"]["name"], {"status": {"phase": "Investigating"}}
    )

    assert await intake.handle(incoming(namespace, "api-1", status="resolved")) == "resolved"
    await intake.aclose()
    assert items(api, namespace)[0]["status"]["phase"] == "Investigating"


async def test_resolved_after_the_analysis_ended_is_recorded_for_the_assessment(
    api: kube.ApiClient, namespace: str, tracker: Callable[..., dedup.Tracker]
) -> None:
    intake = tracker()
    await intake.handle(incoming(namespace, "api-1"))
    await intake.aclose()
    [item] = items(api, namespace)
    end(api, namespace, item["metadata"]["name"], completed_at="2026-11-22T10:01:00Z")
    intake = tracker()  # a restarted intake: it learns from the cluster that the analysis ended

    assert await intake.handle(incoming(namespace, "api-1", status="resolved")) == "resolved"
    await intake.aclose()
    recorded = items(api, namespace)[0]["status"]["intake"]
    assert recorded["resolvedAt"] == "2026-11-22T10:00:00Z" and recorded["occurrences"] == 1


async def test_pods_resolve_to_their_deployment_and_namespace_labels_give_the_business_context(
    api: kube.ApiClient, cluster: devcluster.Cluster, namespace: str
) -> None:
    cluster.kubectl(
        "label",
        "namespace",
        namespace,
        "kubernaut.io/environment=staging",
        "kubernaut.io/priority=P2",
        "kubernaut.ai/business-unit=payments",
        "other.example/environment=production",
    )
    cluster.kubectl("annotate", "namespace", namespace, "kubernaut.ai/service-owner=web team")
    apps, core = kubernetes.client.AppsV1Api(typed.client()), kubernetes.client.CoreV1Api(typed.client())
    spec = {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        },
    }
    dep = apps.create_namespaced_deployment(namespace, {"metadata": {"name": "web"}, "spec": spec})
    ref = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "web",
        "uid": dep.metadata.uid,
        "controller": True,
    }
    rs = apps.create_namespaced_replica_set(
        namespace, {"metadata": {"name": "web-1", "ownerReferences": [ref]}, "spec": spec}
    )
    rs_ref = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": "web-1",
        "uid": rs.metadata.uid,
        "controller": True,
    }
    core.create_namespaced_pod(
        namespace,
        {"metadata": {"name": "web-1-abc", "ownerReferences": [rs_ref]}, "spec": spec["template"]["spec"]},
    )
    resolver = resolve.Resolver(api)

    owner = await resolver.workload(mapping.Target(kind="Pod", name="web-1-abc", namespace=namespace))
    gone = await resolver.workload(mapping.Target(kind="Pod", name="deleted-pod", namespace=namespace))
    context = await resolver.business_context(namespace, CONFIG.business_context_defaults)

    assert owner == mapping.Target(kind="Deployment", name="web", namespace=namespace)
    assert gone == mapping.Target(kind="Namespace", name=namespace, namespace=namespace)
    assert context == resources.BusinessContext(
        environment="staging",
        priority="P2",
        business_category="payments",
        risk_tolerance="low",
        custom_labels={"team": "web team"},
    )
    with pytest.raises(resolve.NamespaceMissingError):
        await resolver.business_context("no-such-namespace-x1", CONFIG.business_context_defaults)


def _owned_by(kind: str, name: str, uid: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": uid, "controller": True}


async def test_alerts_about_gone_pods_deduplicate_onto_their_workload_that_exists(
    api: kube.ApiClient, namespace: str, tracker: Callable[..., dedup.Tracker]
) -> None:
    apps = kubernetes.client.AppsV1Api(typed.client())
    template = {
        "metadata": {"labels": {"app": "shop"}},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }
    spec = {"selector": {"matchLabels": {"app": "shop"}}, "template": template}
    dep = apps.create_namespaced_deployment(namespace, {"metadata": {"name": "shop"}, "spec": spec})
    owned = {"name": "shop-7d9f8b6c4", "ownerReferences": [_owned_by("Deployment", "shop", dep.metadata.uid)]}
    apps.create_namespaced_replica_set(namespace, {"metadata": owned, "spec": spec})
    db = {"selector": {"matchLabels": {"app": "db"}}, "serviceName": "db",
          "template": {**template, "metadata": {"labels": {"app": "db"}}}}  # fmt: skip
    apps.create_namespaced_stateful_set(namespace, {"metadata": {"name": "db"}, "spec": db})
    resolver = resolve.Resolver(api)

    async def workload(pod: str, **labels: str) -> tuple[str, str]:
        found = await resolver.workload(mapping.Target(kind="Pod", name=pod, namespace=namespace), labels)
        return found.kind, found.name

    # No Pod of these names exists: each resolves through an object that does.
    assert await workload("shop-7d9f8b6c4-x2k9p") == ("Deployment", "shop")  # its ReplicaSet exists
    assert await workload("shop-5f6b7c8d9-q2w4z") == ("Deployment", "shop")  # an older ReplicaSet, gone
    assert await workload("db-3") == ("StatefulSet", "db")
    assert await workload("renamed", owner_kind="ReplicaSet", owner_name="shop-7d9f8b6c4") == (
        "Deployment",
        "shop",
    )
    # Text alone resolves nothing: a label or a name shape naming no existing object does not
    # count; such a gone Pod is an incident about its namespace (one, however many names).
    assert await workload("lied", owner_kind="Deployment", owner_name="payments") == ("Namespace", namespace)
    assert await workload("cart-7d9f8b6c4-x2k9p") == ("Namespace", namespace)
    assert await workload("ghost", owner_kind="Secret", owner_name="shop") == ("Namespace", namespace)
    literal = resolve.Resolver(api, orphans_to_namespace=False)  # mapping: namespaceIncidents: false
    assert await literal.workload(
        mapping.Target(kind="Pod", name="ghost", namespace=namespace), {}
    ) == mapping.Target(kind="Pod", name="ghost", namespace=namespace)

    intake = tracker()
    outcomes = []
    pods = ("shop-7d9f8b6c4-x2k9p", "shop-7d9f8b6c4-b5n7m", "shop-5f6b7c8d9-q2w4z", "made-up-1", "made-up-2")
    for pod in pods:
        alert = mapped(namespace, pod)
        found = await resolver.workload(alert.target, alert.signal.labels)
        outcomes.append(
            await intake.handle(
                dedup.Incoming(
                    alert=alert,
                    workload=found,
                    business=resources.BusinessContext(),
                    received=alert.signal.received_time or "",
                )
            )
        )
    await intake.aclose()

    assert outcomes == ["created", "repeat", "repeat", "created", "repeat"], (
        "one analysis for three gone Pods of one Deployment, one for the Pods that resolve to nothing"
    )
    shop, orphans = sorted(items(api, namespace), key=lambda i: i["spec"]["resource"]["kind"])
    assert shop["spec"]["resource"] == {"kind": "Deployment", "name": "shop", "namespace": namespace}
    assert shop["status"]["intake"]["occurrences"] == 3
    assert orphans["spec"]["resource"] == {"kind": "Namespace", "name": namespace, "namespace": namespace}
    assert orphans["status"]["intake"]["occurrences"] == 2


async def test_a_flood_of_distinct_alert_keys_keeps_the_in_memory_maps_bounded(
    api: kube.ApiClient,
    namespace: str,
    tracker: Callable[..., dedup.Tracker],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(dedup, "MAX_INCIDENTS", 10)
    monkeypatch.setattr(resolve, "MAX_CACHED", 10)
    intake, resolver = tracker(), resolve.Resolver(api)
    assert await intake.handle(incoming(namespace, "api-1")) == "created"

    for i in range(60):  # distinct workloads and pod names, as a storm of label noise would send
        assert await intake.handle(incoming(namespace, f"p{i}", status="resolved", workload=f"w{i}")) == (
            "resolved"
        )
        await resolver.workload(mapping.Target(kind="Pod", name=f"p{i}", namespace=namespace))
        with pytest.raises(resolve.NamespaceMissingError):
            await resolver.business_context(f"gone-{i}", CONFIG.business_context_defaults)

    assert intake.sizes == {"incidents": 10, "locks": 0}
    assert resolver.sizes == {"owners": 10, "namespaces": 10}
    # The forgotten incident is found again in the cluster: its next alert still only counts.
    assert await intake.handle(incoming(namespace, "api-2")) == "repeat"
    await intake.aclose()
    assert len(items(api, namespace)) == 1
