"""The webhook endpoint itself: authentication, bad input, size and rate limits, and the answer an
Alertmanager operator reads. The request path never touches the cluster (no worker runs here: the
alerts stay queued), so these need no apiserver; tests/e2e/test_intake_alertmanager.py covers the rest."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from aianalysis import metrics
from aianalysis.intake import dedup, mapping, resolve, server
from aianalysis.kube import client as kube_client
from aianalysis.kube import config as kube_config
from aianalysis.kube import rest as kube_rest

TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def make_intake(
    queue_limit: int = 100, cross_namespace: frozenset[tuple[str, str]] = frozenset()
) -> server.Intake:
    api = kube_rest.ApiClient(
        kube_config.Connection(server="http://127.0.0.1:9"), pool_size=1, timeouts=kube_client.timeouts()
    )
    return server.Intake(
        token=TOKEN,
        config=mapping.MappingConfig(),
        resolver=resolve.Resolver(api),
        tracker=dedup.Tracker(api, cooldown_seconds=3600),
        queue_limit=queue_limit,
        cross_namespace=cross_namespace,
    )


@pytest.fixture
async def http() -> AsyncIterator[TestClient[Any, Any]]:
    async with TestClient(TestServer(make_intake(queue_limit=3).app())) as client:
        yield client


def alert(pod: str, **labels: str) -> dict[str, Any]:
    return {
        "status": "firing",
        "labels": {"alertname": "KubePodCrashLooping", "namespace": "shop", "pod": pod, **labels},
        "annotations": {},
        "startsAt": "2026-11-22T09:58:00Z",
        "fingerprint": f"fp-{pod}",
    }


def body(*alerts: dict[str, Any], version: str = "4") -> dict[str, Any]:
    return {"version": version, "status": "firing", "commonLabels": {}, "alerts": list(alerts)}


def outcome(name: str) -> float:
    return metrics.REGISTRY.get_sample_value("aianalysis_intake_alerts_total", {"outcome": name}) or 0.0


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}, {"Authorization": f"Basic {TOKEN}"}],
)
async def test_missing_or_wrong_token_is_401(http: TestClient[Any, Any], headers: dict[str, str]) -> None:
    response = await http.post(server.PATH, json=body(alert("a")), headers=headers)
    assert response.status == 401
    assert "token" in (await response.json())["error"]


async def test_a_valid_payload_is_accepted_and_unmapped_alerts_are_reported(
    http: TestClient[Any, Any],
) -> None:
    before = outcome("unmapped")
    lost = {"status": "firing", "labels": {"alertname": "Watchdog"}, "fingerprint": "fp-w"}
    response = await http.post(server.PATH, json=body(alert("a"), lost), headers=AUTH)

    assert response.status == 200
    answer = await response.json()
    assert answer["accepted"] == 1
    assert answer["unmapped"] == [
        {"alertname": "Watchdog", "fingerprint": "fp-w", "reason": answer["unmapped"][0]["reason"]}
    ]
    assert "no resource label" in answer["unmapped"][0]["reason"]
    assert outcome("unmapped") == before + 1


async def test_malformed_json_is_400_with_a_message(http: TestClient[Any, Any]) -> None:
    response = await http.post(server.PATH, data=b"{not json", headers=AUTH)
    assert response.status == 400
    assert "malformed JSON" in (await response.json())["error"]


@pytest.mark.parametrize("version", ["3", "5", None])
async def test_an_unknown_payload_version_is_400(http: TestClient[Any, Any], version: str | None) -> None:
    payload = body(alert("a"))
    payload["version"] = version
    response = await http.post(server.PATH, json=payload, headers=AUTH)
    assert response.status == 400
    assert "version" in (await response.json())["error"]


async def test_a_payload_of_the_wrong_shape_is_400_naming_the_field(http: TestClient[Any, Any]) -> None:
    response = await http.post(
        server.PATH, json={"version": "4", "alerts": [{"status": "exploded"}]}, headers=AUTH
    )
    assert response.status == 400
    assert "alerts.0.status" in (await response.json())["error"]


async def test_a_body_over_one_mebibyte_is_413(http: TestClient[Any, Any]) -> None:
    big = alert("a")
    big["annotations"] = {"description": "x" * (server.MAX_BODY_BYTES + 10)}
    response = await http.post(server.PATH, data=json.dumps(body(big)).encode(), headers=AUTH)
    assert response.status == 413


async def test_a_burst_beyond_the_queue_is_429_and_nothing_of_it_is_queued(
    http: TestClient[Any, Any],
) -> None:
    before = outcome("rate_limited")
    first = await http.post(server.PATH, json=body(alert("a"), alert("b")), headers=AUTH)
    second = await http.post(server.PATH, json=body(alert("c"), alert("d")), headers=AUTH)
    third = await http.post(server.PATH, json=body(alert("e")), headers=AUTH)

    assert first.status == 200
    assert second.status == 429 and second.headers["Retry-After"] == str(server.RETRY_AFTER_SECONDS)
    assert third.status == 200, "the payload that still fits is accepted"
    assert outcome("rate_limited") == before + 2


async def test_a_group_larger_than_the_whole_queue_is_413_not_an_endless_429(
    http: TestClient[Any, Any],
) -> None:
    """Alertmanager retries 429 forever; a payload that can never fit is refused for good, saying why."""
    before = outcome("too_large")
    response = await http.post(server.PATH, json=body(*(alert(f"p{i}") for i in range(4))), headers=AUTH)
    assert response.status == 413 and "exceed the queue of 3" in await response.text()
    assert outcome("too_large") == before + 4
    fits = await http.post(server.PATH, json=body(alert("q")), headers=AUTH)
    assert fits.status == 200, "nothing of the refused payload was queued"


@pytest.mark.parametrize(("pairs", "accepted"), [(frozenset(), 0), (frozenset({("shop", "kube-system")}), 1)])
async def test_an_alert_about_another_namespace_is_unmapped_unless_the_operator_pairs_them(
    pairs: frozenset[tuple[str, str]], accepted: int
) -> None:
    """The alert's labels are data: ``target_kind: Namespace, target_name: kube-system`` on an alert of
    shop opens no analysis (issue 31), unless AIANALYSIS_CROSS_NAMESPACE pairs shop with kube-system."""
    about = {
        "status": "firing", "startsAt": "2026-11-22T09:58:00Z", "fingerprint": "fp-ns", "annotations": {},
        "labels": {"alertname": "QuotaExhausted", "namespace": "shop", "target_kind": "Namespace",
                   "target_name": "kube-system"},
    }  # fmt: skip
    async with TestClient(TestServer(make_intake(cross_namespace=pairs).app())) as client:
        answer = await client.post(server.PATH, json=body(about), headers=AUTH)
        said = await answer.json()
    assert answer.status == 200 and said["accepted"] == accepted
    if not accepted:
        [unmapped] = said["unmapped"]
        assert "is in namespace kube-system, not the alert's namespace shop" in unmapped["reason"]
