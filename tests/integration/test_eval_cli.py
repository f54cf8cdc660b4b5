"""``aianalysis eval`` end to end: the shipped corpus with the offline provider, and a few scenarios
with the anthropic provider (the real SDK) against the scripted Messages API server."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aianalysis import cli
from aianalysis.evaluation import chart, suite
from tests.support import messages_server as ms
from tests.support import platform_servers as ps

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "examples" / "eval"
CATALOG = ROOT / "examples" / "catalog"


def run_eval(*args: str) -> int:
    return cli.main(["eval", "--catalog", str(CATALOG), *args])


def recomputed_accuracy(document: dict[str, Any]) -> float:
    runs = [run for s in document["scenarios"] for run in s["runs"]]
    return sum(run["correct"] for run in runs) / len(runs)


def test_offline_on_the_shipped_corpus_runs_every_scenario_and_reports_consistent_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report"
    code = run_eval("--scenarios", str(CORPUS), "--provider", "offline", "--repeat", "2", "--out", str(out))
    assert code == 0
    captured = capsys.readouterr()
    document = json.loads((out / "report.json").read_text())
    names = {s.name for s in suite.load_scenarios([CORPUS])}
    assert {s["name"] for s in document["scenarios"]} == names
    assert all([run["run"] for run in s["runs"]] == [1, 2] for s in document["scenarios"])
    summary = document["summary"]
    assert summary["runs"] == 2 * len(names) and summary["errors"] == 0
    assert summary["accuracy"] == recomputed_accuracy(document)
    assert summary["correct"] == sum(r["correct"] for s in document["scenarios"] for r in s["runs"])
    assert summary["unstableScenarios"] == []  # the offline provider is deterministic
    assert summary["forbiddenSelected"] == 0  # the policy filter holds whatever the ranking says
    assert 0 < summary["accuracy"] < 1
    markdown = (out / "report.md").read_text()
    assert f"| accuracy | {summary['accuracy']:.1%} ({summary['correct']}/{summary['runs']}) |" in markdown
    assert markdown.count("\n| `") >= len(names)  # one row per scenario (plus tag rows)
    assert (out / "report.png").exists() == chart.available()
    assert f"| accuracy | {summary['accuracy']:.1%}" in captured.out
    assert f"{summary['runs']}/{summary['runs']} correct {summary['correct']}" in captured.err


def test_min_accuracy_turns_a_weak_result_into_exit_code_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_eval(
        "--scenarios",
        # a Role name nothing in the incident or the cluster names: offline ends parameters_incomplete
        str(CORPUS / "incidents" / "report-exporter-forbidden.yaml"),
        "--provider",
        "offline",
        "--out",
        str(tmp_path),
        "--min-accuracy",
        "0.5",
    )
    assert code == 1
    assert "accuracy 0.0% is below --min-accuracy 50.0%" in capsys.readouterr().err


# ---- anthropic through the scripted Messages API -------------------------------------------------

SCENARIOS = [
    CORPUS / "incidents" / "api-gateway-cert-expiring.yaml",
    CORPUS / "incidents" / "node-notready-kubelet.yaml",
    CORPUS / "incidents" / "pricing-jvm-oomkilled-investigate.yaml",
]
_FACT = re.compile(r"^- (Signal Type|Namespace|Resource): (.+)$", re.MULTILINE)


first_prompt = ms.first_prompt


def target(body: dict[str, Any]) -> dict[str, str]:
    facts = dict(_FACT.findall(first_prompt(body)))
    kind, name = facts["Resource"].split("/", 1)
    found = {"signal_type": facts["Signal Type"], "kind": kind, "name": name}
    return found | ({"namespace": facts["Namespace"]} if "Namespace" in facts else {})


def sre(body: dict[str, Any]) -> ms.Step:
    """A fake model that looks at the incident's object, searches the catalog for the signal, reads
    the top hit, and submits it with the target parameters the incident names; when the validator
    objects, it hands the case to a person."""
    facts = target(body)
    outputs = {name: (text, is_error) for name, text, is_error in ms.tool_outputs(body)}
    if "submit_selection" in outputs:
        return ms.submit(answer(None, facts))
    if "get_workflow_details" in outputs:
        return ms.submit(answer(json.loads(outputs["get_workflow_details"][0]), facts))
    if "search_workflow_catalog" in outputs:
        hits = json.loads(outputs["search_workflow_catalog"][0])["workflows"]
        if not hits:
            return ms.submit(answer(None, facts))
        return ms.reply_tools(ms.tool_use("get_workflow_details", {"workflow_id": hits[0]["workflow_id"]}))
    where = {key: facts[key] for key in ("kind", "name", "namespace") if key in facts}
    return ms.reply_tools(
        ms.tool_use("get_resource", where),
        ms.tool_use(
            "search_workflow_catalog", {"signal_type": facts["signal_type"], "query": facts["signal_type"]}
        ),
    )


def answer(details: dict[str, Any] | None, facts: dict[str, str]) -> dict[str, Any]:
    base: dict[str, Any] = {
        "analysis_summary": f"{facts['signal_type']} on {facts['kind']} {facts['name']}",
        "root_cause_assessment": "as reported by the signal",
        "rca_severity": "high",
    }
    if details is None:
        return base | {
            "selected_workflow": None,
            "needs_human_review": True,
            "human_review_reason": "inconclusive",
        }
    values = {"TARGET_NAMESPACE": facts.get("namespace"), "TARGET_RESOURCE_KIND": facts["kind"]}
    values["TARGET_RESOURCE_NAME"] = facts["name"]
    declared = {p["name"] for p in details["parameters"]}
    parameters = {name: value for name, value in values.items() if name in declared and value is not None}
    chosen = {"workflow_id": details["workflow_id"], "version": details["version"], "confidence": 0.85}
    return base | {"selected_workflow": chosen | {"rationale": "top catalog match", "parameters": parameters}}


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ms.MessagesServer]:
    with ms.MessagesServer(policy=sre) as running:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-fake")
        monkeypatch.setenv("AIANALYSIS_ANTHROPIC_BASE_URL", running.base_url)
        monkeypatch.setenv("AIANALYSIS_MODEL", "claude-sonnet-4-6")
        monkeypatch.setenv("AIANALYSIS_LLM_MAX_RETRIES", "0")
        yield running


def test_anthropic_provider_end_to_end_against_the_scripted_messages_api(
    server: ms.MessagesServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_eval("--scenarios", *map(str, SCENARIOS), "--provider", "anthropic", "--out", str(tmp_path))
    assert code == 0, capsys.readouterr().err
    document = json.loads((tmp_path / "report.json").read_text())
    summary = document["summary"]
    runs = {s["name"]: s["runs"][0] for s in document["scenarios"]}
    assert document["meta"]["provider"] == "anthropic" and document["meta"]["model"] == "claude-sonnet-4-6"
    assert summary["runs"] == 3 and summary["errors"] == 0
    # cert-renew and node-restart-kubelet are the top hits and need only target parameters.
    assert runs["api-gateway-cert-expiring"]["selectedWorkflow"] == "cert-renew"
    assert runs["api-gateway-cert-expiring"]["parametersMatched"] is True
    assert runs["node-notready-kubelet"]["correct"] is True
    # The JVM case needs MEMORY_LIMIT_NEW, which this fake never fills: the validator rejects the
    # answer, the fake gives up, and the run ends in human review, scored as wrong.
    jvm = runs["pricing-jvm-oomkilled-investigate"]
    assert jvm["correct"] is False and jvm["humanReviewReason"] == "inconclusive"
    assert jvm["answers"] == 2 and jvm["firstAnswerValid"] is False
    assert summary["accuracy"] == recomputed_accuracy(document) == 2 / 3
    requests = len(server.requests)
    assert summary["tokens"]["requests"] == requests
    assert summary["tokens"]["inputTokens"] == 100 * requests  # the server's usage per reply
    assert summary["tokens"]["outputTokens"] == 20 * requests
    assert all(run["usage"]["provider"] == "anthropic" for run in runs.values())
    # The investigation tools read the scenario's in-memory cluster ...
    looked_up = [
        text
        for request in server.requests
        for name, text, is_error in ms.tool_outputs(request.body)
        if name == "get_resource" and not is_error
    ]
    assert any(
        "MaxRAMPercentage=70" in text and "Deployment pricing/pricing-engine" in text for text in looked_up
    )
    # ... and scenarios without one say that no cluster is attached.
    refused = [
        text
        for request in server.requests
        for name, text, is_error in ms.tool_outputs(request.body)
        if name == "get_resource" and is_error
    ]
    assert len(refused) == 2 and all("no cluster is attached" in text for text in refused)


# ---- any provider: the same evaluation over an OpenAI-compatible endpoint ------------------------


@pytest.fixture
def chat_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ps.ChatCompletionsServer]:
    with ps.ChatCompletionsServer(policy=sre, served_models=["local-model"]) as running:
        for name in ("ANTHROPIC_API_KEY", "AIANALYSIS_PROVIDER"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("AIANALYSIS_OPENAI_BASE_URL", running.base_url)
        monkeypatch.setenv("AIANALYSIS_MODEL", "local-model")
        monkeypatch.setenv("AIANALYSIS_LLM_MAX_RETRIES", "0")
        yield running


def test_openai_provider_evaluates_the_same_way(
    chat_server: ps.ChatCompletionsServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_eval("--scenarios", *map(str, SCENARIOS), "--provider", "openai", "--out", str(tmp_path))
    assert code == 0, capsys.readouterr().err
    document = json.loads((tmp_path / "report.json").read_text())
    summary = document["summary"]
    runs = {s["name"]: s["runs"][0] for s in document["scenarios"]}
    assert document["meta"]["provider"] == "openai" and document["meta"]["model"] == "local-model"
    assert summary["runs"] == 3 and summary["errors"] == 0
    assert runs["api-gateway-cert-expiring"]["selectedWorkflow"] == "cert-renew"
    assert runs["node-notready-kubelet"]["correct"] is True
    assert runs["pricing-jvm-oomkilled-investigate"]["humanReviewReason"] == "inconclusive"
    assert summary["accuracy"] == 2 / 3, "the same fake model scores the same through either wire format"
    assert summary["tokens"]["requests"] == len(chat_server.requests)
    assert len(chat_server.model_lookups) == 1, "the model was checked once, before the runs"


def test_eval_with_a_model_the_endpoint_does_not_serve_stops_before_any_run(
    chat_server: ps.ChatCompletionsServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AIANALYSIS_MODEL", "retired-model")
    code = run_eval("--scenarios", str(SCENARIOS[0]), "--provider", "openai", "--out", str(tmp_path / "r"))
    err = capsys.readouterr().err
    assert code == 2
    assert "aianalysis: error: model 'retired-model' is not served by provider 'openai'" in err
    assert "set AIANALYSIS_MODEL" in err
    assert chat_server.requests == [] and not (tmp_path / "r").exists()
