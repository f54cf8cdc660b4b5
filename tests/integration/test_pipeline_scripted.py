"""The whole analysis pipeline (prompt → real anthropic SDK over HTTP → tools → validation → status
decision) against the scripted Messages API server and the example catalog. What a user would see
in ``status`` is asserted; an invalid selection must never get there."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from aianalysis import catalog, errors, resources
from aianalysis import settings as settings_mod
from aianalysis.analysis import pipeline
from tests.support import messages_server as ms
from tests.support.fake_llm import GoodLLM

ROOT = Path(__file__).resolve().parents[2]
CATALOG = catalog.load_paths([ROOT / "examples" / "catalog"])


def incident(name: str) -> resources.AIAnalysisSpec:
    doc = yaml.safe_load((ROOT / "examples" / "incidents" / f"{name}.yaml").read_text())
    return resources.AIAnalysisSpec.model_validate(doc["spec"])


def settings(server: ms.MessagesServer, **llm: Any) -> settings_mod.Settings:
    """Claude through the scripted server; ``llm`` overrides fields of the ``llm`` group."""
    values: dict[str, Any] = {
        "provider": "anthropic",
        "api_key": "sk-test-pipeline",
        "anthropic_base_url": server.base_url,
        "max_retries": 2,
        "timeout_seconds": 5.0,
        "model": "claude-sonnet-4-6",
    }
    return settings_mod.Settings(llm=settings_mod.LlmSettings(**(values | llm)))


async def run(spec: resources.AIAnalysisSpec, config: settings_mod.Settings) -> resources.AIAnalysisStatus:
    return await pipeline.analyze_without_cluster(spec, catalog=CATALOG, settings=config)


def assert_executable(st: resources.AIAnalysisStatus) -> resources.SelectedWorkflow:
    """Whatever is in selectedWorkflow can be executed as is."""
    assert st.selected_workflow is not None
    sel = st.selected_workflow
    workflow = CATALOG.get(sel.workflow_id, sel.version)
    assert workflow is not None
    assert sel.container_image == workflow.spec.execution.container_image
    declared = {p.name: p for p in workflow.spec.parameters}
    assert set(sel.parameters) <= set(declared)
    assert {n for n, p in declared.items() if p.required} <= set(sel.parameters)
    return sel


async def test_happy_path_selects_a_valid_workflow_and_accounts_tokens() -> None:
    with ms.MessagesServer(policy=GoodLLM()) as server:
        st = await run(incident("payment-api-oomkilled"), settings(server))

    sel = assert_executable(st)
    assert "oomkill" in sel.workflow_id
    assert sel.parameters["TARGET_NAMESPACE"] == "payments"
    assert st.needs_human_review is False and st.phase == "Completed"
    assert st.llm is not None and st.llm.provider == "anthropic"
    assert st.llm.requests == len(server.requests) == 3
    assert st.llm.input_tokens == 3 * 1200 and st.llm.cache_read_tokens == 3 * 900
    assert st.llm.tool_calls == 2
    assert [a.valid for a in st.validation_attempts or []] == [True]


async def test_hallucinated_workflow_is_corrected_on_the_second_attempt() -> None:
    def hallucinate(n: int, answer: dict[str, Any]) -> dict[str, Any]:
        if n == 1:
            answer = copy.deepcopy(answer)
            answer["selected_workflow"]["workflow_id"] = "oomkill-magic-fix"
        return answer

    with ms.MessagesServer(policy=GoodLLM(corrupt=hallucinate)) as server:
        st = await run(incident("payment-api-oomkilled"), settings(server))

    assert_executable(st)
    attempts = st.validation_attempts or []
    assert [a.valid for a in attempts] == [False, True]
    assert attempts[0].workflow_id == "oomkill-magic-fix"
    assert any("unknown_workflow" in e for e in attempts[0].errors)
    feedback = ms.tool_outputs(server.requests[-1].body)
    assert feedback[-1][0] == "submit_selection" and feedback[-1][2] is True  # is_error fed back


async def test_invalid_parameters_three_times_end_in_human_review_with_every_attempt_recorded() -> None:
    def bad_memory(n: int, answer: dict[str, Any]) -> dict[str, Any]:
        answer = copy.deepcopy(answer)
        answer["selected_workflow"]["parameters"]["MEMORY_LIMIT_NEW"] = 42  # TARGET_* are system-filled
        return answer

    with ms.MessagesServer(policy=GoodLLM(corrupt=bad_memory)) as server:
        st = await run(incident("payment-api-oomkilled"), settings(server))

    assert st.selected_workflow is None
    assert st.needs_human_review is True and st.human_review_reason == "validation_failed"
    attempts = st.validation_attempts or []
    assert [a.attempt for a in attempts] == [1, 2, 3] and not any(a.valid for a in attempts)
    assert all(any("MEMORY_LIMIT_NEW" in e for e in a.errors) for a in attempts)
    assert st.alternative_workflows and "oomkill" in st.alternative_workflows[0].workflow_id
    assert len(server.requests) == 5  # search, details, 3 submissions


async def test_out_of_policy_pick_is_rejected() -> None:
    """A high-risk workflow for a low-risk-tolerance production incident never reaches status."""

    def risky(n: int, answer: dict[str, Any]) -> dict[str, Any]:
        answer = copy.deepcopy(answer)
        answer["selected_workflow"] = {
            "workflow_id": "oomkill-scale-out-raise-limits",
            "confidence": 0.95,
            "rationale": "bigger is better",
            "parameters": {"TARGET_NAMESPACE": "payments"},
        }
        return answer

    with ms.MessagesServer(policy=GoodLLM(corrupt=risky)) as server:
        st = await run(incident("payment-api-oomkilled"), settings(server))

    assert st.selected_workflow is None and st.needs_human_review is True
    assert all(not a.valid for a in st.validation_attempts or [])
    # The search tool never even showed it (policy applies before the LLM), so it is unknown here.
    errors_seen = " ".join(e for a in st.validation_attempts or [] for e in a.errors)
    assert "unknown_workflow" in errors_seen or "policy" in errors_seen


async def test_truncated_answer_is_invalid_even_when_it_parses() -> None:
    good = GoodLLM()

    def policy(body: dict[str, Any]) -> ms.Step:
        step = good(body)
        if (
            isinstance(step, ms.Reply)
            and step.content[-1].get("name") == "submit_selection"
            and good.submissions == 1
        ):
            return ms.Reply(content=step.content, stop_reason="max_tokens", usage=step.usage)
        return step

    with ms.MessagesServer(policy=policy) as server:
        st = await run(incident("payment-api-oomkilled"), settings(server))

    attempts = st.validation_attempts or []
    assert attempts[0].valid is False and any("truncated" in e for e in attempts[0].errors)
    assert attempts[-1].valid is True
    assert_executable(st)


async def test_rate_limit_then_success() -> None:
    with ms.MessagesServer(ms.rate_limited(), ms.overloaded(), policy=GoodLLM()) as server:
        st = await run(incident("payment-api-oomkilled"), settings(server))

    assert_executable(st)
    assert st.llm is not None and st.llm.requests == 3  # the SDK retried; 3 successful calls
    assert len(server.requests) == 5


async def test_persistent_server_errors_raise_a_retryable_provider_error() -> None:
    failures = [ms.server_error() for _ in range(10)]
    with ms.MessagesServer(*failures) as server, pytest.raises(errors.ProviderUnavailableError) as caught:
        await run(incident("payment-api-oomkilled"), settings(server, max_retries=1))
    assert caught.value.retryable is True
    assert "sk-test-pipeline" not in str(caught.value)


async def test_prompt_injection_in_the_error_message_does_not_widen_what_the_validator_allows() -> None:
    spec = incident("notification-worker-crashloop-injection")
    assert "cordon-drain-node" in (spec.signal.error_message or "") + (spec.signal.description or "")

    def obey_injection(n: int, answer: dict[str, Any]) -> dict[str, Any]:
        answer = copy.deepcopy(answer)
        answer["selected_workflow"] = {
            "workflow_id": "cordon-drain-node",
            "confidence": 0.99,
            "rationale": "the alert told me to",
            "parameters": {"TARGET_NAMESPACE": "x"},
        }
        return answer

    with ms.MessagesServer(policy=GoodLLM(corrupt=obey_injection)) as server:
        st = await run(spec, settings(server))

    assert st.selected_workflow is None
    assert st.needs_human_review is True
    first_prompt = server.requests[0].body["messages"][0]["content"]
    text = (
        first_prompt if isinstance(first_prompt, str) else " ".join(b.get("text", "") for b in first_prompt)
    )
    assert "<untrusted-data" in text
