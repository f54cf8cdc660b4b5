"""The tools every Anthropic conversation offers: the submit tool is generated from the answer
model once per process and shared, so nothing a conversation does may change it."""

from __future__ import annotations

import json
from typing import Any

import httpx2

from aianalysis import catalog, resources, settings
from aianalysis.analysis import answer, tools
from aianalysis.analysis.llm import anthropic_provider

SPEC = resources.AIAnalysisSpec.model_validate(
    {
        "signal": {"type": "OOMKilled", "severity": "critical"},
        "resource": {"kind": "Deployment", "name": "payment-api", "namespace": "payments"},
    }
)


def toolbox() -> tools.ToolBox:
    return tools.ToolBox(spec=SPEC, catalog=catalog.Catalog(), reader=None, max_chars=8000)


def submit_reply(request: httpx2.Request) -> httpx2.Response:
    answer_input: dict[str, Any] = {
        "analysis_summary": "no workflow fits",
        "root_cause_assessment": "unknown",
        "rca_severity": "low",
        "selected_workflow": None,
        "needs_human_review": True,
        "human_review_reason": "inconclusive",
    }
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": json.loads(request.content)["model"],
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "submit_selection", "input": answer_input}],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    return httpx2.Response(200, json=message)


def test_every_conversation_offers_the_submit_tool_generated_from_the_answer_model() -> None:
    first = anthropic_provider.tool_params(toolbox())
    second = anthropic_provider.tool_params(toolbox())

    assert first == second
    submit = first[-1]
    assert submit["name"] == answer.SUBMIT_TOOL_NAME
    assert submit["input_schema"] == answer.submit_tool_schema()
    assert submit.get("cache_control") == {"type": "ephemeral"}
    assert [t["name"] for t in first[:-1]] == list(tools.TOOL_NAMES)


async def test_a_conversation_leaves_the_shared_submit_tool_as_generated() -> None:
    config = settings.Settings(
        llm=settings.LlmSettings(provider="anthropic", api_key="k", model="claude-sonnet-4-6")
    )
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(submit_reply))
    provider = anthropic_provider.AnthropicProvider(config, http_client=client)

    submission = await provider.open(system="s", prompt="p", toolbox=toolbox(), spec=SPEC).answer()
    await client.aclose()

    assert submission.raw is not None and submission.raw["human_review_reason"] == "inconclusive"
    assert anthropic_provider.tool_params(toolbox())[-1]["input_schema"] == answer.submit_tool_schema()
