"""The bedrock, vertex and openai providers through the real SDK clients against scripted local
servers speaking each platform's wire format: the whole analysis pipeline (tools, validation,
self-correction), retries and failures, token accounting, the startup model check, and secrets
that never reach an error message."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import pytest

from aianalysis import errors, settings
from aianalysis.analysis import llm, pipeline
from aianalysis.analysis.llm import openai_provider
from tests.integration.test_llm_scripted import ANSWER, CATALOG, MODEL, SPEC, RecordingToolbox
from tests.support import messages_server as ms
from tests.support import platform_servers as ps

ACCESS_KEY = "AKIDEXAMPLE0TEST0KEY"
SECRET_KEY = "aws-secret-DO-NOT-LEAK-0123456789abcdef"
REGION = "eu-central-1"
BEDROCK_MODEL = "eu.anthropic.claude-sonnet-4-6"
TOKEN = "ya29.vertex-token-DO-NOT-LEAK-0123456789"
PROJECT = "incident-tools"
VERTEX_REGION = "europe-west1"
OPENAI_KEY = "sk-openai-DO-NOT-LEAK-0123456789"
LOCAL_MODEL = "qwen3-coder"

COMMON: dict[str, Any] = {"timeout_seconds": 5.0, "max_retries": 2, "max_tokens": 1024}
"""Fields of the ``llm`` group every platform test shares."""
ANALYSIS = settings.AnalysisSettings(max_tool_steps=6)


def raw_call(name: str, arguments: str) -> dict[str, Any]:
    """A tool call whose arguments the chat server sends as these characters (not JSON-encoded)."""
    return {"type": "tool_use", "id": "toolu_raw", "name": name, "input": arguments}


def investigate_then_submit(answer: dict[str, Any] | str = ANSWER) -> list[ms.Step]:
    """A careful model: search, read the details, submit."""
    final = (
        ms.reply_tools(raw_call("submit_selection", answer)) if isinstance(answer, str) else ms.submit(answer)
    )
    return [
        ms.reply_tools(
            ms.tool_use("search_workflow_catalog", {"query": "OOMKilled", "signal_type": "OOMKilled"})
        ),
        ms.reply_tools(ms.tool_use("get_workflow_details", {"workflow_id": "oomkill-increase-memory"})),
        final,
    ]


@pytest.fixture
def aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """The AWS default chain's environment source (what IRSA or an instance profile provides in a cluster)."""
    for name in (
        "AWS_PROFILE",
        "AWS_SESSION_TOKEN",
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")


@contextlib.contextmanager
def bedrock(*steps: ms.Step, **kwargs: Any) -> Iterator[tuple[ps.BedrockServer, settings.Settings]]:
    with ps.BedrockServer(
        *steps, access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION, **kwargs
    ) as server:
        config = settings.Settings(
            analysis=ANALYSIS,
            llm=settings.LlmSettings(
                provider="bedrock",
                model=BEDROCK_MODEL,
                aws_region=REGION,
                bedrock_base_url=server.base_url,
                **COMMON,
            ),
        )
        yield server, config


@contextlib.contextmanager
def vertex(*steps: ms.Step, **kwargs: Any) -> Iterator[tuple[ps.VertexServer, settings.Settings]]:
    with ps.VertexServer(*steps, token=TOKEN, project=PROJECT, region=VERTEX_REGION, **kwargs) as server:
        config = settings.Settings(
            analysis=ANALYSIS,
            llm=settings.LlmSettings(
                provider="vertex",
                model=MODEL,
                vertex_region=VERTEX_REGION,
                vertex_project_id=PROJECT,
                vertex_base_url=server.base_url,
                vertex_access_token=TOKEN,
                **COMMON,
            ),
        )
        yield server, config


@contextlib.contextmanager
def chat(*steps: ms.Step, **kwargs: Any) -> Iterator[tuple[ps.ChatCompletionsServer, settings.Settings]]:
    with ps.ChatCompletionsServer(*steps, served_models=[LOCAL_MODEL, "other"], **kwargs) as server:
        config = settings.Settings(
            analysis=ANALYSIS,
            llm=settings.LlmSettings(
                provider="openai",
                model=LOCAL_MODEL,
                openai_base_url=server.base_url,
                openai_api_key=OPENAI_KEY,
                **COMMON,
            ),
        )
        yield server, config


async def run(config: settings.Settings) -> Any:
    provider = llm.make_provider(config)
    try:
        return await pipeline.analyze(SPEC, catalog=CATALOG, provider=provider, reader=None, settings=config)
    finally:
        await provider.aclose()


# ---- bedrock ------------------------------------------------------------------------------------


async def test_bedrock_runs_the_whole_analysis_with_signed_requests(aws_credentials: None) -> None:
    with bedrock(*investigate_then_submit()) as (server, config):
        decision = await run(config)

    assert decision.selected is not None and decision.selected.workflow_id == "oomkill-increase-memory"
    assert decision.review_reason is None
    assert [r.path for r in server.requests] == [f"/model/{BEDROCK_MODEL}/invoke"] * 3
    assert server.signature_failures == 0, "every request carried a valid SigV4 signature"
    first = server.requests[0]
    assert first.headers["authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/")
    assert SECRET_KEY not in json.dumps(first.headers)
    # Prompt caching: system prompt and tool definitions carry breakpoints; no top-level marker.
    assert first.body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert first.body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in first.body
    assert decision.llm.provider == "bedrock" and decision.llm.model == BEDROCK_MODEL
    assert (decision.llm.requests, decision.llm.input_tokens, decision.llm.output_tokens) == (3, 300, 60)
    assert decision.llm.tool_calls == 2


async def test_bedrock_retries_throttling_and_rejects_a_wrong_signature(aws_credentials: None) -> None:
    with bedrock(ms.Fail(429, "Too many requests"), *investigate_then_submit()) as (server, config):
        decision = await run(config)
    assert decision.selected is not None
    assert len(server.requests) == 4, "the 429 was retried by the SDK"

    # A server holding another secret: the signature cannot match (the check is not vacuous).
    with (
        ps.BedrockServer(access_key=ACCESS_KEY, secret_key="another-secret", region=REGION) as server,
        pytest.raises(errors.ProviderError) as caught,
    ):
        await run(
            settings.Settings(
                analysis=ANALYSIS,
                llm=settings.LlmSettings(
                    provider="bedrock",
                    model=BEDROCK_MODEL,
                    aws_region=REGION,
                    bedrock_base_url=server.base_url,
                    **COMMON,
                ),
            )
        )
    assert not caught.value.retryable
    assert "403" in str(caught.value) and "signature" in str(caught.value)
    assert server.signature_failures == 1 and server.requests == []


async def test_bedrock_model_check(aws_credentials: None) -> None:
    with bedrock(retired_models=["anthropic.claude-v2"]) as (server, config):
        assert await llm.check_model(config) is None
        retired = with_llm(config, model="anthropic.claude-v2")
        with pytest.raises(errors.ConfigError) as caught:
            await llm.check_model(retired)
    message = str(caught.value)
    assert "'anthropic.claude-v2' is unknown or retired" in message and "AIANALYSIS_MODEL" in message
    assert "end of its life" in message and "\n" not in message
    assert [r.body["max_tokens"] for r in server.model_lookups] == [1, 1], "the cheapest call: one token"
    assert server.requests == [], "no scripted step (no conversation) was used"


# ---- vertex -------------------------------------------------------------------------------------


async def test_vertex_runs_the_whole_analysis_with_the_token(monkeypatch: pytest.MonkeyPatch) -> None:
    with vertex(*investigate_then_submit()) as (server, config):
        decision = await run(config)

    assert decision.selected is not None and decision.selected.workflow_id == "oomkill-increase-memory"
    path = f"/projects/{PROJECT}/locations/{VERTEX_REGION}/publishers/anthropic/models/{MODEL}:rawPredict"
    assert [r.path for r in server.requests] == [path] * 3
    assert {r.headers["authorization"] for r in server.requests} == {f"Bearer {TOKEN}"}
    assert server.requests[0].body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert decision.llm.provider == "vertex" and decision.llm.requests == 3


async def test_vertex_errors_are_classified_and_never_carry_the_token() -> None:
    echo = ms.Fail(503, f"backend unavailable for credential {TOKEN}")
    with (
        vertex(echo, echo, echo) as (server, config),
        pytest.raises(errors.ProviderUnavailableError) as caught,
    ):
        await run(config)
    assert len(server.requests) == 3, "two SDK retries, then the retryable error"
    assert "503" in str(caught.value) and "[redacted]" in str(caught.value)
    assert TOKEN not in str(caught.value) and TOKEN not in repr(config)


async def test_vertex_model_check_counts_tokens_for_free() -> None:
    with vertex(retired_models=["claude-2.1"]) as (server, config):
        assert await llm.check_model(config) is None
        with pytest.raises(errors.ConfigError) as caught:
            await llm.check_model(with_llm(config, model="claude-2.1"))
    assert "'claude-2.1' is unknown or retired at provider 'vertex'" in str(caught.value)
    assert "was not found" in str(caught.value)
    assert [r.path.rsplit("/", 1)[-1] for r in server.model_lookups] == ["count-tokens:rawPredict"] * 2


# ---- openai -------------------------------------------------------------------------------------


async def test_openai_runs_the_whole_analysis_with_function_tools() -> None:
    steps = investigate_then_submit()
    steps[-1] = ms.submit(ANSWER, usage=ms.usage(50, 30, cache_read=400))
    with chat(*steps) as (server, config):
        decision = await run(config)

    assert decision.selected is not None and decision.selected.workflow_id == "oomkill-increase-memory"
    assert decision.selected.parameters["MEMORY_LIMIT_NEW"] == "512Mi"
    first, last = server.requests[0].body, server.requests[-1].body
    assert {tool["function"]["name"] for tool in first["tools"]} == {
        "list_action_types",
        "search_workflow_catalog",
        "get_workflow_details",
        "get_resource",
        "list_events",
        "get_pod_logs",
        "list_pods_of_owner",
        "list_resources",
        "find_resources",
        "rollout_history",
        "list_namespace_events",
        "list_custom_kinds",
        "top",
        "submit_selection",
    }  # no Prometheus configured: no Prometheus tools
    assert first["messages"][0]["role"] == "system" and first["tool_choice"] == "auto"
    assert server.requests[0].headers["authorization"] == f"Bearer {OPENAI_KEY}"
    tool_results = [m for m in last["messages"] if m["role"] == "tool"]
    assert len(tool_results) == 2 and json.loads(tool_results[0]["content"])["workflows"]
    # Tokens from usage: cached prompt tokens are cache reads, not input.
    assert decision.llm.provider == "openai" and decision.llm.model == LOCAL_MODEL
    assert (decision.llm.input_tokens, decision.llm.cache_read_tokens) == (100 + 100 + 50, 400)
    assert decision.llm.output_tokens == 20 + 20 + 30


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [('{"analysis_summary": "cut', "invalid JSON"), ("[1, 2]", "a JSON list instead of an object")],
)
async def test_openai_malformed_submit_arguments_are_fed_back_and_corrected(
    arguments: str, problem: str
) -> None:
    with chat(*investigate_then_submit(arguments), ms.submit(ANSWER)) as (server, config):
        decision = await run(config)

    assert decision.selected is not None, "corrected on the second answer"
    first, second = decision.attempts
    assert not first.valid and problem in first.errors[0] and first.errors[0].startswith("[schema]")
    assert second.valid
    feedback = server.requests[-1].body["messages"][-1]
    assert feedback["role"] == "tool" and feedback["content"].startswith("ERROR: Your answer was rejected")


async def test_openai_malformed_tool_arguments_are_that_calls_error_not_a_crash() -> None:
    bad_search = ms.reply_tools(raw_call("search_workflow_catalog", "query=OOMKilled"))
    with chat(bad_search, *investigate_then_submit()) as (server, config):
        decision = await run(config)

    assert decision.selected is not None
    reply = server.requests[1].body["messages"][-1]
    assert reply["role"] == "tool" and reply["content"].startswith(
        "ERROR: the arguments of search_workflow_catalog"
    )


async def test_openai_rate_limits_and_server_errors_are_retried_then_timeouts_fail_retryable() -> None:
    with chat(ms.rate_limited(), ms.server_error(), *investigate_then_submit()) as (server, config):
        decision = await run(config)
    assert decision.selected is not None and len(server.requests) == 5

    with (
        chat(ms.Hang(), ms.Hang()) as (server, config),
        pytest.raises(errors.ProviderUnavailableError) as caught,
    ):
        await run(with_llm(config, timeout_seconds=0.5, max_retries=1))
    assert "did not answer within 0.5s" in str(caught.value)


async def test_openai_truncated_answer_is_invalid_and_the_key_never_leaks() -> None:
    cut = ms.submit(ANSWER, stop_reason="max_tokens")
    with chat(*investigate_then_submit()[:2], cut, ms.submit(ANSWER)) as (_, config):
        decision = await run(config)
    assert decision.attempts[0].errors[0].startswith("[truncated]") and decision.attempts[1].valid

    echo = ms.Fail(401, f"invalid api key {OPENAI_KEY}", headers={})
    with chat(echo) as (_, config), pytest.raises(errors.ProviderError) as caught:
        await run(config)
    assert (
        "401" in str(caught.value)
        and OPENAI_KEY not in str(caught.value)
        and "[redacted]" in str(caught.value)
    )
    assert OPENAI_KEY not in repr(config)


async def test_openai_model_check_lists_the_served_models() -> None:
    with chat(lookup_failures=[ms.Fail(503, "warming up", headers={})]) as (server, config):
        warning = await llm.check_model(with_llm(config, max_retries=0))
        assert warning is not None and "could not verify model" in warning and "503" in warning
        assert await llm.check_model(config) is None
        with pytest.raises(errors.ConfigError) as caught:
            await llm.check_model(with_llm(config, model="llama-2-retired"))
    message = str(caught.value)
    assert "'llama-2-retired' is not served" in message and "other, qwen3-coder" in message
    assert "set AIANALYSIS_MODEL" in message
    assert len(server.model_lookups) == 3


def test_openai_tool_definitions_reuse_the_toolbox_schemas() -> None:
    box = RecordingToolbox()
    params = openai_provider.function_tool_params(box)
    by_name = {p["function"]["name"]: p["function"] for p in params}
    for definition in box.definitions():
        assert by_name[definition["name"]]["parameters"] == definition["input_schema"]
    assert by_name["submit_selection"]["parameters"]["required"][:2] == [
        "analysis_summary",
        "root_cause_assessment",
    ]


def with_llm(config: settings.Settings, **changes: Any) -> settings.Settings:
    """``config`` with fields of its ``llm`` group changed."""
    return dataclasses.replace(config, llm=config.llm.model_copy(update=changes))


# ---- one retry-after cap for every provider ----------------------------------------------------


@pytest.mark.parametrize("platform", ["bedrock", "vertex", "openai"])
async def test_a_day_long_retry_after_is_not_waited_for_on_any_platform(
    platform: str, aws_credentials: None
) -> None:
    """Bedrock and Vertex obeyed ``retry-after: 86400`` (reproduced): one analysis held its slot for a
    day. Every platform now fails at once, unavailable and retryable, naming the limit."""
    servers = {"bedrock": bedrock, "vertex": vertex, "openai": chat}
    day = ms.Fail(429, "slow down", headers={"retry-after": "86400"})
    with servers[platform](day, *investigate_then_submit()) as (server, config):
        with pytest.raises(errors.ProviderError) as caught:
            await asyncio.wait_for(run(config), timeout=30)
        assert len(server.requests) == 1, "not retried after a day-long retry-after"
    assert caught.value.retryable
