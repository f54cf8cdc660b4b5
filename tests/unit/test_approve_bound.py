"""Pure: an approval is bound to what the person reviewed — the analysis' uid and the selection
digest — and an override names the review reason it overrides (issue 31 #3)."""

from __future__ import annotations

import copy
from typing import Any

from aianalysis import cli
from aianalysis.executor import approval
from tests.unit.test_executor_admission import analysis


def shown(subject: dict[str, Any]) -> approval.Proposal:
    found = approval.proposal_of(subject)
    assert isinstance(found, approval.Proposal), found
    return found


def decide(
    subject: dict[str, Any], bound: approval.Binding, **options: Any
) -> approval.NewExecution | approval.Refuse:
    return approval.approve_manually(subject, executions=[], approver="alice", bound=bound, **options)


def test_the_proposal_shows_what_would_run() -> None:
    seen = shown(analysis())
    assert (seen.namespace, seen.name, seen.uid) == ("prod", "orders-crash", "aia-uid")
    assert (seen.target.kind, seen.target.name, seen.target.namespace) == ("Deployment", "orders", "prod")
    assert (seen.workflow.workflow_id, seen.workflow.version) == ("restart-deployment", "1.0.0")
    assert seen.workflow.container_image == "registry.example/wf/restart:1" and seen.workflow.spec_digest
    assert seen.parameters["REPLICAS"] == "2" and seen.confidence == 0.95 and seen.review_reason is None
    assert seen.approve_command() == (
        f"aianalysis approve orders-crash -n prod --uid aia-uid --digest {seen.digest}"
    )
    created = decide(analysis(), seen.binding)
    assert isinstance(created, approval.NewExecution)
    assert created.body["spec"]["approval"]["selectionDigest"] == seen.digest


def test_a_same_named_replacement_is_not_what_was_reviewed() -> None:
    reviewed = shown(analysis())
    replacement = analysis()
    replacement["metadata"]["uid"] = "other-uid"
    assert shown(replacement).digest != reviewed.digest  # the uid is part of the digest
    refused = decide(replacement, reviewed.binding)
    assert isinstance(refused, approval.Refuse) and "not the analysis you reviewed" in refused.message
    assert "aianalysis show orders-crash -n prod" in refused.message


def test_another_selection_of_the_same_analysis_is_not_what_was_reviewed() -> None:
    reviewed = shown(analysis())
    changed = copy.deepcopy(analysis())
    changed["status"]["selectedWorkflow"]["parameters"]["REPLICAS"] = "5"
    refused = decide(changed, reviewed.binding)
    assert isinstance(refused, approval.Refuse) and "is not the one you reviewed" in refused.message
    target_moved = copy.deepcopy(analysis())
    target_moved["status"]["rootCause"]["affectedResource"]["name"] = "payments"
    assert isinstance(decide(target_moved, reviewed.binding), approval.Refuse)


def test_an_override_names_the_reason_it_overrides() -> None:
    unsure = analysis(needsHumanReview=True, humanReviewReason="low_confidence")
    seen = shown(unsure)
    assert seen.review_reason == "low_confidence"
    assert seen.approve_command().endswith("--override-review low_confidence")
    without = decide(unsure, seen.binding)
    assert isinstance(without, approval.Refuse) and "--override-review low_confidence" in without.message
    other = decide(unsure, seen.binding, override_review="previously_ineffective")
    assert isinstance(other, approval.Refuse) and "not for previously_ineffective" in other.message
    needless = decide(analysis(), shown(analysis()).binding, override_review="low_confidence")
    assert isinstance(needless, approval.Refuse) and "needs no human review" in needless.message
    done = decide(unsure, seen.binding, override_review="low_confidence")
    assert isinstance(done, approval.NewExecution)
    assert done.body["spec"]["approval"]["overriddenReason"] == "low_confidence"


def test_nothing_to_decide_on_before_a_selection() -> None:
    running = analysis(phase="Investigating")
    assert isinstance(approval.proposal_of(running), approval.Refuse)
    nothing = analysis(selectedWorkflow=None)
    del nothing["status"]["selectedWorkflow"]
    assert "selected no workflow" in approval.proposal_of(nothing).message  # type: ignore[union-attr]


def test_untrusted_text_cannot_drive_the_terminal() -> None:
    rationale = "fine\x1b]8;;http://evil\x07click\x1b[2J\u202eevil\nnext"
    unsure = analysis(selectedWorkflow={**analysis()["status"]["selectedWorkflow"], "rationale": rationale})
    text = "\n".join(cli._proposal_lines(shown(unsure)))
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert "rationale:    fine" in text and "next" in text
