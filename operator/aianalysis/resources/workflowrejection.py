"""WorkflowRejection (namespaced): a person's "no" to an analysis' selection — who, why, and exactly
what was rejected (the analysis' uid and the selection digest, as for an approval). Immutable; no
status. The API server checks who wrote it (the shipped ValidatingAdmissionPolicy
``workflowrejection.kubernaut.io``: ``rejectedBy`` is the creating user, who holds the verb
``approve`` on workflowexecutions in the namespace), so a rejection cannot be written in another's
name or by someone who may not decide. The operator copies it onto the analysis' status
(``status.rejection``, condition ``Rejected``, an Event); the next analysis of the same target reads
the rejections themselves, as it reads the verdicts of earlier executions."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from aianalysis.resources.base import HumanReviewReason, Model, Name, ResourceRef
from aianalysis.resources.workflowexecution import WorkflowRef

WORKFLOWREJECTION_PLURAL = "workflowrejections"
MAX_REASON = 1024
"""Characters of a rejection's reason (the CRD's maxLength)."""


class WorkflowRejectionSpec(Model):
    analysis_ref: Name
    analysis_uid: Annotated[str, Field(max_length=64)] = Field(alias="analysisUID")
    selection_digest: Annotated[str, Field(max_length=80)]
    workflow_ref: WorkflowRef
    parameters: dict[str, str] = Field(default_factory=dict)
    target_resource: ResourceRef
    rejected_by: Annotated[str, Field(min_length=1, max_length=253)]
    reason: Annotated[str, Field(min_length=1, max_length=MAX_REASON)]
    review_reason: HumanReviewReason | None = None
    """Why the analysis asked for a person when it was rejected (None: it did not)."""
