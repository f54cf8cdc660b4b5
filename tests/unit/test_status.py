"""Pure status building and the decision rules that decide what reaches status."""

from __future__ import annotations

import datetime
from typing import Any

from aianalysis import catalog, resources
from aianalysis.analysis import answer, pipeline, status, validation

NOW = datetime.datetime(2026, 11, 20, 10, 0, 5, 123456, tzinfo=datetime.UTC)
LATER = NOW + datetime.timedelta(seconds=30)
SPEC = resources.AIAnalysisSpec.model_validate(
    {
        "signal": {"type": "OOMKilled", "severity": "critical"},
        "resource": {"kind": "Deployment", "name": "payment-api", "namespace": "payments"},
        "businessContext": {"environment": "production", "priority": "P1", "riskTolerance": "low"},
    }
)
WORKFLOW = resources.RemediationWorkflowSpec.model_validate(
    {
        "workflowId": "oomkill-increase-memory",
        "version": "1.0.0",
        "title": "Increase memory",
        "description": "Raise the memory limit.",
        "labels": {"signalTypes": ["OOMKilled"]},
        "riskLevel": "low",
        "execution": {"containerImage": "registry.example/wf@sha256:ab"},
    }
)
USAGE = resources.LLMUsage(provider="anthropic", model="m", requests=3, input_tokens=10)


def _answer(confidence: float = 0.9, **extra: Any) -> answer.SelectionAnswer:
    return answer.SelectionAnswer.model_validate(
        {
            "analysis_summary": "s",
            "root_cause_assessment": "limit too low",
            "rca_severity": "high",
            "selected_workflow": {
                "workflow_id": "oomkill-increase-memory",
                "confidence": confidence,
                "rationale": "r",
                "parameters": {"MEMORY_LIMIT_NEW": "1Gi"},
            },
            **extra,
        }
    )


def _verdict(
    valid: bool, ans: answer.SelectionAnswer | None, rules: list[str] | None = None
) -> validation.Verdict:
    return validation.Verdict(
        valid=valid,
        errors=[f"[{r}] bad" for r in rules or []],
        rules_failed=rules or [],
        warnings=[],
        answer=ans,
        workflow=catalog.Workflow(name="oom-v1", spec=WORKFLOW) if ans else None,
        parameters={"MEMORY_LIMIT_NEW": "1Gi"},
    )


def _decide(*verdicts: validation.Verdict) -> status.Decision:
    return pipeline.decide(list(verdicts), attempts=[], usage=USAGE, spec=SPEC, confidence_floor=0.7)


def test_valid_confident_selection_is_executable_without_review() -> None:
    decision = _decide(_verdict(True, _answer()))
    assert decision.selected is not None
    assert decision.selected.container_image == "registry.example/wf@sha256:ab"
    assert decision.selected.version == "1.0.0"
    assert decision.review_reason is None
    assert decision.root_cause is not None and decision.root_cause.summary == "limit too low"
    assert decision.root_cause.affected_resource == resources.AffectedResource(
        kind="Deployment", name="payment-api", namespace="payments"
    )


def test_low_confidence_keeps_the_selection_but_asks_for_review() -> None:
    decision = _decide(_verdict(True, _answer(confidence=0.5)))
    assert decision.selected is not None and decision.review_reason == "low_confidence"


def test_invalid_final_answer_never_reaches_selected_workflow() -> None:
    decision = _decide(_verdict(False, _answer(), ["parameters"]), _verdict(False, _answer(), ["policy"]))
    assert decision.selected is None
    assert decision.review_reason == "validation_failed"
    assert decision.failed_rules == ["parameters", "policy"]
    # A candidate the policy refused (injected text can name any id) is not shown as an alternative;
    # one that only needs its values fixed is, first.
    assert "oomkill-increase-memory" not in [a.workflow_id for a in decision.alternatives]
    values_only = _decide(_verdict(False, _answer(), ["parameters"]))
    assert values_only.alternatives[0].workflow_id == "oomkill-increase-memory"


def test_only_missing_parameters_mean_parameters_incomplete() -> None:
    decision = _decide(_verdict(False, _answer(), ["missing_parameter"]))
    assert decision.selected is None and decision.review_reason == "parameters_incomplete"


def test_llm_asking_for_review_without_a_workflow_keeps_its_reason() -> None:
    ans = answer.SelectionAnswer.model_validate(
        {
            "analysis_summary": "s",
            "root_cause_assessment": "a",
            "rca_severity": "low",
            "selected_workflow": None,
            "needs_human_review": True,
            "human_review_reason": "no_eligible_workflow",
        }
    )
    decision = _decide(_verdict(True, ans))
    assert decision.selected is None and decision.review_reason == "no_eligible_workflow"


def test_completed_status_round_trips_through_the_model_and_sets_ready() -> None:
    marked = status.investigating(previous=resources.AIAnalysisStatus(), attempt=1, now=NOW, generation=1)
    final = status.completed(
        previous=marked, decision=_decide(_verdict(True, _answer())), now=LATER, generation=1
    )
    wire = final.merge_patch()
    assert resources.AIAnalysisStatus.model_validate(wire) == final
    assert wire["phase"] == "Completed" and wire["startedAt"] == "2026-11-20T10:00:05Z"
    assert wire["completedAt"] == "2026-11-20T10:00:35Z"
    assert wire["reason"] == "WorkflowSelected" and wire["needsHumanReview"] is False
    [ready] = final.conditions or []
    assert ready.type == "Ready" and ready.status == "True"
    assert ready.last_transition_time == "2026-11-20T10:00:35Z"  # False → True moved it
    assert wire["humanReviewReason"] is None  # explicit null clears an earlier value in a merge patch


def test_failed_status_needs_review_and_keeps_earlier_attempts() -> None:
    marked = status.investigating(previous=resources.AIAnalysisStatus(), attempt=2, now=NOW, generation=1)
    failed = status.failed(
        previous=marked,
        reason="ProviderUnavailable",
        message="529 overloaded",
        now=LATER,
        generation=1,
        review_reason="provider_unavailable",
    )
    assert failed.phase == "Failed" and failed.needs_human_review is True
    assert failed.human_review_reason == "provider_unavailable" and failed.attempt == 2
    assert failed.selected_workflow is None
