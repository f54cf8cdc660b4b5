"""What should fire, from the cluster's objects: one alert per thing a person must act on, with
routing labels and acting annotations; nothing once it was acted on, superseded or is too old."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Sequence
from typing import Any

import pytest

from aianalysis import notify, resources

NOW = datetime.datetime(2026, 11, 27, 12, 0, tzinfo=datetime.UTC)
OPTIONS = notify.NotifyOptions(
    kinds=frozenset(notify.ALERTNAMES),
    console_url="https://console.example/",
    pending_seconds=30,
    max_age_seconds=86400,
)
SELECTION = {
    "workflowId": "restart-pods",
    "version": "1.0.0",
    "containerImage": "registry.example/wf/restart@sha256:" + "a" * 64,
    "confidence": 0.62,
    "rationale": "pods crash after the config change\u202e;\x1b[31m rolled back",
    "parameters": {"TARGET_NAMESPACE": "shop"},
    "specDigest": "sha256:" + "b" * 64,
}


def stamp(minutes_ago: float) -> str:
    return resources.timestamp(NOW - datetime.timedelta(minutes=minutes_ago))


def analysis(name: str = "api-crash", *, created: float = 10, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "shop",
            "uid": f"uid-{name}",
            "creationTimestamp": stamp(created),
        },
        "spec": {
            "signal": {"type": "CrashLoopBackOff", "severity": "high"},
            "resource": {"kind": "Deployment", "name": "api", "namespace": "shop"},
            "businessContext": {
                "environment": "production",
                "priority": "P1",
                "customLabels": {"team": "payments"},
            },
        },
        "status": {
            "phase": "Completed",
            "completedAt": stamp(5),
            "rootCause": {"summary": "a bad config map " + "x" * 500},
            **status,
        },
    }


def execution(name: str, *, analysis: str = "api-crash", created: float = 4, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "shop", "creationTimestamp": stamp(created)},
        "spec": {
            "analysisRef": analysis,
            "analysisUID": f"uid-{analysis}",
            "workflowRef": {"workflowId": "restart-pods", "version": "1.0.0"},
            "targetResource": {"kind": "Deployment", "name": "api", "namespace": "shop"},
        },
        "status": {"completedAt": stamp(3), **status},
    }


def fire(
    analyses: list[dict[str, Any]], executions: Sequence[dict[str, Any]] = (), **options: Any
) -> list[notify.Notification]:
    chosen = dataclasses.replace(OPTIONS, **options)
    return notify.derive(analyses, list(executions), now=NOW, options=chosen)


def test_a_selection_under_review_fires_with_routing_labels_and_the_bound_approve_command() -> None:
    item = analysis(selectedWorkflow=SELECTION, needsHumanReview=True, humanReviewReason="low_confidence")
    [alert] = fire([item])
    assert dict(alert.labels) == {
        "alertname": "AIAnalysisHumanReview",
        "source": "aianalysis-operator",
        "namespace": "shop",
        "aianalysis": "api-crash",
        "severity": "critical",
        "environment": "production",
        "team": "payments",
        "priority": "P1",
        "reason": "low_confidence",
    }
    status = resources.AIAnalysisStatus.parse_known(item["status"])
    digest = resources.selection_digest(
        analysis_uid="uid-api-crash",
        workflow=resources.WorkflowRef(
            workflow_id="restart-pods",
            version="1.0.0",
            container_image=SELECTION["containerImage"],
            spec_digest=SELECTION["specDigest"],
        ),
        parameters={"TARGET_NAMESPACE": "shop"},
        target=resources.remediation_target(item, status),
    )
    assert alert.annotations["approve_command"] == (
        f"aianalysis approve api-crash -n shop --uid uid-api-crash --digest {digest} "
        "--override-review low_confidence"
    )
    assert alert.annotations["console_url"] == "https://console.example/ns/shop/aia/api-crash"
    assert "restart-pods 1.0.0 (confidence 0.62)" in alert.annotations["summary"]
    description = alert.annotations["description"]
    assert "\u202e" not in description and "\x1b" not in description  # hidden text cannot hide here
    assert "Why: pods crash after the config change;[31m rolled back" in description
    root = next(line for line in description.splitlines() if line.startswith("Root cause: "))
    assert len(root) <= len("Root cause: ") + 300 and root.endswith("…")
    assert alert.starts_at == NOW - datetime.timedelta(minutes=5)


def test_a_plain_selection_waits_for_approval_only_after_the_pending_time() -> None:
    [alert] = fire([analysis(selectedWorkflow=SELECTION)])
    assert alert.labels["alertname"] == "AIAnalysisAwaitingApproval" and "reason" not in alert.labels
    assert "--override-review" not in alert.annotations["approve_command"]
    assert fire([analysis(selectedWorkflow=SELECTION, completedAt=stamp(0.25))]) == []  # autoExecute's time


@pytest.mark.parametrize(
    ("reason", "alertname"),
    [
        ("max_recovery_attempts", "AIAnalysisRecoveryExhausted"),
        ("recurring_after_remediation", "AIAnalysisRecurringIncident"),
        ("no_eligible_workflow", "AIAnalysisHumanReview"),
    ],
)
def test_review_reasons_that_need_another_kind_of_person_have_their_own_alertname(
    reason: str, alertname: str
) -> None:
    [alert] = fire([analysis(needsHumanReview=True, humanReviewReason=reason)])
    assert (alert.labels["alertname"], alert.labels["reason"]) == (alertname, reason)
    assert "approve_command" not in alert.annotations  # nothing selected, nothing to approve


def test_acted_on_superseded_rejected_old_or_deleted_analyses_fire_nothing() -> None:
    waiting = analysis(selectedWorkflow=SELECTION)
    assert fire([waiting], [execution("api-crash-exec-1", phase="Running")]) == []  # approved
    assert fire([analysis(selectedWorkflow=SELECTION, rejection={"rejectedBy": "alice"})]) == []
    newer = analysis("api-crash-2", created=1, selectedWorkflow=SELECTION)
    assert [a.labels["aianalysis"] for a in fire([waiting, newer])] == ["api-crash-2"]
    assert fire([analysis(selectedWorkflow=SELECTION, completedAt=stamp(60 * 25))]) == []
    deleting = analysis(selectedWorkflow=SELECTION)
    deleting["metadata"]["deletionTimestamp"] = stamp(0)
    assert fire([deleting]) == []
    assert fire([analysis(phase="Investigating", selectedWorkflow=None)]) == []


def test_an_execution_of_another_analysis_uid_does_not_count_as_acting_on_this_one() -> None:
    other = execution("api-crash-exec-1")
    other["spec"]["analysisUID"] = "uid-of-a-deleted-namesake"
    [alert] = fire([analysis(selectedWorkflow=SELECTION)], [other])
    assert alert.labels["alertname"] == "AIAnalysisAwaitingApproval"


@pytest.mark.parametrize(
    ("status", "alertname", "reason"),
    [
        (
            {"phase": "Failed", "failureDetails": {"reason": "OOMKilled"}},
            "WorkflowExecutionFailed",
            "OOMKilled",
        ),
        ({"phase": "Failed", "failureDetails": {"reason": "a story"}}, "WorkflowExecutionFailed", "Other"),
        (
            {"phase": "Refused", "failureDetails": {"reason": "SelectionInvalid"}},
            "WorkflowExecutionRefused",
            "SelectionInvalid",
        ),
        (
            {"phase": "Failed", "failureDetails": {"reason": "Cooldown"}},
            "WorkflowExecutionBlocked",
            "Cooldown",
        ),
        (
            {
                "phase": "Completed",
                "assessment": {"verdict": "ineffective", "reason": "SignalPersists", "assessedAt": stamp(1)},
            },
            "WorkflowExecutionIneffective",
            "SignalPersists",
        ),
    ],
)
def test_executions_that_need_a_person_fire_with_a_closed_reason(
    status: dict[str, Any], alertname: str, reason: str
) -> None:
    [alert] = fire([], [execution("api-crash-exec-1", **status)])
    assert alert.labels["alertname"] == alertname and alert.labels["reason"] == reason
    assert alert.labels["workflowexecution"] == "api-crash-exec-1"
    assert alert.annotations["console_url"] == "https://console.example/ns/shop/aia/api-crash"


def test_a_newer_execution_on_the_same_target_ends_the_older_ones_alert() -> None:
    failed = execution("api-crash-exec-1", created=10, phase="Failed", failureDetails={"reason": "Error"})
    retried = execution("api-crash-exec-2", created=2, phase="Completed")
    assert fire([], [failed]) != [] and fire([], [failed, retried]) == []


def test_analyses_waiting_for_the_budget_are_one_alert_per_namespace() -> None:
    waiting = [
        analysis(f"a{i}", phase="Pending", reason="BudgetExhausted", completedAt=None) for i in range(12)
    ]
    [alert] = fire(waiting)
    assert dict(alert.labels) == {
        "alertname": "AIAnalysisLLMBudgetExhausted", "source": "aianalysis-operator", "namespace": "shop",
        "severity": "warning",
    }  # fmt: skip
    assert alert.annotations["summary"] == "12 analyses in shop wait for the LLM budget"
    assert "and 2 more" in alert.annotations["description"]


def test_kinds_switched_off_do_not_fire_and_the_cluster_label_names_the_cluster() -> None:
    item = analysis(selectedWorkflow=SELECTION)
    assert fire([item], kinds=frozenset({"human_review"})) == []
    [alert] = fire([item], cluster="eu-1")
    assert alert.labels["cluster"] == "eu-1"


def test_the_same_objects_give_the_same_label_sets_every_time() -> None:
    """A restart derives exactly the alerts that were posted: Alertmanager sees no new ones — also
    when two analyses of one target were created in the same second."""
    other = analysis("b", needsHumanReview=True, humanReviewReason="inconclusive")
    other["spec"]["resource"]["name"] = "worker"
    twin = analysis("api-crash-twin", selectedWorkflow=SELECTION)
    objects = [analysis(selectedWorkflow=SELECTION), other, twin]
    first, again = fire(objects), fire(list(reversed(objects)))
    assert sorted(a.key for a in first) == sorted(a.key for a in again)
    assert sorted(a.labels["aianalysis"] for a in first) == ["api-crash-twin", "b"]
