"""Crash loops the rollout or a dependency explains.

OOM kills (:mod:`memory`), configuration errors (:mod:`configuration`) and denied calls
(:mod:`access`) come before these rules in the order: each of those names a cause a rollback or
a restart would not fix.
"""

from __future__ import annotations

import re

from aianalysis.analysis.offline import evidence, rule

_CONNECT_FAILED = re.compile(
    r"connection refused|dial tcp\b.{0,120}(refused|timeout|no route)|no route to host"
    r"|connection reset by peer|ECONNREFUSED|i/o timeout",
    re.IGNORECASE,
)


def crash_after_rollout(seen: evidence.Evidence) -> rule.Match | None:
    """A crash loop (not OOM) where only the Pods of the Deployment's newest revision fail, and an
    older revision exists.

    Needs: the Pods, the ReplicaSets behind them (their revisions, which fail, which are healthy) and
    what changed in the pod template. Selects RollbackDeployment on the workload with TO_REVISION,
    the newest healthy revision (else the previous one): the last rollout is the cause. A first
    revision that crashes is not blamed on a rollout."""
    crashing = [(p, c) for p, c in rule.crashing(seen) if c.last_reason != "OOMKilled"]
    rollout = seen.rollout
    if not crashing or rollout is None or not rollout.failing_since_last_change:
        return None
    container = crashing[0][1]
    facts = [
        f"{len({p.name for p, _ in crashing})} Pod(s) crash-loop (container {container.name} last exited "
        f"{container.last_reason or 'with an error'}, exit code {container.last_exit_code}, "
        f"{container.restarts} restarts)",
        f"only revision {rollout.revision} of {rule.ref_text(seen.workload)} fails, the newest",
    ]
    if rollout.healthy_revisions:
        older = ", ".join(str(r) for r in sorted(rollout.healthy_revisions))
        facts.append(f"Pods of the previous revision ({older}) are healthy")
    if rollout.changed:
        facts.append(f"the pod template changed in revision {rollout.revision}: {', '.join(rollout.changed)}")
    return rule.Match(
        facts=tuple(facts),
        target=seen.workload,
        values={"TO_REVISION": str(max(rollout.healthy_revisions or {(rollout.revision or 2) - 1}))},
        detail={"revision": str(rollout.revision)},
    )


CRASHLOOP_AFTER_ROLLOUT = rule.Rule(
    name="crashloop-after-rollout",
    signal_type="CrashLoopBackOff",
    action_type="RollbackDeployment",
    query="CrashLoopBackOff rollback previous revision bad release",
    explanation=(
        "{workload} crash-loops since revision {revision}: only the newest revision's Pods fail, so the "
        "last rollout is the cause; rolling back to the previous revision restores the working template."
    ),
    match=crash_after_rollout,
)


def crash_on_connection(seen: evidence.Evidence) -> rule.Match | None:
    """A crash loop (not OOM, not the newest revision's) whose last log lines say the process cannot
    connect to a dependency (refused, timed out, no route, reset).

    Needs: the crashing container's log and the rollout. Selects RestartPods on the workload: state
    the process holds (a cached address, a pool of dead connections) is stale; a rolling restart
    reconnects, a rollback of an unchanged template would not."""
    crashing = [(p, c) for p, c in rule.crashing(seen) if c.last_reason != "OOMKilled"]
    if not crashing or (seen.rollout is not None and seen.rollout.failing_since_last_change):
        return None
    said = next((line for line in seen.logs if _CONNECT_FAILED.search(line)), None)
    if said is None:
        return None
    _, container = crashing[0]
    return rule.Match(
        facts=(
            f"{len({p.name for p, _ in crashing})} Pod(s) crash-loop (container {container.name} last exited "
            f"{container.last_reason or 'with an error'}, exit code {container.last_exit_code}, "
            f"{container.restarts} restarts)",
            f"its log says it cannot connect to a dependency: {rule.shorten(said)}",
            "the failing Pods are not those of a new revision",
        ),
        target=seen.workload,
        detail={"container": container.name},
    )


CRASHLOOP_DEPENDENCY_CONNECTION = rule.Rule(
    name="crashloop-dependency-connection",
    signal_type="CrashLoopBackOff",
    action_type="RestartPods",
    query="CrashLoopBackOff restart stale connections transient dependency recovered",
    explanation=(
        "{workload} crash-loops because container {container} cannot connect to a dependency, and no "
        "new revision caused it: a rolling restart drops the stale connections and addresses it "
        "holds; a rollback of the unchanged template would not help."
    ),
    match=crash_on_connection,
)
