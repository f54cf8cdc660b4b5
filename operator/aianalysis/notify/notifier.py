"""The notifier: a level-triggered pass of the leader, every ``interval_seconds``. It lists the
AIAnalyses and WorkflowExecutions, derives what should fire (``desired``), and posts it:

- **firing** alerts again at every pass, ending four intervals (at least 5 minutes) later — a
  leader that stops posting lets them lapse, a live one keeps them firing (Alertmanager deduplicates
  by labels, so a re-post is no new notification);
- **resolved** (``endsAt`` now) every alert it posted before, or that Alertmanager still holds from
  this operator (a previous leader's, found by the ``source`` label), that is no longer desired.

Nothing is remembered that the cluster and Alertmanager do not hold: a restart, or a new leader,
derives the same label sets and resolves what was acted on while nobody posted. A post that fails is
tried again at the next pass (the alerts to resolve are kept until a post of them succeeds).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import aianalysis.settings
from aianalysis import errors, kube, metrics, resources
from aianalysis.kube import objects
from aianalysis.notify import alertmanager, desired

log = logging.getLogger(__name__)

_Key = tuple[tuple[str, str], ...]
LAPSE_INTERVALS, MIN_LAPSE_SECONDS = 4, 300.0
"""Firing alerts end four intervals after each post, and no sooner than 5 minutes (Alertmanager's
default ``resolve_timeout``): a restart or a leader change takes less, and must not let an alert
lapse only to fire again."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Pass:
    """What one pass posted."""

    firing: int
    resolved: int
    outcomes: tuple[alertmanager.Outcome, ...]


class Notifier:
    def __init__(
        self,
        *,
        api: kube.ApiClient,
        settings: aianalysis.settings.Settings,
        namespaces: Sequence[str] = (),
        client: alertmanager.AlertmanagerClient | None = None,
        clock: resources.Clock = resources.utcnow,
    ) -> None:
        s = settings.notify
        self._api, self._namespaces, self._clock = api, tuple(namespaces), clock
        self._client = client or alertmanager.AlertmanagerClient(alertmanager.config_from(settings))
        self._interval = s.interval_seconds
        self._options = desired.NotifyOptions(
            kinds=frozenset(s.kinds),
            console_url=s.console_url,
            pending_seconds=s.pending_seconds,
            max_age_seconds=s.max_age,
            cluster=s.cluster,
        )
        self._matchers = (f'{desired.SOURCE_LABEL}="{desired.SOURCE}"', f'cluster="{s.cluster or ""}"')
        self._posted: dict[_Key, desired.Notification] = {}
        self._task: asyncio.Task[None] | None = None

    @classmethod
    def create(
        cls, settings: aianalysis.settings.Settings, api: kube.ApiClient, *, namespaces: Sequence[str] = ()
    ) -> Notifier | None:
        """The process' notifier; None when no Alertmanager is configured."""
        if not settings.notify.alertmanager_urls:
            return None
        return cls(api=api, settings=settings, namespaces=namespaces)

    def start(self) -> None:
        """Idempotent (a retried startup starts one loop)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop(), name="notifier")

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self._client.aclose()

    async def _loop(self) -> None:
        """Supervised: a pass that fails is logged and counted, and the next one runs on time."""
        while True:
            try:
                await self.run_once()
            except errors.AIAnalysisError as exc:
                log.warning("notification pass: cannot read the cluster: %s", exc)
                metrics.NOTIFICATION_POSTS.labels(outcome="error").inc()
            except Exception:
                log.exception("notification pass failed")
                metrics.NOTIFICATION_POSTS.labels(outcome="error").inc()
            await asyncio.sleep(self._interval)

    async def run_once(self) -> Pass:
        analyses, executions = await self._objects()
        now = self._clock()
        # Off the event loop: ~0.5 s of CPU for 4,000 objects on a loaded machine.
        derived = await asyncio.to_thread(
            desired.derive, analyses, executions, now=now, options=self._options
        )
        wanted = {alert.key: alert for alert in derived}
        known = dict(self._posted)
        for alert in await self._client.active(self._matchers) or []:
            held = _held(alert, now=now)
            if held is not None and self._mine(held):
                known.setdefault(held.key, held)
        gone = [alert for key, alert in known.items() if key not in wanted]
        ends = now + datetime.timedelta(seconds=max(self._interval * LAPSE_INTERVALS, MIN_LAPSE_SECONDS))
        batch = [alert.wire(ends_at=ends) for alert in wanted.values()]
        batch += [alert.wire(ends_at=now) for alert in gone]
        outcomes = await self._client.post(batch) if batch else []
        for outcome in outcomes:
            metrics.NOTIFICATION_POSTS.labels(outcome=outcome).inc()
        delivered = all(outcome == "sent" for outcome in outcomes)
        self._posted = {**wanted, **({} if delivered else {a.key: a for a in gone})}
        _firing_gauge(wanted.values())
        metrics.NOTIFICATION_LAST_PASS.set_to_current_time()
        return Pass(firing=len(wanted), resolved=len(gone), outcomes=tuple(outcomes))

    def _mine(self, alert: desired.Notification) -> bool:
        """An alert of this operator's namespaces (``aianalysis run --namespace``), to resolve if stale."""
        return not self._namespaces or alert.labels.get("namespace") in self._namespaces

    async def _objects(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        analyses: list[dict[str, Any]] = []
        executions: list[dict[str, Any]] = []
        for namespace in self._namespaces or ("",):
            analyses += await objects.list_objects(
                self._api, plural=resources.AIANALYSIS_PLURAL, namespace=namespace
            )
            executions += await objects.list_objects(
                self._api, plural=resources.WORKFLOWEXECUTION_PLURAL, namespace=namespace
            )
        return analyses, executions


def _held(alert: Mapping[str, Any], *, now: datetime.datetime) -> desired.Notification | None:
    """An alert Alertmanager holds firing, to be resolved as it was posted (same labels, its text);
    None when it is resolved already (``endsAt`` passed) or unreadable."""
    labels, annotations = alert.get("labels"), alert.get("annotations") or {}
    starts, ends = (
        resources.parse_timestamp(alert.get("startsAt")),
        resources.parse_timestamp(alert.get("endsAt")),
    )
    if not isinstance(labels, dict) or starts is None or (ends is not None and ends <= now):
        return None
    return desired.Notification(
        labels={str(k): str(v) for k, v in labels.items()},
        annotations={str(k): str(v) for k, v in annotations.items()},
        starts_at=starts,
    )


def _firing_gauge(alerts: Any) -> None:
    counts = dict.fromkeys(desired.ALERTNAMES.values(), 0)
    for alert in alerts:
        counts[alert.labels["alertname"]] += 1
    for alertname, count in counts.items():
        metrics.NOTIFICATIONS_FIRING.labels(alertname=alertname).set(count)
