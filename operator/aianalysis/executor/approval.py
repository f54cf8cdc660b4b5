"""Pure: an analysis' selection → the WorkflowExecution that runs it, when a person approves or the
``autoExecute`` policy admits it.

The name ``<analysis>-exec-<n>`` is the idempotency key: the first execution of an analysis is
always ``-exec-1``, so a person approving and the policy deciding at the same moment (or a
restarted executor deciding twice) create one object, never two. Another execution of the same
analysis exists only when a person asks again (``--again``) after the previous one ended.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping, Sequence
from typing import Any

import pydantic

from aianalysis import resources

LABEL_ANALYSIS = "kubernaut.io/analysis"
LABEL_APPROVED_BY = "kubernaut.io/approved-by"
MAX_NAME = 253


@dataclasses.dataclass(frozen=True, kw_only=True)
class Create:
    name: str
    body: dict[str, Any]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Refuse:
    """Why no execution is created (shown to the person, exit code 1)."""

    message: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class AutoPolicy:
    """``executor.autoExecute``: which analyses run without a person (off by default)."""

    enabled: bool = False
    min_confidence: float = 0.9
    environments: tuple[str, ...] = ()
    """Only incidents whose ``businessContext.environment`` is listed; empty = none."""
    max_age_seconds: float = 600.0
    """Only analyses completed this recently: turning the policy on never runs an old backlog."""


def execution_name(analysis: str, number: int) -> str:
    suffix = f"-exec-{number}"
    return analysis[: MAX_NAME - len(suffix)] + suffix


def executions_of(analysis: str, executions: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [e for e in executions if (e.get("spec") or {}).get("analysisRef") == analysis]


def approve(
    analysis: Mapping[str, Any],
    *,
    executions: Sequence[Mapping[str, Any]],
    override_review: bool = False,
    again: bool = False,
    approver: str = "cli",
) -> Create | Refuse:
    """``aianalysis approve``: the execution of the analysis' ``selectedWorkflow``, or why not."""
    name = analysis["metadata"]["name"]
    try:
        status = resources.AIAnalysisStatus.parse_known(analysis.get("status") or {})
    except pydantic.ValidationError:
        return Refuse(message=f"aianalysis/{name} has a status that cannot be read; nothing to approve")
    if status.phase != "Completed":
        return Refuse(message=f"aianalysis/{name} is {status.phase}, not Completed; nothing to approve yet")
    if status.selected_workflow is None:
        why = f" ({status.human_review_reason})" if status.human_review_reason else ""
        return Refuse(message=f"aianalysis/{name} selected no workflow{why}; nothing to execute")
    if status.needs_human_review and not override_review:
        return Refuse(
            message=f"aianalysis/{name} needs human review ({status.human_review_reason}); check its "
            "selection and approve with --override-review to run it anyway"
        )
    mine = executions_of(name, executions)
    if mine and not again:
        names = ", ".join(sorted(e["metadata"]["name"] for e in mine))
        return Refuse(
            message=f"aianalysis/{name} already has an execution ({names}); use --again for another"
        )
    running = [
        e["metadata"]["name"]
        for e in mine
        if (e.get("status") or {}).get("phase") not in resources.TERMINAL_PHASES
    ]
    if running:
        return Refuse(message=f"execution {', '.join(sorted(running))} has not ended; wait for it first")
    exec_name = execution_name(name, _next_number(name, mine))
    return Create(name=exec_name, body=execution_body(analysis, status, name=exec_name, approver=approver))


def auto_execute(
    analysis: Mapping[str, Any], *, policy: AutoPolicy, now: datetime.datetime
) -> Create | Refuse:
    """The policy's decision for one analysis: always ``-exec-1`` (created once, 409 afterwards)."""
    name = analysis["metadata"]["name"]
    if not policy.enabled:
        return Refuse(message="autoExecute is off")
    try:
        spec = resources.AIAnalysisSpec.model_validate(analysis.get("spec") or {})
        status = resources.AIAnalysisStatus.parse_known(analysis.get("status") or {})
    except pydantic.ValidationError:
        return Refuse(message="unreadable analysis")
    chosen = status.selected_workflow
    refusal = _auto_refusal(spec, status, policy=policy, now=now)
    if refusal is not None or chosen is None:
        return Refuse(message=refusal or "no selection")
    exec_name = execution_name(name, 1)
    return Create(
        name=exec_name, body=execution_body(analysis, status, name=exec_name, approver="autoExecute")
    )


def _auto_refusal(
    spec: resources.AIAnalysisSpec,
    status: resources.AIAnalysisStatus,
    *,
    policy: AutoPolicy,
    now: datetime.datetime,
) -> str | None:
    chosen = status.selected_workflow
    if status.phase != "Completed" or chosen is None:
        return "not completed with a selection"
    if status.needs_human_review:
        return "needs human review"
    if (chosen.confidence or 0.0) < policy.min_confidence:
        return f"confidence {chosen.confidence} below {policy.min_confidence}"
    environment = (spec.business_context.environment or "").strip().casefold()
    if environment not in {e.strip().casefold() for e in policy.environments}:
        return f"environment {spec.business_context.environment!r} not listed"
    completed = _parse(status.completed_at)
    if completed is None or (now - completed).total_seconds() > policy.max_age_seconds:
        return "completed too long ago"
    return None


def execution_body(
    analysis: Mapping[str, Any], status: resources.AIAnalysisStatus, *, name: str, approver: str
) -> dict[str, Any]:
    chosen = status.selected_workflow
    assert chosen is not None, "only a selection is executed"
    meta = analysis["metadata"]
    spec = resources.WorkflowExecutionSpec(
        analysis_ref=meta["name"],
        workflow_ref=resources.WorkflowRef(
            workflow_id=chosen.workflow_id, version=chosen.version, container_image=chosen.container_image
        ),
        parameters=dict(chosen.parameters or {}),
        target_resource=_target(analysis, status),
    )
    return {
        "apiVersion": resources.API_VERSION,
        "kind": "WorkflowExecution",
        "metadata": {
            "name": name,
            "namespace": meta["namespace"],
            "labels": {LABEL_ANALYSIS: meta["name"][:63].rstrip("-."), LABEL_APPROVED_BY: approver},
            "ownerReferences": [
                {
                    "apiVersion": resources.API_VERSION,
                    "kind": "AIAnalysis",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": False,
                    "blockOwnerDeletion": False,
                }
            ],
        },
        "spec": spec.wire(),
    }


def _target(analysis: Mapping[str, Any], status: resources.AIAnalysisStatus) -> resources.ResourceRef:
    affected = status.root_cause.affected_resource if status.root_cause else None
    if affected is not None:
        return resources.ResourceRef(kind=affected.kind, name=affected.name, namespace=affected.namespace)
    return resources.ResourceRef.model_validate((analysis.get("spec") or {}).get("resource") or {})


def _next_number(analysis: str, mine: Sequence[Mapping[str, Any]]) -> int:
    prefix = execution_name(analysis, 0)[:-1]
    numbers = [
        int(n[len(prefix) :])
        for n in (e["metadata"]["name"] for e in mine)
        if n.startswith(prefix)
        if n[len(prefix) :].isdigit()
    ]
    return max(numbers, default=0) + 1


def _parse(text: str | None) -> datetime.datetime | None:
    if not text:
        return None
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
