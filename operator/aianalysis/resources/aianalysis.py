"""AIAnalysis (namespaced): the incident an analysis is about (spec, immutable after creation) and
what the analysis concluded (status)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from aianalysis.resources.base import (
    API_VERSION,
    HumanReviewReason,
    Model,
    ResourceRef,
    RiskLevel,
    Semver,
    Severity,
    Short,
    Text,
    Value,
)
from aianalysis.resources.conditions import Condition

AIANALYSIS_PLURAL = "aianalyses"
TERMINAL_PHASES = ("Completed", "Failed")
"""The phases an AIAnalysis does not leave."""
AnalysisPhase = Literal["Pending", "Investigating", "Completed", "Failed"]


class Signal(Model):
    type: Annotated[str, Field(min_length=1, max_length=253)]
    severity: Severity
    alert_name: Short | None = None
    source: Short | None = None
    labels: dict[str, Value] | None = None
    error_message: Text | None = None
    description: Text | None = None
    firing_time: Short | None = None
    received_time: Short | None = None


class BusinessContext(Model):
    environment: Short | None = None
    priority: Annotated[str, Field(pattern=r"^P[0-9]$")] | None = None
    business_category: Short | None = None
    risk_tolerance: RiskLevel = "low"
    custom_labels: dict[str, str] | None = None
    """Operator-defined labels a workflow's customLabels are matched against exactly."""


class OriginalRCA(Model):
    summary: Text
    signal_type: Short
    severity: Short | None = None
    contributing_factors: list[Value] = Field(default_factory=list)


class ExecutedWorkflow(Model):
    workflow_id: Short
    version: Semver
    container_image: Short | None = None
    parameters: dict[str, Value] = Field(default_factory=dict)
    rationale: Text | None = None


class ExecutionFailure(Model):
    failed_step_index: int | None = None
    failed_step_name: Short | None = None
    reason: Annotated[str, Field(min_length=1, max_length=253)]
    message: Text | None = None
    exit_code: int | None = None
    failed_at: Short | None = None
    execution_time: Short | None = None


class PreviousExecution(Model):
    workflow_execution_ref: Short
    original_rca: OriginalRCA = Field(alias="originalRCA")
    selected_workflow: ExecutedWorkflow
    failure: ExecutionFailure


class RecoverySpec(Model):
    attempt_number: Annotated[int, Field(ge=1)]
    original_analysis_ref: Short | None = None
    previous_executions: Annotated[list[PreviousExecution], Field(min_length=1)]


class AIAnalysisSpec(Model):
    signal: Signal
    resource: ResourceRef
    cluster: Short | None = None
    business_context: BusinessContext = Field(default_factory=BusinessContext)
    recovery: RecoverySpec | None = None


class AffectedResource(Model):
    """The remediation target, validated in scope (docs/architecture.md §4)."""

    kind: str
    name: str
    namespace: str | None = None
    api_version: str | None = None


class RootCause(Model):
    summary: Text
    severity: Severity | None = None
    signal_type: str | None = None
    contributing_factors: Annotated[list[Value], Field(max_length=20)] = Field(default_factory=list)
    affected_resource: AffectedResource | None = None


class SelectedWorkflow(Model):
    workflow_id: str
    version: Semver
    container_image: str
    confidence: Annotated[float, Field(ge=0, le=1)]
    rationale: Text
    parameters: dict[str, str] = Field(default_factory=dict)
    spec_digest: Annotated[str, Field(max_length=80)] | None = None
    """``sha256:<hex>`` of the RemediationWorkflow spec these parameters were validated against."""


class AlternativeWorkflow(Model):
    workflow_id: str
    version: str | None = None
    confidence: Annotated[float, Field(ge=0, le=1)] | None = None
    rationale: Text | None = None


class ValidationAttempt(Model):
    attempt: Annotated[int, Field(ge=1)]
    workflow_id: str | None = None
    valid: bool
    errors: list[str] = Field(default_factory=list)
    at: str


class PreviousAttemptAssessment(Model):
    failure_understood: bool
    failure_reason_analysis: str
    state_changed: bool
    current_signal_type: str | None = None


class RecoveryRCA(Model):
    summary: str
    severity: Severity | None = None
    signal_type: str | None = None
    contributing_factors: list[str] = Field(default_factory=list)


class RecoveryAnalysis(Model):
    previous_attempt_assessment: PreviousAttemptAssessment
    current_rca: RecoveryRCA | None = None


class RecoveryStrategy(Model):
    approach: str
    differs_from_previous: bool
    why_different: str


class RecoveryStatus(Model):
    attempt_number: int
    recovery_analysis: RecoveryAnalysis | None = None
    recovery_strategy: RecoveryStrategy | None = None


MAX_AUDIT_RECORDS = 100
"""Hard ceiling of status.investigation.calls (the CRD's maxItems); a setting chooses below it."""
MAX_AUDIT_ARGUMENT_CHARS = 300


class LLMCost(Model):
    """What the conversation's billed tokens cost at the operator's price table (``analysis.pricing``)."""

    amount: Annotated[float, Field(ge=0)]
    """Input, output, cache-read and cache-write tokens, each at its own price; rounded to 6 decimals."""
    currency: Annotated[str, Field(pattern=r"^[A-Z]{3}$")]
    price_table_date: Annotated[str, Field(max_length=32)]
    """The date of the prices used (the table's, e.g. ``2026-11-27``): prices change, amounts do not."""


class LLMUsage(Model):
    provider: str
    model: str | None = None
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    cluster_reads: int = 0
    cluster_read_failures: int = 0
    cost: LLMCost | None = None
    """None: the model is not in the price table (the tokens are still counted)."""


class ToolCallRecord(Model):
    """One tool call of the conversation, as audited (what the LLM asked and what it got back)."""

    tool: Annotated[str, Field(max_length=64)]
    arguments: Annotated[str, Field(max_length=MAX_AUDIT_ARGUMENT_CHARS)] | None = None
    """The arguments as compact JSON (cut to 300 characters, secret-looking values redacted)."""
    result_chars: Annotated[int, Field(ge=0)]
    result_tokens: Annotated[int, Field(ge=0)]
    """Estimated as characters / 4."""
    duration_ms: Annotated[int, Field(ge=0)]
    truncated: bool = False
    """The result left something out (rows, series, characters) and said how to narrow."""
    error: bool = False


class InvestigationAudit(Model):
    """How the decision was reached: the tool calls in order (the first ``tool_audit_max_records``)."""

    calls: list[ToolCallRecord] = Field(default_factory=list, max_length=MAX_AUDIT_RECORDS)
    calls_not_recorded: Annotated[int, Field(ge=0)] = 0
    output_tokens: Annotated[int, Field(ge=0)] = 0
    """Tool-output tokens of the whole conversation (characters / 4), every call counted."""
    budget_tokens: Annotated[int, Field(ge=0)] = 0
    """The analysis' budget of investigation tool output (``tool_output_budget_tokens``)."""
    budget_exhausted: bool = False


class IntakeStatus(Model):
    """Written only by the Alertmanager intake (the reconciler's status writes leave it alone)."""

    occurrences: Annotated[int, Field(ge=1)]
    first_seen_at: str | None = None
    last_seen_at: str | None = None
    resolved_at: str | None = None
    """When every alert of the incident was reported resolved after the analysis ended."""


class AutoExecutionRecord(Model):
    """Written only by the executor's ``autoExecute`` policy, before it creates the execution: the
    policy decides once per analysis (an execution a person deleted is not created again). The
    record lives in the status, which only the operator's ServiceAccounts may write, never in an
    Event, which anyone who may create Events can forge."""

    execution: Annotated[str, Field(max_length=253)]
    """The WorkflowExecution the policy created (or was about to create) for this analysis."""
    decided_at: str | None = None


class Rejection(Model):
    """A person rejected the selection (copied by the operator from the WorkflowRejection, which the
    API server admitted only from that person, an approver, in their own name)."""

    rejected_by: str
    reason: Text
    at: str
    """When it was rejected (the WorkflowRejection's creation, a time the API server set)."""
    workflow_rejection: Short
    """The WorkflowRejection this is copied from (``kubectl get wfr NAME``): the record itself."""
    selection_digest: Annotated[str, Field(max_length=80)]


class AIAnalysisStatus(Model):
    FOREIGN_FIELDS: ClassVar[frozenset[str]] = frozenset({"intake", "auto_execution", "rejection"})
    """``intake`` is the Alertmanager intake's, ``autoExecution`` the executor's, ``rejection`` the
    rejection record's (copied from a WorkflowRejection): the reconciler's patches leave them alone."""

    phase: AnalysisPhase = "Pending"
    reason: str | None = None
    message: str | None = None
    observed_generation: int | None = None
    attempt: int | None = None
    started_at: str | None = None
    completed_at: str | None = None
    root_cause: RootCause | None = None
    selected_workflow: SelectedWorkflow | None = None
    alternative_workflows: Annotated[list[AlternativeWorkflow], Field(max_length=6)] | None = None
    warnings: list[str] | None = None
    needs_human_review: bool | None = None
    human_review_reason: HumanReviewReason | None = None
    validation_attempts: list[ValidationAttempt] | None = None
    recovery: RecoveryStatus | None = None
    llm: LLMUsage | None = None
    investigation: InvestigationAudit | None = None
    conditions: list[Condition] | None = None
    intake: IntakeStatus | None = None
    auto_execution: AutoExecutionRecord | None = None
    rejection: Rejection | None = None


def remediation_target(analysis: Mapping[str, Any], status: AIAnalysisStatus) -> ResourceRef:
    """The remediation target the analysis validated: its ``affectedResource`` (always written with a
    selection), else the incident's resource."""
    affected = status.root_cause.affected_resource if status.root_cause else None
    if affected is not None:
        return ResourceRef(kind=affected.kind, name=affected.name, namespace=affected.namespace)
    return ResourceRef.model_validate((analysis.get("spec") or {}).get("resource") or {})


def new_aianalysis(
    *,
    name: str,
    namespace: str,
    spec: AIAnalysisSpec,
    labels: Mapping[str, str],
    annotations: Mapping[str, str] | None = None,
    execution: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The one way an AIAnalysis is made: the object to create (the intake's for an alert, the
    operator's for a recovery). ``execution``: the failed WorkflowExecution a recovery analysis
    answers, named as its owner — never its controller, and blocking nothing, so deleting the
    execution may collect the analysis but never waits on it."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels)}
    if annotations:
        metadata["annotations"] = dict(annotations)
    if execution is not None:
        metadata["ownerReferences"] = [
            {
                "apiVersion": API_VERSION,
                "kind": "WorkflowExecution",
                "name": execution["metadata"]["name"],
                "uid": execution["metadata"]["uid"],
                "blockOwnerDeletion": False,
                "controller": False,
            }
        ]
    return {"apiVersion": API_VERSION, "kind": "AIAnalysis", "metadata": metadata, "spec": spec.wire()}
