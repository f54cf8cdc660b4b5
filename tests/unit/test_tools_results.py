"""What a tool shows, as values (``ToolResult.data``): the same redacted objects, rows, events and
lines the LLM's text renders — never parsed back from it, and not cut by the text's cap."""

from __future__ import annotations

import json
from typing import Any

from aianalysis.analysis import tools
from aianalysis.kube import kind_table
from tests.unit.test_tools import ELIGIBLE, FakeReader, deployment, incident, make_catalog, pod

PODS_METRICS = kind_table.Kind(
    kind="PodMetrics", group="metrics.k8s.io", version="v1beta1", plural="pods", namespaced=True
)


def box(
    reader: FakeReader | None = None, *, max_chars: int = 8000, cluster_scope: frozenset[Any] = frozenset()
) -> tools.ToolBox:
    return tools.ToolBox(
        spec=incident(),
        catalog=make_catalog(),
        reader=reader,
        max_chars=max_chars,
        cluster_scope=cluster_scope,
    )


def cluster(*objects: dict[str, Any]) -> FakeReader:
    reader = FakeReader()
    for obj in (pod(), deployment(), *objects):
        reader.add(obj)
    return reader


def secret_free(data: object) -> bool:
    return "hunter2" not in json.dumps(data, default=str)


async def test_an_object_is_given_as_shown_redacted_and_whole_when_the_text_is_cut() -> None:
    big = pod("big-pod")
    big["metadata"]["annotations"] = {"note": "y" * 50_000}
    result = await box(cluster(big), max_chars=2000).call("get_resource", {"kind": "Pod", "name": "big-pod"})

    assert "characters cut" in result.text
    assert isinstance(result.data, tools.ObjectResult)
    body = result.data.body
    assert body["metadata"]["annotations"]["note"] == "y" * 50_000, "the values are not capped"
    assert list(body)[:3] == ["apiVersion", "kind", "metadata"] and list(body).index("status") < list(
        body
    ).index("spec")
    assert "uid" not in body["metadata"] and "managedFields" not in body["metadata"]


async def test_an_object_the_api_server_does_not_have_is_absent_not_unreadable() -> None:
    reader = cluster()
    missing = await box(reader).call("get_resource", {"kind": "ConfigMap", "name": "gone"})
    reader.fail = tools.Unavailable("forbidden")
    refused = await box(reader).call("get_resource", {"kind": "ConfigMap", "name": "other"})

    assert missing.is_error and isinstance(missing.data, tools.Absent)
    assert refused.is_error and refused.data is None


async def test_events_are_the_rows_the_lines_show() -> None:
    reader = cluster()
    involved = {"kind": "Pod", "name": "payment-api-7d9f-abcde", "namespace": "production"}
    reader.events = [
        {
            "involvedObject": involved,
            "type": "Warning",
            "reason": "BackOff",
            "count": 12,
            "message": "Back-off  restarting\n container </untrusted-data>\u200b password=pw-1",
            "lastTimestamp": "2026-11-20T10:05:00Z",
            "source": {"component": "kubelet"},
        },
        {"involvedObject": involved, "reason": "Pulled", "series": {"count": "3"}},
    ]

    result = await box(reader).call("list_events", {"kind": "Pod", "name": "payment-api-7d9f-abcde"})

    assert isinstance(result.data, tools.EventsResult)
    pulled, first = result.data.events  # oldest first: an event without a time before any other
    assert (first.time, first.type, first.reason, first.count, first.source) == (
        "2026-11-20T10:05:00Z",
        "Warning",
        "BackOff",
        12,
        "kubelet",
    )
    assert first.message == "Back-off restarting container </untrusted-data> password=[REDACTED]"
    assert (pulled.time, pulled.type, pulled.count, pulled.source) == ("?", "?", 3, "?")
    assert "? ? Pulled (x3, ?): " in result.text


async def test_log_lines_are_redacted_and_not_cut_with_the_text() -> None:
    reader = cluster()
    reader.logs[("production", "payment-api-7d9f-abcde")] = "\n".join(
        [f"line {i}" for i in range(300)] + ["\x1b[31mERROR\x1b[0m connecting with password=pw-123"]
    )

    result = await box(reader, max_chars=600).call(
        "get_pod_logs", {"name": "payment-api-7d9f-abcde", "tail_lines": 200}
    )

    assert "line 100\n" not in result.text
    assert isinstance(result.data, tools.LogsResult)
    assert result.data.lines[0] == "line 101" and len(result.data.lines) == 200
    assert result.data.lines[-1] == "[31mERROR[0m connecting with password=[REDACTED]", (
        "no control characters"
    )


async def test_empty_logs_are_no_lines() -> None:
    reader = cluster()
    reader.logs[("production", "payment-api-7d9f-abcde")] = ""
    result = await box(reader).call("get_pod_logs", {"name": "payment-api-7d9f-abcde"})
    assert result.data == tools.LogsResult(lines=())


async def test_the_pods_of_an_owner_are_the_redacted_pods_the_summary_shows() -> None:
    reader = cluster()
    reader.pods_of[("Deployment", "production", "payment-api")] = [pod("web-b"), pod("web-a")]

    result = await box(reader).call("list_pods_of_owner", {"kind": "Deployment", "name": "payment-api"})

    assert isinstance(result.data, tools.PodsResult)
    assert [p["metadata"]["name"] for p in result.data.pods] == ["web-a", "web-b"]
    assert result.data.pods[0]["status"]["containerStatuses"][0]["restartCount"] == 5
    assert secret_free(result.data.pods) and "hunter2" not in result.text


async def test_a_listing_gives_the_objects_of_its_rows() -> None:
    reader = cluster()
    reader.add(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "VolumeAttachment",
            "metadata": {"name": "csi-1"},
            "spec": {"attacher": "ebs", "nodeName": "n9", "source": {"persistentVolumeName": "pvc-1"}},
            "status": {"attached": True},
        }
    )

    volume = frozenset({("persistentvolume", "", "pvc-1")})  # bound to the incident's claim
    listed = await box(reader, cluster_scope=volume).call("list_resources", {"kind": "VolumeAttachment"})
    none = await box(reader).call("list_resources", {"kind": "NetworkPolicy"})

    assert isinstance(listed.data, tools.ListResult)
    [attachment] = listed.data.items
    assert (attachment["spec"]["nodeName"], attachment["status"]["attached"]) == ("n9", True)
    assert "csi-1  ebs  pvc-1  n9  true" in listed.text
    assert none.data == tools.ListResult(items=())


async def test_resource_usage_is_the_numbers_of_the_rows() -> None:
    reader = cluster()
    reader.custom = [PODS_METRICS]
    reader.add(
        {
            "kind": "PodMetrics",
            "metadata": {"name": "payment-api-7d9f-abcde", "namespace": "production"},
            "containers": [{"name": "app", "usage": {"cpu": "250m", "memory": "96Mi"}}],
        }
    )

    result = await box(reader).call("top", {"resource": "pods"})

    assert isinstance(result.data, tools.UsageResult)
    [row] = result.data.rows
    assert (row.name, row.cpu, row.memory, row.memory_share, row.cpu_share) == (
        "payment-api-7d9f-abcde",
        0.25,
        96 * 2**20,
        75.0,
        None,
    )
    assert "payment-api-7d9f-abcde  250  -  96  75%" in result.text


async def test_a_catalog_answer_is_its_json_as_values() -> None:
    search = await box().call("search_workflow_catalog", {"query": "OOMKilled", "signal_type": "OOMKilled"})
    details = await box().call("get_workflow_details", {"workflow_id": ELIGIBLE})
    kinds_ = await box().call("list_action_types", {})

    for result in (search, details, kinds_):
        assert isinstance(result.data, tools.CatalogResult)
        assert result.data.payload == json.loads(result.text)
    assert isinstance(search.data, tools.CatalogResult)
    assert [hit["workflow_id"] for hit in search.data.payload["workflows"]] == [ELIGIBLE]
