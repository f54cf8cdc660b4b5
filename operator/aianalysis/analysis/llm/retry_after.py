"""One ``retry-after`` cap for every provider's SDK client (Anthropic, Bedrock, Vertex,
OpenAI-compatible).

The SDKs obey any ``retry-after`` a server sends (86 400 s was reproduced against Bedrock and Vertex):
one analysis would then hold a concurrency slot for a day. Each client class here is its SDK's own,
except that a wait longer than ``max_retry_after_seconds`` is not retried: the request fails at
once and counts as unavailability (``classify`` says so), so the per-analysis retry and budget
rules decide what happens next.
"""

from __future__ import annotations

from typing import Any

import anthropic
import httpx2
import openai
from anthropic.lib.bedrock import AsyncAnthropicBedrock
from anthropic.lib.vertex import AsyncAnthropicVertex


def too_long(wait: float | None, limit: float) -> bool:
    """Pure: whether a ``retry-after`` of ``wait`` seconds exceeds the cap."""
    return wait is not None and wait > limit


class _CappedRetryAfter:
    """Mixed in before an SDK client class: its ``_should_retry``, refusing over-long waits."""

    def __init__(self, *, max_retry_after_seconds: float, **options: Any) -> None:
        super().__init__(**options)
        self._max_retry_after = max_retry_after_seconds

    def _should_retry(self, response: httpx2.Response) -> bool:
        sdk: Any = super()  # the SDK client class that follows this one in the MRO
        wait = sdk._parse_retry_after_header(response.headers)
        return not too_long(wait, self._max_retry_after) and bool(sdk._should_retry(response))


class Anthropic(_CappedRetryAfter, anthropic.AsyncAnthropic):
    pass


class Bedrock(_CappedRetryAfter, AsyncAnthropicBedrock):
    pass


class Vertex(_CappedRetryAfter, AsyncAnthropicVertex):
    pass


class OpenAI(_CappedRetryAfter, openai.AsyncOpenAI):
    pass
