"""The LLM's answer (one workflow, its root cause and, for a recovery, its strategy), delivered as
the input of the ``submit_selection`` tool. The same model generates that tool's ``input_schema``
and parses the answer, so the schema the LLM sees and the one we validate can never drift apart.

Wire names are snake_case, as in the ADRs.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from aianalysis.analysis import schema

SUBMIT_TOOL_NAME = "submit_selection"

ParamValue = str | int | float | bool | list[str | int | float | bool]


class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")


MAX_ID = 253
MAX_TEXT = 4096
"""Everything the LLM writes reaches status (and the recovery prompt): each field is bounded here,
in the schema the LLM is given, so an overlong answer is a schema error it corrects, not a status
the API server refuses."""
MAX_ITEMS = 20
MAX_ALTERNATIVES = 5
Factor = Annotated[str, Field(max_length=1024)]


class SelectedWorkflowAnswer(_Answer):
    workflow_id: str = Field(
        max_length=MAX_ID, description="Returned by search_workflow_catalog in this conversation."
    )
    version: str | None = Field(None, max_length=MAX_ID, description="Exact version; omit for the latest.")
    confidence: Annotated[float, Field(ge=0.0, le=1.0)] = Field(
        description="That it resolves the root cause you found."
    )
    rationale: str = Field(
        min_length=1, max_length=MAX_TEXT, description="Why this workflow fits the root cause."
    )
    parameters: dict[str, ParamValue] = Field(
        default_factory=dict,
        description="Named as in get_workflow_details; leave out those marked filled_by.",
    )


class AlternativeAnswer(_Answer):
    workflow_id: str = Field(max_length=MAX_ID)
    version: str | None = Field(None, max_length=MAX_ID)
    confidence: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    rationale: str | None = Field(None, max_length=MAX_TEXT)


class AffectedResourceAnswer(_Answer):
    kind: str
    name: str
    namespace: str | None = None
    api_version: str | None = Field(None, description="e.g. apps/v1; omit for the kind's usual one.")


class PreviousAttemptAssessmentAnswer(_Answer):
    failure_understood: bool
    failure_reason_analysis: str
    state_changed: bool
    current_signal_type: str | None = None


class CurrentRCAAnswer(_Answer):
    summary: str
    severity: Literal["critical", "high", "medium", "low"] | None = None
    signal_type: str | None = None
    contributing_factors: list[str] = Field(default_factory=list)


class RecoveryAnalysisAnswer(_Answer):
    previous_attempt_assessment: PreviousAttemptAssessmentAnswer
    current_rca: CurrentRCAAnswer | None = None


class RecoveryStrategyAnswer(_Answer):
    approach: str
    differs_from_previous: bool
    why_different: str


class SelectionAnswer(_Answer):
    """What the LLM submits. ``selected_workflow`` may be null only when no catalog workflow fits
    (then ``needs_human_review`` must be true)."""

    analysis_summary: str = Field(min_length=1, max_length=MAX_TEXT, description="Brief summary of your RCA.")
    root_cause_assessment: str = Field(
        min_length=1, max_length=MAX_TEXT, description="The root cause your investigation found."
    )
    rca_severity: Literal["critical", "high", "medium", "low"] = Field(
        description="Per the rubric; may differ from the signal's."
    )
    signal_type: str | None = Field(
        None, max_length=MAX_ID, description="If your RCA found another than the input's."
    )
    contributing_factors: list[Factor] = Field(default_factory=list, max_length=MAX_ITEMS)
    affected_resource: AffectedResourceAnswer | None = Field(
        None,
        description="The remediation target, the object that must change (rules in the system prompt); "
        "omit for the incident's resource.",
    )
    selected_workflow: SelectedWorkflowAnswer | None
    alternative_workflows: list[AlternativeAnswer] = Field(default_factory=list, max_length=MAX_ALTERNATIVES)
    warnings: list[Factor] = Field(default_factory=list, max_length=MAX_ITEMS)
    needs_human_review: bool = False
    human_review_reason: Literal["no_eligible_workflow", "inconclusive"] | None = None
    recovery_analysis: RecoveryAnalysisAnswer | None = Field(
        None, description="Recovery only: your assessment of the failed attempt(s)."
    )
    recovery_strategy: RecoveryStrategyAnswer | None = Field(
        None, description="Recovery only: how this attempt differs from what failed."
    )


def submit_tool_schema() -> dict[str, Any]:
    """JSON schema of the submit tool's input, generated from :class:`SelectionAnswer` (lean)."""
    return schema.lean(SelectionAnswer.model_json_schema())
