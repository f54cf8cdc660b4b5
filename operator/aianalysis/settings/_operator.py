"""The rest of the operator process: the catalog and business context, the effectiveness
assessment, the Alertmanager intake, leader election, logs and endpoints, the MCP server."""

from __future__ import annotations

import re
from typing import Annotated, Literal

import pydantic

from aianalysis.settings import _fields


def _signal_pair(entry: str) -> bool:
    return entry.count("=") == 1 and all(part.strip() for part in entry.split("="))


def _label_prefix(prefix: str) -> bool:
    return re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?/", prefix) is not None


class CatalogSettings(_fields.Group):
    """The catalog of RemediationWorkflows and how an incident is matched to it: signal names and
    the business context read from namespaces."""

    sync_stale_seconds: Annotated[_fields.Seconds, _fields.Env("AIANALYSIS_CATALOG_SYNC_STALE_SECONDS")] = (
        900.0
    )
    """Readiness fails when the catalog sync has not heard from the API server for this long."""

    signal_types: Annotated[
        _fields.Names,
        pydantic.AfterValidator(
            _fields.Constraint("takes AlertName=SignalType pairs", _signal_pair, each=True)
        ),
    ] = ()
    """Extra ``AlertName=SignalType`` pairs (comma-separated) for signal normalization at analysis
    time, added to (and overriding) the built-in table in ``catalog/signals.py``."""

    business_label_prefixes: Annotated[
        _fields.Names,
        pydantic.AfterValidator(
            _fields.Constraint("takes prefixes like 'example.com/'", _label_prefix, each=True)
        ),
    ] = (
        "kubernaut.io/",
        "kubernaut.ai/",
    )
    """Prefixes (comma-separated) under which a namespace's labels and annotations state the business
    context of its incidents (environment, criticality, business unit, team, SLA, custom labels; the
    table is in ``catalog/business.py``); an earlier prefix wins. What an AIAnalysis spec states wins
    over the namespace."""


class AssessmentSettings(_fields.Group):
    """The effectiveness assessment (in the operator; read-only): did an execution work."""

    env_prefix = _fields.PREFIX + "ASSESSMENT_"

    window_seconds: _fields.Pause = 300.0
    """Stabilization window: how long after an execution ended its effect is assessed (a workflow's
    ``stabilizationWindow`` overrides it)."""

    max_clock_skew_seconds: _fields.Seconds = 30.0
    """If this process' clock and the API server's differ by more, the verdict is ``unknown``
    (``ClockSkew``): "since the execution" cannot be told apart then."""

    history_seconds: _fields.Pause = 86400.0
    """How far back earlier executions on the same target are fed into the next analysis."""

    recurrence_threshold: _fields.Tries = 2
    """An incident analysed again after this many ``effective`` executions on its target within
    the history goes to human review (``recurring_after_remediation``); 0 disables it."""


class IntakeSettings(_fields.Group):
    """The Alertmanager webhook receiver ``POST /api/v1/alertmanager`` (in the operator process)."""

    env_prefix = _fields.PREFIX + "INTAKE_"

    port: _fields.Port = 0
    """Port of the receiver (0 = no intake)."""

    token: Annotated[pydantic.SecretStr | None, pydantic.Field(repr=False)] = None
    """Bearer token Alertmanager must send (from a Secret); required when the intake is on. Never logged."""

    cooldown_seconds: Annotated[
        _fields.DurationSeconds,
        _fields.Env("AIANALYSIS_INTAKE_COOLDOWN", "AIANALYSIS_INTAKE_COOLDOWN_SECONDS"),
    ] = 3600.0
    """After an analysis ends, repeats of its incident start nothing for this long (``90m``, ``1h``,
    ``3600s`` or plain seconds)."""

    mapping_file: str | None = None
    """YAML file overriding the alert → AIAnalysis mapping (signal types, severities, defaults)."""

    queue_limit: _fields.Count = 5000
    """Alerts accepted but not yet processed; a payload that does not fit is answered 429."""

    def conflicts(self) -> list[str]:
        if self.port and not self.token:
            return [f"the intake ({self.env_name('port')}) needs {self.env_name('token')} (from a Secret)"]
        return []


class LeadershipSettings(_fields.Group):
    """Leader election: one of several operator replicas acts, the others stand by."""

    namespace: Annotated[str, _fields.Env("AIANALYSIS_LEADER_ELECTION_NAMESPACE")] = ""
    """Namespace of the Lease that lets one of several replicas act (empty: no leader election,
    for a single replica). The chart sets it to the release namespace."""

    lease_duration_seconds: _fields.Count = 15
    """How long a leader's Lease holds without renewal: a standby takes over at most this long
    (plus a 2 s retry) after the leader died."""

    identity: Annotated[str, _fields.Env("AIANALYSIS_LEADER_IDENTITY", "HOSTNAME")] = ""
    """This replica's name in the Lease (default: the pod name from ``HOSTNAME``)."""


class ObservabilitySettings(_fields.Group):
    """Logs, the metrics endpoint and the health endpoint (of every process)."""

    log_format: Annotated[
        Literal["text", "json"],
        pydantic.BeforeValidator(_fields.Choice(("text", "json"), "must be 'text' or 'json'")),
    ] = "text"
    """``text`` for people, ``json`` for log pipelines."""

    metrics_port: _fields.Port = 9090
    """Port of the Prometheus ``/metrics`` endpoint (0 disables it)."""

    health_port: _fields.Port = 8080
    """Port of kopf's liveness endpoint ``/healthz`` (0 disables it)."""


class ApiSettings(_fields.Group):
    """The Kubernetes API: how long one call may take (every process, kopf's own calls included)."""

    env_prefix = _fields.PREFIX + "API_"

    connect_timeout_seconds: _fields.Seconds = 10.0
    """One connection attempt (TCP connect and TLS handshake) gives up after this."""

    request_timeout_seconds: _fields.Seconds = 30.0
    """The longest one call may take, its retries and their waits included (a watch: its
    ``timeoutSeconds`` plus this); kopf's own calls get the same bound. A call to a server that
    accepts and never answers ends after this with a retryable error."""

    retry_after_max_seconds: _fields.Seconds = 10.0
    """The longest a ``Retry-After`` of a 429 or 503 is waited for before the call is tried again
    (the server may ask for hours; the call's own bound still holds)."""


class McpSettings(_fields.Group):
    """``aianalysis mcp``: the MCP server that lets an assistant read analyses and the catalog."""

    env_prefix = _fields.PREFIX + "MCP_"

    token: Annotated[pydantic.SecretStr | None, pydantic.Field(repr=False)] = None
    """``--transport http``: the bearer token clients must send (from a Secret). Without it the server
    only listens on a loopback address. Never logged."""
