"""The effectiveness assessment's pure core: what a user reads in ``status.assessment`` follows
from what the cluster showed (Pods since the execution, alert, metrics, fingerprints, clock)."""

from __future__ import annotations

import datetime
import http.server
import json
import threading
from typing import Any

import pytest

from aianalysis import prometheus, resources
from aianalysis.analysis import pipeline, prompts, status
from aianalysis.assessment import fingerprint, history, judge, podhealth, queries, timeline
from aianalysis.controller import assessment_reconciler as assessor

ENDED = datetime.datetime(2026, 11, 20, 10, 5, tzinfo=datetime.UTC)
BEFORE_END, AFTER_END = "2026-11-20T10:00:00Z", "2026-11-20T10:07:00Z"


def pod(
    *,
    created: str = BEFORE_END,
    ready: bool = True,
    restarts: int = 0,
    last: dict[str, Any] | None = None,
    waiting: str | None = None,
    phase: str = "Running",
) -> dict[str, Any]:
    state = {"waiting": {"reason": waiting}} if waiting else {"running": {"startedAt": created}}
    return {
        "metadata": {"name": "api-1", "creationTimestamp": created},
        "status": {
            "phase": phase,
            "containerStatuses": [
                {
                    "name": "app",
                    "ready": ready,
                    "restartCount": restarts,
                    "state": state,
                    "lastState": {"terminated": last} if last else {},
                }
            ],
        },
    }


def test_restarts_before_the_execution_do_not_count() -> None:
    old_crash = {"reason": "OOMKilled", "finishedAt": "2026-11-20T09:59:00Z"}
    health = podhealth.of_pods([pod(restarts=40, last=old_crash)], since=ENDED)
    assert (health.restarts, health.terminations, health.score) == (0, (), 1.0)


def test_a_crash_after_the_execution_counts_even_on_an_old_pod() -> None:
    new_crash = {"reason": "OOMKilled", "finishedAt": AFTER_END}
    health = podhealth.of_pods(
        [pod(restarts=41, last=new_crash, waiting="CrashLoopBackOff", ready=False)], since=ENDED
    )
    assert (
        health.restarts == 1
        and health.terminations == ("OOMKilled",)
        and health.waiting == ("CrashLoopBackOff",)
    )
    assert health.score == 0.0 and "terminated: OOMKilled" in health.describe()


def test_a_crash_loop_between_restarts_is_failing_now_as_a_real_kubelet_shows_it() -> None:
    """kubelet 1.36 shows ``CrashLoopBackOff`` only just before each restart; the rest of the
    back-off the container is ``terminated`` (Error, or OOMKilled with exit code 0 when a child was
    killed): that is a Pod failing now, not one merely restarted once."""
    crashed = pod(created=AFTER_END, restarts=3, ready=False)
    crashed["status"]["containerStatuses"][0]["state"] = {
        "terminated": {"reason": "Error", "exitCode": 1, "finishedAt": AFTER_END}
    }
    child = pod(created=AFTER_END, restarts=1, ready=False)
    child["status"]["containerStatuses"][0]["state"] = {
        "terminated": {"reason": "OOMKilled", "exitCode": 0, "finishedAt": AFTER_END}
    }
    health = podhealth.of_pods([crashed, child, pod()], since=ENDED)
    assert health.waiting == ("Error", "OOMKilled") and health.score == 0.0
    verdict = judge.judge(judge.Observed(health=health, alert="unknown"))
    assert (verdict.verdict, verdict.reason) == ("ineffective", "StillFailing")
    done = pod(created=AFTER_END, ready=False)
    done["status"]["containerStatuses"][0]["state"] = {"terminated": {"reason": "Completed", "exitCode": 0}}
    assert podhealth.failing_now(done["status"]["containerStatuses"][0]) is None


def test_new_pods_count_all_their_restarts_and_ended_pods_are_not_members() -> None:
    health = podhealth.of_pods(
        [pod(created=AFTER_END, restarts=2), pod(phase="Succeeded"), pod(phase="Failed")], since=ENDED
    )
    assert (health.pods, health.restarts) == (1, 2) and 0 < health.score < 1


def healthy() -> podhealth.PodHealth:
    return podhealth.of_pods([pod(), pod()], since=ENDED)


def crashing() -> podhealth.PodHealth:
    return podhealth.of_pods([pod(ready=False, waiting="CrashLoopBackOff")], since=ENDED)


@pytest.mark.parametrize(
    ("seen", "verdict", "reason"),
    [
        (judge.Observed(health=healthy(), before="a", after="b", now="b"), "effective", "Healthy"),
        (judge.Observed(health=crashing(), before="a", after="b", now="b"), "ineffective", "StillFailing"),
        (judge.Observed(health=healthy(), alert="firing"), "partial", "AlertStillFiring"),
        (judge.Observed(health=healthy(), before="a", after="b", now="c"), "unknown", "SpecDrift"),
        (judge.Observed(health=healthy(), before="a", after="b", now="a"), "ineffective", "Reverted"),
        (judge.Observed(target_found=False, after="b"), "unknown", "TargetDeleted"),
        (judge.Observed(health=healthy(), skew_seconds=-120.0), "unknown", "ClockSkew"),
        (
            judge.Observed(
                health=healthy(), metrics=judge.Metrics(score=None, detail="refused", unavailable=True)
            ),
            "unknown",
            "MetricsUnavailable",
        ),
        (judge.Observed(health=None, alert="unknown"), "unknown", "NoData"),
        (judge.Observed(health=None, alert="resolved"), "effective", "AlertResolved"),
    ],
)
def test_verdicts(seen: judge.Observed, verdict: str, reason: str) -> None:
    made = judge.judge(seen)
    assert (made.verdict, made.reason) == (verdict, reason), made.message
    if verdict == "unknown":
        assert made.score is None
    checks = {e.check: e.result for e in made.evidence}
    assert "targetSpec" in checks and "alert" in checks


def test_no_data_is_never_a_resolved_alert_and_a_down_prometheus_is_never_effective() -> None:
    made = judge.judge(judge.Observed(health=healthy(), alert="unknown"))
    assert {e.check: e.result for e in made.evidence}["alert"] == "unknown"
    down = judge.Metrics(score=None, detail="connection refused", unavailable=True)
    assert judge.judge(judge.Observed(health=healthy(), metrics=down)).verdict == "unknown"
    # ... but crashing Pods are ineffective whatever Prometheus says
    assert judge.judge(judge.Observed(health=crashing(), metrics=down)).verdict == "ineffective"


def test_score_weighs_the_checks_that_had_data() -> None:
    made = judge.judge(judge.Observed(health=healthy(), alert="resolved"))
    assert made.score == 1.0
    partly = judge.judge(judge.Observed(health=healthy(), alert="firing"))
    assert partly.score is not None and 0.6 < partly.score < 0.7  # 0.5 of 0.8 weight on health


def test_fingerprint_ignores_status_and_bookkeeping_but_not_the_spec() -> None:
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "api",
            "resourceVersion": "1",
            "generation": 3,
            "labels": {"app": "api"},
            "annotations": {"deployment.kubernetes.io/revision": "3"},
        },
        "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "a", "image": "x:1"}]}}},
        "status": {"readyReplicas": 1},
    }
    same = {
        **deploy,
        "metadata": {**deploy["metadata"], "resourceVersion": "9", "annotations": {}},
        "status": {"readyReplicas": 2},
    }
    changed = {**deploy, "spec": {**deploy["spec"], "replicas": 3}}
    assert fingerprint.fingerprint(deploy) == fingerprint.fingerprint(same)
    assert fingerprint.fingerprint(deploy) != fingerprint.fingerprint(changed)
    assert (
        fingerprint.fingerprint(deploy).startswith("sha256:") and len(fingerprint.fingerprint(deploy)) == 23
    )


def test_window_from_the_workflow_else_the_setting() -> None:
    assert timeline.window_seconds("1h30m", default_seconds=300) == 5400
    assert timeline.window_seconds("90s", default_seconds=300) == 90
    assert timeline.window_seconds(None, default_seconds=300) == 300
    assert timeline.window_seconds("soon", default_seconds=300) == 300


def execution(
    name: str,
    *,
    workflow: str,
    verdict: str | None,
    ended: str,
    phase: str = "Completed",
    target: str = "api",
    dry_run: bool = False,
) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase, "completedAt": ended, "assessment": {"verdict": verdict}}
    if dry_run:
        status["dryRun"] = True
    return {
        "metadata": {"name": name, "namespace": "prod"},
        "spec": {
            "workflowRef": {"workflowId": workflow, "version": "1.0.0"},
            "targetResource": {"kind": "Deployment", "name": target},
        },
        "status": status,
    }


def test_history_of_a_target() -> None:
    now = datetime.datetime(2026, 11, 20, 12, 0, tzinfo=datetime.UTC)
    found = history.of_target(
        [
            execution("a-exec-1", workflow="restart", verdict="ineffective", ended="2026-11-20T11:00:00Z"),
            execution("b-exec-1", workflow="raise-memory", verdict="effective", ended="2026-11-20T11:30:00Z"),
            execution("c-exec-1", workflow="raise-memory", verdict="effective", ended="2026-11-19T01:00:00Z"),
            execution(
                "d-exec-1", workflow="restart", verdict=None, ended="2026-11-20T11:40:00Z", target="web"
            ),
            execution(
                "e-exec-1",
                workflow="restart",
                verdict="effective",
                ended="2026-11-20T11:50:00Z",
                dry_run=True,
            ),
        ],
        kind="Deployment",
        name="api",
        namespace="prod",
        now=now,
        window_seconds=86400,
    )
    assert [e.execution for e in found.entries] == ["b-exec-1", "a-exec-1"]  # newest first, in the window
    assert found.ineffective == {"restart"} and not found.recurring
    lines = history.describe(found, now=now)
    assert lines[0].startswith("- raise-memory 1.0.0: completed 30 min ago, verdict effective")


def test_prometheus_queries_quote_what_they_are_given() -> None:
    found = queries.standard_queries("Deployment", 'api"x', "prod")
    assert set(found) == {"restarts", "notReady"} and '\\"' not in found["restarts"].split("pod=~")[0]
    assert queries.standard_queries("ConfigMap", "cfg", "prod") == {}
    assert (
        queries.alert_query('Pod"OOM', "prod")
        == 'ALERTS{alertname="Pod\\"OOM",alertstate="firing",namespace="prod"}'
    )


async def test_a_prometheus_that_does_not_answer_is_unavailable() -> None:
    client = prometheus.PrometheusClient(
        prometheus.PrometheusConfig(url="http://127.0.0.1:9", timeout_seconds=2)
    )
    try:
        with pytest.raises(queries.Unanswered, match="not reachable"):
            await queries.ReaderSource(client).value("up", at=ENDED)
    finally:
        await client.aclose()


def test_one_number_out_of_an_answer_and_no_series_is_no_data() -> None:
    vector = {"resultType": "vector", "result": [{"value": [1, "2"]}, {"value": [1, "3.5"]}]}
    assert queries.total(vector) == 5.5
    assert queries.total({"resultType": "scalar", "result": [1, "0"]}) == 0.0
    assert queries.total({"resultType": "vector", "result": []}) is None  # no data, not zero
    for odd in ({"resultType": "matrix", "result": []}, {"resultType": "vector", "result": [{}]}, None):
        with pytest.raises(queries.Unanswered):
            queries.total(odd)


def decision(workflow: str | None, review: str | None = None) -> status.Decision:
    chosen = (
        resources.SelectedWorkflow(
            workflow_id=workflow,
            version="1.0.0",
            container_image="x@sha256:1",
            confidence=0.95,
            rationale="r",
        )
        if workflow
        else None
    )
    return status.Decision(
        selected=chosen,
        review_reason=review,
        root_cause=None,
        alternatives=[],
        warnings=[],
        attempts=[],  # type: ignore[arg-type]
        recovery=None,
        llm=resources.LLMUsage(provider="offline"),
    )


def test_an_ineffective_workflow_is_not_auto_selected_again_and_recurrence_goes_to_a_person() -> None:
    now = datetime.datetime(2026, 11, 20, 12, 0, tzinfo=datetime.UTC)
    runs = [
        execution("a-exec-1", workflow="restart", verdict="ineffective", ended="2026-11-20T11:00:00Z"),
        execution("b-exec-1", workflow="raise-memory", verdict="effective", ended="2026-11-20T11:10:00Z"),
        execution("c-exec-1", workflow="raise-memory", verdict="effective", ended="2026-11-20T11:20:00Z"),
    ]
    past = history.of_target(
        runs, kind="Deployment", name="api", namespace="prod", now=now, window_seconds=86400
    )
    again = pipeline.with_history(decision("restart"), past)
    assert again.review_reason == "previously_ineffective" and "a-exec-1" in again.warnings[-1]
    assert again.selected is not None  # still shown as the proposal a person may approve
    back = pipeline.with_history(decision("scale-up"), past)
    assert back.review_reason == "recurring_after_remediation" and "b-exec-1" in back.warnings[-1]
    assert pipeline.with_history(decision("scale-up"), history.History()).review_reason is None
    assert (
        pipeline.with_history(decision("restart", "low_confidence"), past).review_reason == "low_confidence"
    )
    section = prompts.history_section(history.describe(past, now=now))
    assert section.startswith("## Remediation History") and "restart 1.0.0: completed 60 min ago" in section
    assert prompts.history_section([]) == ""


class Recorded:
    """A metrics source answering from a table (the Source protocol; the HTTP client is tested below)."""

    def __init__(self, answers: dict[tuple[str, datetime.datetime], float | None]) -> None:
        self.answers = answers

    async def value(self, query: str, *, at: datetime.datetime) -> float | None:
        key = next(k for k in self.answers if k[0] in query and k[1] == at)
        return self.answers[key]


async def test_before_after_metrics_compare_the_standard_queries() -> None:
    target = resources.ResourceRef(kind="Deployment", name="api", namespace="prod")
    before, now = ENDED - datetime.timedelta(minutes=10), ENDED + datetime.timedelta(minutes=5)
    better = Recorded(
        {("restarts", before): 12.0, ("restarts", now): 0.0, ("ready", before): 2.0, ("ready", now): 0.0}
    )
    made = await assessor._metrics(better, target, before=before, now=now)
    assert made is not None and made.score == 1.0 and "restarts: 12 → 0" in made.detail
    worse = Recorded(
        {("restarts", before): 0.0, ("restarts", now): 5.0, ("ready", before): None, ("ready", now): 1.0}
    )
    made = await assessor._metrics(worse, target, before=before, now=now)
    assert made is not None and made.score == 0.0 and "notReady: no data" in made.detail


async def test_the_source_reads_through_the_products_prometheus_client() -> None:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            empty = "absent" in self.path
            result = [] if empty else [{"metric": {}, "value": [1, "2"]}, {"metric": {}, "value": [1, "3.5"]}]
            body = json.dumps(
                {"status": "success", "data": {"resultType": "vector", "result": result}}
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            return None

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        client = prometheus.PrometheusClient(prometheus.PrometheusConfig(url=url))
        source = queries.ReaderSource(client)
        assert await source.value("sum(up)", at=ENDED) == 5.5
        assert await source.value("absent_metric", at=ENDED) is None  # no series: no data, not zero
        await client.aclose()
    finally:
        server.shutdown()
        server.server_close()


def rejection(name: str, *, workflow: str, at: str, target: str = "api", by: str = "alice") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "prod", "creationTimestamp": at},
        "spec": {
            "workflowRef": {"workflowId": workflow, "version": "1.0.0"},
            "targetResource": {"kind": "Deployment", "name": target, "namespace": "prod"},
            "rejectedBy": by,
            "reason": "rolling back loses\nthe migration",
        },
    }


def test_a_rejected_workflow_is_proposed_again_only_to_a_person_saying_who_rejected_it_and_why() -> None:
    now = datetime.datetime(2026, 11, 20, 12, 0, tzinfo=datetime.UTC)
    said_no = [
        rejection("a-rejected-1", workflow="rollback", at="2026-11-20T11:00:00Z"),
        rejection("b-rejected-1", workflow="restart", at="2026-11-20T11:00:00Z", target="web"),  # elsewhere
        rejection("c-rejected-1", workflow="scale-up", at="2026-11-18T11:00:00Z"),  # out of the window
    ]
    past = history.of_target(
        [], kind="Deployment", name="api", namespace="prod", now=now, window_seconds=86400, rejections=said_no
    )
    assert past.rejected == {"rollback"} and [r.record for r in past.rejections] == ["a-rejected-1"]
    again = pipeline.with_history(decision("rollback"), past)
    assert again.review_reason == "previously_rejected" and again.selected is not None
    assert "alice (a-rejected-1: rolling back loses the migration)" in again.warnings[-1]
    # before any other reason: the person reviewing it sees first that a colleague said no
    unsure = pipeline.with_history(decision("rollback", "investigation_failed"), past)
    assert unsure.review_reason == "previously_rejected"
    assert pipeline.with_history(decision("restart"), past).review_reason is None
    lines = history.describe(past, now=now)
    assert lines == [
        "- rollback 1.0.0: rejected by a person (alice) 60 min ago, not run: rolling back loses the "
        "migration [a-rejected-1]"
    ]
    assert "rejected here is not run again without a person" in prompts.history_section(lines)
