"""Notifications: the alerts the operator posts to Alertmanager for what needs a person."""

from __future__ import annotations

from typing import Annotated

import pydantic

from aianalysis.settings import _fields

#: What can notify, one Alertmanager ``alertname`` each (``notify.desired``); all are on by default.
NOTIFICATION_KINDS: tuple[str, ...] = (
    "awaiting_approval",
    "human_review",
    "recovery_exhausted",
    "recurring",
    "execution_failed",
    "execution_refused",
    "execution_blocked",
    "ineffective",
    "budget_exhausted",
)

_URL = _fields.Constraint(
    "must start with http:// or https://", lambda url: url.startswith(("http://", "https://")), each=True
)


class NotificationSettings(_fields.Group):
    """Alerts posted to Alertmanager's v2 API (``POST /api/v2/alerts``) for what needs a person; the
    team's Alertmanager routes them (Slack, PagerDuty, Teams, e-mail), groups, silences and inhibits
    them. Off unless ``alertmanager_urls`` is set; only the leader posts."""

    env_prefix = _fields.PREFIX + "NOTIFY_"

    alertmanager_urls: Annotated[_fields.Names, pydantic.AfterValidator(_URL)] = ()
    """Alertmanager base URLs, comma-separated (each replica of an Alertmanager cluster: every alert
    goes to each, as Prometheus does), e.g. ``http://alertmanager-operated.monitoring.svc:9093``.
    Empty: no notifications."""

    token_file: str | None = None
    """File holding a bearer token for Alertmanager (behind an authenticating proxy), re-read on
    every post."""

    ca_file: str | None = None
    """CA bundle that signs Alertmanager's serving certificate (default: the system's)."""

    console_url: Annotated[
        str,
        pydantic.AfterValidator(
            _fields.Constraint(
                "must start with http:// or https://", lambda url: url.startswith(("http://", "https://"))
            )
        ),
    ] = "http://127.0.0.1:8765"
    """Base URL of the console a notification links to (``<base>/ns/<namespace>/aia/<name>``); the
    default is where ``aianalysis console`` serves on the reader's own machine."""

    kinds: Annotated[
        _fields.Names,
        pydantic.AfterValidator(
            _fields.Constraint(
                "must each be one of " + ", ".join(NOTIFICATION_KINDS),
                lambda kind: kind in NOTIFICATION_KINDS,
                each=True,
            )
        ),
    ] = NOTIFICATION_KINDS
    """Which notifications are on, comma-separated: ``awaiting_approval``, ``human_review``,
    ``recovery_exhausted``, ``recurring``, ``execution_failed``, ``execution_refused``,
    ``execution_blocked``, ``ineffective``, ``budget_exhausted`` (default: all)."""

    interval_seconds: _fields.Seconds = 60.0
    """How often the leader derives the alerts from the cluster's objects and posts them: firing
    ones are re-posted (each post ends them 4 intervals, at least 5 minutes, later: a restart or a
    leader change does not let them lapse), acted-on ones resolved."""

    pending_seconds: _fields.Pause = 30.0
    """How long a selection waits before "awaiting approval" fires (autoExecute usually runs it
    within seconds; that needs no person)."""

    max_age: _fields.DurationSeconds = 86400.0
    """Objects that ended longer ago than this (``24h``, ``7d``) notify nothing: enabling
    notifications on a cluster that keeps its history does not page for last month's incidents."""

    timeout_seconds: _fields.Seconds = 10.0
    """Per-request timeout of a post to Alertmanager."""

    attempts: _fields.Count = 3
    """Tries per post (a refused connection, a timeout, 429 or 5xx is tried again after 1 s, 2 s, …);
    what is still unsent is posted at the next interval."""

    cluster: str | None = None
    """Value of the ``cluster`` label on every alert (one Alertmanager, several clusters); it also
    scopes which alerts in Alertmanager this operator resolves."""
