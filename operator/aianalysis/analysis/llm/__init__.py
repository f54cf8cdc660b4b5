"""LLM providers and the tool-loop conversation.

``make_provider(settings)`` returns the process-wide provider: ``anthropic`` (Claude through the
SDK, see :mod:`aianalysis.analysis.llm.anthropic_provider`), ``bedrock`` / ``vertex`` (the same loop through
the SDK's platform clients), ``openai`` (OpenAI-compatible Chat Completions, see
:mod:`aianalysis.analysis.llm.openai_provider`) or ``offline`` (deterministic: investigates, runs
its rules, then picks from the catalog; a package of its own, :mod:`aianalysis.analysis.offline`).
Callers depend on the :class:`Provider` and :class:`Conversation` protocols only.
``check_model(settings)`` is the startup model check.
"""

from __future__ import annotations

import aianalysis.settings
from aianalysis.analysis import conversation, offline
from aianalysis.analysis.conversation import Provider, RequestRecord, Submission


def make_provider(
    settings: aianalysis.settings.Settings,
    *,
    on_request: conversation.RequestObserver = conversation.ignore_request,
) -> Provider:
    """The provider ``settings.llm.provider`` names; call once per process and ``aclose()`` it at exit."""
    # Imported on demand: the SDKs take over a second to import and offline runs never need them.
    if settings.llm.provider == "anthropic":
        from aianalysis.analysis.llm import anthropic_provider  # noqa: PLC0415

        return anthropic_provider.AnthropicProvider(settings, on_request=on_request)
    if settings.llm.provider == "bedrock":
        from aianalysis.analysis.llm import bedrock_provider  # noqa: PLC0415

        return bedrock_provider.BedrockProvider(settings, on_request=on_request)
    if settings.llm.provider == "vertex":
        from aianalysis.analysis.llm import vertex_provider  # noqa: PLC0415

        return vertex_provider.VertexProvider(settings, on_request=on_request)
    if settings.llm.provider == "openai":
        from aianalysis.analysis.llm import openai_provider  # noqa: PLC0415

        return openai_provider.OpenAIProvider(settings, on_request=on_request)
    return offline.OfflineProvider()


async def check_model(settings: aianalysis.settings.Settings) -> str | None:
    """Verify the configured model once (see :mod:`aianalysis.analysis.llm.model_check`): ``None`` when it
    answered or the check is off, a warning when the check could not tell, ``ConfigError`` when the
    platform says the model is unknown or retired."""
    if not settings.llm.model_check or settings.llm.provider == "offline":
        return None
    provider = make_provider(settings)
    try:
        return await provider.check_model()
    finally:
        await provider.aclose()


__all__ = [
    "Provider",
    "RequestRecord",
    "Submission",
    "check_model",
    "make_provider",
]
