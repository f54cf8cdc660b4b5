"""The LLM: which provider answers and how it is called; the limits of one analysis; how the
reconcilers retry; the budget of paid conversations."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pydantic

from aianalysis.settings import _fields

ProviderName = Literal["offline", "anthropic", "bedrock", "vertex", "openai"]
PROVIDERS: tuple[str, ...] = ("offline", "anthropic", "bedrock", "vertex", "openai")

#: What bedrock, vertex and openai need besides credentials (which come from their own chains).
_PLATFORM_NEEDS = {"bedrock": ("aws_region",), "vertex": ("vertex_region",), "openai": ("openai_base_url",)}
#: The default model is an Anthropic API id: on Bedrock or an OpenAI-compatible server it cannot exist.
_MODEL_REQUIRED = frozenset({"bedrock", "openai"})

Secret = Annotated[pydantic.SecretStr | None, pydantic.Field(repr=False)]
"""Mounted from a Secret; never logged, never in a repr or an error message."""


class LlmSettings(_fields.Group):
    """Which LLM answers and how each call to it is made. The platforms' own variables (``AWS_REGION``,
    ``CLOUD_ML_REGION``, ``OPENAI_API_KEY``...) are read when the ``AIANALYSIS_*`` one is unset;
    platform credentials come from the platform's standard chain, never from these settings."""

    provider: Annotated[ProviderName, pydantic.BeforeValidator(_fields.Choice(PROVIDERS))] = "offline"
    """Which LLM answers: ``anthropic`` (Claude through the SDK), ``bedrock`` / ``vertex`` (Claude
    through AWS Bedrock / Google Vertex AI, with the SDK's own clients), ``openai`` (any
    OpenAI-compatible Chat Completions endpoint) or ``offline`` (deterministic analyzers, then the
    catalog; no network). Defaults to ``anthropic`` when an API key is configured."""

    model: str = "claude-sonnet-4-6"
    """The model id as the provider names it (a Bedrock model or inference-profile id, a Vertex
    model id, the name an OpenAI-compatible server serves). Required with ``bedrock`` and ``openai``."""

    model_check: _fields.Flag = True
    """Verify the configured model at startup (``aianalysis run``, ``eval``) with the provider's
    cheapest call; an unknown or retired model stops with one line naming the setting to change."""

    api_key: Annotated[Secret, _fields.Env("ANTHROPIC_API_KEY", "AIANALYSIS_API_KEY")] = None
    """``anthropic``: the API key (mount it from a Secret). Never logged, never in status."""

    anthropic_base_url: Annotated[
        str | None, _fields.Env("AIANALYSIS_ANTHROPIC_BASE_URL", "ANTHROPIC_BASE_URL")
    ] = None
    """``anthropic``: override the Messages API endpoint (a proxy, or the scripted server in tests)."""

    aws_region: Annotated[
        str | None, _fields.Env("AIANALYSIS_AWS_REGION", "AWS_REGION", "AWS_DEFAULT_REGION")
    ] = None
    """``bedrock``: the AWS region of the Bedrock runtime. Credentials come from the AWS default chain
    (IRSA web identity, environment, instance profile), never from these settings."""

    bedrock_base_url: Annotated[
        str | None, _fields.Env("AIANALYSIS_BEDROCK_BASE_URL", "ANTHROPIC_BEDROCK_BASE_URL")
    ] = None
    """``bedrock``: override the Bedrock runtime endpoint (a VPC endpoint, or a test server)."""

    vertex_region: Annotated[str | None, _fields.Env("AIANALYSIS_VERTEX_REGION", "CLOUD_ML_REGION")] = None
    """``vertex``: the Vertex AI region (``us-east5``, ``europe-west1``, ``global``...)."""

    vertex_project_id: Annotated[
        str | None, _fields.Env("AIANALYSIS_VERTEX_PROJECT_ID", "ANTHROPIC_VERTEX_PROJECT_ID")
    ] = None
    """``vertex``: the Google Cloud project (default: the one of the application default credentials)."""

    vertex_base_url: Annotated[
        str | None, _fields.Env("AIANALYSIS_VERTEX_BASE_URL", "ANTHROPIC_VERTEX_BASE_URL")
    ] = None
    """``vertex``: override the Vertex AI endpoint (a Private Service Connect endpoint, a test server)."""

    vertex_access_token: Secret = None
    """``vertex``: a ready OAuth access token (from a token broker). Normally unset: credentials come
    from workload identity / application default credentials. Never logged."""

    openai_base_url: str | None = None
    """``openai``: the Chat Completions endpoint's base URL, e.g. ``http://vllm:8000/v1``."""

    openai_api_key: Annotated[Secret, _fields.Env("AIANALYSIS_OPENAI_API_KEY", "OPENAI_API_KEY")] = None
    """``openai``: the API key (optional: local servers need none). Never logged."""

    timeout_seconds: Annotated[_fields.Seconds, _fields.Env("AIANALYSIS_LLM_TIMEOUT_SECONDS")] = 60.0
    """Per-request timeout of one LLM API call."""

    max_retries: Annotated[_fields.Tries, _fields.Env("AIANALYSIS_LLM_MAX_RETRIES")] = 4
    """SDK-level retries with backoff on 408/409/429/529/5xx and connection errors."""

    max_retry_after_seconds: Annotated[
        _fields.Seconds, _fields.Env("AIANALYSIS_PROVIDER_MAX_RETRY_AFTER_SECONDS")
    ] = 60.0
    """A ``retry-after`` longer than this is not waited for: the provider counts as unavailable."""

    max_tokens: _fields.Count = 4096
    """``max_tokens`` of each request (the longest answer one turn may give)."""

    @pydantic.model_validator(mode="before")
    @classmethod
    def _anthropic_when_a_key_is_set(cls, values: Any) -> Any:
        if isinstance(values, dict) and values.get("provider") is None and values.get("api_key"):
            return {**values, "provider": "anthropic"}
        return values

    def conflicts(self) -> list[str]:
        """The provider's needs: a key for ``anthropic``, a region or an endpoint (and a model) for the
        platforms."""
        needs = [
            f"provider {self.provider!r} needs {self.env_name(name)}"
            for name in _PLATFORM_NEEDS.get(self.provider, ())
            if not getattr(self, name)
        ]
        if self.provider == "anthropic" and not self.api_key:
            needs.append("provider 'anthropic' needs ANTHROPIC_API_KEY (from a Secret)")
        if self.provider in _MODEL_REQUIRED and "model" not in self.model_fields_set:
            model = self.env_name("model")
            needs.append(f"provider {self.provider!r} needs {model} (the model id that endpoint serves)")
        return needs


class AnalysisSettings(_fields.Group):
    """One analysis: how many run at once, how long and how many turns its conversation may take,
    and how much of the LLM's answer it trusts."""

    max_concurrent: Annotated[_fields.Count, _fields.Env("AIANALYSIS_MAX_CONCURRENT_ANALYSES")] = 8
    """Global cap on LLM conversations running at once in this operator process."""

    deadline_seconds: Annotated[_fields.Seconds, _fields.Env("AIANALYSIS_ANALYSIS_DEADLINE_SECONDS")] = 900.0
    """Wall-clock deadline of one analysis' conversation (every LLM call, retry, ``retry-after`` and
    tool read included): past it, the analysis ends Failed (AnalysisDeadlineExceeded)."""

    max_tool_steps: _fields.Count = 12
    """Upper bound on LLM turns in one conversation; the last one may only submit."""

    max_validation_attempts: _fields.Count = 3
    """How many answers the LLM may submit before the analysis goes to human review."""

    confidence_floor: _fields.Fraction = 0.7
    """Selections below this confidence are kept but flagged ``needsHumanReview: low_confidence``."""

    max_conversations: _fields.Count = 2
    """LLM conversations one analysis may start in all (restarts and retries included); when an
    analysis would need another, it ends ``Failed`` (``ConversationLimit``) instead."""

    max_recovery_attempts: _fields.Tries = 3
    """Recovery analyses per incident before giving up with ``max_recovery_attempts``."""


class RetriesSettings(_fields.Group):
    """How the operator's reconcilers retry what failed for a passing reason."""

    provider_limit: Annotated[_fields.Count, _fields.Env("AIANALYSIS_PROVIDER_RETRY_LIMIT")] = 5
    """Handler-level tries on transient provider errors before the analysis ends ``Failed``."""

    delay_seconds: Annotated[_fields.Seconds, _fields.Env("AIANALYSIS_PROVIDER_RETRY_DELAY_SECONDS")] = 10.0
    """Base delay between handler-level tries (doubles each time, capped at 5 minutes)."""

    reconcile_limit: Annotated[_fields.Tries, _fields.Env("AIANALYSIS_MAX_RECONCILE_RETRIES")] = 5
    """Tries repeated after a transient API error or an unexpected exception before the analysis ends
    ``Failed`` (``ClusterUnavailable`` or ``InternalError``); the delay doubles from
    ``AIANALYSIS_PROVIDER_RETRY_DELAY_SECONDS``, capped at 5 minutes."""


class BudgetSettings(_fields.Group):
    """What the paid providers may spend, across analyses (not applied to ``offline``)."""

    env_prefix = _fields.PREFIX + "LLM_BUDGET_"

    conversations_per_hour: _fields.Limit = 30
    """LLM conversations that may start in any rolling hour (``unlimited`` = no limit)."""

    tokens_per_day: _fields.Limit = 3_000_000
    """LLM tokens (input, output, cache) that may be billed in any rolling 24 hours (``unlimited`` =
    no limit)."""

    namespace: str = ""
    """Namespace of the ConfigMap ``aianalysis-llm-budget`` that keeps what the budget spent, so a
    restart or a failover to another replica does not reset the window (empty: kept in memory
    only, as for a test process). The chart sets it to the release namespace."""
