"""The LLM budget: what may start when, who waits, in which order, and when they start — with a
clock the test moves, never a sleep."""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Callable

import pytest

from aianalysis import errors, metrics, resources
from aianalysis.analysis import llm, status
from aianalysis.controller import llm_budget
from tests.support.clock import ManualClock

HOUR = llm_budget.HOUR_SECONDS


def ticket(n: int, *, severity: str = "high", created: str | None = None) -> llm_budget.Ticket:
    return llm_budget.Ticket(
        key=f"uid-{n}#1", uid=f"uid-{n}", severity=severity, created=created or f"2026-11-22T10:00:{n:02d}Z"
    )


async def no_op(message: str) -> None:
    return None


async def until(predicate: Callable[[], bool]) -> None:
    """Lets the event loop run until ``predicate`` holds (bounded: a few thousand loop turns)."""
    for _ in range(5000):
        if predicate():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never held")


def test_ledger_admits_until_the_hourly_limit_then_frees_when_the_oldest_start_leaves_the_window() -> None:
    ledger = llm_budget.Spending(llm_budget.Allowance(conversations_per_hour=2))
    ledger.start(100.0)
    assert ledger.exhausted(150.0) is None
    ledger.start(200.0)

    assert ledger.exhausted(250.0) == "conversations"
    assert ledger.next_free_at(250.0) == 100.0 + HOUR
    assert ledger.exhausted(100.0 + HOUR) is None
    assert ledger.used(100.0 + HOUR) == {"conversations": 1, "tokens": 0}


def test_ledger_tokens_per_day_frees_when_enough_old_tokens_leave_the_window() -> None:
    ledger = llm_budget.Spending(llm_budget.Allowance(tokens_per_day=1000))
    ledger.add_tokens(600, 10.0)
    ledger.add_tokens(300, 20.0)
    assert ledger.exhausted(30.0) is None
    ledger.add_tokens(200, 30.0)

    assert ledger.exhausted(40.0) == "tokens"
    # Dropping the 600 at t=10 leaves 500 < 1000: free once it leaves the 24 h window.
    assert ledger.next_free_at(40.0) == 10.0 + llm_budget.DAY_SECONDS
    assert "1100 of 1000 tokens" in ledger.describe(40.0)


def test_zero_limit_never_frees_up() -> None:
    ledger = llm_budget.Spending(llm_budget.Allowance(conversations_per_hour=0))
    assert ledger.exhausted(0.0) == "conversations"
    assert ledger.next_free_at(0.0) == float("inf")


async def test_unlimited_gate_never_waits() -> None:
    gate = llm_budget.BudgetGate(llm_budget.Allowance(), clock=ManualClock())
    assert [await gate.acquire(ticket(i), on_wait=no_op) for i in range(50)] == [False] * 50


async def test_over_budget_the_next_waits_visibly_and_starts_when_the_window_moves() -> None:
    clock = ManualClock()
    gate = llm_budget.BudgetGate(llm_budget.Allowance(conversations_per_hour=2), clock=clock)
    shown: list[str] = []

    async def show(message: str) -> None:
        shown.append(message)

    assert not await gate.acquire(ticket(1), on_wait=show)
    assert not await gate.acquire(ticket(2), on_wait=show)
    third = asyncio.create_task(gate.acquire(ticket(3), on_wait=show))
    await until(lambda: bool(shown))

    assert not third.done()
    assert shown == ["waiting for LLM budget: 2 of 2 conversations in the last hour"]
    assert metrics.REGISTRY.get_sample_value("aianalysis_analyses_waiting", {"reason": "budget"}) == 1
    await clock.advance(HOUR - 1)
    await asyncio.sleep(0)
    assert not third.done(), "one second before the window moves it still waits"
    await clock.advance(1)
    assert await asyncio.wait_for(third, 5) is True
    assert metrics.REGISTRY.get_sample_value("aianalysis_analyses_waiting", {"reason": "budget"}) == 0
    assert metrics.REGISTRY.get_sample_value("aianalysis_llm_budget_used", {"kind": "conversations"}) == 1
    await gate.aclose()


async def test_waiting_analyses_start_most_severe_first_then_oldest() -> None:
    clock = ManualClock()
    gate = llm_budget.BudgetGate(llm_budget.Allowance(conversations_per_hour=1), clock=clock)
    await gate.acquire(ticket(0), on_wait=no_op)
    order: list[str] = []

    async def wait(t: llm_budget.Ticket) -> None:
        await gate.acquire(t, on_wait=no_op)
        order.append(t.uid)

    waiting = [
        ticket(1, severity="low", created="2026-11-22T09:00:00Z"),
        ticket(2, severity="critical", created="2026-11-22T10:00:05Z"),
        ticket(3, severity="critical", created="2026-11-22T10:00:01Z"),
        ticket(4, severity="medium", created="2026-11-22T08:00:00Z"),
    ]
    tasks = [asyncio.create_task(wait(t)) for t in waiting]
    await until(lambda: gate.waiting == 4)
    for _ in range(4):
        before = len(order)
        await clock.advance(HOUR)
        await until(lambda: len(order) > before)  # noqa: B023  # awaited within the iteration

    assert order == ["uid-3", "uid-2", "uid-4", "uid-1"]
    await asyncio.gather(*tasks)
    await gate.aclose()


async def test_a_re_entry_for_the_same_attempt_is_not_counted_twice() -> None:
    gate = llm_budget.BudgetGate(llm_budget.Allowance(conversations_per_hour=1), clock=ManualClock())
    assert not await gate.acquire(ticket(1), on_wait=no_op)
    assert not await gate.acquire(ticket(1), on_wait=no_op)
    assert gate.ledger.used(gate.clock.now())["conversations"] == 1


async def test_a_withdrawn_ticket_stops_waiting_without_spending_budget() -> None:
    clock = ManualClock()
    gate = llm_budget.BudgetGate(llm_budget.Allowance(conversations_per_hour=1), clock=clock)
    await gate.acquire(ticket(1), on_wait=no_op)
    waiter = asyncio.create_task(gate.acquire(ticket(2), on_wait=no_op))
    await until(lambda: gate.waiting == 1)

    assert gate.withdraw("uid-2")
    assert await asyncio.wait_for(waiter, 5) is True
    assert gate.waiting == 0
    assert gate.ledger.used(clock.now())["conversations"] == 1
    await gate.aclose()


async def test_a_cancelled_waiter_leaves_the_queue() -> None:
    clock = ManualClock()
    gate = llm_budget.BudgetGate(llm_budget.Allowance(conversations_per_hour=1), clock=clock)
    await gate.acquire(ticket(1), on_wait=no_op)
    waiter = asyncio.create_task(gate.acquire(ticket(2), on_wait=no_op))
    await until(lambda: gate.waiting == 1)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert gate.waiting == 0
    await gate.aclose()


async def test_billed_tokens_exhaust_the_daily_budget() -> None:
    clock = ManualClock()
    gate = llm_budget.BudgetGate(llm_budget.Allowance(tokens_per_day=1000), clock=clock)
    assert not await gate.acquire(ticket(1), on_wait=no_op)
    gate.observe(
        llm.RequestRecord(
            outcome="ok", seconds=1.0, input_tokens=700, output_tokens=200, cache_read_tokens=100
        )
    )
    waiter = asyncio.create_task(gate.acquire(ticket(2), on_wait=no_op))
    await until(lambda: gate.waiting == 1)

    assert metrics.REGISTRY.get_sample_value("aianalysis_llm_budget_used", {"kind": "tokens"}) == 1000
    await clock.advance(llm_budget.DAY_SECONDS)
    assert await asyncio.wait_for(waiter, 5) is True
    await gate.aclose()


def test_the_waiting_status_is_pending_with_a_budget_exhausted_condition() -> None:
    st = status.pending(
        previous=resources.AIAnalysisStatus(),
        reason="BudgetExhausted",
        message="waiting for LLM budget",
        now=datetime.datetime(2026, 11, 22, 10, tzinfo=datetime.UTC),
        generation=1,
    )
    assert st.phase == "Pending" and st.reason == "BudgetExhausted"
    assert st.conditions is not None
    ready = st.conditions[0]
    assert (ready.type, ready.status, ready.reason) == ("Ready", "False", "BudgetExhausted")


def test_the_spending_record_round_trips_in_minute_buckets_and_drops_what_left_the_window() -> None:
    ledger = llm_budget.Spending(llm_budget.Allowance(conversations_per_hour=5, tokens_per_day=10_000))
    ledger.start(1_000.0)
    ledger.start(1_030.5)
    ledger.add_tokens(400, 1_021.0)
    ledger.add_tokens(100, 1_050.0)  # same minute as the 400: one bucket
    record = ledger.spent(1_060.0).encode()

    restored = llm_budget.Spending(ledger.limits)
    restored.restore(llm_budget.Spent.decode(record))
    assert restored.used(1_060.0) == {"conversations": 2, "tokens": 500}
    assert llm_budget.Spent.decode(record).tokens == ((1_080.0, 500),), "rounded up: never leaves early"
    assert restored.used(1_000.0 + HOUR) == {"conversations": 1, "tokens": 500}
    assert restored.used(1_080.0 + llm_budget.DAY_SECONDS) == {"conversations": 0, "tokens": 0}


@pytest.mark.parametrize(
    "data",
    [
        {"conversations": "not json", "tokens": "[]"},
        {"conversations": '[1.0, "x", null, 1e400]', "tokens": '[[1.0], [2.0, -5], "x", [3.0, 7]]'},
        {},
    ],
)
def test_a_damaged_spending_record_is_read_as_far_as_it_makes_sense_never_fatal(data: dict[str, str]) -> None:
    spent = llm_budget.Spent.decode(data)
    assert all(isinstance(at, float) for at in spent.starts)
    assert all(n > 0 for _, n in spent.tokens)


class Record:
    """A store as the API server behaves for one ConfigMap: a version, and a write refused when the
    version read is stale (tests the gate's merge; the real ConfigMap is in the integration test)."""

    def __init__(self) -> None:
        self.data: dict[str, str] = {}
        self.version = 0
        self.writes = 0

    async def read(self) -> tuple[dict[str, str], object]:
        return dict(self.data), self.version

    async def write(self, data: dict[str, str], version: object) -> bool:
        if version != self.version:
            return False
        self.data, self.version, self.writes = data, self.version + 1, self.writes + 1
        return True


async def test_a_new_gate_on_the_same_record_continues_the_window_and_merges_a_concurrent_writer() -> None:
    clock, record = ManualClock(), Record()
    first = llm_budget.BudgetGate(llm_budget.Allowance(conversations_per_hour=3), clock=clock, store=record)
    await first.acquire(ticket(1), on_wait=no_op)
    await first.acquire(ticket(2), on_wait=no_op)
    assert record.writes == 2, "each grant is in the record before its conversation starts"
    await first.aclose()

    # Another replica wrote meanwhile (a start the restarted one never saw in memory).
    spent = llm_budget.Spent.decode(record.data).plus(llm_budget.Spent(starts=(clock.now(),)))
    record.data, record.version = spent.encode(), record.version + 1

    second = llm_budget.BudgetGate(llm_budget.Allowance(conversations_per_hour=3), clock=clock, store=record)
    await second.load()
    assert second.ledger.used(clock.now())["conversations"] == 3
    waiter = asyncio.create_task(second.acquire(ticket(4), on_wait=no_op))
    await until(lambda: second.waiting == 1)
    await clock.advance(HOUR)
    assert await waiter is True
    await second.aclose()
    assert len(llm_budget.Spent.decode(record.data).within(clock.now()).starts) == 1


async def test_a_record_the_operator_may_not_read_leaves_the_budget_in_memory_instead_of_a_crash_loop(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Forbidden(Record):
        async def read(self) -> tuple[dict[str, str], object]:
            raise errors.ClusterRejectedError(
                "reading ConfigMap x/aianalysis-llm-budget: 403 Forbidden", status=403
            )

    clock, record = ManualClock(), Forbidden()
    gate = llm_budget.BudgetGate(llm_budget.Allowance(conversations_per_hour=1), clock=clock, store=record)
    await gate.load()
    assert "counted in memory only" in caplog.text and "403 Forbidden" in caplog.text
    assert await gate.acquire(ticket(1), on_wait=no_op) is False
    assert gate.ledger.exhausted(clock.now()) == "conversations", "still limited, in memory"
    assert record.writes == 0
    await gate.aclose()
