"""Typed, frozen settings. The only module that reads the environment (``AIANALYSIS_*``)."""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from typing import Literal

from aianalysis import errors

Provider = Literal["offline", "anthropic", "bedrock", "vertex", "openai"]
PROVIDERS: tuple[str, ...] = ("offline", "anthropic", "bedrock", "vertex", "openai")
LogFormat = Literal["text", "json"]

ENV_PREFIX = "AIANALYSIS_"

DEFAULT_CUSTOM_GROUPS: tuple[str, ...] = (
    "cert-manager.io",  # Certificate, Issuer, ClusterIssuer, CertificateRequest
    "acme.cert-manager.io",  # Order, Challenge
    "argoproj.io",  # Argo CD Application, AppProject; Argo Rollouts
    "*.toolkit.fluxcd.io",  # Flux Kustomization, HelmRelease, GitRepository...
    "networking.istio.io",  # VirtualService, DestinationRule, Gateway...
    "security.istio.io",  # PeerAuthentication, AuthorizationPolicy
    "route.openshift.io",  # Route
    "build.openshift.io",  # BuildConfig, Build
    "apps.openshift.io",  # DeploymentConfig
    "operators.coreos.com",  # OLM Subscription, ClusterServiceVersion, InstallPlan
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings:
    provider: Provider = "offline"
    """Which LLM answers: ``anthropic`` (Claude through the SDK), ``bedrock`` / ``vertex`` (Claude
    through AWS Bedrock / Google Vertex AI, with the SDK's own clients), ``openai`` (any
    OpenAI-compatible Chat Completions endpoint) or ``offline`` (deterministic analyzers, then the
    catalog; no network). Defaults to ``anthropic`` when an API key is configured."""

    model: str = "claude-sonnet-4-6"
    """The model id as the provider names it (a Bedrock model or inference-profile id, a Vertex
    model id, the name an OpenAI-compatible server serves)."""

    anthropic_base_url: str | None = None
    """Override the Messages API endpoint (a proxy, or the scripted server in tests)."""

    api_key: str | None = dataclasses.field(default=None, repr=False)
    """From ``ANTHROPIC_API_KEY`` (mount it from a Secret). Never logged, never in status."""

    aws_region: str | None = None
    """``bedrock``: the AWS region of the Bedrock runtime (default: ``AWS_REGION`` /
    ``AWS_DEFAULT_REGION``). Credentials come from the AWS default chain (IRSA web identity,
    environment, instance profile), never from these settings."""

    bedrock_base_url: str | None = None
    """``bedrock``: override the Bedrock runtime endpoint (a VPC endpoint, or a test server)."""

    vertex_region: str | None = None
    """``vertex``: the Vertex AI region (``us-east5``, ``europe-west1``, ``global``...)."""

    vertex_project_id: str | None = None
    """``vertex``: the Google Cloud project (default: the one of the application default credentials)."""

    vertex_base_url: str | None = None
    """``vertex``: override the Vertex AI endpoint (a Private Service Connect endpoint, a test server)."""

    vertex_access_token: str | None = dataclasses.field(default=None, repr=False)
    """``vertex``: a ready OAuth access token (from a token broker). Normally unset: credentials come
    from workload identity / application default credentials. Never logged."""

    openai_base_url: str | None = None
    """``openai``: the Chat Completions endpoint's base URL, e.g. ``http://vllm:8000/v1``."""

    openai_api_key: str | None = dataclasses.field(default=None, repr=False)
    """``openai``: from ``OPENAI_API_KEY`` (optional: local servers need none). Never logged."""

    model_check: bool = True
    """Verify the configured model at startup (``aianalysis run``, ``eval``) with the provider's
    cheapest call; an unknown or retired model stops with one line naming the setting to change."""

    llm_timeout_seconds: float = 60.0
    """Per-request timeout for one Messages API call."""

    analysis_deadline_seconds: float = 900.0
    """Wall-clock deadline of one analysis' conversation (every LLM call, retry, ``retry-after`` and
    tool read included): past it, the analysis ends Failed (AnalysisDeadlineExceeded)."""

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

    api_connect_timeout_seconds: float = 10.0
    """Kubernetes API: one connection attempt (TCP connect and TLS handshake) gives up after this."""

    api_request_timeout_seconds: float = 30.0
    """Kubernetes API: the longest one call may take, its retries and their waits included (a watch:
    its ``timeoutSeconds`` plus this); kopf's own calls get the same bound. A call to a server that
    accepts and never answers ends after this with a retryable error."""

    api_retry_after_max_seconds: float = 10.0
    """Kubernetes API: the longest a ``Retry-After`` of a 429 or 503 is waited for before the call is
    tried again (the server may ask for hours; the call's own bound still holds)."""

    tool_output_max_chars: int = 8000
    """Cap on the text one investigation tool returns to the LLM."""

    tool_output_budget_tokens: int = 20_000
    """Budget of one analysis for what the investigation tools return (characters / 4): each call
    is capped to what is left, and once it is spent they answer "budget spent" (the catalog tools
    stay available). Every returned token is re-read on each later turn, so this bounds cost."""

    tool_audit_max_records: int = 40
    """Tool calls recorded in ``status.investigation.calls`` (later ones are only counted; at most 100)."""

    investigation_namespaces: tuple[str, ...] = ()
    """Namespaces the investigation tools may read besides the incident's (comma-separated; ``*`` =
    all). Cluster-scoped kinds (Nodes, PersistentVolumes) are always readable."""

    investigation_custom_groups: tuple[str, ...] = DEFAULT_CUSTOM_GROUPS
    """API groups whose custom kinds the tools may read when the cluster serves them (comma-separated,
    ``*.toolkit.fluxcd.io`` style wildcards). Kinds named like secrets are never read."""

    prometheus_url: str | None = None
    """Prometheus-compatible HTTP API (Prometheus, Thanos Query, Cortex, Mimir) for the Prometheus
    tools and the effectiveness assessment (before/after metrics, the alert state), e.g.
    ``https://prometheus-k8s.monitoring.svc:9091``. Unset: no Prometheus tools, those checks skipped;
    set but not answering: the assessment's verdict is ``unknown``."""

    prometheus_token: str | None = dataclasses.field(default=None, repr=False)
    """Bearer token for Prometheus (from a Secret). Never logged."""

    prometheus_token_file: str | None = None
    """File holding the bearer token, re-read on every request (a projected ServiceAccount token)."""

    prometheus_ca_file: str | None = None
    """CA bundle that signs Prometheus' serving certificate (default: the system's)."""

    prometheus_tenant: str | None = None
    """``X-Scope-OrgID`` header value for multi-tenant backends (Thanos, Cortex, Mimir)."""

    prometheus_timeout_seconds: float = 10.0
    """Per-request timeout of a Prometheus call; a slower query is reported to the LLM as such."""

    prometheus_max_series: int = 20
    """Series a query result shows (the highest last values); the rest are counted, not shown."""

    prometheus_max_response_bytes: int = 4_000_000
    """Largest Prometheus answer read; a larger one is refused with advice to narrow the query."""

    log_format: LogFormat = "text"
    """``text`` for people, ``json`` for log pipelines."""

    metrics_port: int = 9090
    """Port of the Prometheus ``/metrics`` endpoint (0 disables it)."""

    health_port: int = 8080
    """Port of kopf's liveness endpoint ``/healthz`` (0 disables it)."""

    intake_port: int = 0
    """Port of the Alertmanager webhook receiver ``POST /api/v1/alertmanager`` (0 = no intake)."""

    intake_token: str | None = dataclasses.field(default=None, repr=False)
    """Bearer token Alertmanager must send (from a Secret); required when the intake is on. Never logged."""

    intake_cooldown_seconds: float = 3600.0
    """After an analysis ends, repeats of its incident start nothing for this long
    (``AIANALYSIS_INTAKE_COOLDOWN``: ``90m``, ``1h``, ``3600s`` or plain seconds)."""

    intake_mapping_file: str | None = None
    """YAML file overriding the alert → AIAnalysis mapping (signal types, severities, defaults)."""

    intake_queue_limit: int = 5000
    """Alerts accepted but not yet processed; a payload that does not fit is answered 429."""

    llm_budget_conversations_per_hour: int | None = 30
    """LLM conversations that may start in any rolling hour (``unlimited`` = no limit). Applies to
    the paid providers, not to ``offline``."""

    llm_budget_tokens_per_day: int | None = 3_000_000
    """LLM tokens (input, output, cache) that may be billed in any rolling 24 hours (``unlimited`` =
    no limit)."""

    llm_budget_namespace: str = ""
    """Namespace of the ConfigMap ``aianalysis-llm-budget`` that keeps what the budget spent, so a
    restart or a failover to another replica does not reset the window (empty: kept in memory
    only, as for a test process). The chart sets it to the release namespace."""

    dry_run: bool = False
    """Dry run for the whole product: analyses and approvals proceed and WorkflowExecutions are
    created, but the executor creates no Job (``status.dryRun``) and the assessment says
    ``not_executed``. Set it on the executor and the operator alike (the chart does)."""

    # ---- the effectiveness assessment (in the operator; read-only) ----

    assessment_window_seconds: float = 300.0
    """Stabilization window: how long after an execution ended its effect is assessed (a workflow's
    ``stabilizationWindow`` overrides it)."""

    assessment_max_clock_skew_seconds: float = 30.0
    """If this process' clock and the API server's differ by more, the verdict is ``unknown``
    (``ClockSkew``): "since the execution" cannot be told apart then."""

    assessment_history_seconds: float = 86400.0
    """How far back earlier executions on the same target are fed into the next analysis."""

    assessment_recurrence_threshold: int = 2
    """An incident analysed again after this many ``effective`` executions on its target within
    the history goes to human review (``recurring_after_remediation``); 0 disables it."""

    # ---- the executor (``aianalysis executor``; a separate, opt-in process) ----

    executor_backoff_limit: int = 0
    """``backoffLimit`` of workflow Jobs: retries after a failed Pod (0: a remediation runs once)."""

    executor_default_deadline_seconds: int = 1800
    """``activeDeadlineSeconds`` of a workflow Job whose workflow declares no ``estimatedDuration``."""

    executor_deadline_multiplier: float = 2.0
    """A Job's deadline is the workflow's ``estimatedDuration`` times this."""

    executor_auto_execute: bool = False
    """``autoExecute``: run selections without ``aianalysis approve``, decided from server-side facts
    only: the analysis needs no review, its namespace is in the allowlist below AND labelled
    ``<executor_auto_execute_namespace_label>=true``, the catalog's ``riskLevel`` is at most the
    ceiling, and its confidence reaches the floor (never the spec's environment or riskTolerance)."""

    executor_auto_execute_min_confidence: float = 0.9
    """Confidence floor of ``autoExecute`` (one gate, never enough alone)."""

    executor_auto_execute_namespaces: tuple[str, ...] = ()
    """Namespaces (comma-separated) ``autoExecute`` may run in; empty: none."""

    executor_auto_execute_namespace_label: str = "kubernaut.io/auto-execute"
    """The Namespace label (value ``true``) its owner sets to opt in to ``autoExecute``."""

    executor_auto_execute_max_risk: str = "low"
    """The highest catalog ``riskLevel`` ``autoExecute`` runs (low, medium or high)."""

    executor_auto_execute_environments: tuple[str, ...] = ()
    """When set: only namespaces whose environment label (``kubernaut.io/environment`` or
    ``kubernaut.ai/environment``) is listed (comma-separated). Never ``businessContext``."""

    executor_approval_policy: str = "aianalysis-operator-executor-approval"
    """The ValidatingAdmissionPolicy (and binding of the same name) that makes the API server check
    ``spec.approval`` of every WorkflowExecution; without it in force, the executor runs nothing."""

    mcp_token: str | None = dataclasses.field(default=None, repr=False)
    """``aianalysis mcp --transport http``: the bearer token clients must send (from a Secret). Without
    it the server only listens on a loopback address. Never logged."""

    cross_namespace: tuple[str, ...] = ()
    """Allowed cross-namespace pairs ``analysis-namespace=target-namespace`` (comma-separated;
    ``ns=*``: any target namespace for analyses in ``ns``): an AIAnalysis may otherwise only concern
    its own namespace."""

    executor_auto_execute_max_age_seconds: float = 600.0
    """``autoExecute`` only runs analyses completed this recently (enabling it never runs a backlog)."""

    executor_cooldown_seconds: float = 1800.0
    """Guard: the same workflow does not run again on the same target within this time (0: off)."""

    executor_failure_threshold: int = 3
    """Guard: after this many consecutive failed or ineffective executions on a target, the next
    waits ``executor_failure_backoff_seconds`` (doubling per further failure; 0: off)."""

    executor_failure_backoff_seconds: float = 900.0
    """Guard: the first backoff after ``executor_failure_threshold`` failures."""

    executor_failure_backoff_max_seconds: float = 86400.0
    """Guard: the longest backoff."""

    executor_managed_label: str = "kubernaut.io/auto-execute"
    """Guard: automatic executions (``autoExecute``) run only where the namespace or the target
    carries this label with the value ``true``."""

    executor_require_managed_label: bool = True
    """Guard: whether automatic executions need ``executor_managed_label`` (approved ones never do)."""

    executor_max_concurrent: int = 5
    """Guard: executions running at once, cluster-wide (0: no limit)."""

    executor_max_per_hour: int = 20
    """Guard: executions started in any rolling hour, cluster-wide (0: no limit)."""

    executor_start_lock_namespace: str = ""
    """Namespace of the Lease (``aianalysis-executor-start``) that executor replicas hold while they
    count executions against the cluster-wide caps and mark one started, so that several replicas
    cannot overshoot a cap together. Empty: a lock within this process only (one executor). The
    chart sets it to the release namespace."""

    business_label_prefixes: tuple[str, ...] = ("kubernaut.io/", "kubernaut.ai/")
    """Prefixes (comma-separated) under which a namespace's labels and annotations state the business
    context of its incidents (environment, criticality, business unit, team, SLA, custom labels; the
    table is in ``catalog/business.py``); an earlier prefix wins. What an AIAnalysis spec states wins
    over the namespace."""

    signal_types: tuple[str, ...] = ()
    """Extra ``AlertName=SignalType`` pairs (comma-separated) for signal normalization at analysis
    time, added to (and overriding) the built-in table in ``catalog/signals.py``."""

    def __post_init__(self) -> None:
        problems = list(_problems(self))
        if problems:
            raise errors.ConfigError("invalid settings: " + "; ".join(problems))


def _problems(s: Settings) -> list[str]:
    """Every problem at once, each naming the variable to fix (a restart loop per typo is slow)."""
    out: list[str] = []
    if s.provider not in PROVIDERS:
        out.append(f"{env_name('provider')} must be one of {', '.join(PROVIDERS)}, not {s.provider!r}")
    if s.provider == "anthropic" and not s.api_key:
        out.append("provider 'anthropic' needs ANTHROPIC_API_KEY (from a Secret)")
    out.extend(_platform_problems(s))
    out.extend(
        f"{env_name('signal_types')}: {entry!r} is not AlertName=SignalType"
        for entry in s.signal_types
        if entry.count("=") != 1 or not all(part.strip() for part in entry.split("="))
    )
    out.extend(
        f"{env_name('business_label_prefixes')}: {problem}"
        for problem in _prefix_problems(s.business_label_prefixes)
    )
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
        "tool_output_budget_tokens",
        "prometheus_max_series",
        "prometheus_max_response_bytes",
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
        "tool_audit_max_records",
    ):
        if getattr(s, name) < 0:
            out.append(f"{env_name(name)} must not be negative, not {getattr(s, name)}")
    for name in ("metrics_port", "health_port"):
        if getattr(s, name) > 65535:
            out.append(f"{env_name(name)} must be a port number (0..65535), not {getattr(s, name)}")
    out.extend(_intake_problems(s))
    if s.executor_auto_execute_max_risk not in ("low", "medium", "high"):
        out.append(f"{env_name('executor_auto_execute_max_risk')} must be low, medium or high")
    bad_pairs = [p for p in s.cross_namespace if len(p.split("=")) != 2 or not all(p.split("="))]
    if bad_pairs:
        out.append(f"{env_name('cross_namespace')} takes pairs like team-a=shared, not {bad_pairs}")
    if not 0.0 <= s.executor_auto_execute_min_confidence <= 1.0:
        out.append(f"{env_name('executor_auto_execute_min_confidence')} must be within 0..1")
    if s.executor_backoff_limit < 0:
        out.append(f"{env_name('executor_backoff_limit')} must not be negative")
    for name in (
        "executor_default_deadline_seconds",
        "executor_deadline_multiplier",
        "executor_auto_execute_max_age_seconds",
    ):
        if not getattr(s, name) > 0:
            out.append(f"{env_name(name)} must be positive, not {getattr(s, name)}")
    for name in (
        "assessment_window_seconds", "assessment_history_seconds", "assessment_recurrence_threshold",
        "executor_cooldown_seconds", "executor_failure_threshold", "executor_failure_backoff_seconds",
        "executor_max_concurrent", "executor_max_per_hour",
    ):  # fmt: skip
        if getattr(s, name) < 0:
            out.append(f"{env_name(name)} must not be negative, not {getattr(s, name)}")
    if not s.assessment_max_clock_skew_seconds > 0:
        out.append(f"{env_name('assessment_max_clock_skew_seconds')} must be positive")
    if s.executor_failure_backoff_max_seconds < s.executor_failure_backoff_seconds:
        out.append(f"{env_name('executor_failure_backoff_max_seconds')} must be at least the first backoff")
    for name in (
        "llm_timeout_seconds",
        "analysis_deadline_seconds",
        "provider_retry_delay_seconds",
        "provider_max_retry_after_seconds",
        "catalog_sync_stale_seconds",
        "prometheus_timeout_seconds",
        "api_connect_timeout_seconds",
        "api_request_timeout_seconds",
        "api_retry_after_max_seconds",
    ):
        if not getattr(s, name) > 0:
            out.append(f"{env_name(name)} must be positive, not {getattr(s, name)}")
    if s.tool_audit_max_records > 100:
        out.append(
            f"{env_name('tool_audit_max_records')} must be at most 100, not {s.tool_audit_max_records}"
        )
    if s.prometheus_url and not s.prometheus_url.startswith(("http://", "https://")):
        out.append(
            f"{env_name('prometheus_url')} must start with http:// or https://, not {s.prometheus_url!r}"
        )
    return out


def _prefix_problems(prefixes: tuple[str, ...]) -> list[str]:
    return [
        f"prefix {prefix!r} must look like 'example.com/'"
        for prefix in prefixes
        if not re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?/", prefix)
    ]


def _platform_problems(s: Settings) -> list[str]:
    """What bedrock, vertex and openai need besides credentials (which come from their own chains)."""
    needs = {
        "bedrock": ("aws_region",),
        "vertex": ("vertex_region",),
        "openai": ("openai_base_url",),
    }.get(s.provider, ())
    return [f"provider {s.provider!r} needs {env_name(name)}" for name in needs if not getattr(s, name)]


def _intake_problems(s: Settings) -> list[str]:
    out: list[str] = []
    if not 0 <= s.intake_port <= 65535:
        out.append(f"{env_name('intake_port')} must be a port number (0..65535), not {s.intake_port}")
    if s.intake_port and not s.intake_token:
        out.append(f"the intake ({env_name('intake_port')}) needs {env_name('intake_token')} (from a Secret)")
    if s.intake_cooldown_seconds < 0:
        out.append(f"AIANALYSIS_INTAKE_COOLDOWN must not be negative, not {s.intake_cooldown_seconds}")
    if s.intake_queue_limit < 1:
        out.append(f"{env_name('intake_queue_limit')} must be at least 1, not {s.intake_queue_limit}")
    for name in ("llm_budget_conversations_per_hour", "llm_budget_tokens_per_day"):
        if getattr(s, name) is not None and getattr(s, name) < 0:
            out.append(f"{env_name(name)} must not be negative, not {getattr(s, name)}")
    return out


_DURATION_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(name: str, raw: str) -> float:
    """``90m``, ``1h``, ``3600s``, ``1d`` or plain seconds → seconds."""
    text = raw.strip()
    factor = _DURATION_UNITS.get(text[-1:].lower())
    number = text[:-1] if factor is not None else text
    try:
        return float(number) * (factor or 1.0)
    except ValueError:
        raise errors.ConfigError(f"{name}={raw!r} is not a duration such as 90m, 1h or 3600s") from None


def cross_namespace_pairs(s: Settings) -> frozenset[tuple[str, str]]:
    """``cross_namespace`` as (analysis namespace, other namespace) pairs."""
    return frozenset((a.strip(), b.strip()) for a, b in (p.split("=", 1) for p in s.cross_namespace))


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
    cooldown = env.get(ENV_PREFIX + "INTAKE_COOLDOWN")
    if cooldown and "intake_cooldown_seconds" not in values:
        values["intake_cooldown_seconds"] = parse_duration(ENV_PREFIX + "INTAKE_COOLDOWN", cooldown)
    if "leader_identity" not in values and env.get("HOSTNAME"):
        values["leader_identity"] = env["HOSTNAME"]
    base_url = env.get("ANTHROPIC_BASE_URL")
    if base_url and "anthropic_base_url" not in values:
        values["anthropic_base_url"] = base_url
    for target, names in _PLATFORM_ENV.items():
        found = next((env[name] for name in names if env.get(name)), None)
        if found and target not in values:
            values[target] = found
    values.update({k: v for k, v in overrides.items() if v is not None})
    if "provider" not in values:
        values["provider"] = "anthropic" if values.get("api_key") else "offline"
    if values["provider"] in _MODEL_REQUIRED and "model" not in values:
        # The default is an Anthropic API id: on Bedrock or an OpenAI-compatible server it cannot exist.
        raise errors.ConfigError(
            f"provider {values['provider']!r} needs {env_name('model')} (the model id that endpoint serves)"
        )
    return Settings(**values)  # type: ignore[arg-type]  # validated in __post_init__


_MODEL_REQUIRED = frozenset({"bedrock", "openai"})

#: The platforms' own variables, used when the ``AIANALYSIS_*`` one is unset (credentials excluded:
#: the SDKs read those through their platform's standard chain).
_PLATFORM_ENV: dict[str, tuple[str, ...]] = {
    "aws_region": ("AWS_REGION", "AWS_DEFAULT_REGION"),
    "bedrock_base_url": ("ANTHROPIC_BEDROCK_BASE_URL",),
    "vertex_region": ("CLOUD_ML_REGION",),
    "vertex_project_id": ("ANTHROPIC_VERTEX_PROJECT_ID",),
    "vertex_base_url": ("ANTHROPIC_VERTEX_BASE_URL",),
    "openai_api_key": ("OPENAI_API_KEY",),
}


_UNLIMITED = frozenset({"llm_budget_conversations_per_hour", "llm_budget_tokens_per_day"})
"""Settings whose value ``unlimited`` means None (no limit)."""


def _coerce(name: str, annotation: object, raw: str) -> object:
    kind = str(annotation).removesuffix(" | None")
    if kind == "bool":
        if raw.strip().lower() in ("1", "true", "yes", "on"):
            return True
        if raw.strip().lower() in ("0", "false", "no", "off"):
            return False
        raise errors.ConfigError(f"{env_name(name)}={raw!r} is not true or false")
    if kind == "tuple[str, ...]":
        return tuple(item.strip() for item in raw.split(",") if item.strip())
    if name in _UNLIMITED and raw.strip().lower() == "unlimited":
        return None
    try:
        if kind == "int":
            return int(raw)
        if kind == "float":
            return float(raw)
    except ValueError:
        expected = "an integer" if kind == "int" else "a number"
        raise errors.ConfigError(f"{env_name(name)}={raw!r} is not {expected}") from None
    return raw
