"""Claude through the official ``anthropic`` SDK: the tool loop, prompt caching, token
accounting, and the one place where SDK failures become :mod:`aianalysis.errors`.

Retries are the SDK's: it backs off and retries 408, 409, 429 and every 5xx (529 overloaded
included) and connection failures/timeouts, honouring ``retry-after``/``retry-after-ms``, up to
``settings.llm.max_retries`` times. What still fails afterwards is classified here, once.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, cast

import anthropic
import httpx2
from anthropic import types as atypes

from aianalysis import errors, resources, settings
from aianalysis.analysis import answer, conversation
from aianalysis.analysis.llm import model_check, retry_after, sdk_loop

if TYPE_CHECKING:
    from anthropic.lib.bedrock import AsyncAnthropicBedrock
    from anthropic.lib.vertex import AsyncAnthropicVertex

    Client = anthropic.AsyncAnthropic | AsyncAnthropicBedrock | AsyncAnthropicVertex

PROVIDER_NAME = "anthropic"
DEFAULT_BASE_URL = "https://api.anthropic.com"

SUBMIT_TOOL_DESCRIPTION = (
    "Your final answer: the root cause and the ONE catalog workflow that remediates it (or "
    "selected_workflow=null with needs_human_review=true). It is validated; errors come back to you."
)

_EPHEMERAL: atypes.CacheControlEphemeralParam = {"type": "ephemeral"}
_FORCE_SUBMIT: atypes.ToolChoiceToolParam = {"type": "tool", "name": answer.SUBMIT_TOOL_NAME}
_TRUNCATING_STOPS = frozenset({"max_tokens", "model_context_window_exceeded"})
_TRANSIENT_STATUSES = frozenset({408, 409, 429})
NON_JSON_BACKOFF_SECONDS = 0.5


class AnthropicProvider(sdk_loop.ClientOwner["Client"]):
    """One ``AsyncAnthropic`` client (one connection pool) shared by every conversation.

    Bedrock and Vertex (:mod:`aianalysis.analysis.llm.bedrock_provider`,
    :mod:`aianalysis.analysis.llm.vertex_provider`) subclass it: they only build another SDK
    client (``_make_client``) and probe the model differently; the conversation loop is this one."""

    name = PROVIDER_NAME
    caches_conversation = True
    """Send the top-level ``cache_control`` that also caches the growing conversation (first-party
    API); platforms cache the system prompt and tool definitions through block breakpoints only."""

    def _credential(self, config: settings.Settings) -> str:
        """The secret this provider sends (kept out of every message), or "" when the platform's own
        credential chain signs the requests."""
        if not config.llm.api_key:
            raise errors.ConfigError("provider 'anthropic' needs ANTHROPIC_API_KEY (from a Secret)")
        return config.llm.api_key.get_secret_value()

    def _make_client(self, config: settings.Settings, http_client: httpx2.AsyncClient | None) -> Client:
        # Everything explicit: the SDK would otherwise read ANTHROPIC_* variables and profiles, and
        # only ``settings`` reads the environment.
        return retry_after.Anthropic(
            api_key=self._secret,
            base_url=config.llm.anthropic_base_url or DEFAULT_BASE_URL,
            **sdk_loop.client_options(config, http_client),
        )

    async def check_model(self) -> str | None:
        """The startup model check (see :mod:`aianalysis.analysis.llm.model_check`)."""
        try:
            await self._probe()
        except anthropic.AnthropicError as err:
            failure = self._provider_error(err)
            status = err.status_code if isinstance(err, anthropic.APIStatusError) else None
            return model_check.judge_failure(self.name, self.model, status=status, failure=failure)
        return None

    def _provider_error(self, err: anthropic.AnthropicError | json.JSONDecodeError) -> errors.ProviderError:
        """:func:`classify`, plus the message of platforms whose error bodies are not the Messages
        API's ``{"error": {...}}`` (Bedrock answers ``{"message": ...}``)."""
        failure = _provider_error(
            err,
            secret=self._secret,
            timeout_seconds=self._settings.llm.timeout_seconds,
            max_retry_after_seconds=self._settings.llm.max_retry_after_seconds,
        )
        if isinstance(err, anthropic.APIStatusError) and err.api_message is None:
            body = err.body if isinstance(err.body, dict) else {}
            message = body.get("message") or body.get("Message")
            if isinstance(message, str) and message:
                return type(failure)(f"{failure} {_redact(message, self._secret)}")
        return failure

    async def _probe(self) -> None:
        """The cheapest call that fails for an unknown model: the free model lookup."""
        assert isinstance(self._client, anthropic.AsyncAnthropic)
        await self._client.models.retrieve(self.model)

    def open(
        self, *, system: str, prompt: str, toolbox: conversation.Tools, spec: resources.AIAnalysisSpec
    ) -> AnthropicConversation:
        """A conversation about ``spec``; the incident is already in ``prompt``."""
        return AnthropicConversation(self, system, prompt, toolbox, self._settings.analysis.max_tool_steps)

    async def create(
        self,
        *,
        system: list[atypes.TextBlockParam],
        tools: list[atypes.ToolParam],
        messages: list[atypes.MessageParam],
        force_submit: bool,
    ) -> atypes.Message:
        """One Messages API call (with the SDK's retries); failures leave as ``errors.Provider*``.
        A body that is not a Message (a proxy's page) is asked for again like the SDK retries a 5xx,
        at most ``settings.llm.max_retries`` times: the same request, not a new conversation."""

        async def send() -> object:
            return await self._client.messages.create(
                model=self.model,
                max_tokens=self._settings.llm.max_tokens,
                system=system,
                tools=tools,
                messages=messages,
                tool_choice=_FORCE_SUBMIT if force_submit else anthropic.omit,
                # Also cache the growing conversation: each turn re-reads the previous prefix.
                cache_control=_EPHEMERAL if self.caches_conversation else anthropic.omit,
            )

        for retry in range(self._settings.llm.max_retries + 1):
            try:
                return await self._create_once(send)
            except errors.ProviderResponseError:
                if retry == self._settings.llm.max_retries:
                    raise
            await asyncio.sleep(min(NON_JSON_BACKOFF_SECONDS * 2**retry, 8.0))
        raise AssertionError("unreachable: the last try returns or raises")

    async def _create_once(self, send: Callable[[], Awaitable[object]]) -> atypes.Message:
        """``send`` once: its failure, or a body that is not a Message, leaves as ``errors.Provider*``;
        every outcome is reported to ``on_request``."""
        started = time.monotonic()
        try:
            message = await send()
        except (anthropic.AnthropicError, json.JSONDecodeError) as err:
            failure = self._provider_error(err)
            self._report(started, "unavailable" if failure.retryable else "error")
            # ``from None``: the SDK error carries the raw response body; ours carries what matters.
            raise failure from None
        if not isinstance(message, atypes.Message):  # a 200 that is not JSON (a proxy's page)
            failure = _provider_error(
                json.JSONDecodeError("not a Message", str(message)[:64], 0),
                secret=self._secret,
                timeout_seconds=self._settings.llm.timeout_seconds,
            )
            self._report(started, "unavailable")
            raise failure
        # Billed tokens are reported per response, so a conversation that fails later keeps them.
        self._report(started, "ok", _usage_of(message))
        return message


class AnthropicConversation(sdk_loop.ToolLoop[atypes.ToolResultBlockParam]):
    """The tool loop of one analysis over the Messages API (see :class:`sdk_loop.ToolLoop`)."""

    def __init__(
        self,
        provider: AnthropicProvider,
        system: str,
        prompt: str,
        toolbox: conversation.Tools,
        max_steps: int,
    ) -> None:
        super().__init__(provider=provider.name, model=provider.model, toolbox=toolbox, max_steps=max_steps)
        self._provider = provider
        self._system: list[atypes.TextBlockParam] = [
            {"type": "text", "text": system, "cache_control": _EPHEMERAL}
        ]
        self._tools = tool_params(toolbox)
        self._messages: list[atypes.MessageParam] = [{"role": "user", "content": prompt}]

    def _add_correction(self, problems: list[str]) -> None:
        self._messages.append({"role": "user", "content": self._correction(problems)})

    def _correction(self, problems: list[str]) -> list[atypes.ContentBlockParam]:
        text = correction_text(problems)
        blocks: list[atypes.ContentBlockParam] = list(self._owed)
        if self._submit_id is not None:
            blocks.append(
                {"type": "tool_result", "tool_use_id": self._submit_id, "is_error": True, "content": text}
            )
        else:
            blocks.append({"type": "text", "text": text})
        return blocks

    async def _loop(self) -> conversation.Submission:
        while self._steps < self._max_steps:
            self._steps += 1
            message = await self._provider.create(
                system=self._system,
                tools=self._tools,
                messages=self._messages,
                force_submit=self._steps == self._max_steps,
            )
            self._account(_usage_of(message), message.model)
            self._messages.append(message.to_param())
            submission = await self._absorb(message)
            if submission is not None:
                return submission
        return conversation.Submission(raw=None, exhausted=True)

    async def _absorb(self, message: atypes.Message) -> conversation.Submission | None:
        """Run the turn's tool calls; a submission (or prose, or truncation) ends the loop."""
        calls = [block for block in message.content if block.type == "tool_use"]
        submits = [call for call in calls if call.name == answer.SUBMIT_TOOL_NAME]
        others = [call for call in calls if call.name != answer.SUBMIT_TOOL_NAME]
        prose = "".join(block.text for block in message.content if block.type == "text")
        if message.stop_reason in _TRUNCATING_STOPS:
            # A cut-off call has partial input: never run it, only tell the model it was lost.
            self._owed = [
                _result(call.id, "Not executed: your reply was cut off (max_tokens).", True)
                for call in others
            ]
            self._submit_id = submits[0].id if submits else None
            return conversation.Submission(
                raw=dict(submits[0].input) if submits else None, truncated=True, prose=prose or None
            )
        if not calls:
            return conversation.Submission(raw=None, prose=prose)
        results = await self._run(others)
        if not submits:
            self._messages.append({"role": "user", "content": list(results)})
            return None
        extra = [
            _result(call.id, "Ignored: only the first submit_selection of a turn counts.", True)
            for call in submits[1:]
        ]
        self._owed, self._submit_id = [*results, *extra], submits[0].id
        return conversation.Submission(raw=dict(submits[0].input))

    async def _run(self, calls: list[atypes.ToolUseBlock]) -> list[atypes.ToolResultBlockParam]:
        """Execute the turn's tool calls concurrently (investigation reads are independent)."""
        outcomes = await self._run_all(self._toolbox.call(call.name, dict(call.input)) for call in calls)
        return [
            _result(call.id, outcome.text, outcome.is_error)
            for call, outcome in zip(calls, outcomes, strict=True)
        ]


def tool_params(toolbox: conversation.Tools) -> list[atypes.ToolParam]:
    """The toolbox's tools plus the submit tool; the cache breakpoint on the last tool caches
    every tool definition (they precede the system prompt in the cache prefix)."""
    tools = [cast(atypes.ToolParam, dict(definition)) for definition in toolbox.definitions()]
    tools = [tool for tool in tools if tool["name"] != answer.SUBMIT_TOOL_NAME]
    return [*tools, _submit_tool()]


@functools.cache
def _submit_tool() -> atypes.ToolParam:
    """Built once per process and shared by every conversation (never mutated: the SDK copies request
    params before sending). Generating the schema takes pydantic ~3 ms, on the event loop."""
    return {
        "name": answer.SUBMIT_TOOL_NAME,
        "description": SUBMIT_TOOL_DESCRIPTION,
        "input_schema": answer.submit_tool_schema(),
        "cache_control": _EPHEMERAL,
    }


def _usage_of(message: atypes.Message) -> conversation.UsageCounter:
    """The tokens one response billed."""
    usage = message.usage
    return conversation.UsageCounter(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_input_tokens or 0,
        cache_write_tokens=usage.cache_creation_input_tokens or 0,
    )


def correction_text(problems: list[str]) -> str:
    """What the model reads when its answer failed validation."""
    listed = "\n".join(f"- {problem}" for problem in problems) or "- (no details)"
    return (
        f"Your answer was rejected by the validator:\n{listed}\n"
        f"Fix these and call {answer.SUBMIT_TOOL_NAME} again."
    )


def _result(tool_use_id: str, text: str, is_error: bool) -> atypes.ToolResultBlockParam:
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": text, "is_error": is_error}


def _provider_error(
    err: anthropic.AnthropicError | json.JSONDecodeError,
    *,
    secret: str,
    timeout_seconds: float,
    max_retry_after_seconds: float = float("inf"),
) -> errors.ProviderError:
    """The SDK's failure (after its retries) as our error: transient ones are retryable, the others
    name their cause (credentials, the request, an unreadable response). Messages never contain
    the API key, even if a proxy echoes it back."""
    if isinstance(err, json.JSONDecodeError | anthropic.APIResponseValidationError):
        return errors.ProviderResponseError(
            f"the Anthropic API answered with a body that is not a valid response ({type(err).__name__})"
        )
    if isinstance(err, anthropic.APITimeoutError):
        return errors.ProviderUnavailableError(
            f"the Anthropic API did not answer within {timeout_seconds:g}s (retries exhausted)"
        )
    if isinstance(err, anthropic.APIConnectionError):
        cause = _redact(str(err.__cause__ or err), secret)
        return errors.ProviderUnavailableError(f"cannot reach the Anthropic API (retries exhausted): {cause}")
    if isinstance(err, anthropic.APIStatusError):
        detail = _redact(err.api_message or "", secret)
        request = f" (request-id {err.request_id})" if err.request_id else ""
        text = (
            f"the Anthropic API answered {err.status_code} {err.type or 'error'}: {detail}{request}".strip()
        )
        wait = _retry_after(err)
        if wait is not None and wait > max_retry_after_seconds:
            text += f"; it asked to retry after {wait:g}s, longer than the {max_retry_after_seconds:g}s limit"
        return _status_kind(err.status_code)(text)
    return errors.ProviderError(f"Anthropic SDK error {type(err).__name__}: {_redact(str(err), secret)}")


def _transient(status: int) -> bool:
    return status in _TRANSIENT_STATUSES or status >= 500


def _status_kind(status: int) -> type[errors.ProviderError]:
    if _transient(status):
        return errors.ProviderUnavailableError
    if status in (401, 403):
        return errors.ProviderAuthError
    return errors.ProviderBadRequestError


def _retry_after(err: anthropic.APIStatusError) -> float | None:
    raw = err.response.headers.get("retry-after")
    try:
        return float(raw) if raw is not None else None
    except ValueError:
        return None


def _redact(text: str, secret: str) -> str:
    return text.replace(secret, "[redacted]") if secret else text


__all__ = ["AnthropicConversation", "AnthropicProvider", "correction_text", "tool_params"]
