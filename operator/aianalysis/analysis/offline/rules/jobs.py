"""Jobs: a Job that failed, and a CronJob whose runs keep failing."""

from __future__ import annotations

from aianalysis.analysis.offline import evidence, rule

#: Failed Jobs of one CronJob that make its failure a pattern, not a one-off.
MIN_FAILED_RUNS = 2


def cronjob_keeps_failing(seen: evidence.Evidence) -> rule.Match | None:
    """Several Jobs of a CronJob failed (at least ``MIN_FAILED_RUNS``; a run an earlier remediation
    started that failed as a Job fails counts too).

    Needs: a listing tool (the namespace's Jobs, those the CronJob owns read in full), or the
    recovery history. Selects SuspendCronJob on the CronJob: each new run fails the same way and adds
    load until someone fixes the cause; re-running would not help. One failed run is not yet a
    pattern."""
    workload = seen.workload
    if workload is None or workload.kind != "CronJob" or len(seen.failed_runs) < MIN_FAILED_RUNS:
        return None
    reasons = sorted(set(seen.failed_runs))
    return rule.Match(
        facts=(
            f"{len(seen.failed_runs)} Jobs of {rule.ref_text(workload)} failed ({', '.join(reasons)})",
            "every recent run fails: another run would fail the same way",
        ),
        target=workload,
        detail={"runs": str(len(seen.failed_runs)), "reason": reasons[0]},
    )


CRONJOB_RUNS_KEEP_FAILING = rule.Rule(
    name="cronjob-runs-keep-failing",
    signal_type="BackoffLimitExceeded",
    action_type="SuspendCronJob",
    query="CronJob every run fails the same way suspend",
    explanation=(
        "{runs} runs of {workload} failed ({reason}): each new run fails the same way and adds load "
        "until someone fixes the cause, so suspending the CronJob stops it; re-running would not help."
    ),
    match=cronjob_keeps_failing,
)


#: A Job that ran out of time gets this many times its deadline.
DEADLINE_FACTOR = 2


def job_past_deadline(seen: evidence.Evidence) -> rule.Match | None:
    """A Job failed with DeadlineExceeded: its Pods were still at work when its
    ``activeDeadlineSeconds`` ran out, and the Job controller stopped them.

    Needs: the Job (its Failed condition and deadline) and its events. Selects RerunJob on the Job
    with ACTIVE_DEADLINE_SECONDS ``DEADLINE_FACTOR`` times the deadline: the work takes longer
    than it was given, and a Pod that failed on its own would have ended the Job otherwise
    (BackoffLimitExceeded)."""
    if seen.job_failure != "DeadlineExceeded" or seen.job_deadline is None:
        return None
    workload = seen.workload or seen.incident
    facts = [
        f"the Job failed with DeadlineExceeded after its activeDeadlineSeconds of {seen.job_deadline}",
    ]
    said = next(iter(seen.event_messages("DeadlineExceeded")), None)
    if said:
        facts.append(f"the Job controller says: {rule.shorten(said)}")
    if seen.event_messages("SuccessfulDelete"):
        facts.append("the Job controller deleted its running Pods at the deadline")
    raised = str(seen.job_deadline * DEADLINE_FACTOR)
    return rule.Match(
        facts=tuple(facts),
        target=workload,
        values={"ACTIVE_DEADLINE_SECONDS": raised},
        detail={"deadline": str(seen.job_deadline), "raised": raised},
    )


JOB_PAST_DEADLINE = rule.Rule(
    name="job-past-deadline",
    signal_type="DeadlineExceeded",
    action_type="RerunJob",
    query="Job deadline exceeded rerun longer activeDeadlineSeconds",
    explanation=(
        "{workload} was still running when its deadline of {deadline}s ran out, so the Job controller "
        "stopped it: the work takes longer than it was given. Running it again with a deadline of "
        "{raised}s lets it finish."
    ),
    match=job_past_deadline,
)


def job_failed(seen: evidence.Evidence) -> rule.Match | None:
    """A Job's Failed condition is true (BackoffLimitExceeded, DeadlineExceeded).

    Needs: the Job (the incident, or the workload above it). Names no action: whether to re-run,
    fix or suspend depends on a cause the Job's status does not state, so the catalog search by the
    alert's signal decides, for the Job."""
    if seen.job_failure is None:
        return None
    return rule.Match(
        facts=(f"the Job failed with {seen.job_failure}",),
        target=seen.workload or seen.incident,
        detail={"reason": seen.job_failure},
    )


JOB_FAILED = rule.Rule(
    name="job-failed",
    signal_type="BackoffLimitExceeded",
    action_type=None,
    query="Job failed rerun",
    explanation="The Job failed with {reason}.",
    match=job_failed,
)
