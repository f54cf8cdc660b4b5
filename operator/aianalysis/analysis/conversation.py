"""What every provider offers the analysis pipeline — the LLMs (``analysis/llm/``) and the
offline one (``analysis/offline/``): a conversation that investigates with tools and ends in a
``submit_selection`` call, plus its token/tool accounting.

The toolbox is described structurally (:class:`Tools`) so providers depend on the shape of
``tools.ToolBox``, not on its module: they stay testable with any object that answers
``definitions()`` and ``call()``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Protocol

from aianalysis import resources


@dataclasses.dataclass(frozen=True)
class Submission:
    """One answer of the model, before validation.

    ``raw`` is the input of the ``submit_selection`` call (possibly partial when ``truncated``),
    ``None`` when the model did not call it. ``prose`` is the text the model wrote instead of
    submitting. ``exhausted`` means the conversation had no turn left to ask the model again,
    so nothing new was produced.
    """

    raw: dict[str, Any] | None
    truncated: bool = False
    prose: str | None = None
    exhausted: bool = False
    malformed: str | None = None
    """Why the submit call's arguments could not be read as a JSON object (providers that pass
    arguments as text); the validator reports it and the model gets to correct it."""


class ToolOutcome(Protocol):
    """What one tool call returned (``tools.ToolResult``): the text a model reads, and what it
    shows as values (``data``) for a provider that is not a model."""

    @property
    def text(self) -> str: ...

    @property
    def is_error(self) -> bool: ...

    @property
    def data(self) -> object: ...


class Tools(Protocol):
    """The part of ``tools.ToolBox`` a conversation uses."""

    def definitions(self) -> Sequence[Mapping[str, Any]]: ...

    async def call(self, name: str, arguments: dict[str, Any], /) -> ToolOutcome: ...


class Conversation(Protocol):
    """One analysis' dialogue with the model; answers and corrections share its history."""

    async def answer(self) -> Submission:
        """Let the model investigate with the tools until it submits (or runs out of turns)."""
        ...

    async def correct(self, errors: list[str]) -> Submission:
        """Send the validator's errors back for the last submission and let the model retry."""
        ...

    @property
    def usage(self) -> resources.LLMUsage:
        """Tokens and tool calls spent so far (a snapshot)."""
        ...


class Provider(Protocol):
    """A source of conversations; one per operator process."""

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str: ...

    def open(
        self, *, system: str, prompt: str, toolbox: Tools, spec: resources.AIAnalysisSpec
    ) -> Conversation:
        """Start a conversation about one incident; nothing is sent until ``answer()``."""
        ...

    async def aclose(self) -> None:
        """Release connections (called once at operator cleanup)."""
        ...

    async def check_model(self) -> str | None:
        """The startup model check: ``None`` = the model answered, a string = a warning (the check
        could not tell); raises ``errors.ConfigError`` when the platform says the model is unknown."""
        ...


RequestOutcome = Literal["ok", "unavailable", "error"]


@dataclasses.dataclass(frozen=True)
class RequestRecord:
    """One Messages API call (after the SDK's retries), as a provider reports it.

    ``outcome`` is ``ok``, ``unavailable`` (transient) or ``error`` (permanent). The token counts
    are what the response billed: zero unless ``ok``. Every billed token is reported here, once,
    whether or not its conversation later reaches a decision.
    """

    outcome: RequestOutcome
    seconds: float
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


RequestObserver = Callable[[RequestRecord], None]
"""Called after every Messages API call with its :class:`RequestRecord`. The lead wires it to
Prometheus; keep it cheap and non-raising."""


def ignore_request(record: RequestRecord) -> None:
    """The default :data:`RequestObserver`: metrics are optional."""


@dataclasses.dataclass
class UsageCounter:
    """Mutable counters behind :attr:`Conversation.usage`; snapshots are immutable."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    tool_calls: int = 0

    def snapshot(self, *, provider: str, model: str | None) -> resources.LLMUsage:
        return resources.LLMUsage(provider=provider, model=model, **dataclasses.asdict(self))
