"""Pure: blast-radius guards — may this execution start now? Checked once, right before its Job
would be created, against every other execution the executor can see (a fresh list).

Each guard has a default that errs on the side of doing less, and says when it blocks, in words a
person can act on. A blocked execution is not run and not retried: it ends ``Failed`` with the guard's
reason (no recovery analysis follows — nothing ran), and a person approves again when it makes sense.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from aianalysis import resources

TERMINAL = resources.EXECUTION_TERMINAL_PHASES
GUARD_REASONS = resources.NOT_STARTED_REASONS


@dataclasses.dataclass(frozen=True, kw_only=True)
class Policy:
    cooldown_seconds: float = 1800.0
    """The same workflow does not run again on the same target within this time of its last run."""
    failure_threshold: int = 3
    """After this many consecutive failed or ineffective executions on a target, back off."""
    failure_backoff_seconds: float = 900.0
    """First backoff after ``failure_threshold`` failures; doubles with each further failure."""
    failure_backoff_max_seconds: float = 86400.0
    managed_label: str = "kubernaut.io/auto-execute"
    """Automatic executions run only where the namespace or the target carries ``<label>=true`` (the
    label autoExecute itself requires on the namespace: checked again here, before the Job)."""
    require_managed_label: bool = True
    max_concurrent: int = 5
    """Executions running at once, cluster-wide (0: no limit)."""
    max_per_hour: int = 20
    """Executions started in any rolling hour, cluster-wide (0: no limit)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Block:
    reason: str
    message: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class Run:
    """One execution as the guards see it."""

    name: str
    namespace: str
    target: tuple[str, str, str]
    workflow_id: str
    phase: str
    started: datetime.datetime | None
    ended: datetime.datetime | None
    verdict: str | None
    dry_run: bool

    @property
    def ran(self) -> bool:
        return self.started is not None and not self.dry_run


def check(
    execution: Mapping[str, Any],
    *,
    others: Sequence[Mapping[str, Any]],
    namespace_labels: Mapping[str, str],
    target_labels: Mapping[str, str] | None,
    policy: Policy,
    now: datetime.datetime,
) -> Block | None:
    """The first guard that blocks ``execution``, or None (it may start)."""
    me = run_of(execution)
    runs = [r for r in (run_of(o) for o in others) if r.name != me.name or r.namespace != me.namespace]
    for guard in (_scope, _busy, _cooldown, _backoff, _concurrent, _hourly):
        block = guard(
            me,
            runs,
            execution=execution,
            namespace_labels=namespace_labels,
            target_labels=target_labels,
            policy=policy,
            now=now,
        )
        if block is not None:
            return block
    return None


def _scope(
    me: Run,
    runs: list[Run],
    *,
    execution: Mapping[str, Any],
    namespace_labels: Mapping[str, str],
    target_labels: Mapping[str, str] | None,
    policy: Policy,
    **_: Any,
) -> Block | None:
    approval = (execution.get("spec") or {}).get("approval") or {}
    if approval.get("mode") != "Auto" or not policy.require_managed_label:
        return None
    key = policy.managed_label
    if namespace_labels.get(key) == "true" or (target_labels or {}).get(key) == "true":
        return None
    kind, ns, name = me.target
    return Block(
        reason="NotOptedIn",
        message=(
            f"automatic executions run only where namespace {ns} or {kind.lower()}/{name} carries the label "
            f"{key}=true; approve it by hand (aianalysis approve) or label it"
        ),
    )


def _busy(me: Run, runs: list[Run], **_: Any) -> Block | None:
    busy = sorted(r.name for r in runs if r.target == me.target and r.ran and r.phase not in TERMINAL)
    if not busy:
        return None
    return Block(
        reason="TargetBusy",
        message=(
            f"{_target(me)} is being remediated by {', '.join(busy)}: one execution per target at a time"
        ),
    )


def _cooldown(me: Run, runs: list[Run], *, policy: Policy, now: datetime.datetime, **_: Any) -> Block | None:
    same = [r for r in runs if r.target == me.target and r.workflow_id == me.workflow_id and r.ran]
    last = max(same, key=_last, default=None)
    if last is None or policy.cooldown_seconds <= 0:
        return None
    since = (now - _last(last)).total_seconds()
    if since >= policy.cooldown_seconds:
        return None
    return Block(
        reason="Cooldown",
        message=(
            f"workflow {me.workflow_id} ran on {_target(me)} {int(since)}s ago ({last.name}); "
            f"it may run there again {int(policy.cooldown_seconds - since)}s from now "
            f"(cooldown {policy.cooldown_seconds:g}s)"
        ),
    )


def failures_in_a_row(runs: Sequence[Run]) -> list[Run]:
    """The latest executions on one target that failed or were ineffective, newest first, up to the
    first that did not."""
    out: list[Run] = []
    for run in sorted((r for r in runs if r.ran and r.phase in TERMINAL), key=_last, reverse=True):
        if run.phase == "Failed" or run.verdict == "ineffective":
            out.append(run)
        else:
            break
    return out


def _backoff(me: Run, runs: list[Run], *, policy: Policy, now: datetime.datetime, **_: Any) -> Block | None:
    failed = failures_in_a_row([r for r in runs if r.target == me.target])
    if policy.failure_threshold <= 0 or len(failed) < policy.failure_threshold:
        return None
    wait = min(
        policy.failure_backoff_seconds * 2 ** (len(failed) - policy.failure_threshold),
        policy.failure_backoff_max_seconds,
    )
    since = (now - _last(failed[0])).total_seconds()
    if since >= wait:
        return None
    return Block(
        reason="FailureBackoff",
        message=(
            f"the last {len(failed)} executions on {_target(me)} failed or were ineffective "
            f"({', '.join(r.name for r in failed[:5])}); next try allowed in {int(wait - since)}s "
            f"(backoff {int(wait)}s after {policy.failure_threshold} failures, doubling)"
        ),
    )


def _concurrent(me: Run, runs: list[Run], *, policy: Policy, **_: Any) -> Block | None:
    running = [r for r in runs if r.ran and r.phase not in TERMINAL]
    if policy.max_concurrent <= 0 or len(running) < policy.max_concurrent:
        return None
    return Block(
        reason="ConcurrencyLimit",
        message=(f"{len(running)} executions are running cluster-wide (limit {policy.max_concurrent})"),
    )


def _hourly(me: Run, runs: list[Run], *, policy: Policy, now: datetime.datetime, **_: Any) -> Block | None:
    recent = [r for r in runs if r.ran and r.started and (now - r.started).total_seconds() < 3600]
    if policy.max_per_hour <= 0 or len(recent) < policy.max_per_hour:
        return None
    return Block(
        reason="HourlyLimit",
        message=(
            f"{len(recent)} executions started cluster-wide in the last hour (limit {policy.max_per_hour})"
        ),
    )


def run_of(body: Mapping[str, Any]) -> Run:
    meta, spec, status = (body.get(k) or {} for k in ("metadata", "spec", "status"))
    target = spec.get("targetResource") or {}
    ns = meta.get("namespace") or ""
    assessment = status.get("assessment") or {}
    started = resources.parse_timestamp(
        (assessment.get("before") or {}).get("at")
    ) or resources.parse_timestamp(status.get("startedAt"))
    if resources.never_ran(status):
        started = None
    return Run(
        name=meta.get("name") or "",
        namespace=ns,
        target=(
            str(target.get("kind") or ""),
            str(target.get("namespace") or ns),
            str(target.get("name") or ""),
        ),
        workflow_id=str((spec.get("workflowRef") or {}).get("workflowId") or ""),
        phase=str(status.get("phase") or "Pending"),
        started=started,
        ended=resources.parse_timestamp(status.get("completedAt")),
        verdict=assessment.get("verdict"),
        dry_run=bool(status.get("dryRun")),
    )


def _last(run: Run) -> datetime.datetime:
    return run.ended or run.started or datetime.datetime.min.replace(tzinfo=datetime.UTC)


def _target(run: Run) -> str:
    kind, ns, name = run.target
    return f"{kind.lower()}/{name} in {ns}"
