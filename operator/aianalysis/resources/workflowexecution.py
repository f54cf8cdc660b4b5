"""WorkflowExecution (namespaced): one run of a selected workflow (spec: what was approved to run),
what became of it (status) and whether it worked (``status.assessment``)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field

from aianalysis.resources.base import HumanReviewReason, Model, Name, ResourceRef, Semver
from aianalysis.resources.conditions import Condition

WORKFLOWEXECUTION_PLURAL = "workflowexecutions"
#: A WorkflowExecution also ends ``Refused`` (the executor would not run it; nothing ran).
EXECUTION_TERMINAL_PHASES = ("Completed", "Failed", "Refused")
"""The phases a WorkflowExecution does not leave."""
ExecutionPhase = Literal["Pending", "Running", "Completed", "Failed", "Refused"]
"""``Refused``: the executor would not run it (not approved, or not what was validated); no recovery."""
ApprovalMode = Literal["Manual", "Auto"]
#: What the effectiveness assessment concluded about an execution (``not_executed``: a dry run).
AssessmentVerdict = Literal["effective", "partial", "ineffective", "unknown", "not_executed"]
AssessmentPhase = Literal["Stabilizing", "Assessed", "NotExecuted"]
EvidenceResult = Literal["pass", "fail", "unknown", "skipped"]
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
    overridden_reason: HumanReviewReason | None = None
    """The human review reason the approver overrode, as they read it (``--override-review REASON``)."""


def selection_digest(
    *,
    analysis_uid: str,
    workflow: WorkflowRef,
    parameters: Mapping[str, str],
    target: ResourceRef | None,
) -> str:
    """``sha256:<hex>`` of exactly what is approved: the analysis (uid), the workflow (id, version,
    spec digest), the canonical parameter values and the target. An approval is bound to it, and the
    operator's notifications print it in the approve command they carry."""
    approved = {
        "analysisUID": analysis_uid,
        "workflowId": workflow.workflow_id,
        "version": workflow.version,
        "specDigest": workflow.spec_digest or "",
        "parameters": dict(sorted(parameters.items())),
        "target": target.wire() if target is not None else None,
    }
    text = json.dumps(approved, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


class WorkflowExecutionSpec(Model):
    analysis_ref: Name
    analysis_uid: Annotated[str, Field(max_length=64)] | None = Field(default=None, alias="analysisUID")
    workflow_ref: WorkflowRef
    parameters: dict[str, str] = Field(default_factory=dict)
    target_resource: ResourceRef | None = None
    approval: Approval | None = None


class ExecutionFailureDetails(Model):
    """What the executor reports on a WorkflowExecution (its own bounds; the recovery copy is clipped)."""

    failed_step_index: int | None = None
    failed_step_name: str | None = None
    reason: Annotated[str, Field(min_length=1)]
    message: str | None = None
    exit_code: int | None = None
    failed_at: str | None = None
    execution_time: str | None = None


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
    verdict: AssessmentVerdict | None = None
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
