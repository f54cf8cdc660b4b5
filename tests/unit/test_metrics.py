"""What Prometheus sees: each terminal analysis, LLM request and rejected answer moves its counter
exactly once, with the documented labels. (End to end, through the operator: tests/e2e/test_metrics.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import prometheus_client as prom
import pytest

from aianalysis import __version__, errors, metrics, resources, settings
from aianalysis.analysis import llm, status, tools
from tests.support import messages_server as ms

SPEC = resources.AIAnalysisSpec.model_validate(
    {
        "signal": {"type": "OOMKilled", "severity": "critical"},
        "resource": {"kind": "Deployment", "name": "payment-api", "namespace": "production"},
    }
)


def value(name: str, **labels: str) -> float:
    return metrics.REGISTRY.get_sample_value(name, labels) or 0.0


class Delta:
    """Sample values before/after: the registry is process-wide, so tests compare differences."""

    def __init__(self, *series: tuple[str, dict[str, str]]) -> None:
        self._series = series
        self._before = [value(name, **labels) for name, labels in series]

    def __call__(self) -> list[float]:
        return [
            value(name, **labels) - before
            for (name, labels), before in zip(self._series, self._before, strict=True)
        ]


def decision(
    *,
    confidence: float | None = 0.9,
    review: resources.HumanReviewReason | None = None,
    failed_rules: list[str] | None = None,
    usage: resources.LLMUsage | None = None,
) -> status.Decision:
    selected = (
        resources.SelectedWorkflow(
            workflow_id="oomkill-increase-memory",
            version="1.0.0",
            container_image="registry.example/wf/oom:1",
            confidence=confidence,
            rationale="limit too low",
            parameters={"TARGET_NAMESPACE": "production"},
        )
        if confidence is not None
        else None
    )
    return status.Decision(
        selected=selected,
        review_reason=review,
        root_cause=None,
        alternatives=[],
        warnings=[],
        attempts=[],
        recovery=None,
        llm=usage or resources.LLMUsage(provider="anthropic"),
        failed_rules=failed_rules or [],
    )


def test_a_selection_counts_one_analysis_and_its_duration_but_not_its_tokens() -> None:
    """Tokens were counted per API response already (the request observer), never again here."""
    usage = resources.LLMUsage(
        provider="anthropic",
        requests=3,
        input_tokens=1200,
        output_tokens=150,
        cache_read_tokens=900,
        cache_write_tokens=300,
    )
    delta = Delta(
        ("aianalysis_analyses_total", {"outcome": "selected", "review_reason": "none"}),
        ("aianalysis_llm_tokens_total", {"provider": "anthropic", "kind": "input"}),
        ("aianalysis_llm_tokens_total", {"provider": "anthropic", "kind": "output"}),
        ("aianalysis_llm_tokens_total", {"provider": "anthropic", "kind": "cache_read"}),
        ("aianalysis_llm_tokens_total", {"provider": "anthropic", "kind": "cache_write"}),
        ("aianalysis_analysis_duration_seconds_count", {"provider": "anthropic"}),
        ("aianalysis_analysis_duration_seconds_sum", {"provider": "anthropic"}),
        ("aianalysis_analysis_duration_seconds_bucket", {"provider": "anthropic", "le": "5.0"}),
        ("aianalysis_analysis_duration_seconds_bucket", {"provider": "anthropic", "le": "2.5"}),
    )

    metrics.record_decision(decision(usage=usage), provider="anthropic", seconds=3.0, namespace="shop")

    assert delta() == [1, 0, 0, 0, 0, 1, 3.0, 1, 0]


@pytest.mark.parametrize(
    ("made", "outcome", "reason"),
    [
        (decision(confidence=0.4, review="low_confidence"), "human_review", "low_confidence"),
        (decision(confidence=None, review="no_eligible_workflow"), "human_review", "no_eligible_workflow"),
        (decision(confidence=None, review="parameters_incomplete"), "human_review", "parameters_incomplete"),
    ],
)
def test_human_review_outcomes_carry_their_reason(made: status.Decision, outcome: str, reason: str) -> None:
    delta = Delta(
        ("aianalysis_analyses_total", {"outcome": outcome, "review_reason": reason}),
        ("aianalysis_analyses_total", {"outcome": "selected", "review_reason": "none"}),
    )

    metrics.record_decision(made, provider="offline", seconds=0.1, namespace="shop")

    assert delta() == [1, 0]


def test_offline_analyses_bill_no_tokens() -> None:
    delta = Delta(("aianalysis_llm_tokens_total", {"provider": "offline", "kind": "input"}))

    metrics.record_decision(decision(), provider="offline", seconds=0.01, namespace="shop")

    assert delta() == [0]


def test_what_a_decision_cost_is_summed_per_namespace_and_model() -> None:
    def priced(amount: float) -> resources.LLMUsage:
        cost = resources.LLMCost(amount=amount, currency="USD", price_table_date="2026-11-27")
        return resources.LLMUsage(provider="anthropic", model="claude-sonnet-4-6", cost=cost)

    labels = {"provider": "anthropic", "model": "claude-sonnet-4-6", "currency": "USD"}
    delta = Delta(
        ("aianalysis_llm_cost_total", {"namespace": "shop", **labels}),
        ("aianalysis_llm_cost_total", {"namespace": "ledger", **labels}),
    )

    metrics.record_decision(decision(usage=priced(0.0125)), provider="anthropic", seconds=1, namespace="shop")
    metrics.record_decision(decision(usage=priced(0.5)), provider="anthropic", seconds=1, namespace="shop")
    metrics.record_decision(decision(usage=priced(0.25)), provider="anthropic", seconds=1, namespace="ledger")
    metrics.record_decision(decision(), provider="anthropic", seconds=1, namespace="ledger")  # unpriced

    assert delta() == pytest.approx([0.5125, 0.25])


def test_each_rejected_answer_counts_once_per_failed_rule() -> None:
    delta = Delta(
        ("aianalysis_validation_failures_total", {"rule": "missing_parameter"}),
        ("aianalysis_validation_failures_total", {"rule": "parameters"}),
        ("aianalysis_validation_failures_total", {"rule": "unknown_workflow"}),
    )

    metrics.record_decision(
        decision(failed_rules=["missing_parameter", "parameters", "missing_parameter"]),
        provider="anthropic",
        seconds=1.0,
        namespace="shop",
    )

    assert delta() == [2, 1, 0]


def test_a_failed_analysis_counts_as_failed_with_its_reason() -> None:
    delta = Delta(
        ("aianalysis_analyses_total", {"outcome": "failed", "review_reason": "provider_unavailable"}),
        ("aianalysis_analyses_total", {"outcome": "failed", "review_reason": "none"}),
    )

    metrics.record_failure("provider_unavailable")
    metrics.record_failure(None)

    assert delta() == [1, 1]


def test_the_request_observer_counts_requests_their_latency_and_billed_tokens() -> None:
    observe = metrics.llm_observer("anthropic")
    delta = Delta(
        ("aianalysis_llm_requests_total", {"provider": "anthropic", "outcome": "ok"}),
        ("aianalysis_llm_requests_total", {"provider": "anthropic", "outcome": "unavailable"}),
        ("aianalysis_llm_request_duration_seconds_count", {"provider": "anthropic"}),
        ("aianalysis_llm_request_duration_seconds_sum", {"provider": "anthropic"}),
        ("aianalysis_llm_tokens_total", {"provider": "anthropic", "kind": "input"}),
        ("aianalysis_llm_tokens_total", {"provider": "anthropic", "kind": "output"}),
        ("aianalysis_llm_tokens_total", {"provider": "anthropic", "kind": "cache_read"}),
        ("aianalysis_llm_tokens_total", {"provider": "anthropic", "kind": "cache_write"}),
    )

    observe(llm.RequestRecord("ok", 0.25, input_tokens=1200, output_tokens=40, cache_write_tokens=3000))
    observe(llm.RequestRecord("ok", 0.5, input_tokens=150, output_tokens=35, cache_read_tokens=3000))
    observe(llm.RequestRecord("unavailable", 2.0))

    assert delta() == [2, 1, 3, 2.75, 1350, 75, 3000, 3000]


# ---- the hook through the real SDK -----------------------------------------------------------


@pytest.fixture
def server() -> Iterator[ms.MessagesServer]:
    with ms.MessagesServer() as running:
        yield running


class EchoTools:
    """No tool definitions; any call the script makes answers ``"nothing found"``."""

    def definitions(self) -> list[dict[str, Any]]:
        return []

    async def call(self, name: str, arguments: dict[str, Any], /) -> tools.ToolResult:
        return tools.ToolResult("nothing found")


async def ask_once(server: ms.MessagesServer) -> None:
    config = settings.Settings(
        llm=settings.LlmSettings(
            provider="anthropic", api_key="k", anthropic_base_url=server.base_url, max_retries=0
        )
    )
    provider = llm.make_provider(config, on_request=metrics.llm_observer(config.llm.provider))
    try:
        await provider.open(system="s", prompt="p", toolbox=EchoTools(), spec=SPEC).answer()
    finally:
        await provider.aclose()


async def test_make_provider_reports_every_messages_api_call(server: ms.MessagesServer) -> None:
    server.add(ms.reply_text("no tool for me"), ms.unauthorized(), ms.server_error())
    delta = Delta(
        ("aianalysis_llm_requests_total", {"provider": "anthropic", "outcome": "ok"}),
        ("aianalysis_llm_requests_total", {"provider": "anthropic", "outcome": "error"}),
        ("aianalysis_llm_requests_total", {"provider": "anthropic", "outcome": "unavailable"}),
    )

    await ask_once(server)
    with pytest.raises(errors.ProviderError):
        await ask_once(server)
    with pytest.raises(errors.ProviderUnavailableError):
        await ask_once(server)

    assert delta() == [1, 1, 1]
    assert len(server.requests) == 3


async def test_tokens_of_a_conversation_that_fails_midway_are_counted_once(
    server: ms.MessagesServer,
) -> None:
    """A billed turn, then an outage: the analysis never reaches a decision, yet its tokens were
    billed and are counted — once. A handler retry restarts the conversation; the second try's
    billed turn is counted on top, so both tries' tokens appear."""
    billed = ms.usage(1200, 40, cache_read=500, cache_write=3000)
    first_turn = ms.reply_tools(ms.tool_use("search_workflow_catalog", {"query": "oom"}), usage=billed)
    server.add(first_turn)
    server.set_policy(lambda body: ms.server_error())  # then the API is down for good
    delta = Delta(
        ("aianalysis_llm_requests_total", {"provider": "anthropic", "outcome": "ok"}),
        ("aianalysis_llm_requests_total", {"provider": "anthropic", "outcome": "unavailable"}),
        ("aianalysis_llm_tokens_total", {"provider": "anthropic", "kind": "input"}),
        ("aianalysis_llm_tokens_total", {"provider": "anthropic", "kind": "output"}),
        ("aianalysis_llm_tokens_total", {"provider": "anthropic", "kind": "cache_read"}),
        ("aianalysis_llm_tokens_total", {"provider": "anthropic", "kind": "cache_write"}),
    )

    with pytest.raises(errors.ProviderUnavailableError):
        await ask_once(server)  # max_retries=0: the SDK does not retry the 500

    assert len(server.requests) == 2
    assert delta() == [1, 1, 1200, 40, 500, 3000]

    server.add(first_turn)
    with pytest.raises(errors.ProviderUnavailableError):
        await ask_once(server)  # what a handler retry does: a fresh conversation

    assert len(server.requests) == 4
    assert delta() == [2, 2, 2400, 80, 1000, 6000]


# ---- exposition ------------------------------------------------------------------------------


def test_exposition_names_follow_prometheus_conventions() -> None:
    families = {family.name: family for family in metrics.REGISTRY.collect()}
    ours = {name for name in families if name.startswith("aianalysis_")}

    assert ours == {
        "aianalysis_analyses",
        "aianalysis_analysis_duration_seconds",
        "aianalysis_llm_requests",
        "aianalysis_llm_request_duration_seconds",
        "aianalysis_llm_tokens",
        "aianalysis_validation_failures",
        "aianalysis_recovery_attempts",
        "aianalysis_catalog_workflows",
        "aianalysis_catalog_workflows_refused",
        "aianalysis_catalog_refusals",
        "aianalysis_analyses_in_flight",
        "aianalysis_build",
        "aianalysis_intake_alerts",
        "aianalysis_cache_evictions",
        "aianalysis_llm_budget_used",
        "aianalysis_analyses_waiting",
        "aianalysis_executions",
        "aianalysis_status_writes_dropped",
        "aianalysis_conversations_restarted",
        "aianalysis_unreadable_objects",
        "aianalysis_catalog_sync_last_success_timestamp_seconds",
        "aianalysis_reconcile_retries",
        "aianalysis_assessments",
        "aianalysis_assessment_score",
        "aianalysis_execution_guard_blocks",
        "aianalysis_llm_cost",
        "aianalysis_notification_posts",
        "aianalysis_notifications_firing",
        "aianalysis_notification_last_pass_timestamp_seconds",
    }
    durations = {
        name for name in ours if name.endswith("_seconds") and not name.endswith("_timestamp_seconds")
    }
    assert {families[name].type for name in durations} == {"histogram"}
    assert families["aianalysis_catalog_sync_last_success_timestamp_seconds"].type == "gauge"
    assert families["aianalysis_notification_last_pass_timestamp_seconds"].type == "gauge"
    assert all(families[name].documentation for name in ours)
    text = prom.generate_latest(metrics.REGISTRY).decode()
    assert f'aianalysis_build_info{{version="{__version__}"}} 1.0' in text
    assert "process_resident_memory_bytes" in text, "the operator's own memory is exported too"


def test_executions_are_counted_by_outcome_and_a_bounded_reason() -> None:
    name = "aianalysis_executions_total"
    before = {
        key: value(name, outcome=o, reason=r)
        for key, (o, r) in {"oom": ("failed", "OOMKilled"), "other": ("failed", "other"),
                            "done": ("completed", "none"), "refused": ("refused", "SelectionInvalid")}.items()
    }  # fmt: skip
    metrics.record_execution("failed", "OOMKilled")
    metrics.record_execution("failed", "SomethingAClusterInvented")
    metrics.record_execution("completed")
    metrics.record_execution("refused", "SelectionInvalid")
    assert value(name, outcome="failed", reason="OOMKilled") == before["oom"] + 1
    assert value(name, outcome="failed", reason="other") == before["other"] + 1
    assert value(name, outcome="completed", reason="none") == before["done"] + 1
    assert value(name, outcome="refused", reason="SelectionInvalid") == before["refused"] + 1
    assert value(name, outcome="failed", reason="SomethingAClusterInvented") == 0
    blocked = value(name, outcome="blocked", reason="Cooldown")
    metrics.record_execution("blocked", "Cooldown")
    assert value(name, outcome="blocked", reason="Cooldown") == blocked + 1


def test_assessments_are_counted_by_verdict_and_reason_and_scored() -> None:
    before = value("aianalysis_assessments_total", verdict="ineffective", reason="StillFailing")
    scored = value("aianalysis_assessment_score_count")
    metrics.record_assessment("ineffective", "StillFailing", 0.0)
    metrics.record_assessment("unknown", "ClockSkew", None)
    assert value("aianalysis_assessments_total", verdict="ineffective", reason="StillFailing") == before + 1
    assert value("aianalysis_assessment_score_count") == scored + 1  # unknown has no score
