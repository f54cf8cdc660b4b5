"""What the SDK-backed providers (Anthropic and its platforms, OpenAI-compatible) share: the
client they own, and the bookkeeping of a tool loop. The wire (message shapes, usage fields,
how a correction is phrased as a message) stays in each provider."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Iterable
from typing import Any, Generic, Protocol, TypeVar

import httpx2

from aianalysis import resources, settings
from aianalysis.analysis import conversation

T = TypeVar("T")
Owed = TypeVar("Owed")


class _Client(Protocol):
    @property
    def base_url(self) -> Any: ...

    async def close(self) -> None: ...


C = TypeVar("C", bound=_Client)


def client_options(config: settings.Settings, http_client: httpx2.AsyncClient | None) -> dict[str, Any]:
    """The options every provider's client (:mod:`retry_after`) takes the same way."""
    return {
        "max_retry_after_seconds": config.llm.max_retry_after_seconds,
        "timeout": config.llm.timeout_seconds,
        "max_retries": config.llm.max_retries,
        "http_client": http_client,
    }


class ClientOwner(Generic[C]):
    """A provider over one SDK client (one connection pool) shared by every conversation: it
    builds the client (``_make_client``) and knows the secret to keep out of messages."""

    def __init__(
        self,
        config: settings.Settings,
        *,
        http_client: httpx2.AsyncClient | None = None,
        on_request: conversation.RequestObserver = conversation.ignore_request,
    ) -> None:
        self.model = config.llm.model
        self._settings = config
        self._secret = self._credential(config)
        self._on_request = on_request
        self._owns_http_client = http_client is None
        self._client: C = self._make_client(config, http_client)

    def _report(
        self,
        started: float,
        outcome: conversation.RequestOutcome,
        tokens: conversation.UsageCounter | None = None,
    ) -> None:
        """One request (``started`` on the monotonic clock) to ``on_request``, with its billed tokens."""
        billed = tokens or conversation.UsageCounter()
        self._on_request(
            conversation.RequestRecord(
                outcome,
                time.monotonic() - started,
                input_tokens=billed.input_tokens,
                output_tokens=billed.output_tokens,
                cache_read_tokens=billed.cache_read_tokens,
                cache_write_tokens=billed.cache_write_tokens,
            )
        )

    def _credential(self, config: settings.Settings) -> str:
        """The secret this provider sends (kept out of every message), or "" when there is none."""
        raise NotImplementedError

    def _make_client(self, config: settings.Settings, http_client: httpx2.AsyncClient | None) -> C:
        """The SDK client, every option explicit (only ``settings`` reads the environment)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={str(self._client.base_url)!r})"

    async def aclose(self) -> None:
        """Close the connection pool, unless the caller injected (and so owns) the HTTP client."""
        if self._owns_http_client:
            await self._client.close()


class ToolLoop(Generic[Owed]):
    """The tool loop of one analysis. ``max_steps`` bounds model turns over answer()+correct();
    on the last turn only ``submit_selection`` may be called. ``_owed`` holds the results for the
    last assistant turn's other tool calls, sent with the correction; ``_submit_id`` is the id of
    the submit call a correction answers (None: the model wrote prose)."""

    def __init__(self, *, provider: str, model: str, toolbox: conversation.Tools, max_steps: int) -> None:
        self._provider_name = provider
        self._toolbox = toolbox
        self._max_steps = max_steps
        self._owed: list[Owed] = []
        self._submit_id: str | None = None
        self._steps = 0
        self._counter = conversation.UsageCounter()
        self._model: str = model

    @property
    def usage(self) -> resources.LLMUsage:
        return self._counter.snapshot(provider=self._provider_name, model=self._model)

    @property
    def steps(self) -> int:
        """Model turns taken so far."""
        return self._steps

    async def answer(self) -> conversation.Submission:
        return await self._loop()

    async def correct(self, errors: list[str]) -> conversation.Submission:
        if self._steps >= self._max_steps:
            return conversation.Submission(raw=None, exhausted=True)
        self._add_correction(errors)
        self._owed, self._submit_id = [], None
        return await self._loop()

    def _account(self, tokens: conversation.UsageCounter, model: str | None) -> None:
        """One model turn: its billed tokens, and the model the endpoint says answered."""
        counter = self._counter
        counter.requests += 1
        counter.input_tokens += tokens.input_tokens
        counter.output_tokens += tokens.output_tokens
        counter.cache_read_tokens += tokens.cache_read_tokens
        counter.cache_write_tokens += tokens.cache_write_tokens
        self._model = model or self._model

    def _add_correction(self, problems: list[str]) -> None:
        """Append the validator's ``problems`` (and what is owed) to the history."""
        raise NotImplementedError

    async def _loop(self) -> conversation.Submission:
        raise NotImplementedError

    async def _run_all(self, calls: Iterable[Awaitable[T]]) -> list[T]:
        """The turn's tool calls, concurrently (investigation reads are independent), counted."""
        tasks = [asyncio.ensure_future(call) for call in calls]
        try:
            # Not a TaskGroup: an escaping error keeps its own type instead of an ExceptionGroup.
            outcomes = await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            raise
        self._counter.tool_calls += len(tasks)
        return list(outcomes)
