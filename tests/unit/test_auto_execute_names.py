"""autoExecute's decision from server-side facts only (issue 31, finding 7): a name under which
someone else created an execution is skipped, an approved execution of the analysis (its uid, an
approval the API server checked) stops the policy, and the policy's own record is the analysis'
status — nothing an Event says."""

from __future__ import annotations

from typing import Any

from aianalysis.executor import approval
from tests.unit.test_executor_admission import NOW, OPTED_IN, POLICY, analysis

APPROVAL = {"mode": "Manual", "approvedBy": "alice", "selectionDigest": "sha256:x"}


def auto(
    subject: dict[str, Any], executions: list[dict[str, Any]]
) -> approval.NewExecution | approval.Refuse:
    return approval.approve_automatically(
        subject,
        executions=executions,
        policy=POLICY,
        facts=OPTED_IN,
        now=NOW,
        approver="system:serviceaccount:x:e",
    )


def execution(
    name: str, *, analysis_ref: str = "orders-crash", uid: str = "aia-uid", **spec: Any
) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"analysisRef": analysis_ref, "analysisUID": uid, **spec}}


def test_squatted_names_are_skipped_not_obeyed() -> None:
    squats = [
        execution("orders-crash-exec-1"),  # this analysis, but no approval: anyone may write it
        execution("orders-crash-exec-2", analysis_ref="elsewhere", uid="other", approval=APPROVAL),
        execution("orders-crash-exec-3", uid="an-older-analysis-of-that-name", approval=APPROVAL),
    ]
    decided = auto(analysis(), squats)
    assert isinstance(decided, approval.NewExecution), decided
    assert decided.name == "orders-crash-exec-4"
    assert decided.body["metadata"]["name"] == "orders-crash-exec-4"
    assert decided.body["spec"]["approval"]["mode"] == "Auto"


def test_an_approved_execution_of_the_analysis_stops_the_policy_whatever_its_name_or_phase() -> None:
    person = execution("orders-crash-again", approval=APPROVAL)
    person["status"] = {"phase": "Refused"}
    decided = auto(analysis(), [person])
    assert isinstance(decided, approval.Refuse) and "orders-crash-again" in decided.message


def test_the_policy_decides_once_by_its_status_record() -> None:
    recorded = analysis(
        autoExecution={"execution": "orders-crash-exec-1", "decidedAt": "2026-11-20T10:05:00Z"}
    )
    decided = auto(recorded, [])  # the execution is gone (a person deleted it): not created again
    assert isinstance(decided, approval.Refuse) and "decided this analysis before" in decided.message
    assert isinstance(auto(analysis(), []), approval.NewExecution)


def test_a_name_squatted_for_another_analysis_does_not_block_an_approval() -> None:
    squat = execution("orders-crash-exec-1", analysis_ref="elsewhere", uid="other")
    subject = analysis()
    proposal = approval.proposal_of(subject)
    assert isinstance(proposal, approval.Proposal)
    decided = approval.approve_manually(subject, executions=[squat], approver="alice", bound=proposal.binding)
    assert isinstance(decided, approval.NewExecution) and decided.name == "orders-crash-exec-2"
