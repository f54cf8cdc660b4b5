"""The LLM budget: how many conversations may start per rolling hour and how many tokens may be
billed per rolling day. Over budget, analyses wait (``Pending``, ``BudgetExhausted``) and start when
the window moves, most severe first, then oldest first; none is dropped or failed.

:class:`Ledger` is pure (values and a ``now`` in, values out). :class:`BudgetGate` adds the waiting: an
ordered queue of tickets and one timer task that sleeps on an injectable :class:`Timer` until the
ledger frees up, so tests move the window by advancing a clock instead of sleeping an hour.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import heapq
import itertools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol

from aianalysis import metrics, settings
from aianalysis.analysis import llm

log = logging.getLogger(__name__)

HOUR_SECONDS = 3600.0
DAY_SECONDS = 86400.0
Kind = Literal["conversations", "tokens"]
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
class Limits:
    conversations_per_hour: int | None = None
    tokens_per_day: int | None = None

    @classmethod
    def from_settings(cls, config: settings.Settings) -> Limits:
        return cls(
            conversations_per_hour=config.llm_budget_conversations_per_hour,
            tokens_per_day=config.llm_budget_tokens_per_day,
        )

    @property
    def unlimited(self) -> bool:
        return self.conversations_per_hour is None and self.tokens_per_day is None


class Ledger:
    """Pure bookkeeping of what was spent when; ``now`` is always passed in."""

    def __init__(self, limits: Limits) -> None:
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

    def used(self, now: float) -> dict[Kind, int]:
        self._prune(now)
        return {"conversations": len(self._starts), "tokens": self._token_sum}

    def exhausted(self, now: float) -> Kind | None:
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


class BudgetGate:
    """Admits conversations within the ledger's limits; the rest wait in severity-then-age order."""

    def __init__(self, limits: Limits, *, clock: Timer | None = None) -> None:
        self.ledger = Ledger(limits)
        self.clock: Timer = clock or SystemTimer()
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
        self.ledger.add_tokens(billed, self.clock.now())
        self._publish()

    def poke(self) -> None:
        """Re-check the window now (a test's clock moved; the timer also does this by itself)."""
        self._wakeup.set()

    async def aclose(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            await asyncio.gather(self._timer, return_exceptions=True)

    def _grant(self, key: str, now: float) -> None:
        self.ledger.start(now)
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
