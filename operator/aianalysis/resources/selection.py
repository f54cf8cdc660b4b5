"""What a person decides on: an analysis' validated selection, named by one digest. An approval (a
WorkflowExecution) and a rejection (a WorkflowRejection) are both bound to it, and to the analysis'
uid, so a decision never moves to another analysis or another selection."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from aianalysis.resources.aianalysis import AIAnalysisStatus
from aianalysis.resources.base import ResourceRef
from aianalysis.resources.workflowexecution import WorkflowRef


def selection_digest(
    *,
    analysis_uid: str,
    workflow: WorkflowRef,
    parameters: Mapping[str, str],
    target: ResourceRef | None,
) -> str:
    """``sha256:<hex>`` of exactly what is approved: the analysis (uid), the workflow (id, version,
    spec digest), the canonical parameter values and the target."""
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


def analysis_target(analysis: Mapping[str, Any], status: AIAnalysisStatus) -> ResourceRef:
    """The remediation target the analysis validated: its ``affectedResource`` (always written with a
    selection), else the incident's resource."""
    affected = status.root_cause.affected_resource if status.root_cause else None
    if affected is not None:
        return ResourceRef(kind=affected.kind, name=affected.name, namespace=affected.namespace)
    return ResourceRef.model_validate((analysis.get("spec") or {}).get("resource") or {})
