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

**A person approves what they reviewed.** :class:`Proposal` is what ``aianalysis show``, ``approve``
and the console show (the analysis' uid, target, workflow, version, image, spec digest, parameters,
confidence, review reason) and :class:`Binding` what the person saw: the analysis' uid and the
selection digest. An approval bound to another uid (the analysis was deleted and re-created under the
same name) or another digest (the selection is not the one shown) is refused, and so is an override of
a review reason other than the current one.

**A person may say no.** :func:`reject_manually` is the WorkflowRejection of the selection the person
reviewed, bound as an approval is; it starts nothing. The shipped ValidatingAdmissionPolicy admits it
only from an approver in their own name; the operator copies it onto the analysis
(``status.rejection``) and the next analysis of the same target sees it. An analysis rejected is not
approved afterwards, and one approved (an execution exists) is not rejected.

**Names are claimed, never trusted.** An execution is named ``<analysis>-exec-<n>``, the first
number no object in the namespace holds: anyone who may create WorkflowExecutions can take a name
first, so an object under the name proves nothing. What counts is server-side: an execution bound
to this analysis' uid whose ``spec.approval`` the API server's admission policy checked (approver
== creator, holding ``approve``). Such an execution — a person's or the policy's — means the
analysis was decided; anything else under the name (a squat) is skipped, and the executor refuses
it when it comes to run it. A person approving and the policy deciding at the same moment race for
one name: the loser's create fails (409), it reads again and sees the winner's approved execution.

**autoExecute decides once per analysis**, recorded in the analysis' status
(``status.autoExecution``, written by the executor before it creates the execution; only the
operator's ServiceAccounts write that status) — never in an Event, which anyone who may create
Events can write. An execution a person deleted is therefore not created again. Another execution
of the same analysis exists only when a person asks again (``--again``) after the previous one
ended.
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


@dataclasses.dataclass(frozen=True, kw_only=True)
class Binding:
    """What the person reviewed: the analysis (its uid) and its selection (the selection digest)."""

    uid: str
    digest: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class Proposal:
    """An analysis' selection as a person reviews it: exactly what approving it would run."""

    namespace: str
    name: str
    uid: str
    target: resources.ResourceRef
    workflow: resources.WorkflowRef
    parameters: Mapping[str, str]
    confidence: float
    rationale: str
    review_reason: resources.HumanReviewReason | None
    """Why the analysis asks for a person (None: it does not); an approval must name it to override it."""
    digest: str
    """The selection digest: what an approval or a rejection is bound to (with the uid)."""

    @property
    def binding(self) -> Binding:
        return Binding(uid=self.uid, digest=self.digest)

    def approve_command(self) -> str:
        """The command that approves exactly this proposal (``--override-review`` when it needs one)."""
        override = f" --override-review {self.review_reason}" if self.review_reason else ""
        bound = f"--uid {self.uid} --digest {self.digest}"
        return f"aianalysis approve {self.name} -n {self.namespace} {bound}{override}"

    def reject_command(self) -> str:
        return (
            f"aianalysis reject {self.name} -n {self.namespace} --uid {self.uid} --digest {self.digest} "
            "--reason TEXT"
        )


def proposal_of(analysis: Mapping[str, Any]) -> Proposal | Refuse:
    """The analysis' selection as a person reviews it, or why there is nothing to decide on."""
    meta = analysis["metadata"]
    name = meta["name"]
    try:
        status = resources.AIAnalysisStatus.parse_known(analysis.get("status") or {})
        target = resources.remediation_target(analysis, status)
    except pydantic.ValidationError:
        return Refuse(message=f"aianalysis/{name} has a status that cannot be read; nothing to decide on")
    if status.phase != "Completed":
        return Refuse(message=f"aianalysis/{name} is {status.phase}, not Completed; nothing to decide on yet")
    chosen = status.selected_workflow
    if chosen is None:
        why = f" ({status.human_review_reason})" if status.human_review_reason else ""
        return Refuse(message=f"aianalysis/{name} selected no workflow{why}; nothing to execute")
    ref = _ref(chosen)
    parameters = dict(chosen.parameters or {})
    return Proposal(
        namespace=meta["namespace"],
        name=name,
        uid=meta["uid"],
        target=target,
        workflow=ref,
        parameters=parameters,
        confidence=chosen.confidence,
        rationale=chosen.rationale,
        review_reason=(status.human_review_reason or "inconclusive") if status.needs_human_review else None,
        digest=resources.selection_digest(
            analysis_uid=meta["uid"], workflow=ref, parameters=parameters, target=target
        ),
    )


def _ref(chosen: resources.SelectedWorkflow) -> resources.WorkflowRef:
    """The workflow of a selection as an execution (or a rejection) names it."""
    return resources.WorkflowRef(
        workflow_id=chosen.workflow_id,
        version=chosen.version,
        container_image=chosen.container_image,
        spec_digest=chosen.spec_digest,
    )


@dataclasses.dataclass(frozen=True, kw_only=True)
class NewRejection:
    name: str
    body: dict[str, Any]


def rejection_name(analysis: str, uid: str) -> str:
    """``<analysis>-rejected-<uid prefix>``: one rejection per analysis (the name is the idempotency key;
    an analysis created again under the same name has another uid, so another name)."""
    suffix = f"-rejected-{uid[:8]}"
    return analysis[: MAX_NAME - len(suffix)] + suffix


def rejections_of(uid: str, rejections: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The WorkflowRejections of the analysis ``uid`` (a rejection is bound to the uid, not the name)."""
    return [r for r in rejections if (r.get("spec") or {}).get("analysisUID") == uid]


def reject_manually(
    analysis: Mapping[str, Any],
    *,
    executions: Sequence[Mapping[str, Any]],
    rejections: Sequence[Mapping[str, Any]],
    bound: Binding,
    reason: str,
    rejecter: str,
) -> NewRejection | Refuse:
    """``aianalysis reject`` and the console's Reject: the WorkflowRejection of the selection the person
    reviewed (``bound``), with their reason, or why not. Nothing runs."""
    proposal = proposal_of(analysis)
    if isinstance(proposal, Refuse):
        return proposal
    mismatch = unbound(proposal, bound)
    if mismatch is not None:
        return Refuse(message=mismatch)
    why = " ".join(reason.split())
    if not why:
        return Refuse(
            message="a rejection needs a reason (--reason TEXT): the next analysis and your team read it"
        )
    if len(why) > resources.MAX_REASON:
        return Refuse(message=f"the reason is {len(why)} characters; at most {resources.MAX_REASON}")
    earlier = rejections_of(proposal.uid, rejections)
    if earlier:
        return Refuse(message=f"aianalysis/{proposal.name} was rejected already ({_rejected_by(earlier[0])})")
    mine = [e["metadata"]["name"] for e in executions_of(proposal.name, executions) if _counts(e, analysis)]
    if mine:
        return Refuse(
            message=f"aianalysis/{proposal.name} was approved already ({', '.join(sorted(mine))}); "
            "nothing left to reject"
        )
    name = rejection_name(proposal.name, proposal.uid)
    spec = resources.WorkflowRejectionSpec(
        analysis_ref=proposal.name,
        analysis_uid=proposal.uid,
        selection_digest=proposal.digest,
        workflow_ref=proposal.workflow,
        parameters=dict(proposal.parameters),
        target_resource=proposal.target,
        rejected_by=rejecter,
        reason=why,
        review_reason=proposal.review_reason,
    )
    body = {
        "apiVersion": resources.API_VERSION,
        "kind": "WorkflowRejection",
        "metadata": {
            "name": name,
            "namespace": proposal.namespace,
            "labels": {LABEL_ANALYSIS: proposal.name[:63].rstrip("-.")},
            "ownerReferences": [_owner(proposal.name, proposal.uid)],
        },
        "spec": spec.wire(),
    }
    return NewRejection(name=name, body=body)


def _rejected_by(rejection: Mapping[str, Any]) -> str:
    spec = rejection.get("spec") or {}
    return (
        f"workflowrejection/{rejection['metadata']['name']} by {spec.get('rejectedBy')}: {spec.get('reason')}"
    )


def unbound(proposal: Proposal, bound: Binding) -> str | None:
    """Why ``proposal`` is not what the person reviewed (None: it is)."""
    again = f"review it again: aianalysis show {proposal.name} -n {proposal.namespace}"
    if bound.uid != proposal.uid:
        return (
            f"aianalysis/{proposal.name} is not the analysis you reviewed: its uid is {proposal.uid}, you "
            f"reviewed {bound.uid} (deleted and created again under the same name); {again}"
        )
    if bound.digest != proposal.digest:
        return (
            f"the selection of aianalysis/{proposal.name} is not the one you reviewed (digest "
            f"{proposal.digest}, you reviewed {bound.digest}); {again}"
        )
    return None


def approve_manually(
    analysis: Mapping[str, Any],
    *,
    executions: Sequence[Mapping[str, Any]],
    rejections: Sequence[Mapping[str, Any]] = (),
    bound: Binding,
    override_review: str | None = None,
    again: bool = False,
    approver: str,
) -> NewExecution | Refuse:
    """``aianalysis approve``: the execution of the selection the person reviewed (``bound``), or why
    not. ``override_review`` names the review reason the person overrides: only that one."""
    proposal = proposal_of(analysis)
    if isinstance(proposal, Refuse):
        return proposal
    name = proposal.name
    mismatch = unbound(proposal, bound)
    if mismatch is not None:
        return Refuse(message=mismatch)
    overridden = _override_refusal(proposal, override_review)
    if overridden is not None:
        return Refuse(message=overridden)
    earlier = rejections_of(proposal.uid, rejections)
    if earlier:
        return Refuse(message=f"aianalysis/{name} was rejected ({_rejected_by(earlier[0])}); it is not run")
    status = resources.AIAnalysisStatus.parse_known(analysis.get("status") or {})
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
    exec_name = free_name(name, executions)
    approval = _Approval(mode="Manual", approver=approver, overridden=proposal.review_reason)
    return NewExecution(
        name=exec_name, body=execution_body(analysis, status, name=exec_name, approval=approval)
    )


def approve_automatically(
    analysis: Mapping[str, Any],
    *,
    executions: Sequence[Mapping[str, Any]],
    policy: AutoPolicy,
    facts: AutoFacts,
    now: datetime.datetime,
    approver: str,
) -> NewExecution | Refuse:
    """The policy's decision for one analysis, given the namespace's ``executions`` as just read:
    once per analysis (``status.autoExecution``), never beside an approved execution of it, under
    the first free name."""
    name = analysis["metadata"]["name"]
    if not policy.enabled:
        return Refuse(message="autoExecute is off")
    try:
        status = resources.AIAnalysisStatus.parse_known(analysis.get("status") or {})
    except pydantic.ValidationError:
        return Refuse(message="unreadable analysis")
    if status.auto_execution is not None:
        return Refuse(message=f"autoExecute decided this analysis before ({status.auto_execution.execution})")
    refusal = auto_refusal(analysis, status, policy=policy, facts=facts)
    completed = resources.parse_timestamp(status.completed_at)
    if refusal is None and (completed is None or (now - completed).total_seconds() > policy.max_age_seconds):
        refusal = "completed too long ago"
    if refusal is not None or status.selected_workflow is None:
        return Refuse(message=refusal or "no selection")
    decided = sorted(
        e["metadata"]["name"] for e in executions_of(name, executions) if approved_for(e, analysis)
    )
    if decided:
        return Refuse(message=f"already approved: {', '.join(decided)}")
    exec_name = free_name(name, executions)
    approval = _Approval(mode="Auto", approver=approver, overridden=None)
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


def _override_refusal(proposal: Proposal, override_review: str | None) -> str | None:
    """An override names the review reason the person read; another reason is not overridden."""
    name, reason = proposal.name, proposal.review_reason
    again = f"review it again: aianalysis show {name} -n {proposal.namespace}"
    if reason is None and override_review is not None:
        return (
            f"aianalysis/{name} needs no human review; --override-review {override_review} overrides "
            f"nothing ({again})"
        )
    if reason is not None and override_review is None:
        return (
            f"aianalysis/{name} needs human review ({reason}); check its selection and approve with "
            f"--override-review {reason} to run it anyway"
        )
    if reason is not None and override_review != reason:
        return (
            f"aianalysis/{name} needs human review for {reason}, not for {override_review}: you override "
            f"another reason than the current one ({again})"
        )
    return None


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Approval:
    mode: resources.ApprovalMode
    approver: str
    overridden: resources.HumanReviewReason | None
    """The review reason the approver overrode (None: none was asked for)."""


def execution_body(
    analysis: Mapping[str, Any], status: resources.AIAnalysisStatus, *, name: str, approval: _Approval
) -> dict[str, Any]:
    """The execution of the analysis' current selection, exactly: canonical values, spec digest,
    target, and the digest of all that as the approval's subject."""
    chosen = status.selected_workflow
    assert chosen is not None, "only a selection is executed"
    meta = analysis["metadata"]
    ref = _ref(chosen)
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
            override_review=approval.overridden is not None,
            overridden_reason=approval.overridden,
        ),
    )
    return {
        "apiVersion": resources.API_VERSION,
        "kind": "WorkflowExecution",
        "metadata": {
            "name": name,
            "namespace": meta["namespace"],
            "labels": {LABEL_ANALYSIS: meta["name"][:63].rstrip("-."), LABEL_APPROVAL: approval.mode},
            "ownerReferences": [_owner(meta["name"], meta["uid"])],
        },
        "spec": spec.wire(),
    }


def _owner(name: str, uid: str) -> dict[str, Any]:
    """The analysis as a (non-controller) owner: deleting it deletes its executions and rejections."""
    return {
        "apiVersion": resources.API_VERSION,
        "kind": "AIAnalysis",
        "name": name,
        "uid": uid,
        "controller": False,
        "blockOwnerDeletion": False,
    }


def approved_for(execution: Mapping[str, Any], analysis: Mapping[str, Any]) -> bool:
    """An execution of this very analysis (its uid) with an approval, which the API server's
    admission policy checked when it was written. A hand-written one (no approval, or bound to
    another uid) is a squat: it never blocks a decision, and it cannot run anyway."""
    spec = execution.get("spec") or {}
    return bool(spec.get("approval")) and spec.get("analysisUID") == analysis["metadata"].get("uid")


def _counts(execution: Mapping[str, Any], analysis: Mapping[str, Any]) -> bool:
    """An approved execution of this very analysis that was not refused."""
    return approved_for(execution, analysis) and (execution.get("status") or {}).get("phase") != "Refused"


def free_name(analysis: str, executions: Sequence[Mapping[str, Any]]) -> str:
    """``<analysis>-exec-<n>`` after the highest number any execution of the namespace holds (whoever
    made it: a name is no proof of anything, only a place that is taken)."""
    prefix = execution_name(analysis, 0)[:-1]
    numbers = [
        int(n[len(prefix) :])
        for n in (e["metadata"]["name"] for e in executions)
        if n.startswith(prefix)
        if n[len(prefix) :].isdigit()
    ]
    return execution_name(analysis, max(numbers, default=0) + 1)
