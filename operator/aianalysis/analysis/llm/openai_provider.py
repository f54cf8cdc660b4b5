"""OpenAI-compatible Chat Completions with tool calling (vLLM, Ollama, LiteLLM, Azure OpenAI's v1
endpoint...) through the official ``openai`` SDK.

The same tools, the same ``submit_selection`` schema and the same validation and self-correction as
the Anthropic provider; what differs is the wire:

- tools are ``{"type": "function", "function": {name, description, parameters}}``; results go back
  as ``role: tool`` messages (there is no ``is_error`` flag: failed tools say ``ERROR:`` first);
- tool-call arguments arrive as TEXT the model wrote: a submit call whose arguments are not a JSON
  object becomes ``Submission.malformed`` (a validation error fed back), another tool's becomes an
  error result for that call; nothing the model writes can crash the loop;
- ``finish_reason: length`` is a truncated answer; usage comes from the response's ``usage``
  (``prompt_tokens`` includes cached tokens, which are counted as cache reads, not input).

Retries are the SDK's (408/409/429/5xx, connection failures, ``retry-after``), up to
``settings.llm.max_retries``; what still fails is classified here, once.
"""

from __future__ import annotations

import json
import time
from typing import Any, cast

import httpx2
import openai
from openai.types import chat as otypes

from aianalysis import errors, resources, settings
from aianalysis.analysis import answer, conversation
from aianalysis.analysis.llm import anthropic_provider, model_check, retry_after, sdk_loop

PROVIDER_NAME = "openai"
NO_KEY = "unused"
"""Sent when no ``OPENAI_API_KEY`` is configured: local servers ignore it, the SDK requires one."""
ERROR_PREFIX = "ERROR: "

_TRANSIENT_STATUSES = frozenset({408, 409, 429})
_FORCE_SUBMIT: otypes.ChatCompletionNamedToolChoiceParam = {
    "type": "function",
    "function": {"name": answer.SUBMIT_TOOL_NAME},
}


class OpenAIProvider(sdk_loop.ClientOwner[retry_after.OpenAI]):
    """One ``AsyncOpenAI`` client (one connection pool) shared by every conversation."""

    name = PROVIDER_NAME

    def _credential(self, config: settings.Settings) -> str:
        key = config.llm.openai_api_key
        return key.get_secret_value() if key else ""

    def _make_client(
        self, config: settings.Settings, http_client: httpx2.AsyncClient | None
    ) -> retry_after.OpenAI:
        return retry_after.OpenAI(
            api_key=self._secret or NO_KEY,
            base_url=config.llm.openai_base_url,
            **sdk_loop.client_options(config, http_client),
        )

    def open(
        self, *, system: str, prompt: str, toolbox: conversation.Tools, spec: resources.AIAnalysisSpec
    ) -> OpenAIConversation:
        return OpenAIConversation(self, system, prompt, toolbox, self._settings.analysis.max_tool_steps)

    async def check_model(self) -> str | None:
        """Listing the models is free everywhere (vLLM, Ollama, LiteLLM serve ``GET /models``); a
        list without the model means it is not served. A server without the route cannot tell."""
        try:
            page = await self._client.models.list()
        except openai.OpenAIError as err:
            failure = _provider_error(
                err, secret=self._secret, timeout_seconds=self._settings.llm.timeout_seconds
            )
            if isinstance(err, openai.APIStatusError) and err.status_code in (404, 405, 501):
                return f"could not verify model {self.model!r}: the endpoint lists no models ({failure})"
            status = err.status_code if isinstance(err, openai.APIStatusError) else None
            return model_check.judge_failure(self.name, self.model, status=status, failure=failure)
        served = [model.id async for model in page]
        if self.model in served:
            return None
        if not served:  # some gateways list nothing they serve: that proves nothing
            return f"could not verify model {self.model!r}: the endpoint lists no models"
        listed = ", ".join(sorted(served)[:10]) or "none"
        raise errors.ConfigError(
            f"model {self.model!r} is not served by provider 'openai' at {self._client.base_url} "
            f"(it serves: {listed}); set {settings.LlmSettings.env_name('model')} to one of them"
        )

    async def create(
        self,
        *,
        messages: list[otypes.ChatCompletionMessageParam],
        tools: list[otypes.ChatCompletionFunctionToolParam],
        force_submit: bool,
    ) -> otypes.ChatCompletion:
        """One Chat Completions call (with the SDK's retries); failures leave as ``errors.Provider*``."""
        started = time.monotonic()
        try:
            completion = await self._client.chat.completions.create(
                model=self.model,
                messages=messages,
                tools=tools,
                tool_choice=_FORCE_SUBMIT if force_submit else "auto",
                max_tokens=self._settings.llm.max_tokens,
            )
        except openai.OpenAIError as err:
            failure = _provider_error(
                err, secret=self._secret, timeout_seconds=self._settings.llm.timeout_seconds
            )
            self._report(started, "unavailable" if failure.retryable else "error")
            raise failure from None
        self._report(started, "ok", _usage_of(completion))
        return completion


class OpenAIConversation(sdk_loop.ToolLoop[otypes.ChatCompletionToolMessageParam]):
    """The tool loop of one analysis over Chat Completions (see :class:`sdk_loop.ToolLoop`)."""

    def __init__(
        self, provider: OpenAIProvider, system: str, prompt: str, toolbox: conversation.Tools, max_steps: int
    ) -> None:
        super().__init__(provider=PROVIDER_NAME, model=provider.model, toolbox=toolbox, max_steps=max_steps)
        self._provider = provider
        self._tools = function_tool_params(toolbox)
        self._messages: list[otypes.ChatCompletionMessageParam] = [
            {"role": "system", "content": system},
            {"role": "user", "content": prompt},
        ]

    def _add_correction(self, problems: list[str]) -> None:
        text = anthropic_provider.correction_text(problems)
        self._messages.extend(self._owed)
        if self._submit_id is not None:
            self._messages.append(_tool_message(self._submit_id, ERROR_PREFIX + text))
        else:
            self._messages.append({"role": "user", "content": text})

    async def _loop(self) -> conversation.Submission:
        while self._steps < self._max_steps:
            self._steps += 1
            completion = await self._provider.create(
                messages=self._messages, tools=self._tools, force_submit=self._steps == self._max_steps
            )
            self._account(_usage_of(completion), completion.model)
            if not completion.choices:
                return conversation.Submission(raw=None, prose="(the endpoint returned no choices)")
            choice = completion.choices[0]
            self._messages.append(_assistant_param(choice.message))
            submission = await self._absorb(choice)
            if submission is not None:
                return submission
        return conversation.Submission(raw=None, exhausted=True)

    async def _absorb(self, choice: Any) -> conversation.Submission | None:
        """Run the turn's tool calls; a submission (or prose, or truncation) ends the loop."""
        message: otypes.ChatCompletionMessage = choice.message
        calls = [call for call in message.tool_calls or [] if call.type == "function"]
        submits = [call for call in calls if call.function.name == answer.SUBMIT_TOOL_NAME]
        others = [call for call in calls if call.function.name != answer.SUBMIT_TOOL_NAME]
        prose = message.content or message.refusal or None
        if choice.finish_reason == "length":
            self._owed = [
                _tool_message(call.id, ERROR_PREFIX + "Not executed: your reply was cut off (max_tokens).")
                for call in others
            ]
            self._submit_id = submits[0].id if submits else None
            raw, _ = arguments(submits[0].function.arguments) if submits else (None, None)
            return conversation.Submission(raw=raw, truncated=True, prose=prose)
        if not calls:
            return conversation.Submission(raw=None, prose=prose)
        results = await self._run(others)
        if not submits:
            self._messages.extend(results)
            return None
        extra = [
            _tool_message(
                call.id, ERROR_PREFIX + "Ignored: only the first submit_selection of a turn counts."
            )
            for call in submits[1:]
        ]
        self._owed, self._submit_id = [*results, *extra], submits[0].id
        raw, problem = arguments(submits[0].function.arguments)
        return conversation.Submission(raw=raw, malformed=problem)

    async def _run(self, calls: list[Any]) -> list[otypes.ChatCompletionToolMessageParam]:
        """Execute the turn's tool calls concurrently; unreadable arguments are that call's error."""
        parsed = [arguments(call.function.arguments) for call in calls]

        async def one(name: str, raw: dict[str, Any] | None, problem: str | None) -> tuple[str, bool]:
            if raw is None:
                return f"the arguments of {name} are not a JSON object ({problem}); call it again", True
            outcome = await self._toolbox.call(name, raw)
            return outcome.text, outcome.is_error

        outcomes = await self._run_all(
            one(call.function.name, raw, problem) for call, (raw, problem) in zip(calls, parsed, strict=True)
        )
        return [
            _tool_message(call.id, (ERROR_PREFIX if is_error else "") + text)
            for call, (text, is_error) in zip(calls, outcomes, strict=True)
        ]


def function_tool_params(toolbox: conversation.Tools) -> list[otypes.ChatCompletionFunctionToolParam]:
    """The toolbox's tools plus the submit tool, as function tools (same schemas as Anthropic's)."""
    definitions = [d for d in toolbox.definitions() if d["name"] != answer.SUBMIT_TOOL_NAME]
    submit = {
        "name": answer.SUBMIT_TOOL_NAME,
        "description": anthropic_provider.SUBMIT_TOOL_DESCRIPTION,
        "input_schema": answer.submit_tool_schema(),
    }
    return [
        {
            "type": "function",
            "function": {
                "name": d["name"],
                "description": d["description"],
                "parameters": dict(d["input_schema"]),
            },
        }
        for d in [*definitions, submit]
    ]


def arguments(text: str | None) -> tuple[dict[str, Any] | None, str | None]:
    """A tool call's arguments as an object, or ``(None, why not)``. Empty text is ``{}`` (some
    servers send it for a call without arguments)."""
    if text is None or not text.strip():
        return {}, None
    try:
        value = json.loads(text)
    except ValueError as exc:
        return None, f"invalid JSON: {exc}"
    if not isinstance(value, dict):
        return None, f"a JSON {type(value).__name__} instead of an object"
    return value, None


def _usage_of(completion: otypes.ChatCompletion) -> conversation.UsageCounter:
    """Billed tokens; ``prompt_tokens`` includes cached ones, reported apart as cache reads."""
    usage = completion.usage
    if usage is None:
        return conversation.UsageCounter()
    details = usage.prompt_tokens_details
    cached = (details.cached_tokens or 0) if details is not None else 0
    return conversation.UsageCounter(
        input_tokens=max(0, usage.prompt_tokens - cached),
        output_tokens=usage.completion_tokens,
        cache_read_tokens=cached,
    )


def _assistant_param(message: otypes.ChatCompletionMessage) -> otypes.ChatCompletionMessageParam:
    """The assistant turn as history (only what the endpoint needs back)."""
    param: dict[str, Any] = {"role": "assistant", "content": message.content}
    calls = [call for call in message.tool_calls or [] if call.type == "function"]
    if calls:
        param["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.function.name, "arguments": call.function.arguments},
            }
            for call in calls
        ]
    return cast(otypes.ChatCompletionAssistantMessageParam, param)


def _tool_message(call_id: str, text: str) -> otypes.ChatCompletionToolMessageParam:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def _provider_error(err: openai.OpenAIError, *, secret: str, timeout_seconds: float) -> errors.ProviderError:
    """The SDK's failure (after its retries) as our error: transient ones are retryable. Messages
    never contain the API key, even if a proxy echoes it back."""
    if isinstance(err, openai.APITimeoutError):
        return errors.ProviderUnavailableError(
            f"the OpenAI-compatible endpoint did not answer within {timeout_seconds:g}s (retries exhausted)"
        )
    if isinstance(err, openai.APIConnectionError):
        cause = _redact(str(err.__cause__ or err), secret)
        return errors.ProviderUnavailableError(
            f"cannot reach the OpenAI-compatible endpoint (retries exhausted): {cause}"
        )
    if isinstance(err, openai.APIStatusError):
        status = err.status_code
        kind = (
            errors.ProviderUnavailableError
            if status in _TRANSIENT_STATUSES or status >= 500
            else errors.ProviderError
        )
        request = f" (request-id {err.request_id})" if err.request_id else ""
        detail = _redact(_status_message(err), secret)
        return kind(f"the OpenAI-compatible endpoint answered {status}: {detail}{request}".strip())
    return errors.ProviderError(f"OpenAI SDK error {type(err).__name__}: {_redact(str(err), secret)}")


def _status_message(err: openai.APIStatusError) -> str:
    body = err.body  # the SDK hands over the body's "error" object when there is one
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])
    return err.message


def _redact(text: str, secret: str) -> str:
    return text.replace(secret, "[redacted]") if secret else text


__all__ = ["OpenAIConversation", "OpenAIProvider", "arguments", "function_tool_params"]
