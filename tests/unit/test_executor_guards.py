"""Blast-radius guards: each blocks with its reason and a message a person can act on, and lets
the execution start once the condition is gone."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from aianalysis import resources
from aianalysis.executor import guards, plan

NOW = datetime.datetime(2026, 11, 20, 12, 0, tzinfo=datetime.UTC)


def stamp(minutes_ago: float) -> str:
    return (NOW - datetime.timedelta(minutes=minutes_ago)).isoformat().replace("+00:00", "Z")


def wfe(
    name: str,
    *,
    workflow: str = "raise-memory",
    target: str = "api",
    phase: str = "Pending",
    started: float | None = None,
    ended: float | None = None,
    verdict: str | None = None,
    auto: bool = False,
    ns: str = "prod",
) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase}
    if started is not None:
        status["assessment"] = {"before": {"at": stamp(started)}, "verdict": verdict}
    if ended is not None:
        status["completedAt"] = stamp(ended)
    labels: dict[str, str] = {}
    return {
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {
            "workflowRef": {"workflowId": workflow, "version": "1.0.0"},
            "targetResource": {"kind": "Deployment", "name": target},
            "approval": {"mode": "Auto" if auto else "Manual"},
        },
        "status": status,
    }


def check(
    me: dict[str, Any],
    others: list[dict[str, Any]],
    *,
    policy: guards.Policy | None = None,
    ns_labels: dict[str, str] | None = None,
    target_labels: dict[str, str] | None = None,
) -> guards.Block | None:
    return guards.check(
        me,
        others=others,
        namespace_labels=ns_labels or {},
        target_labels=target_labels,
        policy=policy or guards.Policy(),
        now=NOW,
    )


def test_nothing_blocks_a_first_execution() -> None:
    assert check(wfe("a-exec-1"), [wfe("a-exec-1")]) is None


def test_one_execution_per_target_at_a_time() -> None:
    block = check(wfe("b-exec-1", workflow="restart"), [wfe("a-exec-1", phase="Running", started=1)])
    assert block is not None and block.reason == "TargetBusy" and "a-exec-1" in block.message
    # another target is not busy; a Pending execution that never started does not hold the target
    assert check(wfe("b-exec-1", target="web"), [wfe("a-exec-1", phase="Running", started=1)]) is None
    assert check(wfe("b-exec-1", workflow="restart"), [wfe("a-exec-1")]) is None


def test_cooldown_for_the_same_workflow_on_the_same_target() -> None:
    done = wfe("a-exec-1", phase="Completed", started=12, ended=10, verdict="effective")
    block = check(wfe("b-exec-1"), [done])
    assert block is not None and block.reason == "Cooldown" and "1200s from now" in block.message
    assert check(wfe("b-exec-1", workflow="restart"), [done]) is None  # another workflow
    assert check(wfe("b-exec-1"), [done], policy=guards.Policy(cooldown_seconds=300)) is None


def test_consecutive_failures_back_off_and_the_backoff_doubles() -> None:
    policy = guards.Policy(cooldown_seconds=0, failure_threshold=3, failure_backoff_seconds=600)
    failed = [
        wfe(f"f-exec-{i}", workflow=f"w{i}", phase="Failed", started=3 + i, ended=2 + i) for i in range(3)
    ]
    block = check(wfe("g-exec-1"), failed, policy=policy)
    assert block is not None and block.reason == "FailureBackoff" and "last 3 executions" in block.message
    assert (
        check(wfe("g-exec-1"), failed, policy=guards.Policy(failure_backoff_seconds=60, cooldown_seconds=0))
        is None
    )
    ineffective = wfe("h-exec-1", workflow="w9", phase="Completed", started=2, ended=1, verdict="ineffective")
    fourth = check(wfe("g-exec-1"), [*failed, ineffective], policy=policy)
    assert fourth is not None and "backoff 1200s" in fourth.message
    effective = wfe("i-exec-1", workflow="w8", phase="Completed", started=1, ended=0.5, verdict="effective")
    assert check(wfe("g-exec-1"), [*failed, effective], policy=policy) is None  # the streak ended


def test_automatic_executions_need_the_managed_label() -> None:
    block = check(wfe("a-exec-1", auto=True), [])
    assert (
        block is not None
        and block.reason == "NotOptedIn"
        and "kubernaut.io/auto-execute=true" in block.message
    )
    opted_in = {"kubernaut.io/auto-execute": "true"}
    assert check(wfe("a-exec-1", auto=True), [], ns_labels=opted_in) is None
    assert check(wfe("a-exec-1", auto=True), [], target_labels={"kubernaut.io/auto-execute": "true"}) is None
    assert check(wfe("a-exec-1"), []) is None  # a person approved it
    assert check(wfe("a-exec-1", auto=True), [], policy=guards.Policy(require_managed_label=False)) is None


@pytest.mark.parametrize(
    ("limit", "reason"), [("max_concurrent", "ConcurrencyLimit"), ("max_per_hour", "HourlyLimit")]
)
def test_cluster_wide_caps(limit: str, reason: str) -> None:
    running = [wfe(f"r{i}-exec-1", target=f"t{i}", ns=f"ns{i}", phase="Running", started=5) for i in range(2)]
    policy = guards.Policy(**{"max_concurrent": 0, "max_per_hour": 0, limit: 2})  # type: ignore[arg-type]
    block = check(wfe("a-exec-1"), running, policy=policy)
    assert block is not None and block.reason == reason and "limit 2" in block.message
    assert check(wfe("a-exec-1"), running[:1], policy=policy) is None


def test_dry_runs_never_count_as_executions() -> None:
    dry = wfe("a-exec-1", phase="Completed", started=2, ended=1)
    dry["status"]["dryRun"] = True
    assert check(wfe("b-exec-1"), [dry]) is None


def test_executions_that_never_ran_are_not_failures_or_runs() -> None:
    """A blocked or refused execution ends Failed, but nothing ran: no streak, no cooldown."""
    policy = guards.Policy(failure_threshold=1, failure_backoff_seconds=600)
    blocked = wfe("a-exec-1", phase="Failed", started=2, ended=1)
    blocked["status"]["failureDetails"] = {"reason": "Cooldown"}
    refused = wfe("b-exec-1", phase="Failed", started=2, ended=1)
    refused["status"]["failureDetails"] = {"reason": "SelectionInvalid"}
    assert check(wfe("c-exec-1"), [blocked, refused], policy=policy) is None


def test_a_refused_execution_never_ran_so_it_blocks_no_approval() -> None:
    """Refused (not approved, not what was validated): nothing ran. Anyone who may create executions
    could otherwise hold every target in cooldown, and fill the caps, with executions that never run.
    The status is the one the executor writes."""
    written = plan.next_status(
        resources.WorkflowExecutionStatus(), phase="Refused", now=NOW - datetime.timedelta(minutes=1),
        reason="NotApproved", message="not executed", generation=1,
    )  # fmt: skip
    assert written.started_at is None
    forged = wfe("forged", phase="Refused")
    forged["status"] = written.wire()
    strict = guards.Policy(max_per_hour=1, max_concurrent=1, failure_threshold=1)
    assert check(wfe("a-exec-1"), [forged], policy=strict) is None
    assert resources.never_ran(forged["status"])
