"""Two operator processes against the real kube-apiserver, one Lease: only the leader acts; when it
is killed mid-conversation the standby takes over within the lease duration and completes every
pending analysis, none twice."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import analyses, wait_for, wait_terminal
from tests.e2e.test_operator_scripted import anthropic_env, apply_incident, events_for
from tests.support import messages_server as ms
from tests.support.fake_llm import GoodLLM

LEASE_SECONDS = 4


@pytest.fixture
def llm_server() -> Iterator[ms.MessagesServer]:
    with ms.MessagesServer(policy=GoodLLM(delay=1.5)) as server:
        yield server


def holder(cluster: Any, namespace: str) -> str | None:
    got = cluster.kubectl("get", "lease", "aianalysis-operator", "-n", namespace, "-o", "json", check=False)
    return json.loads(got.stdout)["spec"].get("holderIdentity") if got.returncode == 0 else None


def ready(operator: Any) -> httpx.Response:
    return httpx.get(f"http://127.0.0.1:{operator.health_port}/readyz", timeout=5)


def test_the_standby_takes_over_from_a_killed_leader_and_completes_each_analysis_once(
    cluster: Any, namespace: str, example_catalog: Any, start_operator: Any, llm_server: ms.MessagesServer
) -> None:
    env = anthropic_env(
        llm_server,
        AIANALYSIS_LEADER_ELECTION_NAMESPACE=namespace,
        AIANALYSIS_LEASE_DURATION_SECONDS=str(LEASE_SECONDS),
    )
    leader = start_operator(**env, HOSTNAME="replica-a")
    wait_for(lambda: holder(cluster, namespace) == "replica-a", what="replica-a leads", logs=leader.logs)
    standby = start_operator(**env, HOSTNAME="replica-b")
    not_ready = wait_for(lambda: ready(standby).status_code == 503 and ready(standby), what="standby 503")
    assert "standby" in not_ready.text

    names = ["payment-api-oomkilled", "orders-api-crashloop", "api-gateway-cert-expiring"]
    for name in names:
        apply_incident(cluster, namespace, name)
    wait_for(
        lambda: (
            len(analyses(cluster, namespace)) == 3
            and all(
                (a.get("status") or {}).get("phase") == "Investigating" for a in analyses(cluster, namespace)
            )
        ),
        what="all analyses Investigating (by the leader)",
        logs=leader.logs,
    )
    assert "aianalysis_llm_requests_total{" not in standby.metrics(), "the standby did nothing yet"
    leader.kill()
    killed_at = time.monotonic()

    wait_for(lambda: holder(cluster, namespace) == "replica-b", what="replica-b leads", logs=standby.logs)
    takeover = time.monotonic() - killed_at
    done = wait_terminal(cluster, namespace, 3, logs=standby.logs)

    assert takeover <= LEASE_SECONDS + 2 + 5, f"takeover took {takeover:.1f}s"
    for item in done:
        st = item["status"]
        assert st["phase"] == "Completed" and st["selectedWorkflow"], st
        assert st["attempt"] == 2, "one interrupted conversation (leader), one completed (standby)"
        assert len(st["validationAttempts"]) == 1
        finished = [
            e
            for e in events_for(cluster, namespace, item["metadata"]["name"])
            if e["reason"] in ("WorkflowSelected", "NeedsHumanReview")
        ]
        assert sum(e.get("count", 1) for e in finished) == 1, "completed once"
    assert ready(standby).status_code == 200
    assert "aianalysis_conversations_restarted_total 3.0" in standby.metrics()
