"""Running the operator: the liveness endpoint, configuration errors at startup, JSON logs, and
the API key never leaving the process — not in logs, Events or any AIAnalysis status, even when
the API (or a proxy in front of it) echoes the key back in its error messages."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import ROOT, OperatorProcess, analyses, wait_for, wait_terminal
from tests.support import messages_server as ms
from tests.support import platform_servers as ps


def incident(name: str, namespace: str) -> str:
    return json.dumps(
        {
            "apiVersion": "kubernaut.io/v1alpha1",
            "kind": "AIAnalysis",
            "metadata": {"name": name},
            "spec": {
                "signal": {"type": "OOMKilled", "severity": "critical", "alertName": "KubePodOOMKilled"},
                "resource": {"kind": "Deployment", "name": name, "namespace": namespace},
                "businessContext": {"environment": "production", "priority": "P1", "riskTolerance": "low"},
            },
        }
    )


# ---- liveness ---------------------------------------------------------------------------------


def test_healthz_and_readyz_answer_200_once_the_whole_catalog_is_loaded(
    cluster: Any, example_catalog: list[dict[str, Any]], start_operator: Callable[..., OperatorProcess]
) -> None:
    operator = start_operator(AIANALYSIS_PROVIDER="offline")
    base = f"http://127.0.0.1:{operator.health_port}"
    in_cluster = len(json.loads(cluster.kubectl("get", "rw", "-o", "json").stdout)["items"])
    assert in_cluster >= len(example_catalog)

    ready = wait_for(
        lambda: httpx.get(f"{base}/readyz", timeout=5).status_code == 200,
        what="/readyz 200",
        logs=operator.logs,
    )

    assert ready and httpx.get(f"{base}/healthz", timeout=5).status_code == 200
    assert f"aianalysis_catalog_workflows {float(in_cluster)}" in operator.metrics(), "the whole catalog"


# ---- configuration ----------------------------------------------------------------------------


def run_cli(env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], float]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AIANALYSIS_", "ANTHROPIC_"))}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "aianalysis", "run"],
        env={**clean, "KUBECONFIG": "/nonexistent/kubeconfig", **env},
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    return done, time.monotonic() - started


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (
            {"AIANALYSIS_PROVIDER": "bogus"},
            "AIANALYSIS_PROVIDER must be one of offline, anthropic, bedrock, vertex, openai, not 'bogus'",
        ),
        ({"AIANALYSIS_PROVIDER": "anthropic"}, "provider 'anthropic' needs ANTHROPIC_API_KEY"),
        ({"AIANALYSIS_CONFIDENCE_FLOOR": "70"}, "AIANALYSIS_CONFIDENCE_FLOOR must be within 0..1, not 70.0"),
        ({"AIANALYSIS_METRICS_PORT": "nine"}, "AIANALYSIS_METRICS_PORT='nine' is not an integer"),
    ],
)
def test_run_with_invalid_settings_exits_at_once_with_one_clear_line(
    env: dict[str, str], expected: str
) -> None:
    done, seconds = run_cli(env)

    assert done.returncode == 2
    # Waiting for a cluster would never end by itself (kopf retries its login until killed: the
    # 60 s timeout above); a loaded machine may take a while to start Python and import.
    assert seconds < 45, "a configuration error must not wait for a cluster"
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("aianalysis: error: ")
    assert expected in lines[0]


def test_json_log_format_makes_every_operator_line_a_json_object(
    cluster: Any,
    namespace: str,
    example_catalog: list[dict[str, Any]],
    start_operator: Callable[..., OperatorProcess],
) -> None:
    operator = start_operator(AIANALYSIS_PROVIDER="offline", AIANALYSIS_LOG_FORMAT="json")
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input=incident("json-logs", namespace))
    wait_terminal(cluster, namespace, 1, logs=operator.logs)
    operator.stop()

    lines = [line for line in operator.log_file.read_text().splitlines() if line.strip()]
    records = [json.loads(line) for line in lines]  # raises on the first line that is not JSON

    assert all(isinstance(record, dict) and record.get("message") for record in records)
    messages = [record["message"] for record in records]
    assert any(m.startswith("aianalysis operator starting: provider=offline") for m in messages), messages
    about_the_analysis = [
        r
        for r in records
        if (r.get("object") or {}).get("name") == "json-logs" or "json-logs" in r["message"]
    ]
    assert about_the_analysis, messages


# ---- the model check at startup -----------------------------------------------------------------


def test_run_with_a_retired_model_exits_with_one_line_naming_the_setting() -> None:
    key = f"sk-ant-e2e-{secrets.token_hex(8)}"
    with ms.MessagesServer(retired_models=["claude-3-sonnet-20240229"]) as server:
        done, seconds = run_cli(
            {
                "AIANALYSIS_PROVIDER": "anthropic",
                "ANTHROPIC_API_KEY": key,
                "AIANALYSIS_ANTHROPIC_BASE_URL": server.base_url,
                "AIANALYSIS_MODEL": "claude-3-sonnet-20240229",
            }
        )

    assert done.returncode == 2
    assert seconds < 45, "the check must not wait for a cluster (it would retry until killed)"
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("aianalysis: error: model 'claude-3-sonnet-20240229' is unknown or retired")
    assert "set AIANALYSIS_MODEL to a model id it serves" in lines[0]
    assert [r.path for r in server.model_lookups] == ["/v1/models/claude-3-sonnet-20240229"]
    assert server.requests == [], "no conversation was started"
    assert key not in done.stderr


def test_a_failing_model_check_does_not_block_startup(
    cluster: Any, start_operator: Callable[..., OperatorProcess]
) -> None:
    with ms.MessagesServer(lookup_failures=[ms.Fail(503, "overloaded", headers={})]) as server:
        operator = start_operator(  # returns once /healthz answers: the operator is up
            AIANALYSIS_PROVIDER="anthropic",
            ANTHROPIC_API_KEY="sk-ant-e2e-check",
            AIANALYSIS_ANTHROPIC_BASE_URL=server.base_url,
            AIANALYSIS_LLM_MAX_RETRIES="0",
        )
        operator.stop()
    assert len(server.model_lookups) == 1
    assert "aianalysis: warning: could not verify model 'claude-sonnet-4-6'" in operator.logs()
    assert "starting anyway" in operator.logs()


# ---- the API key ------------------------------------------------------------------------------


class EchoingAPI:
    """Per incident: ``*-auth`` gets 401, ``*-down`` gets 500, each message quoting the API key the
    request sent (the real API does not; a misconfigured gateway might)."""

    def __init__(self, server: type[ms.MessagesServer] = ms.MessagesServer) -> None:
        self.server = server(policy=self.answer)

    def answer(self, body: dict[str, Any]) -> ms.Step:
        seen = self.server.requests[-1].api_key
        prompt = body["messages"][0]["content"]
        if "Deployment/leak-auth" in prompt:
            return ms.Fail(401, f"invalid x-api-key: {seen}")
        return ms.Fail(500, f"upstream failed for credential {seen}")


def test_the_api_key_never_appears_in_logs_events_or_status(
    cluster: Any, namespace: str, start_operator: Callable[..., OperatorProcess]
) -> None:
    key = f"sk-ant-e2e-{secrets.token_hex(16)}"
    api = EchoingAPI()
    with api.server as server:
        operator = start_operator(
            AIANALYSIS_PROVIDER="anthropic",
            ANTHROPIC_API_KEY=key,
            AIANALYSIS_ANTHROPIC_BASE_URL=server.base_url,
            AIANALYSIS_PROVIDER_RETRY_LIMIT="2",
            AIANALYSIS_LLM_MAX_RETRIES="0",
        )
        for name in ("leak-auth", "leak-down"):
            cluster.kubectl("apply", "-n", namespace, "-f", "-", input=incident(name, namespace))
        done = {
            a["metadata"]["name"]: a["status"]
            for a in wait_terminal(cluster, namespace, 2, logs=operator.logs)
        }
        metrics = operator.metrics()
        operator.stop()

    # The key was really used (and echoed back): the test is not vacuous.
    assert {request.api_key for request in server.requests} == {key}
    assert len(server.requests) == 3, "401: one request; 500: one per handler try (2)"

    auth, down = done["leak-auth"], done["leak-down"]
    assert (auth["phase"], auth["reason"], auth["humanReviewReason"]) == (
        "Failed",
        "ProviderAuthFailed",
        "provider_error",
    ), "a permanent 401 is not labelled provider_unavailable"
    assert "401" in auth["message"] and "authentication_error" in auth["message"]
    assert "[redacted]" in auth["message"]
    assert (down["phase"], down["reason"], down["humanReviewReason"]) == (
        "Failed",
        "ProviderUnavailable",
        "provider_unavailable",
    )
    assert down["needsHumanReview"] is True
    assert "500" in down["message"]

    events = cluster.kubectl("get", "events", "-n", namespace, "-o", "json").stdout
    assert json.loads(events)["items"], "the failures are announced as Events"
    statuses = json.dumps(analyses(cluster, namespace))
    logs = "\n".join(path.read_text(errors="replace") for path in operator.log_dir.glob("operator-*.log"))
    assert "ProviderUnavailable" in logs, "the log tells what happened"
    for where, text in {"logs": logs, "events": events, "statuses": statuses, "metrics": metrics}.items():
        assert key not in text, f"the API key leaked into {where}"
        assert key[-12:] not in text, f"part of the API key leaked into {where}"


def test_the_openai_key_never_appears_in_logs_events_or_status(
    cluster: Any, namespace: str, start_operator: Callable[..., OperatorProcess]
) -> None:
    key = f"sk-e2e-openai-{secrets.token_hex(16)}"
    api = EchoingAPI(ps.ChatCompletionsServer)  # the same echoing gateway, speaking Chat Completions
    with api.server as server:
        operator = start_operator(
            AIANALYSIS_PROVIDER="openai",
            OPENAI_API_KEY=key,
            AIANALYSIS_OPENAI_BASE_URL=server.base_url,
            AIANALYSIS_MODEL="local-model",
            AIANALYSIS_PROVIDER_RETRY_LIMIT="2",
            AIANALYSIS_LLM_MAX_RETRIES="0",
        )
        for name in ("leak-auth", "leak-down"):
            cluster.kubectl("apply", "-n", namespace, "-f", "-", input=incident(name, namespace))
        done = {
            a["metadata"]["name"]: a["status"]
            for a in wait_terminal(cluster, namespace, 2, logs=operator.logs)
        }
        metrics = operator.metrics()
        operator.stop()

    assert {request.api_key for request in server.requests} == {key}, "the key was really sent (and echoed)"
    assert len(server.model_lookups) == 1, "the model was checked at startup"
    auth, down = done["leak-auth"], done["leak-down"]
    assert (auth["phase"], auth["reason"]) == ("Failed", "ProviderError")
    assert "401" in auth["message"] and "[redacted]" in auth["message"]
    assert (down["reason"], down["humanReviewReason"]) == ("ProviderUnavailable", "provider_unavailable")
    events = cluster.kubectl("get", "events", "-n", namespace, "-o", "json").stdout
    statuses = json.dumps(analyses(cluster, namespace))
    logs = operator.logs()
    assert 'aianalysis_llm_requests_total{outcome="error",provider="openai"}' in metrics
    for where, text in {"logs": logs, "events": events, "statuses": statuses, "metrics": metrics}.items():
        assert key not in text, f"the OpenAI key leaked into {where}"
        assert key[-12:] not in text, f"part of the OpenAI key leaked into {where}"
