"""Pure: an analysis' selection → the WorkflowExecution that runs it, when a person approves or the
``autoExecute`` policy admits it.

**The approval is recorded by the API server.** An execution carries ``spec.approval`` (mode,
``approvedBy``, the digest of the exact selection approved); the chart's ValidatingAdmissionPolicy
makes the API server refuse one whose ``approvedBy`` is not the user creating it or whose creator
lacks the verb ``approve`` on workflowexecutions in that namespace. Creating an execution is thus
not approving it: only an approver can, and the executor re-checks the rest (``admission``).

**autoExecute decides from server-side facts only**: the Namespace's labels and the policy's
namespace allowlist, the catalog's ``riskLevel`` under a ceiling, the analysis' own review verdict.
It acts only on what belongs to the analysis' own namespace (``scope.namespace_of``): never another
namespace, a Namespace other than its own, or a cluster-scoped object such as a Node.
Nothing the requester writes into the AIAnalysis spec (environment, riskTolerance) opens it, and the
LLM's confidence is one gate among them, never enough alone.

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

from aianalysis import catalog, resources
from aianalysis.analysis import scope

LABEL_ANALYSIS = "kubernaut.io/analysis"
LABEL_APPROVAL = "kubernaut.io/approval"
"""Manual or Auto, to list by (the approval itself is ``spec.approval``, checked by the API server)."""
MAX_NAME = 253


@dataclasses.dataclass(frozen=True, kw_only=True)
class NewExecution:
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
    namespaces: tuple[str, ...] = ()
    """Only analyses in these namespaces; empty = none (the allowlist is the opt-in)."""
    namespace_label: str = "kubernaut.io/auto-execute"
    """...and only when the Namespace itself carries this label with the value ``true`` (so the
    namespace's owner opts in too; an AIAnalysis spec cannot)."""
    max_risk: resources.RiskLevel = "low"
    """The catalog ``riskLevel`` ceiling of an auto-executed workflow."""
    environments: tuple[str, ...] = ()
    """When set: only namespaces whose environment label (``kubernaut.io/environment`` or
    ``kubernaut.ai/environment``) is listed. Never the spec's ``businessContext``."""
    max_age_seconds: float = 600.0
    """Only analyses completed this recently: turning the policy on never runs an old backlog."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class AutoFacts:
    """What the cluster says, read by the caller: the analysis' Namespace labels and the catalog's
    current entry of the selected workflow (None when it is gone)."""

    namespace_labels: Mapping[str, str]
    workflow: catalog.Workflow | None


ENVIRONMENT_LABELS = ("kubernaut.io/environment", "kubernaut.ai/environment")


def execution_name(analysis: str, number: int) -> str:
    suffix = f"-exec-{number}"
    return analysis[: MAX_NAME - len(suffix)] + suffix


def executions_of(analysis: str, executions: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [e for e in executions if (e.get("spec") or {}).get("analysisRef") == analysis]


def approve_manually(
    analysis: Mapping[str, Any],
    *,
    executions: Sequence[Mapping[str, Any]],
    override_review: bool = False,
    again: bool = False,
    approver: str,
) -> NewExecution | Refuse:
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
    every = executions_of(name, executions)
    mine = [e for e in every if _counts(e, analysis)]
    if mine and not again:
        names = ", ".join(sorted(e["metadata"]["name"] for e in mine))
        return Refuse(
            message=f"aianalysis/{name} already has an execution ({names}); use --again for another"
        )
    running = [
        e["metadata"]["name"]
        for e in mine
        if (e.get("status") or {}).get("phase") not in resources.EXECUTION_TERMINAL_PHASES
    ]
    if running:
        return Refuse(message=f"execution {', '.join(sorted(running))} has not ended; wait for it first")
    exec_name = execution_name(name, _next_number(name, every))
    approval = _Approval(mode="Manual", approver=approver, override_review=status.needs_human_review is True)
    return NewExecution(
        name=exec_name, body=execution_body(analysis, status, name=exec_name, approval=approval)
    )


def approve_automatically(
    analysis: Mapping[str, Any],
    *,
    policy: AutoPolicy,
    facts: AutoFacts,
    now: datetime.datetime,
    approver: str,
) -> NewExecution | Refuse:
    """The policy's decision for one analysis: always ``-exec-1`` (created once, 409 afterwards)."""
    name = analysis["metadata"]["name"]
    if not policy.enabled:
        return Refuse(message="autoExecute is off")
    try:
        status = resources.AIAnalysisStatus.parse_known(analysis.get("status") or {})
    except pydantic.ValidationError:
        return Refuse(message="unreadable analysis")
    refusal = auto_refusal(analysis, status, policy=policy, facts=facts)
    completed = resources.parse_timestamp(status.completed_at)
    if refusal is None and (completed is None or (now - completed).total_seconds() > policy.max_age_seconds):
        refusal = "completed too long ago"
    if refusal is not None or status.selected_workflow is None:
        return Refuse(message=refusal or "no selection")
    exec_name = execution_name(name, 1)
    approval = _Approval(mode="Auto", approver=approver, override_review=False)
    return NewExecution(
        name=exec_name, body=execution_body(analysis, status, name=exec_name, approval=approval)
    )


def auto_refusal(
    analysis: Mapping[str, Any],
    status: resources.AIAnalysisStatus,
    *,
    policy: AutoPolicy,
    facts: AutoFacts,
) -> str | None:
    """Why the policy does not run this analysis' selection now (None = it does). Checked when the
    execution is created and again by the executor before its Job exists."""
    chosen = status.selected_workflow
    namespace = analysis["metadata"]["namespace"]
    if not policy.enabled:
        return "autoExecute is off"
    if status.phase != "Completed" or chosen is None:
        return "not completed with a selection"
    if status.needs_human_review:
        return "needs human review"
    target = resources.remediation_target(analysis, status)
    belongs = scope.namespace_of(kind=target.kind, name=target.name, namespace=target.namespace)
    if belongs != namespace:  # nobody is asked: never another namespace, nor the cluster (a Node)
        where = f"namespace {belongs}" if belongs else "the cluster (it is cluster-scoped)"
        return f"the target {target.kind} {target.name} belongs to {where}, not to namespace {namespace}"
    if namespace not in policy.namespaces:
        return f"namespace {namespace} is not in the autoExecute namespace allowlist"
    if facts.namespace_labels.get(policy.namespace_label) != "true":
        return f"namespace {namespace} is not labelled {policy.namespace_label}=true"
    if policy.environments:
        environment = next(
            (facts.namespace_labels[k] for k in ENVIRONMENT_LABELS if k in facts.namespace_labels), ""
        )
        if environment.strip().casefold() not in {e.strip().casefold() for e in policy.environments}:
            return f"namespace {namespace}'s environment label {environment!r} is not listed"
    if facts.workflow is None:
        return f"workflow {chosen.workflow_id} {chosen.version} is not in the catalog"
    risk = facts.workflow.spec.risk_level
    if resources.RISK_ORDER[risk] > resources.RISK_ORDER[policy.max_risk]:
        return f"workflow riskLevel {risk} is above the autoExecute ceiling {policy.max_risk}"
    if chosen.confidence < policy.min_confidence:
        return f"confidence {chosen.confidence} below {policy.min_confidence}"
    return None


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Approval:
    mode: resources.ApprovalMode
    approver: str
    override_review: bool


def execution_body(
    analysis: Mapping[str, Any], status: resources.AIAnalysisStatus, *, name: str, approval: _Approval
) -> dict[str, Any]:
    """The execution of the analysis' current selection, exactly: canonical values, spec digest,
    target, and the digest of all that as the approval's subject."""
    chosen = status.selected_workflow
    assert chosen is not None, "only a selection is executed"
    meta = analysis["metadata"]
    ref = resources.WorkflowRef(
        workflow_id=chosen.workflow_id,
        version=chosen.version,
        container_image=chosen.container_image,
        spec_digest=chosen.spec_digest,
    )
    parameters = dict(chosen.parameters or {})
    target = resources.remediation_target(analysis, status)
    digest = resources.selection_digest(
        analysis_uid=meta["uid"], workflow=ref, parameters=parameters, target=target
    )
    spec = resources.WorkflowExecutionSpec(
        analysis_ref=meta["name"],
        analysis_uid=meta["uid"],
        workflow_ref=ref,
        parameters=parameters,
        target_resource=target,
        approval=resources.Approval(
            mode=approval.mode,
            approved_by=approval.approver,
            selection_digest=digest,
            override_review=approval.override_review,
        ),
    )
    return {
        "apiVersion": resources.API_VERSION,
        "kind": "WorkflowExecution",
        "metadata": {
            "name": name,
            "namespace": meta["namespace"],
            "labels": {LABEL_ANALYSIS: meta["name"][:63].rstrip("-."), LABEL_APPROVAL: approval.mode},
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


def _counts(execution: Mapping[str, Any], analysis: Mapping[str, Any]) -> bool:
    """An approved execution of this very analysis that was not refused. A hand-written one (no
    approval, or bound to another uid) never blocks an approval: it cannot run anyway."""
    spec = execution.get("spec") or {}
    phase = (execution.get("status") or {}).get("phase")
    return (
        bool(spec.get("approval"))
        and spec.get("analysisUID") == analysis["metadata"].get("uid")
        and (phase != "Refused")
    )


def _next_number(analysis: str, mine: Sequence[Mapping[str, Any]]) -> int:
    prefix = execution_name(analysis, 0)[:-1]
    numbers = [
        int(n[len(prefix) :])
        for n in (e["metadata"]["name"] for e in mine)
        if n.startswith(prefix)
        if n[len(prefix) :].isdigit()
    ]
    return max(numbers, default=0) + 1
