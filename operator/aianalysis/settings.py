"""Typed, frozen settings. The only module that reads the environment (``AIANALYSIS_*``)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Literal

from aianalysis import errors

Provider = Literal["offline", "anthropic"]
LogFormat = Literal["text", "json"]

ENV_PREFIX = "AIANALYSIS_"


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings:
    provider: Provider = "offline"
    """Which LLM answers: ``anthropic`` (Claude through the SDK) or ``offline`` (deterministic,
    catalog-ranked, no network). Defaults to ``anthropic`` when an API key is configured."""

    model: str = "claude-sonnet-4-6"
    """The Anthropic model id."""

    anthropic_base_url: str | None = None
    """Override the Messages API endpoint (a proxy, or the scripted server in tests)."""

    api_key: str | None = dataclasses.field(default=None, repr=False)
    """From ``ANTHROPIC_API_KEY`` (mount it from a Secret). Never logged, never in status."""

    llm_timeout_seconds: float = 60.0
    """Per-request timeout for one Messages API call."""

    llm_max_retries: int = 4
    """SDK-level retries with backoff on 408/409/429/529/5xx and connection errors."""

    max_tokens: int = 4096
    """``max_tokens`` of each Messages API request."""

    max_tool_steps: int = 12
    """Upper bound on LLM turns in one conversation; the last one may only submit."""

    max_validation_attempts: int = 3
    """How many answers the LLM may submit before the analysis goes to human review."""

    confidence_floor: float = 0.7
    """Selections below this confidence are kept but flagged ``needsHumanReview: low_confidence``."""

    max_concurrent_analyses: int = 8
    """Global cap on LLM conversations running at once in this operator process."""

    max_recovery_attempts: int = 3
    """Recovery analyses per incident before giving up with ``max_recovery_attempts``."""

    provider_retry_limit: int = 5
    """Handler-level tries on transient provider errors before the analysis ends ``Failed``."""

    provider_retry_delay_seconds: float = 10.0
    """Base delay between handler-level tries (doubles each time, capped at 5 minutes)."""

    max_conversations: int = 2
    """LLM conversations one analysis may start in all (restarts and retries included); when an
    analysis would need another, it ends ``Failed`` (``ConversationLimit``) instead."""

    max_reconcile_retries: int = 5
    """Tries repeated after a transient API error or an unexpected exception before the analysis ends
    ``Failed`` (``ClusterUnavailable`` or ``InternalError``); the delay doubles from
    ``provider_retry_delay_seconds``, capped at 5 minutes."""

    provider_max_retry_after_seconds: float = 60.0
    """A ``retry-after`` longer than this is not waited for: the provider counts as unavailable."""

    catalog_sync_stale_seconds: float = 900.0
    """Readiness fails when the catalog sync has not heard from the API server for this long."""

    leader_election_namespace: str = ""
    """Namespace of the Lease that lets one of several replicas act (empty: no leader election,
    for a single replica). The chart sets it to the release namespace."""

    lease_duration_seconds: int = 15
    """How long a leader's Lease holds without renewal: a standby takes over at most this long
    (plus a 2 s retry) after the leader died."""

    leader_identity: str = ""
    """This replica's name in the Lease (default: the pod name from ``HOSTNAME``)."""

    tool_output_max_chars: int = 8000
    """Cap on the text one investigation tool returns to the LLM."""

    log_format: LogFormat = "text"
    """``text`` for people, ``json`` for log pipelines."""

    metrics_port: int = 9090
    """Port of the Prometheus ``/metrics`` endpoint (0 disables it)."""

    health_port: int = 8080
    """Port of kopf's liveness endpoint ``/healthz`` (0 disables it)."""

    def __post_init__(self) -> None:
        problems = list(_problems(self))
        if problems:
            raise errors.ConfigError("invalid settings: " + "; ".join(problems))


def _problems(s: Settings) -> list[str]:
    """Every problem at once, each naming the variable to fix (a restart loop per typo is slow)."""
    out: list[str] = []
    if s.provider not in ("offline", "anthropic"):
        out.append(f"{env_name('provider')} must be 'offline' or 'anthropic', not {s.provider!r}")
    if s.provider == "anthropic" and not s.api_key:
        out.append("provider 'anthropic' needs ANTHROPIC_API_KEY (from a Secret)")
    if not 0.0 <= s.confidence_floor <= 1.0:
        out.append(f"{env_name('confidence_floor')} must be within 0..1, not {s.confidence_floor}")
    if s.log_format not in ("text", "json"):
        out.append(f"{env_name('log_format')} must be 'text' or 'json', not {s.log_format!r}")
    for name in (
        "max_tool_steps",
        "max_validation_attempts",
        "max_concurrent_analyses",
        "max_tokens",
        "provider_retry_limit",
        "tool_output_max_chars",
        "max_conversations",
        "lease_duration_seconds",
    ):
        if getattr(s, name) < 1:
            out.append(f"{env_name(name)} must be at least 1, not {getattr(s, name)}")
    for name in (
        "max_recovery_attempts",
        "llm_max_retries",
        "metrics_port",
        "health_port",
        "max_reconcile_retries",
    ):
        if getattr(s, name) < 0:
            out.append(f"{env_name(name)} must not be negative, not {getattr(s, name)}")
    for name in ("metrics_port", "health_port"):
        if getattr(s, name) > 65535:
            out.append(f"{env_name(name)} must be a port number (0..65535), not {getattr(s, name)}")
    for name in (
        "llm_timeout_seconds",
        "provider_retry_delay_seconds",
        "provider_max_retry_after_seconds",
        "catalog_sync_stale_seconds",
    ):
        if not getattr(s, name) > 0:
            out.append(f"{env_name(name)} must be positive, not {getattr(s, name)}")
    return out


def env_name(field: str) -> str:
    """The variable that sets ``field`` (what a user edits when a value is rejected)."""
    return ENV_PREFIX + field.upper()


_FIELDS = {f.name: f for f in dataclasses.fields(Settings)}


def from_env(env: Mapping[str, str] | None = None, **overrides: object) -> Settings:
    """Settings from ``AIANALYSIS_<FIELD>`` variables (plus ``ANTHROPIC_API_KEY``), then overrides."""
    env = os.environ if env is None else env
    values: dict[str, object] = {}
    for name, field in _FIELDS.items():
        raw = env.get(ENV_PREFIX + name.upper())
        if raw is not None and raw != "":
            values[name] = _coerce(name, field.type, raw)
    api_key = env.get("ANTHROPIC_API_KEY") or env.get(ENV_PREFIX + "API_KEY")
    if api_key:
        values["api_key"] = api_key
    if "leader_identity" not in values and env.get("HOSTNAME"):
        values["leader_identity"] = env["HOSTNAME"]
    base_url = env.get("ANTHROPIC_BASE_URL")
    if base_url and "anthropic_base_url" not in values:
        values["anthropic_base_url"] = base_url
    values.update({k: v for k, v in overrides.items() if v is not None})
    if "provider" not in values:
        values["provider"] = "anthropic" if values.get("api_key") else "offline"
    return Settings(**values)  # type: ignore[arg-type]  # validated in __post_init__


def _coerce(name: str, annotation: object, raw: str) -> object:
    kind = str(annotation)
    try:
        if kind == "int":
            return int(raw)
        if kind == "float":
            return float(raw)
    except ValueError:
        expected = "an integer" if kind == "int" else "a number"
        raise errors.ConfigError(f"{env_name(name)}={raw!r} is not {expected}") from None
    return raw
