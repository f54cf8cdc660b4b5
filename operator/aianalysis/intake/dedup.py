"""One analysis per incident: the incident key is the resolved workload plus the signal type, so ten
Pods of one Deployment are one incident. While its analysis is open, and for a cooldown after it
ended, repeats only count (``status.intake.occurrences``: distinct alerts, by fingerprint and
``startsAt``, since Alertmanager re-sends a whole group whenever one of its alerts changes;
``lastSeenAt``: any notification); they never start a conversation. A resolved alert ends an
analysis that has not started, without a conversation.

The cluster is the source of truth: each analysis carries its incident's hash as a label, so after a
restart the tracker finds the latest analysis of an incident with one labelled list. In memory it
keeps, per incident, what it last saw; occurrence writes are coalesced (at most one status write per
incident per ``FLUSH_SECONDS``), so a storm costs a few writes per incident, not one per alert.
Memory is bounded: at most ``MAX_INCIDENTS`` incidents are remembered (the least recently alerted
one is forgotten first, counted in ``aianalysis_cache_evictions_total{cache="intake_incidents"}``;
its next alert finds its analysis in the cluster again), at most ``MAX_REMEMBERED_ALERTS`` alerts
per incident, and one lock per incident only while an alert of it is being handled.
"""

from __future__ import annotations

import asyncio
import calendar
import collections
import dataclasses
import datetime
import hashlib
import logging
import re
import time
from collections.abc import Callable
from typing import Any, Literal

from aianalysis import errors, kube, metrics, resources
from aianalysis.intake import mapping
from aianalysis.kit import lru
from aianalysis.kube import objects

log = logging.getLogger(__name__)

AIA = resources.AIANALYSIS_PLURAL
INCIDENT_LABEL = "kubernaut.io/incident"
FINGERPRINT_LABEL = "kubernaut.io/alert-fingerprint"
ALERT_NAME_LABEL = "kubernaut.io/alert-name"
SOURCE_LABEL = "kubernaut.io/source"
KEY_ANNOTATION = "kubernaut.io/incident-key"
RESOLVED_REASON = "AlertResolved"
FLUSH_SECONDS = 1.0
REFRESH_SECONDS = 30.0
MAX_REMEMBERED_ALERTS = 1000
MAX_INCIDENTS = 10_000
"""Incidents remembered in memory (a few hundred bytes each, plus their remembered alerts)."""

_Outcome = Literal["created", "repeat", "cancelled", "resolved"]


def incident_key(target: mapping.Target, signal_type: str) -> str:
    return f"{target.namespace or ''}/{target.kind}/{target.name}/{signal_type}"


def incident_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def analysis_name(target: mapping.Target, signal_type: str, key_hash: str, seq: int) -> str:
    """Deterministic and readable: ``<workload>-<signal>-<hash>-<n>`` (n-th analysis of the incident)."""
    return f"{_slug(target.name)[:40]}-{_slug(signal_type)[:24]}-{key_hash[:6]}-{seq}"


def _slug(value: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", value.lower()).strip("-") or "x"


@dataclasses.dataclass
class Incident:
    key: str
    namespace: str
    name: str | None = None
    uid: str | None = None
    seq: int = 0
    occurrences: int = 0
    first_seen: str | None = None
    last_seen: str | None = None
    ended_at: float | None = None
    """Epoch seconds the analysis ended; None while open."""
    cools_down: bool = True
    """False when it ended without a conversation (cancelled): the next alert starts a new one."""
    checked: float = 0.0
    firing: lru.LRU[str, None] = dataclasses.field(default_factory=lambda: lru.LRU(MAX_REMEMBERED_ALERTS))
    """Fingerprints of the alerts firing now (the most recent ``MAX_REMEMBERED_ALERTS``)."""
    counted: set[str] = dataclasses.field(default_factory=set)
    """Alerts (fingerprint@startsAt) already counted for the current analysis."""
    dirty: bool = False
    flushing: bool = False


@dataclasses.dataclass(frozen=True, kw_only=True)
class Incoming:
    alert: mapping.Mapped
    workload: mapping.Target
    business: resources.BusinessContext
    received: str


class Tracker:
    def __init__(
        self,
        api: kube.ApiClient,
        *,
        cooldown_seconds: float,
        clock: Callable[[], float] = time.time,
        on_cancelled: Callable[[str], object] = lambda uid: None,
    ) -> None:
        self._api = api
        self._cooldown = cooldown_seconds
        self._clock = clock
        self._on_cancelled = on_cancelled
        self._incidents: lru.LRU[str, Incident] = lru.LRU(
            MAX_INCIDENTS, on_evict=metrics.CACHE_EVICTIONS.labels(cache="intake_incidents").inc
        )
        self._locks: dict[str, asyncio.Lock] = {}
        self._lock_users: collections.Counter[str] = collections.Counter()
        self._flushes: set[asyncio.Task[None]] = set()

    async def handle(self, incoming: Incoming) -> _Outcome:
        key = incident_key(incoming.workload, incoming.alert.signal.type)
        lock = self._locks.setdefault(key, asyncio.Lock())
        self._lock_users[key] += 1
        try:
            async with lock:
                return await self._handle(key, incoming)
        finally:
            self._lock_users[key] -= 1
            if self._lock_users[key] <= 0:  # nobody holds or waits for it: the map stays small
                del self._lock_users[key]
                del self._locks[key]

    @property
    def sizes(self) -> dict[str, int]:
        """How many entries the in-memory maps hold (tests, debugging)."""
        return {"incidents": len(self._incidents), "locks": len(self._locks)}

    async def _handle(self, key: str, incoming: Incoming) -> _Outcome:
        incident = await self._current(key, incoming.alert.analysis_namespace)
        if incoming.alert.status == "resolved":
            return await self._resolved(incident, incoming)
        incident.firing[incoming.alert.fingerprint] = None
        if self._active(incident):
            self._count(incident, incoming)
            self._schedule_flush(incident)
            return "repeat"
        await self._create(incident, incoming)
        return "created"

    def _count(self, incident: Incident, incoming: Incoming) -> None:
        alert = f"{incoming.alert.fingerprint}@{incoming.alert.signal.firing_time}"
        if alert not in incident.counted:
            incident.occurrences += 1
            if len(incident.counted) < MAX_REMEMBERED_ALERTS:
                incident.counted.add(alert)
        incident.last_seen = incoming.received
        self._schedule_flush(incident)

    async def aclose(self) -> None:
        """Writes what is pending (bounded: one write per incident)."""
        if self._flushes:
            await asyncio.wait(set(self._flushes), timeout=10.0)

    def _active(self, incident: Incident) -> bool:
        if incident.name is None:
            return False
        if incident.ended_at is None:
            return True
        return incident.cools_down and self._clock() - incident.ended_at < self._cooldown

    async def _current(self, key: str, namespace: str) -> Incident:
        incident = self._incidents.get(key)
        if incident is None:
            incident = Incident(key=key, namespace=namespace)
            self._incidents[key] = incident
            await self._load(incident)
        elif incident.name is not None and self._clock() - incident.checked > REFRESH_SECONDS:
            await self._refresh(incident)
        return incident

    async def _load(self, incident: Incident) -> None:
        """The latest analysis of this incident in the cluster (after a restart, or the first time)."""
        selector = f"{INCIDENT_LABEL}={incident_hash(incident.key)}"
        found = await objects.list_objects(
            self._api, plural=AIA, namespace=incident.namespace, label_selector=selector
        )
        items = [i for i in found if _seq(i) is not None]
        if items:
            self._adopt(incident, max(items, key=lambda i: _seq(i) or 0))

    async def _refresh(self, incident: Incident) -> None:
        assert incident.name is not None
        body = await objects.get(self._api, incident.namespace, AIA, incident.name)
        if body is None:
            self._forget_analysis(incident)
            return
        self._adopt(incident, body)

    def _adopt(self, incident: Incident, body: dict[str, Any]) -> None:
        meta = body["metadata"]
        st = body.get("status") or {}
        intake = st.get("intake") or {}
        incident.name, incident.uid = meta["name"], meta.get("uid")
        incident.seq = max(incident.seq, _seq(body) or 0)
        incident.occurrences = max(incident.occurrences, int(intake.get("occurrences") or 1))
        incident.first_seen = incident.first_seen or intake.get("firstSeenAt")
        incident.last_seen = incident.last_seen or intake.get("lastSeenAt")
        incident.checked = self._clock()
        if st.get("phase") in ("Completed", "Failed"):
            incident.ended_at = _epoch(st.get("completedAt")) or self._clock()
            incident.cools_down = st.get("reason") != RESOLVED_REASON
        else:
            incident.ended_at = None

    def _forget_analysis(self, incident: Incident) -> None:
        incident.name = incident.uid = None
        incident.ended_at = None
        incident.occurrences = 0
        incident.counted = set()
        incident.first_seen = incident.last_seen = None
        incident.dirty = False

    async def _create(self, incident: Incident, incoming: Incoming) -> None:
        alert = incoming.alert
        seq = incident.seq + 1
        key_hash = incident_hash(incident.key)
        name = analysis_name(incoming.workload, alert.signal.type, key_hash, seq)
        spec = resources.AIAnalysisSpec(
            signal=alert.signal,
            resource=resources.ResourceRef(
                kind=incoming.workload.kind,
                name=incoming.workload.name,
                namespace=incoming.workload.namespace,
            ),
            cluster=alert.cluster,
            business_context=incoming.business,
        )
        body = resources.new_aianalysis(
            name=name,
            namespace=incident.namespace,
            spec=spec,
            labels={
                INCIDENT_LABEL: key_hash,
                FINGERPRINT_LABEL: mapping.label_value(alert.fingerprint) or "none",
                ALERT_NAME_LABEL: mapping.label_value(alert.alert_name) or "none",
                SOURCE_LABEL: mapping.SOURCE,
            },
            annotations={KEY_ANNOTATION: incident.key},
        )
        created = await objects.create(self._api, body, plural=AIA)
        if created is None:
            # Someone (an earlier life of this process) created it: adopt it as the open analysis.
            await self._load(incident)
            self._count(incident, incoming)
            return
        incident.name, incident.uid, incident.seq = name, created["metadata"].get("uid"), seq
        incident.occurrences, incident.ended_at, incident.cools_down = 1, None, True
        incident.counted = {f"{alert.fingerprint}@{alert.signal.firing_time}"}
        incident.first_seen = incident.last_seen = incoming.received
        incident.checked = self._clock()
        self._schedule_flush(incident)
        log.info("alert %s → AIAnalysis %s/%s", alert.alert_name, incident.namespace, name)

    async def _resolved(self, incident: Incident, incoming: Incoming) -> _Outcome:
        incident.firing.pop(incoming.alert.fingerprint)
        if incident.name is not None and incident.ended_at is not None and not incident.firing:
            await self._note_resolved(incident, incoming.received)  # the assessment reads it
            return "resolved"
        if incident.name is None or incident.ended_at is not None or incident.firing:
            return "resolved"
        for _ in range(3):  # each retry follows a conflicting write by someone else
            body = await objects.get(self._api, incident.namespace, AIA, incident.name)
            if body is None:
                self._forget_analysis(incident)
                return "resolved"
            phase = (body.get("status") or {}).get("phase") or "Pending"
            if phase != "Pending":
                self._adopt(incident, body)
                return "resolved"
            if await self._cancel(incident, body, incoming.received):
                return "cancelled"
        return "resolved"

    async def _note_resolved(self, incident: Incident, received: str) -> None:
        """``status.intake.resolvedAt`` on the incident's analysis, bound to the analysis as read (its
        uid and resourceVersion; the counts stay). Best effort: the assessment then reports the alert
        unknown."""
        assert incident.name is not None
        try:
            body = await objects.get(self._api, incident.namespace, AIA, incident.name)
            if body is None:
                self._forget_analysis(incident)
                return
            intake = dict((body.get("status") or {}).get("intake") or {})
            intake.update(resolvedAt=received, occurrences=max(incident.occurrences, 1))  # a required field
            written = await objects.write_status_at(self._api, body, plural=AIA, fields={"intake": intake})
        except errors.ClusterError as exc:
            log.warning("resolvedAt of %s/%s not written: %s", incident.namespace, incident.name, exc)
            return
        if written is objects.Written.DROPPED:
            self._forget_analysis(incident)

    async def _cancel(self, incident: Incident, body: dict[str, Any], received: str) -> bool:
        meta = body["metadata"]
        message = "every alert of this incident resolved before the analysis started; no LLM conversation"
        now = datetime.datetime.fromtimestamp(self._clock(), tz=datetime.UTC)
        ended = resources.AIAnalysisStatus(
            phase="Completed",
            reason=RESOLVED_REASON,
            message=message,
            observed_generation=meta.get("generation"),
            completed_at=resources.timestamp(now),
            needs_human_review=False,
            conditions=[
                resources.condition(
                    resources.READY,
                    "True",
                    RESOLVED_REASON,
                    message,
                    now=now,
                    generation=meta.get("generation"),
                )
            ],
        )
        written = await objects.write_status_at(self._api, body, plural=AIA, fields=ended.merge_patch())
        if written is not objects.Written.OK:  # changed or gone since read: the caller reads again
            return False
        incident.ended_at, incident.cools_down = self._clock(), False
        log.info("AIAnalysis %s/%s: %s", incident.namespace, meta["name"], message)
        if meta.get("uid"):
            self._on_cancelled(meta["uid"])
        return True

    def _schedule_flush(self, incident: Incident) -> None:
        incident.dirty = True
        if incident.flushing:
            return
        incident.flushing = True
        task = asyncio.get_running_loop().create_task(
            self._flush(incident), name=f"intake-flush-{incident.name}"
        )
        self._flushes.add(task)
        task.add_done_callback(self._flushes.discard)

    async def _flush(self, incident: Incident) -> None:
        try:
            while incident.dirty and incident.name is not None:
                incident.dirty = False
                await self._write_occurrences(incident)
                if incident.dirty:
                    await asyncio.sleep(FLUSH_SECONDS)
        except errors.AIAnalysisError as exc:
            log.warning("occurrences of %s/%s not written: %s", incident.namespace, incident.name, exc)
        finally:
            incident.flushing = False

    async def _write_occurrences(self, incident: Incident) -> None:
        """The counters, written onto the analysis they were counted for (its uid) as it is now
        (its resourceVersion): read, then write; a write that lost a race is tried again."""
        name, uid = incident.name, incident.uid
        assert name is not None
        intake = resources.IntakeStatus(
            occurrences=incident.occurrences,
            first_seen_at=incident.first_seen,
            last_seen_at=incident.last_seen,
        )
        body = await objects.get(self._api, incident.namespace, AIA, name)
        if body is None or (uid is not None and body["metadata"].get("uid") != uid):
            if incident.name == name:
                self._forget_analysis(incident)
            return
        written = await objects.write_status_at(self._api, body, plural=AIA, fields={"intake": intake.wire()})
        if written is objects.Written.DROPPED:
            if incident.name == name:
                self._forget_analysis(incident)
            return
        if incident.name != name or written is objects.Written.CONFLICT:
            incident.dirty = True  # a new analysis of the incident meanwhile, or a race lost: again
            return
        if (body.get("status") or {}).get("phase") in ("Completed", "Failed"):
            self._adopt(incident, body)
        incident.checked = self._clock()


def _seq(body: dict[str, Any]) -> int | None:
    tail = body.get("metadata", {}).get("name", "").rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else None


def _epoch(stamp: str | None) -> float | None:
    parsed = resources.parse_timestamp(stamp)
    return None if parsed is None else float(calendar.timegm(parsed.utctimetuple()))
