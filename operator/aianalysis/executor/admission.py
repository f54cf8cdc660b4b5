"""Pure: may this WorkflowExecution run? The executor's check before a Job exists.

An execution runs only when it reproduces *exactly* the current validated selection of the
AIAnalysis it names — same namespace, same uid, same workflow id, version and spec digest, the same
canonical parameter values, the same target — and that selection still passes the analysis'
own validator (:func:`validation.revalidate`, against the workflow as the catalog holds it now),
and its approval was recorded by the API server for that very selection (or the autoExecute policy
still admits it) — provably: it was created while the shipped approval policy was in force
(:mod:`proof`). Anything else is refused with one :class:`Refusal`: a reason code and what was
wrong. A refusal is never a failed execution, so it never starts a (paid) recovery.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Set
from typing import Any

import pydantic

import aianalysis.analysis.facts
from aianalysis import catalog, resources
from aianalysis.analysis import scope, validation
from aianalysis.executor import approval, proof

NOT_APPROVED = "NotApproved"
SELECTION_MISMATCH = "SelectionMismatch"
SELECTION_INVALID = "SelectionInvalid"
WORKFLOW_CHANGED = "WorkflowChanged"
NAMESPACE_NOT_ALLOWED = "NamespaceNotAllowed"
REASONS = (NOT_APPROVED, SELECTION_MISMATCH, SELECTION_INVALID, WORKFLOW_CHANGED, NAMESPACE_NOT_ALLOWED)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Refusal:
    reason: str
    problems: list[str]

    @property
    def message(self) -> str:
        return "not executed: " + "; ".join(self.problems)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Facts:
    """What the executor read just now (fresh reads, not a cache)."""

    execution: Mapping[str, Any]
    spec: resources.WorkflowExecutionSpec
    analysis: Mapping[str, Any] | None
    """The AIAnalysis named by ``analysisRef`` in the execution's namespace (None: none)."""
    workflow: catalog.Workflow | None
    """The catalog's accepted entry for the execution's workflow id and version (None: none)."""
    approval_policy: proof.InForce | str
    """Since when the shipped approval policy has been in force, or why it is not."""
    auto: approval.AutoPolicy
    auto_facts: approval.AutoFacts | None = None
    """Read only for ``mode: Auto`` approvals."""
    cross_namespace: Set[tuple[str, str]] = frozenset()
    """Allowed (analysis namespace, target namespace) pairs beyond an analysis' own namespace."""
    privileged_roles: tuple[str, ...] = ()
    """Roles no remediation may bind, besides the built-in ones (``AIANALYSIS_PRIVILEGED_ROLES``)."""
    as_analysed: aianalysis.analysis.facts.AsAnalysed | None = None
    """The business context and the target's detected facts, read from the cluster as the analysis
    read them (:func:`to_read`); None: not read, so unknown — a workflow that requires a fact or
    restricts a business label the spec does not state is then refused."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ToRead:
    """What the executor reads from the cluster before the check: the business context of ``spec``'s
    namespace, and the facts detected on ``target`` (None: the workflow requires none, not read)."""

    spec: resources.AIAnalysisSpec
    target: scope.ObjectRef | None


def to_read(
    analysis: Mapping[str, Any] | None,
    workflow: catalog.Workflow | None,
    *,
    namespace: str,
    cross_namespace: Set[tuple[str, str]] = frozenset(),
) -> ToRead | None:
    """The analysis' spec and validated target whose facts the selection is re-validated under; None
    when there is nothing to re-validate (no selection) or the target is not the executor's to read
    (another namespace: refused anyway, never read with the executor's rights)."""
    if analysis is None:
        return None
    try:
        a_spec = resources.AIAnalysisSpec.model_validate(analysis.get("spec") or {})
        status = resources.AIAnalysisStatus.parse_known(analysis.get("status") or {})
    except pydantic.ValidationError:
        return None
    if status.phase != "Completed" or status.selected_workflow is None:
        return None
    target = resources.remediation_target(analysis, status)
    if _namespace(namespace, target, cross_namespace) is not None:
        return None
    required = workflow.spec.detected_labels if workflow is not None else None
    detect = required is not None and any(wanted is not None for _, wanted in required)
    return ToRead(spec=a_spec, target=_target_ref(target, status) if detect else None)


def refusal_for(facts: Facts) -> Refusal | None:
    """Why the execution must not run; None when it may."""
    spec, namespace = facts.spec, facts.execution["metadata"]["namespace"]
    analysis = facts.analysis
    if analysis is None:
        return Refusal(
            reason=SELECTION_MISMATCH,
            problems=[f"analysisRef {spec.analysis_ref!r} names no AIAnalysis in namespace {namespace}"],
        )
    uid = analysis["metadata"].get("uid")
    if not spec.analysis_uid or spec.analysis_uid != uid:
        return Refusal(
            reason=SELECTION_MISMATCH,
            problems=[f"analysisUID {spec.analysis_uid!r} is not aianalysis/{spec.analysis_ref}'s uid {uid}"],
        )
    try:
        a_spec = resources.AIAnalysisSpec.model_validate(analysis.get("spec") or {})
        status = resources.AIAnalysisStatus.parse_known(analysis.get("status") or {})
    except pydantic.ValidationError:
        return Refusal(reason=SELECTION_MISMATCH, problems=[f"aianalysis/{spec.analysis_ref} cannot be read"])
    selected = status.selected_workflow
    if status.phase != "Completed" or selected is None:
        return Refusal(
            reason=SELECTION_MISMATCH,
            problems=[f"aianalysis/{spec.analysis_ref} has no validated selection now ({status.phase})"],
        )
    target = resources.remediation_target(analysis, status)
    return (
        _mismatch(facts.spec, selected, target)
        or _namespace(namespace, target, facts.cross_namespace)
        or _workflow(facts, selected, a_spec, status, target)
        or _approval(facts, analysis, status, target)
    )


def _mismatch(
    spec: resources.WorkflowExecutionSpec, selected: resources.SelectedWorkflow, target: resources.ResourceRef
) -> Refusal | None:
    ref, problems = spec.workflow_ref, []
    if (ref.workflow_id, ref.version) != (selected.workflow_id, selected.version):
        problems.append(
            f"workflow {ref.workflow_id} {ref.version} is not the selected "
            f"{selected.workflow_id} {selected.version}"
        )
    if not ref.spec_digest or ref.spec_digest != selected.spec_digest:
        problems.append(f"specDigest {ref.spec_digest!r} is not the validated {selected.spec_digest!r}")
    if ref.container_image and ref.container_image != selected.container_image:
        problems.append(f"image {ref.container_image} is not the selected {selected.container_image}")
    if dict(spec.parameters) != dict(selected.parameters):
        changed = sorted(set(spec.parameters.items()) ^ set(selected.parameters.items()))
        names = sorted({name for name, _ in changed})
        problems.append(f"parameters differ from the validated values ({', '.join(names)})")
    if spec.target_resource is None or _key(spec.target_resource) != _key(target):
        problems.append(f"target {_show(spec.target_resource)} is not the validated target {_show(target)}")
    return Refusal(reason=SELECTION_MISMATCH, problems=problems) if problems else None


def _namespace(
    namespace: str, target: resources.ResourceRef, allowed: Set[tuple[str, str]]
) -> Refusal | None:
    """The analysis' own namespace gate, again (``scope.foreign_namespace``: a Namespace target
    belongs to itself; a cluster-scoped one to the cluster, whose approval the API server checked)."""
    other = scope.foreign_namespace(
        namespace, kind=target.kind, name=target.name, namespace=target.namespace, allowed=allowed
    )
    if other is None:
        return None
    return Refusal(
        reason=NAMESPACE_NOT_ALLOWED,
        problems=[
            f"the target {_show(target)} is in namespace {other}, not the execution's {namespace}, and that "
            "pair is not allowed (AIANALYSIS_CROSS_NAMESPACE)"
        ],
    )


def _workflow(
    facts: Facts,
    selected: resources.SelectedWorkflow,
    a_spec: resources.AIAnalysisSpec,
    a_status: resources.AIAnalysisStatus,
    target: resources.ResourceRef,
) -> Refusal | None:
    workflow = facts.workflow
    if workflow is None:
        return Refusal(
            reason=WORKFLOW_CHANGED,
            problems=[
                f"workflow {selected.workflow_id} {selected.version} is no longer in the catalog "
                "(deleted or not accepted)"
            ],
        )
    if workflow.digest != selected.spec_digest:
        return Refusal(
            reason=WORKFLOW_CHANGED,
            problems=[
                f"the spec of workflow {selected.workflow_id} {selected.version} changed since it was "
                f"validated (now {workflow.digest}, validated {selected.spec_digest})"
            ],
        )
    seen = facts.as_analysed  # the analysis' facts, read again from the cluster: never its status
    verdict = validation.revalidate(
        selected,
        workflow=workflow,
        business=seen.business if seen is not None else a_spec.business_context,
        recovery=a_spec.recovery,
        target=_target_ref(target, a_status),
        facts=seen.target if seen is not None else None,
        privileged_roles=facts.privileged_roles,
    )
    if not verdict.valid:
        return Refusal(reason=SELECTION_INVALID, problems=verdict.errors)
    if verdict.parameters != dict(selected.parameters):
        return Refusal(
            reason=SELECTION_INVALID,
            problems=["the stored parameters are not the validator's canonical values for this workflow"],
        )
    return None


def _approval(
    facts: Facts,
    analysis: Mapping[str, Any],
    status: resources.AIAnalysisStatus,
    target: resources.ResourceRef,
) -> Refusal | None:
    spec, given = facts.spec, facts.spec.approval
    if given is None:
        return Refusal(reason=NOT_APPROVED, problems=["the execution carries no approval (spec.approval)"])
    if isinstance(facts.approval_policy, str):
        return Refusal(
            reason=NOT_APPROVED, problems=[f"approvals cannot be verified: {facts.approval_policy}"]
        )
    if (unchecked := proof.unproven(facts.execution, facts.approval_policy)) is not None:
        return Refusal(reason=NOT_APPROVED, problems=[f"the approval cannot be trusted: {unchecked}"])
    digest = resources.selection_digest(
        analysis_uid=analysis["metadata"]["uid"],
        workflow=spec.workflow_ref,
        parameters=spec.parameters,
        target=target,
    )
    if given.selection_digest != digest:
        return Refusal(
            reason=NOT_APPROVED, problems=["the approval is for another selection (selectionDigest differs)"]
        )
    if status.needs_human_review and not given.override_review:
        return Refusal(
            reason=NOT_APPROVED,
            problems=[
                f"the analysis needs human review ({status.human_review_reason}); "
                "the approval does not override it"
            ],
        )
    if given.overridden_reason is not None and given.overridden_reason != status.human_review_reason:
        return Refusal(
            reason=NOT_APPROVED,
            problems=[
                f"the approval overrides human review for {given.overridden_reason}, but the analysis "
                f"asks for it for {status.human_review_reason}"
            ],
        )
    if given.mode == "Auto":
        why = approval.auto_refusal(analysis, status, policy=facts.auto, facts=facts.auto_facts or _NO_FACTS)
        if why is not None:
            return Refusal(reason=NOT_APPROVED, problems=[f"autoExecute does not admit it: {why}"])
    return None


def _target_ref(target: resources.ResourceRef, status: resources.AIAnalysisStatus) -> scope.ObjectRef:
    affected = status.root_cause.affected_resource if status.root_cause else None
    api_version = affected.api_version if affected is not None else None
    return scope.ObjectRef(
        kind=target.kind, name=target.name, namespace=target.namespace, api_version=api_version
    )


_NO_FACTS = approval.AutoFacts(namespace_labels={}, workflow=None)


def _key(ref: resources.ResourceRef) -> tuple[str, str, str]:
    return (ref.kind.casefold(), ref.namespace or "", ref.name)


def _show(ref: resources.ResourceRef | None) -> str:
    if ref is None:
        return "(none)"
    return f"{ref.kind} {ref.namespace}/{ref.name}" if ref.namespace else f"{ref.kind} {ref.name}"
