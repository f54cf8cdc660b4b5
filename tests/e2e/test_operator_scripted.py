"""The operator process with the anthropic provider against the scripted Messages API server, on
the real kube-apiserver: restarts lose nothing, and failed executions start recoveries."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from aianalysis_dev import executions
from tests.e2e.conftest import ROOT, analyses, get, wait_for, wait_terminal
from tests.support import messages_server as ms
from tests.support.fake_llm import GoodLLM

KEY = "sk-test-e2e-scripted"


@pytest.fixture
def llm_server() -> Iterator[ms.MessagesServer]:
    with ms.MessagesServer(policy=GoodLLM()) as server:
        yield server


def anthropic_env(server: ms.MessagesServer, **extra: str) -> dict[str, str]:
    return {
        "AIANALYSIS_PROVIDER": "anthropic",
        "ANTHROPIC_API_KEY": KEY,
        "AIANALYSIS_ANTHROPIC_BASE_URL": server.base_url,
        "AIANALYSIS_LLM_MAX_RETRIES": "1",
        **extra,
    }


def apply_incident(cluster: Any, namespace: str, name: str, *, as_name: str | None = None) -> None:
    doc = yaml.safe_load((ROOT / "examples" / "incidents" / f"{name}.yaml").read_text())
    if as_name:
        doc["metadata"]["name"] = as_name
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(doc))


def events_for(cluster: Any, namespace: str, name: str) -> list[dict[str, Any]]:
    items = json.loads(cluster.kubectl("get", "events", "-n", namespace, "-o", "json").stdout)["items"]
    return [e for e in items if e["involvedObject"]["name"] == name]


def test_restart_mid_analysis_completes_each_analysis_once(
    cluster: Any, namespace: str, example_catalog: Any, start_operator: Any, llm_server: ms.MessagesServer
) -> None:
    llm_server.set_policy(GoodLLM(delay=2.0))
    operator = start_operator(**anthropic_env(llm_server))
    names = ["payment-api-oomkilled", "orders-api-crashloop", "api-gateway-cert-expiring"]
    for name in names:
        apply_incident(cluster, namespace, name)

    wait_for(
        lambda: (
            all((a.get("status") or {}).get("phase") == "Investigating" for a in analyses(cluster, namespace))
            and len(analyses(cluster, namespace)) == 3
        ),
        what="all analyses Investigating",
        logs=operator.logs,
    )
    operator.kill()  # a crash, mid-conversation
    operator.start()
    done = wait_terminal(cluster, namespace, 3, logs=operator.logs)

    for item in done:
        st = item["status"]
        assert st["phase"] == "Completed" and st["selectedWorkflow"], st
        assert st["attempt"] == 2, "the restart resumed the interrupted analysis once"
        assert len(st["validationAttempts"]) == 1
        terminal_events = [
            e
            for e in events_for(cluster, namespace, item["metadata"]["name"])
            if e["reason"] in ("WorkflowSelected", "NeedsHumanReview")
        ]
        assert sum(e.get("count", 1) for e in terminal_events) == 1, terminal_events
    operator.stop()
    operator.start()  # a second restart finds only finished analyses and does nothing
    requests_before = len(llm_server.requests)
    # The barrier: a sentinel created after the restart is analysed only once the operator has seen
    # the listing that holds the finished analyses (events are handled in order, per watch stream).
    apply_incident(cluster, namespace, "payment-api-oomkilled", as_name="sentinel")
    wait_done(cluster, namespace, "sentinel", operator.logs)
    sentinel_requests = 3  # search, details, submit
    finished = [a for a in analyses(cluster, namespace) if a["metadata"]["name"] != "sentinel"]
    assert [a["status"]["attempt"] for a in finished] == [2, 2, 2]
    assert len(llm_server.requests) == requests_before + sentinel_requests


def fail_execution(cluster: Any, namespace: str, analysis_name: str, exec_name: str, reason: str) -> None:
    analysis = get(cluster, "aianalysis", analysis_name, namespace)
    assert analysis is not None
    exit_code = 137 if reason == "OOMKilled" else 1
    executions.fail_execution(
        cluster, namespace, analysis=analysis, name=exec_name, reason=reason,
        message=f"step failed: {reason}", exit_code=exit_code, execution_time="1m2s",
    )  # fmt: skip


def wait_done(cluster: Any, namespace: str, name: str, logs: Any) -> dict[str, Any]:
    def terminal() -> dict[str, Any] | None:
        item = get(cluster, "aianalysis", name, namespace)
        return item if item and (item.get("status") or {}).get("phase") in ("Completed", "Failed") else None

    found: dict[str, Any] = wait_for(terminal, what=f"{name} terminal", logs=logs)
    return found


def test_failed_executions_start_recoveries_until_the_limit(
    cluster: Any, namespace: str, example_catalog: Any, start_operator: Any, llm_server: ms.MessagesServer
) -> None:
    operator = start_operator(**anthropic_env(llm_server))
    apply_incident(cluster, namespace, "payment-api-oomkilled", as_name="pay")
    original = wait_done(cluster, namespace, "pay", operator.logs)
    tried = [
        (
            original["status"]["selectedWorkflow"]["workflowId"],
            original["status"]["selectedWorkflow"]["parameters"],
        )
    ]

    previous, reasons = "pay", ["OOMKilled", "DeadlineExceeded", "Forbidden"]
    for attempt, reason in enumerate(reasons, start=1):
        fail_execution(cluster, namespace, previous, f"exec-{attempt}", reason)
        name = f"pay-recovery-{attempt}"
        item = wait_done(cluster, namespace, name, operator.logs)
        spec, st = item["spec"], item["status"]
        history = spec["recovery"]["previousExecutions"]
        assert spec["recovery"]["attemptNumber"] == attempt
        assert [h["workflowExecutionRef"] for h in history] == [f"exec-{i}" for i in range(1, attempt + 1)]
        assert [h["failure"]["reason"] for h in history] == reasons[:attempt]
        assert item["metadata"]["ownerReferences"][0]["name"] == f"exec-{attempt}"
        selected = st["selectedWorkflow"]
        assert (selected["workflowId"], selected["parameters"]) not in tried, "never repeat a failure"
        assert st["recovery"]["attemptNumber"] == attempt
        assert st["recovery"]["recoveryStrategy"]["differsFromPrevious"] is True
        if attempt == 1:  # the fake LLM first repeats the failed workflow; the validator rejects it
            first = st["validationAttempts"][0]
            assert first["valid"] is False and any("repeated_failure" in e for e in first["errors"])
        tried.append((selected["workflowId"], selected["parameters"]))
        wfe = get(cluster, "workflowexecution", f"exec-{attempt}", namespace)
        assert wfe is not None and wfe["status"]["recoveryAnalysisRef"] == name
        previous = name

    fail_execution(cluster, namespace, previous, "exec-4", "BackoffLimitExceeded")

    def gave_up() -> dict[str, Any] | None:
        wfe = get(cluster, "workflowexecution", "exec-4", namespace)
        return wfe if wfe and wfe["status"].get("humanReviewReason") == "max_recovery_attempts" else None

    wait_for(gave_up, what="exec-4 gives up", logs=operator.logs)
    assert get(cluster, "aianalysis", "pay-recovery-4", namespace) is None
    last = get(cluster, "aianalysis", previous, namespace)
    assert last is not None and last["status"]["needsHumanReview"] is True
    assert last["status"]["humanReviewReason"] == "max_recovery_attempts"
    assert any(e["reason"] == "MaxRecoveryAttempts" for e in events_for(cluster, namespace, "exec-4"))
    wide = cluster.kubectl("get", "aia", "-n", namespace, "-o", "wide").stdout
    print(wide)  # the recovery chain, as a user sees it (quoted in the issue's closing note)
    assert "pay-recovery-3" in wide


def test_operator_restart_between_failure_and_recovery_creates_exactly_one(
    cluster: Any, namespace: str, example_catalog: Any, start_operator: Any, llm_server: ms.MessagesServer
) -> None:
    operator = start_operator(**anthropic_env(llm_server))
    apply_incident(cluster, namespace, "payment-api-oomkilled", as_name="pay")
    wait_done(cluster, namespace, "pay", operator.logs)
    operator.stop()
    fail_execution(cluster, namespace, "pay", "exec-1", "OOMKilled")  # while no operator runs
    operator.start()
    wait_done(cluster, namespace, "pay-recovery-1", operator.logs)
    operator.stop()
    operator.start()  # and once more: the handled execution is not handled again
    # The barrier: a failed sentinel execution created after the restart gets its recovery only
    # after the operator has handled the listing that holds exec-1.
    apply_incident(cluster, namespace, "payment-api-oomkilled", as_name="sentinel")
    wait_done(cluster, namespace, "sentinel", operator.logs)
    fail_execution(cluster, namespace, "sentinel", "exec-sentinel", "OOMKilled")
    wait_done(cluster, namespace, "sentinel-recovery-1", operator.logs)

    names = sorted(a["metadata"]["name"] for a in analyses(cluster, namespace))
    assert names == ["pay", "pay-recovery-1", "sentinel", "sentinel-recovery-1"]
    created = [e for e in events_for(cluster, namespace, "exec-1") if e["reason"] == "RecoveryCreated"]
    assert sum(e.get("count", 1) for e in created) == 1


def test_execution_without_a_usable_analysis_is_explained_on_it(
    cluster: Any, namespace: str, example_catalog: Any, start_operator: Any, llm_server: ms.MessagesServer
) -> None:
    operator = start_operator(**anthropic_env(llm_server))
    wfe = {
        "apiVersion": "kubernaut.io/v1alpha1",
        "kind": "WorkflowExecution",
        "metadata": {"name": "orphan"},
        "spec": {
            "analysisRef": "does-not-exist",
            "workflowRef": {"workflowId": "restart-pods", "version": "1.0.0"},
        },
    }
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(wfe))
    cluster.kubectl(
        "patch",
        "workflowexecution",
        "orphan",
        "-n",
        namespace,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": {"phase": "Failed", "failureDetails": {"reason": "Error", "message": "boom"}}}),
    )

    def explained() -> dict[str, Any] | None:
        item = get(cluster, "workflowexecution", "orphan", namespace)
        conditions = (item or {}).get("status", {}).get("conditions") or []
        return next((c for c in conditions if c["type"] == "RecoveryStarted"), None)

    condition = wait_for(explained, what="RecoveryStarted condition", logs=operator.logs)
    assert condition["status"] == "False" and condition["reason"] == "AnalysisNotFound"
    assert "does-not-exist" in condition["message"]
    assert any(
        e["reason"] == "AnalysisNotFound" and e["type"] == "Warning"
        for e in events_for(cluster, namespace, "orphan")
    )
    assert analyses(cluster, namespace) == []
    assert operator.proc is not None and operator.proc.poll() is None, "the operator did not crash"


def test_a_restarted_operator_keeps_the_llm_budget_its_previous_life_spent(
    cluster: Any, namespace: str, example_catalog: Any, start_operator: Any, llm_server: ms.MessagesServer
) -> None:
    env = anthropic_env(
        llm_server,
        AIANALYSIS_LLM_BUDGET_CONVERSATIONS_PER_HOUR="1",
        AIANALYSIS_LLM_BUDGET_NAMESPACE=namespace,  # the chart: the release namespace
    )
    operator = start_operator(**env)
    apply_incident(cluster, namespace, "payment-api-oomkilled", as_name="before-restart")
    wait_done(cluster, namespace, "before-restart", operator.logs)
    operator.stop()
    operator.start()

    apply_incident(cluster, namespace, "orders-api-crashloop", as_name="after-restart")
    waiting = wait_for(
        lambda: (
            ((get(cluster, "aianalysis", "after-restart", namespace) or {}).get("status") or {}).get("reason")
            == "BudgetExhausted"
        ),
        what="the analysis after the restart to wait for budget",
        logs=operator.logs,
    )
    assert waiting
    status = (get(cluster, "aianalysis", "after-restart", namespace) or {})["status"]
    assert status["phase"] == "Pending" and "1 of 1 conversations in the last hour" in status["message"]
    assert sum(1 for r in llm_server.requests if len(r.body["messages"]) == 1) == 1, "one paid conversation"
    record = get(cluster, "configmap", "aianalysis-llm-budget", namespace)
    assert record is not None and len(json.loads(record["data"]["conversations"])) == 1
