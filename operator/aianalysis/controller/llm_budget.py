"""The LLM budget: how many conversations may start per rolling hour and how many tokens may be
billed per rolling day. Over budget, analyses wait (``Pending``, ``BudgetExhausted``) and start when
the window moves, most severe first, then oldest first; none is dropped or failed.

:class:`Spending` is pure (values and a ``now`` in, values out). :class:`BudgetGate` adds the waiting: an
ordered queue of tickets and one timer task that sleeps on an injectable :class:`Timer` until the
ledger frees up, so tests move the window by advancing a clock instead of sleeping an hour.

With a :class:`Store` (the ConfigMap ``aianalysis-llm-budget`` in the operator's namespace, see
``budget_store``) what was spent outlives the process: the gate adopts the record when this replica
starts leading (:meth:`BudgetGate.load`), and writes every grant (before the conversation starts)
and every billed response to it, conditionally on the version it read; a lost race reads, merges
and writes again (a few times, then the next spending tries again). The record is :class:`Spent`:
the conversation starts of the last hour and the tokens of the last day in minute buckets, so it
stays small (a few tens of kB at most).
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import heapq
import itertools
import json
import logging
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol

from aianalysis import errors, metrics, settings
from aianalysis.analysis import llm

log = logging.getLogger(__name__)

HOUR_SECONDS = 3600.0
DAY_SECONDS = 86400.0
_Kind = Literal["conversations", "tokens"]
SEVERITY_RANK: dict[str, int] = {"critical": 0, "high": 1, "medium": 2, "low": 3}


class Timer(Protocol):
    """Wall-clock seconds and a way to wait for them (the gate's only notion of time)."""

    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class SystemTimer:
    def now(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Allowance:
    conversations_per_hour: int | None = None
    tokens_per_day: int | None = None

    @classmethod
    def from_settings(cls, config: settings.Settings) -> Allowance:
        if config.llm.provider == "offline":  # the deterministic analyzers cost nothing
            return cls()
        return cls(
            conversations_per_hour=config.budget.conversations_per_hour,
            tokens_per_day=config.budget.tokens_per_day,
        )

    @property
    def unlimited(self) -> bool:
        return self.conversations_per_hour is None and self.tokens_per_day is None


MAX_RECORDED_STARTS = 10_000
"""Conversation starts a :class:`Spent` record keeps (the latest; far above any sensible limit)."""
TOKEN_BUCKET_SECONDS = 60.0


@dataclasses.dataclass(frozen=True)
class Spent:
    """What was spent, as recorded: conversation start times, and (time, tokens) pairs whose times
    are rounded up to the minute (a bucket leaves the window at most a minute late, never early)."""

    starts: tuple[float, ...] = ()
    tokens: tuple[tuple[float, int], ...] = ()

    def plus(self, other: Spent) -> Spent:
        buckets: dict[float, int] = {}
        for at, count in (*self.tokens, *other.tokens):
            end = math.ceil(at / TOKEN_BUCKET_SECONDS) * TOKEN_BUCKET_SECONDS
            buckets[end] = buckets.get(end, 0) + count
        starts = sorted((*self.starts, *other.starts))[-MAX_RECORDED_STARTS:]
        return Spent(starts=tuple(starts), tokens=tuple(sorted(buckets.items())))

    def within(self, now: float) -> Spent:
        """Only what still counts at ``now``."""
        return Spent(
            starts=tuple(at for at in self.starts if at > now - HOUR_SECONDS),
            tokens=tuple((at, n) for at, n in self.tokens if at > now - DAY_SECONDS),
        )

    def encode(self) -> dict[str, str]:
        return {
            "conversations": json.dumps([round(at, 3) for at in self.starts]),
            "tokens": json.dumps([[at, n] for at, n in self.tokens]),
        }

    @classmethod
    def decode(cls, data: dict[str, str]) -> Spent:
        """The record as written by :meth:`encode`; entries that are not (a changed or damaged
        record) are skipped, never fatal."""
        starts: list[float] = []
        tokens: list[tuple[float, int]] = []
        try:
            raw_starts = json.loads(data.get("conversations") or "[]")
            raw_tokens = json.loads(data.get("tokens") or "[]")
        except ValueError:
            log.warning("LLM budget record unreadable: starting from what this process counts")
            return cls()
        for at in raw_starts if isinstance(raw_starts, list) else ():
            if isinstance(at, int | float) and math.isfinite(at):
                starts.append(float(at))
        for entry in raw_tokens if isinstance(raw_tokens, list) else ():
            if (
                isinstance(entry, list)
                and len(entry) == 2
                and isinstance(entry[0], int | float)
                and math.isfinite(entry[0])
                and isinstance(entry[1], int)
                and entry[1] > 0
            ):
                tokens.append((float(entry[0]), entry[1]))
        return cls().plus(cls(starts=tuple(starts), tokens=tuple(tokens)))


class Spending:
    """Pure bookkeeping of what was spent when; ``now`` is always passed in."""

    def __init__(self, limits: Allowance) -> None:
        self.limits = limits
        self._starts: collections.deque[float] = collections.deque()
        self._tokens: collections.deque[tuple[float, int]] = collections.deque()
        self._token_sum = 0

    def start(self, now: float) -> None:
        self._starts.append(now)

    def add_tokens(self, count: int, now: float) -> None:
        if count > 0:
            self._tokens.append((now, count))
            self._token_sum += count

    def used(self, now: float) -> dict[_Kind, int]:
        self._prune(now)
        return {"conversations": len(self._starts), "tokens": self._token_sum}

    def exhausted(self, now: float) -> _Kind | None:
        """Which limit forbids a new conversation now, if any."""
        used = self.used(now)
        limit = self.limits.conversations_per_hour
        if limit is not None and used["conversations"] >= limit:
            return "conversations"
        if self.limits.tokens_per_day is not None and used["tokens"] >= self.limits.tokens_per_day:
            return "tokens"
        return None

    def next_free_at(self, now: float) -> float | None:
        """When the window will have moved enough for a new conversation (None: it may start now).
        A zero limit never frees up: that is ``math.inf``."""
        kind = self.exhausted(now)
        if kind == "conversations":
            limit = self.limits.conversations_per_hour or 0
            if limit == 0:
                return float("inf")
            # The start that must leave the window for one more to fit.
            return self._starts[len(self._starts) - limit] + HOUR_SECONDS
        if kind == "tokens":
            limit = self.limits.tokens_per_day or 0
            if limit == 0:
                return float("inf")
            remaining = self._token_sum
            for at, count in self._tokens:
                remaining -= count
                if remaining < limit:
                    return at + DAY_SECONDS
        return None

    def describe(self, now: float) -> str:
        used = self.used(now)
        parts = []
        if self.limits.conversations_per_hour is not None:
            limit = self.limits.conversations_per_hour
            parts.append(f"{used['conversations']} of {limit} conversations in the last hour")
        if self.limits.tokens_per_day is not None:
            parts.append(f"{used['tokens']} of {self.limits.tokens_per_day} tokens in the last 24 hours")
        return "; ".join(parts)

    def spent(self, now: float) -> Spent:
        """What still counts at ``now``, as a record."""
        self._prune(now)
        return Spent(starts=tuple(self._starts), tokens=tuple(self._tokens))

    def restore(self, spent: Spent) -> None:
        """Replace what was spent by ``spent`` (a record read back)."""
        self._starts = collections.deque(sorted(spent.starts))
        self._tokens = collections.deque(sorted(spent.tokens))
        self._token_sum = sum(n for _, n in self._tokens)

    def _prune(self, now: float) -> None:
        while self._starts and self._starts[0] <= now - HOUR_SECONDS:
            self._starts.popleft()
        while self._tokens and self._tokens[0][0] <= now - DAY_SECONDS:
            self._token_sum -= self._tokens.popleft()[1]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Ticket:
    """One conversation that wants to start. ``key`` identifies it across handler re-entries (the
    object's uid and attempt number), so a re-entry never spends the budget twice."""

    key: str
    uid: str
    severity: str
    created: str  # RFC 3339 creationTimestamp: sorts chronologically as text

    def order(self) -> tuple[int, str]:
        return (SEVERITY_RANK.get(self.severity, len(SEVERITY_RANK)), self.created)


OnWait = Callable[[str], Awaitable[None]]
SAVE_ATTEMPTS = 5
SAVE_WAIT_SECONDS = 10.0
"""How long a grant waits for its record write before the conversation starts anyway."""


class Store(Protocol):
    """Where the spending is kept between processes: a record read with a version, written only
    if still at that version."""

    async def read(self) -> tuple[dict[str, str], object]: ...

    async def write(self, data: dict[str, str], version: object) -> bool:
        """False: the record changed since it was read (nothing written)."""
        ...


class BudgetGate:
    """Admits conversations within the ledger's limits; the rest wait in severity-then-age order."""

    def __init__(self, limits: Allowance, *, clock: Timer | None = None, store: Store | None = None) -> None:
        self.ledger = Spending(limits)
        self.clock: Timer = clock or SystemTimer()
        self._store = store
        self._unsaved_starts: list[float] = []
        self._unsaved_tokens: list[tuple[float, int]] = []
        """Spent by this process since its last successful record write (appended in order)."""
        self._dirty = False
        self._saving: asyncio.Task[None] | None = None
        self._granted: dict[str, float] = {}
        self._waiting: list[tuple[tuple[int, str], int, Ticket, asyncio.Future[bool]]] = []
        self._seq = itertools.count()
        self._timer: asyncio.Task[None] | None = None
        self._wakeup = asyncio.Event()

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    async def acquire(self, ticket: Ticket, *, on_wait: OnWait) -> bool:
        """Returns once the conversation may start (it is counted then), or once the ticket was
        withdrawn; True if it had to wait (the caller re-reads its object then).
        ``on_wait(message)`` is awaited once, before waiting, to make the wait visible."""
        if ticket.key in self._granted or self.ledger.limits.unlimited:
            return False
        now = self.clock.now()
        if not self._waiting and self.ledger.exhausted(now) is None:
            self._grant(ticket.key, now)
            await self._saved()
            return False
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (ticket.order(), next(self._seq), ticket, future))
        self._changed()
        try:
            await on_wait(f"waiting for LLM budget: {self.ledger.describe(now)}")
            await future
        finally:
            if not future.done():  # cancelled (object deleted, operator stopping) or on_wait failed
                future.cancel()
            self._forget(future)
        if future.result():
            await self._saved()
        return True

    def withdraw(self, uid: str) -> bool:
        """Releases, without a grant, the waiting tickets of an analysis that ended meanwhile."""
        mine = [entry for entry in self._waiting if entry[2].uid == uid]
        for entry in mine:
            if not entry[3].done():
                entry[3].set_result(False)
            self._forget(entry[3])
        return bool(mine)

    def observe(self, request: llm.RequestRecord) -> None:
        """The provider's ``on_request`` hook: billed tokens count against the daily limit."""
        billed = (
            request.input_tokens
            + request.output_tokens
            + request.cache_read_tokens
            + request.cache_write_tokens
        )
        now = self.clock.now()
        self.ledger.add_tokens(billed, now)
        if billed > 0 and self._store is not None:
            self._unsaved_tokens.append((now, billed))
            self._schedule_save()
        self._publish()

    def poke(self) -> None:
        """Re-check the window now (a test's clock moved; the timer also does this by itself)."""
        self._wakeup.set()

    async def load(self) -> None:
        """Adopt the recorded spending (at startup, once this replica leads): a restart or a
        failover continues the window instead of starting a new one. Raises ``ClusterError`` (the
        API server may come back: startup is retried); a refusal for good (no right to the
        ConfigMap, no such namespace) is logged once and the budget is then kept in memory only,
        rather than the operator never starting."""
        if self._store is None:
            return
        try:
            data, _ = await self._store.read()
        except errors.ClusterRejectedError as exc:
            log.error("LLM budget record unusable, the budget is counted in memory only: %s", exc)
            self._store = None
            self._unsaved_starts.clear()
            self._unsaved_tokens.clear()
            return
        now = self.clock.now()
        self.ledger.restore(Spent.decode(data).plus(self._unsaved()).within(now))
        log.info("LLM budget record loaded: %s", self.ledger.describe(now) or "no limit")
        self._publish()
        self.poke()

    async def aclose(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            await asyncio.gather(self._timer, return_exceptions=True)
        if self._saving is not None:
            await asyncio.wait({self._saving}, timeout=SAVE_WAIT_SECONDS)
            self._saving.cancel()
            await asyncio.gather(self._saving, return_exceptions=True)

    def _unsaved(self) -> Spent:
        return Spent(starts=tuple(self._unsaved_starts), tokens=tuple(self._unsaved_tokens))

    def _schedule_save(self) -> None:
        self._dirty = True
        if self._saving is None or self._saving.done():
            self._saving = asyncio.get_running_loop().create_task(self._save(), name="llm-budget-save")

    async def _saved(self) -> None:
        """Wait (bounded) until what was spent so far is in the record."""
        if self._saving is not None and not self._saving.done():
            await asyncio.wait({self._saving}, timeout=SAVE_WAIT_SECONDS)

    async def _save(self) -> None:
        assert self._store is not None
        while self._dirty:
            self._dirty = False
            pending = self._unsaved()
            for _ in range(SAVE_ATTEMPTS):  # each retry follows another writer's write
                try:
                    data, version = await self._store.read()
                    now = self.clock.now()
                    record = Spent.decode(data).plus(pending).within(now)
                    written = await self._store.write(record.encode(), version)
                except errors.AIAnalysisError as exc:
                    log.warning("LLM budget record not written (the next spending tries again): %s", exc)
                    return
                if written:
                    del self._unsaved_starts[: len(pending.starts)]
                    del self._unsaved_tokens[: len(pending.tokens)]
                    self.ledger.restore(record.plus(self._unsaved()).within(now))
                    self._publish()
                    break
            else:
                log.warning("LLM budget record not written: %d conflicting writes", SAVE_ATTEMPTS)
                return

    def _grant(self, key: str, now: float) -> None:
        self.ledger.start(now)
        if self._store is not None:
            self._unsaved_starts.append(now)
            self._schedule_save()
        self._granted[key] = now
        for old in [k for k, at in self._granted.items() if at <= now - DAY_SECONDS]:
            del self._granted[old]
        self._publish()

    def _forget(self, future: asyncio.Future[bool]) -> None:
        if any(entry[3] is future for entry in self._waiting):
            self._waiting = [entry for entry in self._waiting if entry[3] is not future]
            heapq.heapify(self._waiting)
            self._publish()

    def _changed(self) -> None:
        self._publish()
        if self._timer is None or self._timer.done():
            self._timer = asyncio.get_running_loop().create_task(self._run(), name="llm-budget")
        self._wakeup.set()

    async def _run(self) -> None:
        while self._waiting:
            now = self.clock.now()
            free_at = self.ledger.next_free_at(now)
            if free_at is None:
                self._admit_next(now)
                continue
            self._wakeup.clear()
            sleeper = asyncio.ensure_future(self.clock.sleep(max(0.0, min(free_at - now, DAY_SECONDS))))
            woken = asyncio.ensure_future(self._wakeup.wait())
            await asyncio.wait({sleeper, woken}, return_when=asyncio.FIRST_COMPLETED)
            for task in (sleeper, woken):
                task.cancel()

    def _admit_next(self, now: float) -> None:
        _, _, ticket, future = heapq.heappop(self._waiting)
        if future.done():  # withdrawn or cancelled meanwhile
            self._publish()
            return
        self._grant(ticket.key, now)
        future.set_result(True)
        log.info("LLM budget admits analysis %s", ticket.uid)

    def _publish(self) -> None:
        used = self.ledger.used(self.clock.now())
        for kind, value in used.items():
            metrics.BUDGET_USED.labels(kind=kind).set(value)
        metrics.ANALYSES_WAITING.labels(reason="budget").set(len(self._waiting))


def ticket(body: dict[str, Any], *, severity: str, previous_attempt: int | None) -> Ticket:
    """The ticket of the conversation a reconcile of ``body`` would start (its next attempt)."""
    meta = body.get("metadata") or {}
    uid = str(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}")
    return Ticket(
        key=f"{uid}#{(previous_attempt or 0) + 1}",
        uid=uid,
        severity=severity,
        created=str(meta.get("creationTimestamp") or ""),
    )
