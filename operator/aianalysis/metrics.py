"""Prometheus metrics, declared once. Counters move at one terminal point each (see ``record_*``).

Labels are low-cardinality by construction: outcomes, reasons and rules are closed vocabularies.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import prometheus_client as prom

from aianalysis import __version__, resources


class _Decision(Protocol):
    """What :func:`record_decision` reads of an analysis decision (``analysis.status.Decision``)."""

    @property
    def selected(self) -> object | None: ...
    @property
    def review_reason(self) -> str | None: ...
    @property
    def failed_rules(self) -> Sequence[str]: ...
    @property
    def llm(self) -> _Usage: ...


class _Cost(Protocol):
    """What :func:`record_decision` reads of a cost (``resources.LLMCost``)."""

    @property
    def amount(self) -> float: ...
    @property
    def currency(self) -> str: ...


class _Usage(Protocol):
    """What :func:`record_decision` reads of the conversation's usage (``resources.LLMUsage``)."""

    @property
    def model(self) -> str | None: ...
    @property
    def cost(self) -> _Cost | None: ...


class _Request(Protocol):
    """What :func:`record_llm_request` reads of one provider call (``analysis.llm.RequestRecord``)."""

    @property
    def outcome(self) -> str: ...
    @property
    def seconds(self) -> float: ...
    @property
    def input_tokens(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...
    @property
    def cache_read_tokens(self) -> int: ...
    @property
    def cache_write_tokens(self) -> int: ...


REGISTRY = prom.CollectorRegistry(auto_describe=True)
# The standard process_* (CPU, memory, open fds) and python_info series, for the operator's own health.
prom.ProcessCollector(registry=REGISTRY)
prom.PlatformCollector(registry=REGISTRY)

ANALYSES = prom.Counter(
    "aianalysis_analyses_total",
    "Analyses that reached a terminal phase, by outcome (selected|human_review|failed) and review reason.",
    ["outcome", "review_reason"],
    registry=REGISTRY,
)
ANALYSIS_SECONDS = prom.Histogram(
    "aianalysis_analysis_duration_seconds",
    "Wall time of one analysis from investigation start to terminal status.",
    ["provider"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300),
    registry=REGISTRY,
)
LLM_REQUESTS = prom.Counter(
    "aianalysis_llm_requests_total",
    "LLM API requests after SDK retries, by provider and outcome (ok|unavailable|error).",
    ["provider", "outcome"],
    registry=REGISTRY,
)
LLM_SECONDS = prom.Histogram(
    "aianalysis_llm_request_duration_seconds",
    "Latency of one LLM API request (including the SDK's own retries).",
    ["provider"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
    registry=REGISTRY,
)
LLM_TOKENS = prom.Counter(
    "aianalysis_llm_tokens_total",
    "Tokens billed by LLM API responses (also of analyses that later fail), by provider and kind "
    "(input|output|cache_read|cache_write).",
    ["provider", "kind"],
    registry=REGISTRY,
)
LLM_COST = prom.Counter(
    "aianalysis_llm_cost_total",
    "What the LLM conversations of analyses that reached a decision cost (status.llm.cost: tokens "
    "at the price table), by namespace, provider, model and currency (the price table's, e.g. USD).",
    ["namespace", "provider", "model", "currency"],
    registry=REGISTRY,
)
VALIDATION_FAILURES = prom.Counter(
    "aianalysis_validation_failures_total",
    "Rejected LLM answers, by the validation rule that failed (one count per rule per answer).",
    ["rule"],
    registry=REGISTRY,
)
RECOVERIES = prom.Counter(
    "aianalysis_recovery_attempts_total",
    "Failed WorkflowExecutions handled, by outcome (created|max_attempts|no_reference).",
    ["outcome"],
    registry=REGISTRY,
)
CATALOG_SIZE = prom.Gauge(
    "aianalysis_catalog_workflows",
    "RemediationWorkflow objects in the operator's catalog index.",
    registry=REGISTRY,
)
CATALOG_REFUSED = prom.Gauge(
    "aianalysis_catalog_workflows_refused",
    "RemediationWorkflow objects whose Accepted condition is False now (never offered to analyses).",
    registry=REGISTRY,
)
CATALOG_REFUSALS = prom.Counter(
    "aianalysis_catalog_refusals_total",
    "RemediationWorkflow refusals reported (Accepted turned False or changed reason), by reason.",
    ["reason"],
    registry=REGISTRY,
)
IN_FLIGHT = prom.Gauge(
    "aianalysis_analyses_in_flight",
    "LLM conversations running now (bounded by the concurrency cap).",
    registry=REGISTRY,
)
CACHE_EVICTIONS = prom.Counter(
    "aianalysis_cache_evictions_total",
    "Entries evicted from a bounded in-memory map keyed by external input (the least recently "
    "used first), by map (intake_incidents|intake_owners|intake_namespaces|intake_missing_namespaces).",
    ["cache"],
    registry=REGISTRY,
)
INTAKE_ALERTS = prom.Counter(
    "aianalysis_intake_alerts_total",
    "Alerts received from Alertmanager, by outcome (created|repeat|cancelled|resolved|unmapped|"
    "no_namespace|rate_limited|too_large|error).",
    ["outcome"],
    registry=REGISTRY,
)
BUDGET_USED = prom.Gauge(
    "aianalysis_llm_budget_used",
    "LLM budget spent in its window: conversations started in the last hour, tokens in the last 24 hours.",
    ["kind"],
    registry=REGISTRY,
)
# Shared with issue 10 (reason "concurrency"); declared here too for reason "budget": keep one at merge.
ANALYSES_WAITING = prom.Gauge(
    "aianalysis_analyses_waiting",
    "Analyses waiting to start a conversation, by reason (budget|concurrency).",
    ["reason"],
    registry=REGISTRY,
)
EXECUTIONS = prom.Counter(
    "aianalysis_executions_total",
    "WorkflowExecutions the executor finished, by outcome (completed|failed|refused) and reason "
    "(a canonical Kubernetes reason code of a failure, SelectionInvalid, other, or none).",
    ["outcome", "reason"],
    registry=REGISTRY,
)
BUILD_INFO = prom.Info("aianalysis_build", "Version of the running operator.", registry=REGISTRY)
BUILD_INFO.info({"version": __version__})


def record_decision(decision: _Decision, *, provider: str, seconds: float, namespace: str) -> None:
    """One terminal analysis: outcome, validation failures, duration, and what its conversation cost
    in ``namespace`` (the same amount as its status). (Its tokens were counted per API response, see
    :func:`record_llm_request`.)"""
    outcome = (
        "selected" if decision.selected is not None and decision.review_reason is None else "human_review"
    )
    ANALYSES.labels(outcome=outcome, review_reason=decision.review_reason or "none").inc()
    ANALYSIS_SECONDS.labels(provider=provider).observe(seconds)
    for rule in decision.failed_rules:
        VALIDATION_FAILURES.labels(rule=rule).inc()
    usage = decision.llm
    if usage.cost is not None:
        # The model as priced: one of the few the process is configured with (bounded).
        model = (usage.model or "unknown")[:100]
        labels = {
            "namespace": namespace,
            "provider": provider,
            "model": model,
            "currency": usage.cost.currency,
        }
        LLM_COST.labels(**labels).inc(usage.cost.amount)


def record_failure(review_reason: resources.HumanReviewReason | None) -> None:
    """One analysis that ended ``Failed`` (invalid spec, provider down after the last try)."""
    ANALYSES.labels(outcome="failed", review_reason=review_reason or "none").inc()


def record_llm_request(request: _Request, *, provider: str) -> None:
    """One Messages API call (after the SDK's own retries): its outcome ``ok|unavailable|error``,
    latency and billed tokens. The only place tokens are counted, so each is counted once, whether
    or not its analysis reaches a decision (a mid-conversation outage, a handler retry)."""
    LLM_REQUESTS.labels(provider=provider, outcome=request.outcome).inc()
    LLM_SECONDS.labels(provider=provider).observe(request.seconds)
    for kind, value in (
        ("input", request.input_tokens),
        ("output", request.output_tokens),
        ("cache_read", request.cache_read_tokens),
        ("cache_write", request.cache_write_tokens),
    ):
        if value:
            LLM_TOKENS.labels(provider=provider, kind=kind).inc(value)


def llm_observer(provider: str) -> Callable[[_Request], None]:
    """The ``on_request`` hook ``llm.make_provider`` takes, recording into these metrics."""

    def observe(request: _Request) -> None:
        record_llm_request(request, provider=provider)

    return observe


_serving: set[int] = set()


def serve(port: int) -> None:
    """Expose ``/metrics`` on ``port`` (a daemon thread; 0 = disabled). Once per port and process."""
    if port and port not in _serving:
        prom.start_http_server(port, registry=REGISTRY)
        _serving.add(port)


EXECUTION_REFUSALS = (
    "NotApproved", "SelectionMismatch", "SelectionInvalid", "WorkflowChanged", "NamespaceNotAllowed"
)  # fmt: skip
"""The executor's refusal reasons (``executor.admission.REASONS``: metrics imports no executor)."""


def record_execution(outcome: str, reason: str | None = None) -> None:
    """One WorkflowExecution the executor brought to its end (once per execution: the executor
    counts only the transition it wrote)."""
    known = (
        reason in resources.CANONICAL_REASON_CODES
        or reason in resources.NOT_STARTED_REASONS
        or reason in (None, *EXECUTION_REFUSALS)
    )
    EXECUTIONS.labels(outcome=outcome, reason=(reason or "none") if known else "other").inc()


STATUS_WRITES_DROPPED = prom.Counter(
    "aianalysis_status_writes_dropped_total",
    "Status writes not made because the object they were computed for is gone (object_deleted, "
    "object_replaced: another object now has its name), the API server refused them (rejected), or "
    "another writer already ended the analysis (already_terminal: a terminal status is written once).",
    ["reason"],
    registry=REGISTRY,
)
CONVERSATIONS_RESTARTED = prom.Counter(
    "aianalysis_conversations_restarted_total",
    "LLM conversations started for an analysis that had started one before (a restart, a retry).",
    registry=REGISTRY,
)
WAITING = ANALYSES_WAITING  # one family, two reasons: concurrency (the reconciler), budget (budget.py)
UNREADABLE = prom.Counter(
    "aianalysis_unreadable_objects_total",
    "Objects left alone because their status (or kopf's bookkeeping) could not be parsed, by kind.",
    ["kind"],
    registry=REGISTRY,
)
CATALOG_SYNC_LAST_SUCCESS = prom.Gauge(
    "aianalysis_catalog_sync_last_success_timestamp_seconds",
    "Unix time the catalog sync last heard from the API server (a list, a watch event or a watch "
    "that ended normally).",
    registry=REGISTRY,
)
INTERNAL_RETRIES = prom.Counter(
    "aianalysis_reconcile_retries_total",
    "Reconcile tries repeated after an error, by cause (cluster|provider|internal).",
    ["cause"],
    registry=REGISTRY,
)

ASSESSMENTS = prom.Counter(
    "aianalysis_assessments_total",
    "Effectiveness assessments made, by verdict (effective|partial|ineffective|unknown|not_executed) "
    "and reason (Healthy, StillFailing, SpecDrift, ClockSkew, ...).",
    ["verdict", "reason"],
    registry=REGISTRY,
)
ASSESSMENT_SCORE = prom.Histogram(
    "aianalysis_assessment_score",
    "Effectiveness score (0..1) of assessed executions that had data.",
    buckets=(0.1, 0.25, 0.5, 0.75, 0.9, 1.0),
    registry=REGISTRY,
)
NOTIFICATION_POSTS = prom.Counter(
    "aianalysis_notification_posts_total",
    "Posts of alerts to Alertmanager (one per request, per Alertmanager), by outcome (sent|rejected|"
    "failed: no answer or 5xx after every attempt|error: the pass could not derive its alerts).",
    ["outcome"],
    registry=REGISTRY,
)
NOTIFICATION_LAST_PASS = prom.Gauge(
    "aianalysis_notification_last_pass_timestamp_seconds",
    "When the leader last derived the alerts from the cluster and posted them (alert when it falls behind).",
    registry=REGISTRY,
)
NOTIFICATIONS_FIRING = prom.Gauge(
    "aianalysis_notifications_firing",
    "Alerts the operator holds firing in Alertmanager at its last pass, by alertname.",
    ["alertname"],
    registry=REGISTRY,
)
GUARD_BLOCKS = prom.Counter(
    "aianalysis_execution_guard_blocks_total",
    "Executions the blast-radius guards did not let start, by guard reason.",
    ["reason"],
    registry=REGISTRY,
)


def record_assessment(verdict: str, reason: str, score: float | None) -> None:
    ASSESSMENTS.labels(verdict=verdict, reason=reason).inc()
    if score is not None:
        ASSESSMENT_SCORE.observe(score)
