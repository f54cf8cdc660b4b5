"""LLM providers and the tool-loop conversation.

``make_provider(settings)`` returns the process-wide provider: ``anthropic`` (Claude through the
SDK, see :mod:`aianalysis.llm.anthropic_provider`) or ``offline`` (deterministic catalog ranking,
see :mod:`aianalysis.llm.offline`). Callers depend on the :class:`Provider` and
:class:`Conversation` protocols only.
"""

from __future__ import annotations

from aianalysis import settings as settings_module
from aianalysis.llm import base, offline
from aianalysis.llm.base import (
    Conversation,
    Provider,
    RequestObserver,
    RequestRecord,
    Submission,
    ToolOutcome,
    Tools,
)


def make_provider(
    settings: settings_module.Settings, *, on_request: base.RequestObserver = base.ignore_request
) -> Provider:
    """The provider ``settings.provider`` names; call once per process and ``aclose()`` it at exit."""
    if settings.provider == "anthropic":
        # Imported on demand: the SDK takes over a second to import and offline runs never need it.
        from aianalysis.llm import anthropic_provider  # noqa: PLC0415

        return anthropic_provider.AnthropicProvider(settings, on_request=on_request)
    return offline.OfflineProvider()


__all__ = [
    "Conversation",
    "Provider",
    "RequestObserver",
    "RequestRecord",
    "Submission",
    "ToolOutcome",
    "Tools",
    "make_provider",
]
