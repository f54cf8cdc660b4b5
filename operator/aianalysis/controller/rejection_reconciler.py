"""A person's rejection, shown on the analysis: each WorkflowRejection is copied onto the AIAnalysis it
names (``status.rejection``: who, why, when, which record) with an Event, so ``kubectl get aia -o wide``
and ``kubectl describe`` show it where people look.

The record itself stays the WorkflowRejection (the API server admitted it only from an approver, in
their own name: the policy shipped with the CRDs). It is bound to the analysis' uid: a rejection of an
analysis deleted and created again under its name is not copied onto the new one. The next analysis of
the same target reads the rejections themselves (``assessment.history``), as it reads the verdicts of
earlier executions.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import pydantic

from aianalysis import kit, resources
from aianalysis.controller import process
from aianalysis.kube import objects

log = logging.getLogger(__name__)

ATTEMPTS = 3
"""Status writes tried against a fresh read when another writer moved the analysis meanwhile."""


async def record(runtime: process.Runtime, body: Mapping[str, Any]) -> kit.Transition | None:
    """Copy the rejection ``body`` onto its analysis (once); the Event to announce, or None when there is
    nothing to do (copied already, the analysis is gone or is another one now, the record unreadable)."""
    meta = body.get("metadata") or {}
    try:
        spec = resources.WorkflowRejectionSpec.model_validate(body.get("spec") or {})
    except pydantic.ValidationError as exc:
        log.warning(
            "workflowrejection %s/%s cannot be read: %s", meta.get("namespace"), meta.get("name"), exc
        )
        return None
    rejection = resources.Rejection(
        rejected_by=spec.rejected_by,
        reason=spec.reason,
        at=str(meta.get("creationTimestamp") or resources.timestamp(resources.utcnow())),
        workflow_rejection=str(meta.get("name")),
        selection_digest=spec.selection_digest,
    )
    for _ in range(ATTEMPTS):
        analysis = await objects.get_aianalysis(runtime.api, str(meta.get("namespace")), spec.analysis_ref)
        if analysis is None or analysis["metadata"].get("uid") != spec.analysis_uid:
            return None
        if ((analysis.get("status") or {}).get("rejection") or {}).get("workflowRejection") == meta.get(
            "name"
        ):
            return None
        fields = {"rejection": rejection.wire()}
        written = await objects.write_status_at(
            runtime.api, analysis, plural=resources.AIANALYSIS_PLURAL, fields=fields
        )
        if written is objects.Written.DROPPED:
            return None
        if written is objects.Written.OK:
            workflow = spec.workflow_ref
            return kit.Transition(
                type="Normal",
                reason="Rejected",
                message=f"{spec.rejected_by} rejected {workflow.workflow_id} {workflow.version}: "
                f"{spec.reason} (workflowrejection/{meta.get('name')}); nothing runs",
                about=analysis,
            )
    log.warning(
        "aianalysis %s/%s kept moving; rejection not copied yet", meta.get("namespace"), spec.analysis_ref
    )
    return None
