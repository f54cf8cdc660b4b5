"""The notifier's pass on the real API server, posting to a real Alertmanager: what it posts, what
it does when Alertmanager is down (bounded time, the resolve kept for the next pass), and a post
Alertmanager refuses (not retried)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from aianalysis import kube, notify, settings
from aianalysis.notify import alertmanager
from aianalysis_dev import devcluster
from tests.support import alertmanager as am

pytestmark = pytest.mark.cluster


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[am.Alertmanager]:
    running = am.Alertmanager(tmp_path, am.receiver_config("http://127.0.0.1:9/nobody")).start()
    yield running
    running.stop()


def needs_review(cluster: devcluster.Cluster, namespace: str, name: str) -> None:
    """An analysis that ended needing review (its status written as the operator would)."""
    body = {
        "apiVersion": "kubernaut.io/v1alpha1",
        "kind": "AIAnalysis",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "signal": {"type": "OOMKilled", "severity": "critical"},
            "resource": {"kind": "Deployment", "name": "api", "namespace": namespace},
        },
    }
    cluster.kubectl("apply", "-f", "-", input=json.dumps(body))
    status = {
        "phase": "Completed",
        "completedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "needsHumanReview": True,
        "humanReviewReason": "no_eligible_workflow",
    }
    cluster.kubectl(
        "patch", "aianalysis", name, "-n", namespace, "--subresource=status", "--type=merge",
        "-p", json.dumps({"status": status}),
    )  # fmt: skip


def notifier(cluster: devcluster.Cluster, namespace: str, url: str) -> notify.Notifier:
    config = settings.from_env(
        {"AIANALYSIS_NOTIFY_ALERTMANAGER_URLS": url, "AIANALYSIS_NOTIFY_ATTEMPTS": "2",
         "AIANALYSIS_NOTIFY_TIMEOUT_SECONDS": "2"}
    )  # fmt: skip
    return notify.Notifier(
        api=kube.api_client(str(cluster.kubeconfig)), settings=config, namespaces=[namespace]
    )


def held(manager: am.Alertmanager, namespace: str) -> list[dict[str, Any]]:
    alerts = httpx.get(
        f"{manager.url}/api/v2/alerts", params={"filter": f'namespace="{namespace}"'}, timeout=10
    ).json()
    return [a for a in alerts if a["status"]["state"] != "resolved"]


async def test_a_pass_posts_what_fires_and_keeps_a_resolve_alertmanager_missed(
    cluster: devcluster.Cluster, crds: list[str], namespace: str, manager: am.Alertmanager
) -> None:
    needs_review(cluster, namespace, "api-oom")
    passes = notifier(cluster, namespace, manager.url)
    try:
        first = await passes.run_once()
        assert (first.firing, first.resolved, first.outcomes) == (1, 0, ("sent",))
        [alert] = held(manager, namespace)
        assert alert["labels"]["alertname"] == "AIAnalysisHumanReview"
        assert (
            alert["labels"]["reason"] == "no_eligible_workflow" and alert["labels"]["aianalysis"] == "api-oom"
        )

        cluster.kubectl("delete", "aianalysis", "api-oom", "-n", namespace)
        manager.stop()
        started = time.monotonic()
        down = await passes.run_once()
        assert (down.firing, down.resolved, down.outcomes) == (0, 1, ("failed",))
        assert time.monotonic() - started < 10, "two refused connections and one 1 s pause, not more"

        manager.start()  # it kept no alerts: only the notifier still knows the resolve is owed
        again = await passes.run_once()
        assert (again.firing, again.resolved, again.outcomes) == (0, 1, ("sent",))
        quiet = await passes.run_once()
        assert (quiet.firing, quiet.resolved, quiet.outcomes) == (0, 0, ())
    finally:
        await passes.aclose()


async def test_a_post_alertmanager_refuses_is_not_retried(manager: am.Alertmanager) -> None:
    client = alertmanager.AlertmanagerClient(alertmanager.AlertmanagerConfig(urls=(manager.url,), attempts=3))
    try:
        started = time.monotonic()
        outcomes = await client.post([{"labels": {}, "annotations": {}}])  # Alertmanager: no labels, 400
        assert outcomes == ["rejected"] and time.monotonic() - started < 1.0
    finally:
        await client.aclose()
