"""Alerts the cluster contradicts: the workload the alert names is healthy.

Both rules decline (a person decides): remediating a healthy workload changes nothing, or worse.
They come first in the order: a contradiction outweighs anything the other rules would match.
"""

from __future__ import annotations

from aianalysis.analysis.offline import evidence, rule

#: CPU use (% of requests) below which a Pod counts as not busy.
CPU_BUSY = 70
#: Hours after which a revision counts as settled (not a suspect for a new alert).
SETTLED_HOURS = 24


def healthy_despite_alert(seen: evidence.Evidence) -> rule.Match | None:
    """The alert reports a failure of the Pods themselves (CrashLoopBackOff, OOMKilled, an image or a
    configuration error), but every Pod of the workload is Running and Ready and no container
    restarted for the alert's reason (for a crash loop: after any failure — a crash-looping
    container is Running, even Ready, for the moments between its restarts).

    Needs: the workload's Pods. Declines (a red herring): the cluster contradicts the alert; nothing
    to remediate automatically, a person should check the alert rule."""
    if seen.signal_type not in rule.FAILURE_SIGNALS or not seen.pods:
        return None
    if not all(p.healthy for p in seen.pods):
        return None
    if any(_reports(seen.signal_type, c) for _, c in seen.containers):
        return None
    return rule.Match(
        facts=(
            f"all {len(seen.pods)} Pod(s) of {rule.ref_text(seen.workload or seen.incident)} "
            "are Running and Ready",
            f"no container reports {seen.signal_type}",
        ),
        target=seen.workload,
        detail={"alert": seen.signal_type},
    )


def _reports(signal_type: str, container: evidence.Container) -> bool:
    """Whether the container shows what the alert says: a crash loop is any restart after a failure
    (its last run ended Error, OOMKilled...), anything else its own reason."""
    if signal_type in CRASH_SIGNALS:
        return container.restarted_after_failure
    return container.restarts > 0 and container.last_reason == signal_type


#: Alerts that say a container keeps failing, whatever ended its runs.
CRASH_SIGNALS = frozenset({"CrashLoopBackOff", "Error"})


HEALTHY_DESPITE_ALERT = rule.Rule(
    name="healthy-despite-alert",
    signal_type="Healthy",
    action_type=None,
    query="",
    explanation=(
        "The alert reports {alert}, but the cluster contradicts it: every Pod of {workload} is running "
        "and ready. Nothing to remediate automatically; a person should check the alert rule."
    ),
    match=healthy_despite_alert,
    decline="the evidence contradicts the alert (red herring)",
)


def healthy_unchanged_unsaturated(seen: evidence.Evidence) -> rule.Match | None:
    """A service-level alert (latency, errors: not a Pod failure) while every Pod of the workload is
    Running and Ready without restarts, uses less than ``CPU_BUSY`` percent of its CPU requests,
    and the current revision was rolled out more than ``SETTLED_HOURS`` before the alert.

    Needs: the Pods, their CPU use from the metrics API (``top``) and the Deployment's current
    ReplicaSet (its age). Declines: nothing the cluster shows explains the alert (an outside
    dependency?); a rollback or a scale-out would change nothing. A recent rollout, or a busy Pod,
    leaves the alert to the other rules."""
    rollout = seen.rollout
    if not rule.service_alert_on_healthy_pods(seen) or max(seen.cpu_of_requests) >= CPU_BUSY:
        return None
    if rollout is None or rollout.age_hours is None or rollout.age_hours < SETTLED_HOURS:
        return None
    return rule.Match(
        facts=(
            f"all {len(seen.pods)} Pod(s) of {rule.ref_text(seen.workload)} are Running and Ready, "
            "without restarts",
            f"their CPU use is at most {max(seen.cpu_of_requests)}% of their requests",
            f"the current revision was rolled out {rollout.age_hours / 24:.1f} days before the alert",
        ),
        target=seen.workload,
        detail={"alert": seen.signal_type, "days": f"{rollout.age_hours / 24:.1f}"},
    )


HEALTHY_UNCHANGED_UNSATURATED = rule.Rule(
    name="healthy-unchanged-unsaturated",
    signal_type="Healthy",
    action_type=None,
    query="",
    explanation=(
        "The alert reports {alert}, but {workload} is healthy, not CPU-saturated and unchanged for "
        "{days} days: nothing in the cluster explains it (an outside dependency?). A rollback or a "
        "scale-out would change nothing; a person should decide."
    ),
    match=healthy_unchanged_unsaturated,
    decline="nothing the cluster shows explains the alert",
)
