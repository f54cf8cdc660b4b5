"""Pydantic views of the three custom resources (group ``kubernaut.io/v1alpha1``).

These models are the single in-code description of the CRDs in ``crds/``; a test walks both and
proves they agree field by field. Everything the operator writes to a status goes through them.

Wire names are camelCase (aliases); Python attribute names are snake_case.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

GROUP = "kubernaut.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

TERMINAL_PHASES = ("Completed", "Failed")
#: A WorkflowExecution also ends ``Refused`` (the executor would not run it; nothing ran).
EXECUTION_TERMINAL_PHASES = ("Completed", "Failed", "Refused")
"""The phases an AIAnalysis or a WorkflowExecution does not leave."""

Clock = Callable[[], datetime.datetime]
"""Wall-clock time, passed in: pure code takes ``now``, the processes pass :func:`utcnow`."""


def utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


AIANALYSIS_PLURAL = "aianalyses"
WORKFLOWEXECUTION_PLURAL = "workflowexecutions"
REMEDIATIONWORKFLOW_PLURAL = "remediationworkflows"

SEMVER_PATTERN = r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$"

Severity = Literal["critical", "high", "medium", "low"]
#: What a workflow's labels.severity may say: the four severities, plus Alertmanager's and
#: Kubernaut's ``warning`` (= medium) and ``info`` (= low), which are stored as their synonym.
SeverityLabel = Literal["critical", "high", "medium", "low", "warning", "info"]
SEVERITY_SYNONYMS: dict[str, Severity] = {"warning": "medium", "info": "low"}
Lifecycle = Literal["Active", "Deprecated", "Disabled"]
RiskLevel = Literal["low", "medium", "high"]
ParameterType = Literal["string", "integer", "number", "boolean", "array"]
AnalysisPhase = Literal["Pending", "Investigating", "Completed", "Failed"]
ExecutionPhase = Literal["Pending", "Running", "Completed", "Failed", "Refused"]
"""``Refused``: the executor would not run it (not approved, or not what was validated); no recovery."""
ApprovalMode = Literal["Manual", "Auto"]
ConditionStatus = Literal["True", "False", "Unknown"]

#: Closed vocabulary of reasons a person must look at an analysis (docs/architecture.md §5).
HumanReviewReason = Literal[
    "no_eligible_workflow",
    "validation_failed",
    "parameters_incomplete",
    "low_confidence",
    "inconclusive",
    "max_recovery_attempts",
    "provider_unavailable",
    "provider_error",
    "investigation_failed",
    "previously_ineffective",
    "recurring_after_remediation",
]

#: What the effectiveness assessment concluded about an execution (``not_executed``: a dry run).
Verdict = Literal["effective", "partial", "ineffective", "unknown", "not_executed"]
AssessmentPhase = Literal["Stabilizing", "Assessed", "NotExecuted"]
EvidenceResult = Literal["pass", "fail", "unknown", "skipped"]
DURATION_PATTERN = r"^([0-9]+h)?([0-9]+m)?([0-9]+s)?$"

#: Canonical Kubernetes reason codes of a failed execution (``executor.reasons``). Other codes are
#: accepted (clusters invent new ones) and get generic recovery guidance.
CANONICAL_REASON_CODES: tuple[str, ...] = (
    "OOMKilled",
    "InsufficientCPU",
    "InsufficientMemory",
    "Evicted",
    "FailedScheduling",
    "Unschedulable",
    "ImagePullBackOff",
    "ErrImagePull",
    "InvalidImageName",
    "DeadlineExceeded",
    "BackoffLimitExceeded",
    "Error",
    "Unauthorized",
    "Forbidden",
    "FailedMount",
    "FailedAttachVolume",
    "NodeNotReady",
    "NodeUnreachable",
    "NetworkNotReady",
)

#: ``failureDetails.reason`` of an execution a blast-radius guard did not let start: nothing ran, so
#: no recovery analysis follows (``executor.guards``).
NOT_STARTED_REASONS: tuple[str, ...] = (
    "TargetBusy",
    "Cooldown",
    "FailureBackoff",
    "NotOptedIn",
    "ConcurrencyLimit",
    "HourlyLimit",
)


def never_ran(status: Mapping[str, Any]) -> bool:
    """An execution status that ended without running anything: refused by the executor, blocked by
    a guard, refused as no longer valid, or a dry run. Such executions are neither history nor a
    failure streak, and hold no cooldown or cap (anyone who may create executions could make them)."""
    reason = (status.get("failureDetails") or {}).get("reason")
    return (
        status.get("phase") == "Refused"
        or bool(status.get("dryRun"))
        or reason in NOT_STARTED_REASONS
        or reason == "SelectionInvalid"
    )


RISK_ORDER: dict[str, int] = {"low": 0, "medium": 1, "high": 2}

Name = Annotated[str, Field(min_length=1, max_length=253)]
#: Exact workflow version wherever one is recorded (catalog, selection, execution, recovery history).
Semver = Annotated[str, Field(pattern=SEMVER_PATTERN)]


class Model(BaseModel):
    """Base: camelCase on the wire, unknown fields rejected so drift from the CRD is loud."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)

    def wire(self) -> dict[str, Any]:
        """The JSON-ready camelCase dict, without unset optional fields."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    @classmethod
    def parse_known(cls, raw: Mapping[str, Any]) -> Self:
        """Parse what the API server holds, ignoring fields other writers add (kopf's bookkeeping
        in a status, say); the fields this model declares are still checked strictly."""
        names = {field.alias or name for name, field in cls.model_fields.items()}
        return cls.model_validate({k: v for k, v in raw.items() if k in names})


# --------------------------------------------------------------------------------------------
# RemediationWorkflow (cluster-scoped catalog entry)


class PreserveUnknown:
    """Marks a field the CRD declares with ``x-kubernetes-preserve-unknown-fields`` (a JSON value of
    any type: typed parameter defaults and enum values, engine configuration)."""


PRESERVE_UNKNOWN = PreserveUnknown()


def typed_text(value: object) -> object:
    """A typed JSON value (``30``, ``true``, ``0.5``, ``[a, b]``) in canonical string form; strings
    and anything else pass through (the type check against the parameter's own type is admission's,
    ``catalog.admission``, so a mismatch is reported on the object instead of dropping it)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, list):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return value


#: A parameter value written in the catalog, typed or as text; held as canonical text.
TypedValue = Annotated[str, BeforeValidator(typed_text), PRESERVE_UNKNOWN]

ParameterName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=128)]
#: Which field of the remediation target the system fills a parameter from ("none" opts out of the
#: naming convention, see ``catalog.target_field``).
FromTarget = Literal["kind", "name", "namespace", "apiVersion", "none"]


class WorkflowParameter(Model):
    """One declared parameter. The bounds on enum/default/dependsOn keep the CRD's CEL rules (which
    iterate over them) within the apiserver's cost budget; the checks mirror those rules so a
    catalog loaded from files is held to what the apiserver enforces."""

    name: ParameterName
    type: ParameterType
    required: bool = False
    description: str | None = None
    enum: Annotated[list[TypedValue], Field(max_length=128)] | None = None
    pattern: Annotated[str, Field(max_length=256)] | None = None
    minimum: float | None = None
    maximum: float | None = None
    default: TypedValue | None = None
    depends_on: Annotated[list[Annotated[str, Field(max_length=128)]], Field(max_length=16)] | None = None
    from_target: FromTarget | None = None
    """The system fills this parameter from the remediation target; the LLM's value never wins."""

    @model_validator(mode="after")
    def _consistent(self) -> WorkflowParameter:
        if self.minimum is not None and self.maximum is not None and self.minimum > self.maximum:
            raise ValueError("minimum must be less than or equal to maximum")
        if (self.minimum is not None or self.maximum is not None) and self.type not in ("integer", "number"):
            raise ValueError("minimum and maximum apply to integer and number parameters only")
        if self.pattern is not None and self.type not in ("string", "array"):
            raise ValueError("pattern applies to string and array parameters only")
        if self.depends_on is not None and self.name in self.depends_on:
            raise ValueError("a parameter cannot depend on itself")
        return self


class DetectedLabels(Model):
    """Facts about the remediation target a workflow requires (Kubernaut's ``detectedLabels``).
    Each set field is a hard requirement: a boolean must equal the detected fact, a tool name
    must equal it (case-insensitive) or be ``*`` (any tool). An unknown fact never satisfies one."""

    helm_managed: bool | None = None
    gitops_managed: bool | None = Field(default=None, alias="gitOpsManaged")
    gitops_tool: str | None = Field(default=None, alias="gitOpsTool")
    pdb_protected: bool | None = None
    hpa_enabled: bool | None = None
    stateful: bool | None = None
    network_isolated: bool | None = None
    service_mesh: str | None = None


class WorkflowLabels(Model):
    signal_types: list[str] = Field(default_factory=list)
    severity: list[SeverityLabel] | None = None
    component: list[str] | None = None
    environment: list[str] | None = None
    priority: list[str] | None = None
    business_category: list[str] | None = None

    @field_validator("severity")
    @classmethod
    def _severity_synonyms(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        return list(dict.fromkeys(SEVERITY_SYNONYMS.get(item, item) for item in value))


class WorkflowGuidance(Model):
    """When the workflow fits and when it does not; shown to the LLM and used by search."""

    when_to_use: str | None = None
    when_not_to_use: str | None = None
    preconditions: str | None = None


class WorkflowExecutionSettings(Model):
    engine: Literal["job", "tekton", "ansible"] = "job"
    container_image: Annotated[str, Field(min_length=1)] | None = None
    """None: nothing can run the workflow (a Kubernaut workflow imported without a bundle); admission
    keeps it out of the catalog offered to analyses (``NotExecutable``) but the object stays."""
    service_account_name: Annotated[str, Field(max_length=253)] | None = None
    bundle: str | None = None
    bundle_digest: str | None = None
    engine_config: Annotated[dict[str, Any], PRESERVE_UNKNOWN] | None = None


class RemediationWorkflowSpec(Model):
    workflow_id: Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=128)]
    version: Semver
    title: Annotated[str, Field(min_length=1)]
    description: Annotated[str, Field(min_length=1)]
    labels: WorkflowLabels
    risk_level: RiskLevel
    parameters: Annotated[list[WorkflowParameter], Field(max_length=64)] = Field(default_factory=list)
    execution: WorkflowExecutionSettings
    estimated_duration: str | None = None
    stabilization_window: Annotated[str, Field(min_length=2, pattern=DURATION_PATTERN)] | None = None
    """How long after this workflow ran its effect is assessed (``5m``; default: the setting)."""
    action_type: Annotated[str, Field(pattern=r"^[A-Z][A-Za-z0-9]*$", max_length=128)] | None = None
    guidance: WorkflowGuidance | None = None
    custom_labels: dict[str, str] | None = None
    detected_labels: DetectedLabels | None = None
    lifecycle: Lifecycle = "Active"

    @model_validator(mode="after")
    def _parameters_consistent(self) -> RemediationWorkflowSpec:
        """Same rules as the CRD: names unique (list-map key), dependsOn names declared parameters,
        a signal type or an action type to classify the workflow by."""
        if not self.labels.signal_types and self.action_type is None:
            raise ValueError("a workflow needs labels.signalTypes or actionType (or both)")
        names = [p.name for p in self.parameters]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"duplicate parameter names: {', '.join(duplicates)}")
        for param in self.parameters:
            unknown = [d for d in param.depends_on or [] if d not in names]
            if unknown:
                raise ValueError(f"dependsOn must name parameters declared in spec.parameters: {unknown}")
        return self


# --------------------------------------------------------------------------------------------
# AIAnalysis spec

# Bounded so that whatever the operator echoes into a status fits (an unbounded spec string made the
# status write fail with 422 and the analysis spin).
Short = Annotated[str, Field(max_length=253)]
Text = Annotated[str, Field(max_length=4096)]
Value = Annotated[str, Field(max_length=1024)]


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


class ResourceRef(Model):
    kind: Annotated[str, Field(min_length=1, max_length=253)]
    name: Name
    namespace: Short | None = None


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


class ExecutionFailureDetails(Model):
    """What the executor reports on a WorkflowExecution (its own bounds; the recovery copy is clipped)."""

    failed_step_index: int | None = None
    failed_step_name: str | None = None
    reason: Annotated[str, Field(min_length=1)]
    message: str | None = None
    exit_code: int | None = None
    failed_at: str | None = None
    execution_time: str | None = None


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


# --------------------------------------------------------------------------------------------
# AIAnalysis status


class Condition(Model):
    type: str
    status: ConditionStatus
    reason: str
    message: str = ""
    last_transition_time: str
    observed_generation: int | None = None


def condition(
    type: str, status: ConditionStatus, reason: str, message: str, *, since: str, generation: int | None
) -> Condition:
    """A condition as every writer writes it: the message cut to 1024 characters."""
    return Condition(
        type=type,
        status=status,
        reason=reason,
        message=message[:1024],
        last_transition_time=since,
        observed_generation=generation,
    )


class RemediationWorkflowStatus(Model):
    """Written by the operator only: condition ``Accepted`` says whether the workflow is offered."""

    conditions: list[Condition] | None = None


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


class AIAnalysisStatus(Model):
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


# --------------------------------------------------------------------------------------------
# WorkflowExecution


class WorkflowRef(Model):
    workflow_id: str
    version: Semver
    container_image: str | None = None
    spec_digest: Annotated[str, Field(max_length=80)] | None = None
    """``sha256:<hex>`` of the RemediationWorkflow spec that was validated (the executor refuses
    to run another one under the same id and version)."""


class Approval(Model):
    """Who allowed the execution; the API server checks it at creation (ValidatingAdmissionPolicy:
    ``approvedBy`` is the creating user, who holds the ``approve`` verb on workflowexecutions)."""

    mode: ApprovalMode
    approved_by: Annotated[str, Field(max_length=253)]
    selection_digest: Annotated[str, Field(max_length=80)]
    override_review: bool = False


class WorkflowExecutionSpec(Model):
    analysis_ref: Name
    analysis_uid: Annotated[str, Field(max_length=64)] | None = Field(default=None, alias="analysisUID")
    workflow_ref: WorkflowRef
    parameters: dict[str, str] = Field(default_factory=dict)
    target_resource: ResourceRef | None = None
    approval: Approval | None = None


class AssessmentBaseline(Model):
    """The target as the executor found it right before it created the Job."""

    at: str
    spec_hash: str | None = None
    """``sha256:…`` fingerprint of the target's desired state; absent when it could not be read."""
    target_found: bool = True


class AssessmentEvidence(Model):
    check: str
    result: EvidenceResult
    detail: str
    score: Annotated[float, Field(ge=0, le=1)] | None = None


class Assessment(Model):
    """Did the execution work? ``before`` is the executor's; everything else the operator's."""

    phase: AssessmentPhase | None = None
    before: AssessmentBaseline | None = None
    after_spec_hash: str | None = None
    window_seconds: Annotated[int, Field(ge=0)] | None = None
    assess_after: str | None = None
    assessed_at: str | None = None
    current_spec_hash: str | None = None
    verdict: Verdict | None = None
    score: Annotated[float, Field(ge=0, le=1)] | None = None
    reason: str | None = None
    message: str | None = None
    evidence: list[AssessmentEvidence] | None = None


class WorkflowExecutionStatus(Model):
    phase: ExecutionPhase = "Pending"
    started_at: str | None = None
    completed_at: str | None = None
    failure_details: ExecutionFailureDetails | None = None
    recovery_analysis_ref: str | None = None
    needs_human_review: bool | None = None
    human_review_reason: HumanReviewReason | None = None
    dry_run: bool | None = None
    assessment: Assessment | None = None
    conditions: list[Condition] | None = None


__all__ = [
    "API_VERSION",
    "CANONICAL_REASON_CODES",
    "EXECUTION_TERMINAL_PHASES",
    "GROUP",
    "TERMINAL_PHASES",
    "VERSION",
    "AIAnalysisSpec",
    "AIAnalysisStatus",
    "Clock",
    "RemediationWorkflowSpec",
    "RemediationWorkflowStatus",
    "WorkflowExecutionSpec",
    "WorkflowExecutionStatus",
    "utcnow",
]
