"""End to end with a real Alertmanager routing to a webhook receiver (what Slack or PagerDuty would
get): an analysis that needs review notifies once, with routing labels and the approve command; an
operator restart neither repeats nor loses it; approving it — even while the operator is down —
resolves it. The operator is the real process, the LLM the scripted Messages API server."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.e2e.conftest import ROOT, OperatorProcess, get, wait_for, wait_terminal
from tests.e2e.test_operator_scripted import anthropic_env, apply_incident
from tests.support import alertmanager as am
from tests.support import messages_server as ms
from tests.support.fake_llm import GoodLLM

INCIDENT = "payment-api-oomkilled"


@pytest.fixture
def llm_server() -> Iterator[ms.MessagesServer]:
    with ms.MessagesServer(policy=GoodLLM()) as server:
        yield server


@pytest.fixture
def receiver() -> Iterator[am.Receiver]:
    with am.Receiver() as recording:
        yield recording


@pytest.fixture
def alertmanager(tmp_path: Path, receiver: am.Receiver) -> Iterator[am.Alertmanager]:
    manager = am.Alertmanager(tmp_path, am.receiver_config(receiver.url)).start()
    yield manager
    manager.stop()


def delivered(receiver: am.Receiver, status: str) -> list[dict[str, Any]]:
    """The alerts of every notification with ``status`` (firing|resolved) the receiver got."""
    return [a for n in receiver.received() for a in n["alerts"] if a["status"] == status]


def posts(operator: OperatorProcess) -> float:
    """Successful posts of this operator process (a restarted one counts from 0)."""
    return sample(operator, r'aianalysis_notification_posts_total\{outcome="sent"\}')


def last_pass(operator: OperatorProcess) -> float:
    return sample(operator, "aianalysis_notification_last_pass_timestamp_seconds")


def sample(operator: OperatorProcess, series: str) -> float:
    found = re.search(rf"^{series} (\S+)$", operator.metrics(), re.M)
    return float(found.group(1)) if found else 0.0


def approve(namespace: str, name: str, command: str) -> None:
    """As a person would, with the command the notification carries (``--uid``/``--digest``), or
    — with an ``aianalysis approve`` that predates them — the same approval bound by the executor's
    own digest, which the test checks against the notification's."""
    argv = shlex.split(command)
    assert argv[:2] == ["aianalysis", "approve"], command
    cli = [sys.executable, "-m", "aianalysis"]
    helped = subprocess.run([*cli, "approve", "--help"], capture_output=True, text=True, cwd=ROOT, check=True)
    if "--digest" not in helped.stdout:
        argv = ["aianalysis", "approve", name, "-n", namespace, "--override-review"]
    done = subprocess.run(
        [*cli, *argv[1:]],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def review_env(
    llm_server: ms.MessagesServer, alertmanager: am.Alertmanager, *, console_url: str
) -> dict[str, str]:
    """An operator whose analyses need a person's review (the scripted model's 0.9 is under the
    floor) and that notifies ``alertmanager`` every second, linking to ``console_url``."""
    return {
        **anthropic_env(llm_server),
        "AIANALYSIS_CONFIDENCE_FLOOR": "0.95",
        "AIANALYSIS_NOTIFY_ALERTMANAGER_URLS": alertmanager.url,
        "AIANALYSIS_NOTIFY_INTERVAL_SECONDS": "1",
        "AIANALYSIS_NOTIFY_CONSOLE_URL": console_url,
    }


def test_a_review_notifies_once_survives_restarts_and_resolves_when_approved(
    cluster: Any,
    namespace: str,
    example_catalog: Any,
    start_operator: Any,
    llm_server: ms.MessagesServer,
    receiver: am.Receiver,
    alertmanager: am.Alertmanager,
) -> None:
    operator = start_operator(**review_env(llm_server, alertmanager, console_url="https://console.example"))
    apply_incident(cluster, namespace, INCIDENT)
    [analysis] = wait_terminal(cluster, namespace, 1, logs=operator.logs)
    name, status = analysis["metadata"]["name"], analysis["status"]
    assert status["needsHumanReview"] and status["humanReviewReason"] == "low_confidence", status

    [alert] = wait_for(
        lambda: delivered(receiver, "firing"), what="the firing notification", logs=operator.logs
    )
    labels = alert["labels"]
    assert labels["alertname"] == "AIAnalysisHumanReview" and labels["reason"] == "low_confidence"
    assert (labels["namespace"], labels["aianalysis"]) == (namespace, name)
    assert labels["source"] == "aianalysis-operator" and labels["severity"] in ("critical", "warning", "info")
    notes = alert["annotations"]
    chosen = status["selectedWorkflow"]
    assert f"{chosen['workflowId']} {chosen['version']}" in notes["summary"]
    assert notes["console_url"] == f"https://console.example/ns/{namespace}/aia/{name}"
    uid = analysis["metadata"]["uid"]
    command = notes["approve_command"]
    assert command.startswith(f"aianalysis approve {name} -n {namespace} --uid {uid} --digest sha256:")
    assert command.endswith("--override-review low_confidence")

    # A crash and a restart: the new process derives the same alert and re-posts it — no new notification.
    operator.kill()
    operator.start()
    wait_for(lambda: posts(operator) >= 3, what="three posts of the restarted operator", logs=operator.logs)
    assert len(delivered(receiver, "firing")) == 1 and delivered(receiver, "resolved") == []

    # Approved while no operator runs: the next one resolves the alert its predecessor left firing.
    operator.stop()
    approve(namespace, name, command)
    [execution] = wait_for(lambda: execution_of(cluster, namespace, name), what="the WorkflowExecution")
    assert execution["spec"]["approval"]["selectionDigest"] == command.split("--digest ")[1].split()[0]
    operator.start()
    [resolved] = wait_for(
        lambda: delivered(receiver, "resolved"), what="the resolved notification", logs=operator.logs
    )
    assert resolved["labels"] == labels
    sent = posts(operator)
    # Two group intervals of passes later, still exactly one of each: nothing repeated, nothing re-fired;
    # and with nothing left to fire or resolve, the operator posts nothing more.
    later = time.time() + 2
    wait_for(lambda: last_pass(operator) >= later, what="passes after the resolve", logs=operator.logs)
    assert len(delivered(receiver, "firing")) == 1 and len(delivered(receiver, "resolved")) == 1
    assert posts(operator) == sent


def test_the_documented_route_and_slack_receiver_load_in_alertmanager(tmp_path: Path) -> None:
    """docs/notifications.md's example is a configuration the real Alertmanager accepts."""
    page = (ROOT / "docs" / "notifications.md").read_text()
    found = re.search(r"```yaml\n(route:.*?)```", page, re.S)
    assert found, "the example configuration is missing from the page"
    manager = am.Alertmanager(tmp_path, yaml.safe_load(found.group(1))).start()
    try:
        loaded = httpx.get(f"{manager.url}/api/v2/status", timeout=10).json()["config"]["original"]
        assert "aianalysis-slack" in loaded and 'source="aianalysis-operator"' in loaded
    finally:
        manager.stop()


def execution_of(cluster: Any, namespace: str, analysis: str) -> list[dict[str, Any]]:
    found = get(cluster, "workflowexecutions", f"{analysis}-exec-1", namespace)
    return [found] if found else []
