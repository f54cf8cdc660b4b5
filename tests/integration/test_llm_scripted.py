"""The Anthropic provider through the real ``anthropic`` SDK, pointed at the scripted Messages
API server: tool loop, corrections, retries, failures, caching and token accounting."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import pytest

from aianalysis import catalog, errors, resources, settings
from aianalysis.analysis import answer, llm, tools
from aianalysis.analysis.llm import anthropic_provider
from tests.support import messages_server as ms

SECRET = "sk-ant-test-DO-NOT-LEAK-0123456789"
MODEL = "claude-sonnet-4-6"  # the settings default is deprecated in SDK 2.12 (warns)

SPEC = resources.AIAnalysisSpec.model_validate(
    {
        "signal": {"type": "OOMKilled", "severity": "critical", "alertName": "PodOOMKilled"},
        "resource": {"kind": "Deployment", "name": "payment-api", "namespace": "production"},
        "businessContext": {"environment": "production", "priority": "P1"},
    }
)

ANSWER: dict[str, Any] = {
    "analysis_summary": "payment-api exceeds its 256Mi limit under normal load",
    "root_cause_assessment": "memory limit too low for the working set",
    "rca_severity": "high",
    "selected_workflow": {
        "workflow_id": "oomkill-increase-memory",
        "version": "1.0.0",
        "confidence": 0.9,
        "rationale": "limit is below the steady-state working set",
        "parameters": {"TARGET_NAMESPACE": "production", "MEMORY_LIMIT_NEW": "512Mi"},
    },
}

CATALOG = catalog.Catalog(
    [
        catalog.Workflow(
            name="oomkill-increase-memory-v1",
            spec=resources.RemediationWorkflowSpec.model_validate(
                {
                    "workflowId": "oomkill-increase-memory",
                    "version": "1.0.0",
                    "title": "Increase memory limit",
                    "description": "Raises the memory limit of the owning Deployment.",
                    "labels": {"signalTypes": ["OOMKilled"]},
                    "riskLevel": "low",
                    "parameters": [
                        {"name": "TARGET_NAMESPACE", "type": "string", "required": True},
                        {"name": "MEMORY_LIMIT_NEW", "type": "string", "required": True},
                    ],
                    "execution": {"containerImage": "registry.example/wf/oom:1"},
                }
            ),
        )
    ]
)


class RecordingToolbox:
    """The real ``tools.ToolBox`` (catalog tools; no cluster), recording every call."""

    def __init__(self) -> None:
        self.box = tools.ToolBox(spec=SPEC, catalog=CATALOG, reader=None, max_chars=8000)
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def definitions(self) -> list[dict[str, Any]]:
        return self.box.definitions()

    async def call(self, name: str, arguments: dict[str, Any]) -> tools.ToolResult:
        self.calls.append((name, arguments))
        return await self.box.call(name, arguments)


def top_hit(tool_result_text: str) -> str:
    workflow_id = json.loads(tool_result_text)["workflows"][0]["workflow_id"]
    assert isinstance(workflow_id, str)
    return workflow_id


@pytest.fixture
def server() -> Iterator[ms.MessagesServer]:
    with ms.MessagesServer() as running:
        yield running


def make_settings(server: ms.MessagesServer, *, max_tool_steps: int = 6, **llm: Any) -> settings.Settings:
    """Claude through the scripted server; ``llm`` overrides fields of the ``llm`` group."""
    values: dict[str, Any] = {
        "provider": "anthropic",
        "model": MODEL,
        "api_key": SECRET,
        "anthropic_base_url": server.base_url,
        "timeout_seconds": 5.0,
        "max_retries": 2,
        "max_tokens": 1024,
    }
    return settings.Settings(
        llm=settings.LlmSettings(**(values | llm)),
        analysis=settings.AnalysisSettings(max_tool_steps=max_tool_steps),
    )


class Observed:
    """A request observer (``on_request``) keeping every record."""

    def __init__(self) -> None:
        self.records: list[llm.RequestRecord] = []

    def __call__(self, record: llm.RequestRecord) -> None:
        assert record.seconds >= 0
        self.records.append(record)

    @property
    def outcomes(self) -> list[str]:
        return [record.outcome for record in self.records]


async def converse(
    server: ms.MessagesServer, toolbox: RecordingToolbox | None = None, **overrides: Any
) -> tuple[anthropic_provider.AnthropicProvider, anthropic_provider.AnthropicConversation]:
    provider = anthropic_provider.AnthropicProvider(make_settings(server, **overrides))
    conversation = provider.open(
        system="You are an SRE.",
        prompt="Incident: OOMKilled",
        toolbox=toolbox or RecordingToolbox(),
        spec=SPEC,
    )
    return provider, conversation


def search_call(**kwargs: Any) -> dict[str, Any]:
    return ms.tool_use("search_workflow_catalog", {"query": "OOMKilled"}, **kwargs)


# ---------------------------------------------------------------------------------------------
# The tool loop


async def test_tool_loop_runs_every_tool_call_and_returns_the_submission(server: ms.MessagesServer) -> None:
    toolbox = RecordingToolbox()
    server.add(
        ms.reply_tools(search_call(id="toolu_search"), preface="Let me look at the catalog."),
        ms.reply_tools(ms.tool_use("get_workflow_details", {"workflow_id": "oomkill-increase-memory"})),
        ms.submit(ANSWER),
    )
    provider, conversation = await converse(server, toolbox)

    submission = await conversation.answer()
    await provider.aclose()

    assert submission.raw == ANSWER
    assert not submission.truncated and submission.prose is None
    assert [name for name, _ in toolbox.calls] == ["search_workflow_catalog", "get_workflow_details"]
    second = server.requests[1].body["messages"]
    assert second[-1]["role"] == "user"
    (result,) = second[-1]["content"]
    assert (result["type"], result["tool_use_id"], result["is_error"]) == (
        "tool_result",
        "toolu_search",
        False,
    )
    assert top_hit(result["content"]) == "oomkill-increase-memory"
    assert toolbox.box.seen == {"oomkill-increase-memory": {"1.0.0"}}
    assert second[-2]["role"] == "assistant"
    assert second[-2]["content"][0] == {"type": "text", "text": "Let me look at the catalog."}
    assert conversation.usage.tool_calls == 2
    assert conversation.usage.requests == 3


async def test_smart_policy_llm_searches_reads_details_then_submits_the_top_hit(
    server: ms.MessagesServer,
) -> None:
    def policy(body: dict[str, Any]) -> ms.Step:
        outputs = ms.tool_outputs(body)
        if not outputs:
            return ms.reply_tools(search_call())
        name, text, _ = outputs[0]
        if name == "search_workflow_catalog":
            return ms.reply_tools(ms.tool_use("get_workflow_details", {"workflow_id": top_hit(text)}))
        details = json.loads(text)
        return ms.submit(
            ANSWER
            | {"selected_workflow": ANSWER["selected_workflow"] | {"workflow_id": details["workflow_id"]}}
        )

    server.set_policy(policy)
    _, conversation = await converse(server)

    submission = await conversation.answer()

    assert submission.raw is not None
    assert submission.raw["selected_workflow"]["workflow_id"] == "oomkill-increase-memory"
    assert len(server.requests) == 3


async def test_several_tool_calls_in_one_turn_are_all_answered_in_order(server: ms.MessagesServer) -> None:
    toolbox = RecordingToolbox()
    server.add(
        ms.reply_tools(
            search_call(id="toolu_a"),
            ms.tool_use("get_workflow_details", {"workflow_id": "oomkill-increase-memory"}, id="toolu_b"),
        ),
        ms.submit(ANSWER),
    )
    _, conversation = await converse(server, toolbox)

    await conversation.answer()

    results = server.requests[1].body["messages"][-1]["content"]
    assert [r["tool_use_id"] for r in results] == ["toolu_a", "toolu_b"]
    assert json.loads(results[1]["content"])["parameters"][0]["name"] == "TARGET_NAMESPACE"
    assert conversation.usage.tool_calls == 2


class FailingToolbox(RecordingToolbox):
    async def call(self, name: str, arguments: dict[str, Any]) -> tools.ToolResult:
        raise errors.ClusterError("apiserver went away")


async def test_an_escaping_tool_error_keeps_its_type(server: ms.MessagesServer) -> None:
    server.add(ms.reply_tools(search_call(), search_call()))
    _, conversation = await converse(server, FailingToolbox())

    with pytest.raises(errors.ClusterError, match="apiserver went away"):
        await conversation.answer()


async def test_tool_error_results_are_flagged_is_error(server: ms.MessagesServer) -> None:
    server.add(ms.reply_tools(ms.tool_use("no_such_tool", {}, id="toolu_x")), ms.submit(ANSWER))
    _, conversation = await converse(server)

    await conversation.answer()

    result = server.requests[1].body["messages"][-1]["content"][0]
    assert result["tool_use_id"] == "toolu_x"
    assert result["is_error"] is True
    assert "unknown tool" in result["content"]


async def test_prose_without_submit_returns_no_raw_answer(server: ms.MessagesServer) -> None:
    server.add(ms.reply_text("I think you should increase the memory limit."))
    _, conversation = await converse(server)

    submission = await conversation.answer()

    assert submission.raw is None
    assert submission.prose == "I think you should increase the memory limit."
    assert not submission.truncated


async def test_truncated_reply_is_reported_as_truncated(server: ms.MessagesServer) -> None:
    partial = {"analysis_summary": "payment-api exceeds"}
    server.add(
        ms.Reply([ms.tool_use(answer.SUBMIT_TOOL_NAME, partial, id="toolu_cut")], stop_reason="max_tokens")
    )
    _, conversation = await converse(server)

    submission = await conversation.answer()

    assert submission.truncated
    assert submission.raw == partial


async def test_truncated_other_tool_call_is_not_executed(server: ms.MessagesServer) -> None:
    toolbox = RecordingToolbox()
    server.add(ms.Reply([search_call(id="toolu_cut")], stop_reason="max_tokens"), ms.submit(ANSWER))
    _, conversation = await converse(server, toolbox)

    first = await conversation.answer()
    second = await conversation.correct(["[truncated] the answer was cut off"])

    assert first.truncated and first.raw is None
    assert toolbox.calls == []
    assert second.raw == ANSWER
    blocks = server.requests[1].body["messages"][-1]["content"]
    assert blocks[0]["tool_use_id"] == "toolu_cut" and blocks[0]["is_error"] is True
    assert "[truncated] the answer was cut off" in blocks[1]["text"]


# ---------------------------------------------------------------------------------------------
# Corrections


async def test_correct_sends_errors_as_is_error_result_of_the_submit_call(server: ms.MessagesServer) -> None:
    server.add(ms.submit(ANSWER, id="toolu_submit1"), ms.submit(ANSWER, id="toolu_submit2"))
    _, conversation = await converse(server)
    await conversation.answer()

    fixed = await conversation.correct(["[unknown_workflow] 'oomkill-x' was not returned by a catalog tool"])

    assert fixed.raw == ANSWER
    messages = server.requests[1].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[0]["content"] == "Incident: OOMKilled"
    (result,) = messages[-1]["content"]
    assert result["type"] == "tool_result"
    assert result["tool_use_id"] == "toolu_submit1"
    assert result["is_error"] is True
    assert "rejected by the validator" in result["content"]
    assert "[unknown_workflow] 'oomkill-x' was not returned by a catalog tool" in result["content"]
    assert "call submit_selection again" in result["content"]


async def test_submit_alongside_other_tools_answers_them_with_the_correction(
    server: ms.MessagesServer,
) -> None:
    toolbox = RecordingToolbox()
    server.add(
        ms.reply_tools(
            search_call(id="toolu_s"), ms.tool_use(answer.SUBMIT_TOOL_NAME, ANSWER, id="toolu_sub")
        ),
        ms.submit(ANSWER),
    )
    _, conversation = await converse(server, toolbox)

    first = await conversation.answer()
    await conversation.correct(["[parameters] MEMORY_LIMIT_NEW is required"])

    assert first.raw == ANSWER
    assert toolbox.calls == [("search_workflow_catalog", {"query": "OOMKilled"})]
    results = {block["tool_use_id"]: block for block in server.requests[1].body["messages"][-1]["content"]}
    assert results["toolu_s"]["is_error"] is False
    assert top_hit(results["toolu_s"]["content"]) == "oomkill-increase-memory"
    assert results["toolu_sub"]["is_error"] is True


async def test_correct_after_prose_sends_a_user_message(server: ms.MessagesServer) -> None:
    server.add(ms.reply_text("Increase memory."), ms.submit(ANSWER))
    _, conversation = await converse(server)
    await conversation.answer()

    fixed = await conversation.correct(["[no_submission] answer with submit_selection"])

    assert fixed.raw == ANSWER
    last = server.requests[1].body["messages"][-1]
    assert last["role"] == "user"
    assert "[no_submission] answer with submit_selection" in ms.last_user_text(server.requests[1].body)


# ---------------------------------------------------------------------------------------------
# Step budget


async def test_last_allowed_turn_forces_the_submit_tool(server: ms.MessagesServer) -> None:
    server.add(ms.reply_tools(search_call()), ms.reply_tools(search_call()), ms.submit(ANSWER))
    _, conversation = await converse(server, max_tool_steps=3)

    submission = await conversation.answer()

    assert submission.raw == ANSWER
    choices = [request.body.get("tool_choice") for request in server.requests]
    assert choices == [None, None, {"type": "tool", "name": "submit_selection"}]


async def test_step_budget_spans_answer_and_corrections(server: ms.MessagesServer) -> None:
    server.add(ms.submit(ANSWER), ms.submit(ANSWER))
    _, conversation = await converse(server, max_tool_steps=2)

    await conversation.answer()
    second = await conversation.correct(["[x] wrong"])
    third = await conversation.correct(["[x] still wrong"])

    assert second.raw == ANSWER
    assert server.requests[1].body["tool_choice"] == {"type": "tool", "name": "submit_selection"}
    assert third.exhausted and third.raw is None
    assert len(server.requests) == 2


# ---------------------------------------------------------------------------------------------
# Request shape: caching, sampling, credentials


async def test_system_prompt_and_last_tool_carry_cache_control(server: ms.MessagesServer) -> None:
    server.add(ms.submit(ANSWER))
    _, conversation = await converse(server)
    await conversation.answer()

    body = server.requests[0].body
    assert body["system"] == [
        {"type": "text", "text": "You are an SRE.", "cache_control": {"type": "ephemeral"}}
    ]
    assert [tool["name"] for tool in body["tools"]] == [*tools.TOOL_NAMES, "submit_selection"]
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["tools"][-1]["input_schema"] == answer.submit_tool_schema()
    assert all("cache_control" not in tool for tool in body["tools"][:-1])
    assert body["model"] == MODEL and body["max_tokens"] == 1024


async def test_never_sends_temperature_and_top_p_together(server: ms.MessagesServer) -> None:
    server.add(ms.reply_tools(search_call()), ms.submit(ANSWER))
    _, conversation = await converse(server)
    await conversation.answer()

    for request in server.requests:
        assert not ("temperature" in request.body and "top_p" in request.body)


async def test_api_key_comes_from_settings(
    server: ms.MessagesServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-from-environment")
    server.add(ms.submit(ANSWER))
    provider, conversation = await converse(server)
    await conversation.answer()

    assert server.requests[0].api_key == SECRET
    assert SECRET not in repr(provider)
    assert server.requests[0].headers.get("anthropic-version")


# ---------------------------------------------------------------------------------------------
# Accounting


async def test_usage_sums_tokens_over_requests_including_cache(server: ms.MessagesServer) -> None:
    server.add(
        ms.reply_tools(search_call(), usage=ms.usage(1200, 40, cache_write=3000)),
        ms.reply_tools(search_call(), usage=ms.usage(150, 35, cache_read=3000)),
        ms.submit(ANSWER, usage=ms.usage(180, 300, cache_read=3200), model="claude-sonnet-4-5-20250929"),
    )
    observed = Observed()
    provider = anthropic_provider.AnthropicProvider(make_settings(server), on_request=observed)
    conversation = provider.open(system="s", prompt="p", toolbox=RecordingToolbox(), spec=SPEC)
    await conversation.answer()

    assert conversation.usage == resources.LLMUsage(
        provider="anthropic",
        model="claude-sonnet-4-5-20250929",
        requests=3,
        input_tokens=1530,
        output_tokens=375,
        cache_read_tokens=6200,
        cache_write_tokens=3000,
        tool_calls=2,
    )
    # The observer (metrics) sees each response's own tokens; they add up to the status' usage.
    assert [
        (r.input_tokens, r.output_tokens, r.cache_read_tokens, r.cache_write_tokens) for r in observed.records
    ] == [
        (1200, 40, 0, 3000),
        (150, 35, 3000, 0),
        (180, 300, 3200, 0),
    ]


async def test_tokens_billed_before_a_failure_are_reported_once(server: ms.MessagesServer) -> None:
    """A billed turn, then persistent 500s (no SDK retry): the conversation fails without an answer,
    but the observer has already seen that turn's tokens, once; failed calls bill nothing."""
    server.add(ms.reply_tools(search_call(), usage=ms.usage(1200, 40, cache_read=500, cache_write=3000)))
    server.set_policy(lambda body: ms.server_error())
    observed = Observed()
    provider = anthropic_provider.AnthropicProvider(make_settings(server, max_retries=0), on_request=observed)
    conversation = provider.open(system="s", prompt="p", toolbox=RecordingToolbox(), spec=SPEC)

    with pytest.raises(errors.ProviderUnavailableError):
        await conversation.answer()

    assert len(server.requests) == 2
    assert [dataclasses.replace(r, seconds=0.0) for r in observed.records] == [
        llm.RequestRecord(
            "ok", 0.0, input_tokens=1200, output_tokens=40, cache_read_tokens=500, cache_write_tokens=3000
        ),
        llm.RequestRecord("unavailable", 0.0),
    ]


# ---------------------------------------------------------------------------------------------
# Failures: the SDK retries, then ours classify


@pytest.mark.parametrize(
    "failure", [ms.rate_limited(), ms.overloaded(), ms.server_error()], ids=["429", "529", "500"]
)
async def test_transient_failure_then_success_is_retried_by_the_sdk(
    server: ms.MessagesServer, failure: ms.Fail
) -> None:
    server.add(failure, ms.submit(ANSWER))
    observed = Observed()
    provider = anthropic_provider.AnthropicProvider(make_settings(server), on_request=observed)
    conversation = provider.open(system="s", prompt="p", toolbox=RecordingToolbox(), spec=SPEC)

    submission = await conversation.answer()

    assert submission.raw == ANSWER
    assert len(server.requests) == 2
    assert server.requests[1].headers["x-stainless-retry-count"] == "1"
    assert conversation.usage.requests == 1
    assert observed.outcomes == ["ok"]


@pytest.mark.parametrize("status", [500, 503, 529, 408, 409])
async def test_persistent_transient_failure_is_provider_unavailable(
    server: ms.MessagesServer, status: int
) -> None:
    server.add(*[ms.Fail(status) for _ in range(3)])
    observed = Observed()
    provider = anthropic_provider.AnthropicProvider(make_settings(server, max_retries=2), on_request=observed)
    conversation = provider.open(system="s", prompt="p", toolbox=RecordingToolbox(), spec=SPEC)

    with pytest.raises(errors.ProviderUnavailableError) as caught:
        await conversation.answer()

    assert caught.value.retryable
    assert str(status) in str(caught.value)
    assert len(server.requests) == 3  # the first try and the SDK's two retries
    assert observed.outcomes == ["unavailable"]


async def test_rate_limit_beyond_retries_is_provider_unavailable(server: ms.MessagesServer) -> None:
    server.add(ms.rate_limited(), ms.rate_limited())
    _, conversation = await converse(server, max_retries=1)

    with pytest.raises(errors.ProviderUnavailableError, match="429"):
        await conversation.answer()


@pytest.mark.parametrize("status", [400, 401, 403, 404])
async def test_client_errors_are_permanent_and_not_retried(server: ms.MessagesServer, status: int) -> None:
    server.add(ms.Fail(status, "nope"))
    observed = Observed()
    provider = anthropic_provider.AnthropicProvider(make_settings(server), on_request=observed)
    conversation = provider.open(system="s", prompt="p", toolbox=RecordingToolbox(), spec=SPEC)

    with pytest.raises(errors.ProviderError) as caught:
        await conversation.answer()

    assert not isinstance(caught.value, errors.ProviderUnavailableError)
    assert not caught.value.retryable
    assert str(status) in str(caught.value)
    assert len(server.requests) == 1
    assert observed.outcomes == ["error"]


async def test_api_key_never_appears_in_error_messages(server: ms.MessagesServer) -> None:
    # A misbehaving proxy that echoes the credential back in its error body.
    server.add(ms.Fail(401, f"invalid x-api-key {SECRET}"))
    _, conversation = await converse(server)

    with pytest.raises(errors.ProviderError) as caught:
        await conversation.answer()

    assert "authentication_error" in str(caught.value)
    assert SECRET not in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


async def test_timeout_is_provider_unavailable(server: ms.MessagesServer) -> None:
    server.add(ms.Hang(), ms.Hang())
    _, conversation = await converse(server, timeout_seconds=0.3, max_retries=1)

    with pytest.raises(errors.ProviderUnavailableError, match=r"did not answer within 0\.3s"):
        await conversation.answer()

    assert len(server.requests) == 2


async def test_unreachable_endpoint_is_provider_unavailable() -> None:
    with ms.MessagesServer() as stopped:
        base_url = stopped.base_url
    config = settings.Settings(
        llm=settings.LlmSettings(
            provider="anthropic", model=MODEL, api_key=SECRET, anthropic_base_url=base_url, max_retries=0
        )
    )
    provider = anthropic_provider.AnthropicProvider(config)
    conversation = provider.open(system="s", prompt="p", toolbox=RecordingToolbox(), spec=SPEC)

    with pytest.raises(errors.ProviderUnavailableError, match="cannot reach") as caught:
        await conversation.answer()

    assert SECRET not in str(caught.value)


# ---------------------------------------------------------------------------------------------
# Concurrency: one client, many conversations


async def test_parallel_conversations_share_one_client_without_blocking(server: ms.MessagesServer) -> None:
    server.set_policy(lambda body: ms.submit(ANSWER, delay=0.5))
    provider = anthropic_provider.AnthropicProvider(make_settings(server))
    conversations = [
        provider.open(system="s", prompt=f"p{i}", toolbox=RecordingToolbox(), spec=SPEC) for i in range(20)
    ]

    submissions = await asyncio.gather(*(c.answer() for c in conversations))
    await provider.aclose()

    assert all(s.raw == ANSWER for s in submissions)
    assert server.max_in_flight == 20


async def test_make_provider_builds_the_anthropic_provider_from_settings(server: ms.MessagesServer) -> None:
    server.add(ms.submit(ANSWER))
    observed = Observed()
    provider = llm.make_provider(make_settings(server), on_request=observed)
    conversation = provider.open(system="s", prompt="p", toolbox=RecordingToolbox(), spec=SPEC)

    submission = await conversation.answer()
    await provider.aclose()

    assert (provider.name, provider.model) == ("anthropic", MODEL)
    assert submission.raw == ANSWER
    assert conversation.usage.provider == "anthropic"
    assert observed.outcomes == ["ok"]


# ---------------------------------------------------------------------------------------------
# Each failure keeps its own reason; no answer holds a slot longer than the retry-after limit


@pytest.mark.parametrize(
    ("status", "kind", "reason"),
    [
        (401, errors.ProviderAuthError, "ProviderAuthFailed"),
        (403, errors.ProviderAuthError, "ProviderAuthFailed"),
        (400, errors.ProviderBadRequestError, "ProviderBadRequest"),
        (404, errors.ProviderBadRequestError, "ProviderBadRequest"),
    ],
)
async def test_permanent_errors_name_their_cause(
    server: ms.MessagesServer, status: int, kind: type[errors.ProviderError], reason: str
) -> None:
    server.add(ms.Fail(status, "nope"))
    _, conversation = await converse(server)

    with pytest.raises(kind) as caught:
        await conversation.answer()

    assert caught.value.reason == reason and not caught.value.retryable


@pytest.mark.parametrize("content_type", ["text/html", "application/json"])
async def test_a_non_json_body_is_a_provider_error_with_its_own_reason(
    server: ms.MessagesServer, content_type: str
) -> None:
    server.add(*[ms.Raw(status=200, content_type=content_type)] * 3)  # the first try and 2 retries
    observed = Observed()
    provider = anthropic_provider.AnthropicProvider(make_settings(server), on_request=observed)
    conversation = provider.open(system="s", prompt="p", toolbox=RecordingToolbox(), spec=SPEC)

    with pytest.raises(errors.ProviderResponseError) as caught:
        await conversation.answer()

    assert caught.value.reason == "ProviderBadResponse"
    assert caught.value.retryable, "a proxy's page may pass: retried under the analysis' bounded tries"
    assert observed.outcomes == ["unavailable"] * 3 and len(server.requests) == 3


async def test_a_non_json_body_is_asked_for_again_within_the_same_conversation(
    server: ms.MessagesServer,
) -> None:
    server.add(ms.Raw(status=200), ms.submit({"x": 1}))
    _, conversation = await converse(server)

    submission = await conversation.answer()

    assert submission.raw == {"x": 1} and len(server.requests) == 2
    assert server.requests[1].body["messages"] == server.requests[0].body["messages"], "the same request"


async def test_a_retry_after_beyond_the_limit_is_not_waited_for(server: ms.MessagesServer) -> None:
    server.add(ms.Fail(429, "slow down", headers={"retry-after": "600"}), ms.submit({"x": 1}))
    _, conversation = await converse(server, max_retries=3, max_retry_after_seconds=30.0)

    started = asyncio.get_running_loop().time()
    with pytest.raises(errors.ProviderUnavailableError, match="retry after 600s, longer than the 30s limit"):
        await conversation.answer()

    assert len(server.requests) == 1, "no retry after being asked to wait 600 s"
    assert asyncio.get_running_loop().time() - started < 30


async def test_a_retry_after_within_the_limit_is_obeyed(server: ms.MessagesServer) -> None:
    server.add(ms.Fail(429, "slow down", headers={"retry-after": "0.2"}), ms.submit({"x": 1}))
    _, conversation = await converse(server, max_retries=3, max_retry_after_seconds=30.0)

    submission = await conversation.answer()

    assert submission.raw == {"x": 1} and len(server.requests) == 2
