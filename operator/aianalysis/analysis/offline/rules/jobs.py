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
