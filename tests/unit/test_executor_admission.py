"""The executor's admission check and the approvals it accepts (pure): only the analysis' current
validated selection, exactly, approved for that very selection, runs."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

import aianalysis.analysis.facts
from aianalysis import catalog, resources
from aianalysis.analysis import validation
from aianalysis.executor import admission, approval, proof

NOW = datetime.datetime(2026, 11, 20, 10, 5, 0, tzinfo=datetime.UTC)


def workflow(image: str = "registry.example/wf/restart:1", risk: str = "medium") -> catalog.Workflow:
    return catalog.Workflow(
        name="restart-v1",
        spec=resources.RemediationWorkflowSpec.model_validate(
            {
                "workflowId": "restart-deployment",
                "version": "1.0.0",
                "title": "Restart",
                "description": "Rolling restart",
                "riskLevel": risk,
                "labels": {"signalTypes": ["CrashLoopBackOff"], "environment": ["production"]},
                "parameters": [
                    {"name": "TARGET_NAMESPACE", "type": "string", "required": True},
                    {"name": "REPLICAS", "type": "integer", "minimum": 1, "maximum": 5},
                    {
                        "name": "STRATEGY",
                        "type": "string",
                        "enum": ["rolling", "recreate"],
                        "default": "rolling",
                    },
                ],
                "execution": {"engine": "job", "containerImage": image, "serviceAccountName": "wf-restart"},
            }
        ),
    )


WORKFLOW = workflow()
IN_FORCE = proof.InForce(since=datetime.datetime(2026, 11, 20, 10, 0, 10, tzinfo=datetime.UTC))
"""The shipped approval policy's last change plus its margin."""
VALIDATED = {"TARGET_NAMESPACE": "prod", "REPLICAS": "2", "STRATEGY": "rolling"}  # defaults filled


def analysis(*, namespace: str = "prod", target_ns: str = "prod", **status: Any) -> dict[str, Any]:
    base = {
        "phase": "Completed",
        "completedAt": "2026-11-20T10:04:00Z",
        "rootCause": {
            "summary": "crash loop", "severity": "high", "signalType": "CrashLoopBackOff",
            "affectedResource": {"kind": "Deployment", "name": "orders", "namespace": target_ns,
                                 "apiVersion": "apps/v1"},
        },
        "selectedWorkflow": {
            "workflowId": "restart-deployment", "version": "1.0.0",
            "containerImage": "registry.example/wf/restart:1", "confidence": 0.95,
            "rationale": "crash loop after config change", "parameters": dict(VALIDATED),
            "specDigest": WORKFLOW.digest,
        },
    }  # fmt: skip
    return {
        "metadata": {"name": "orders-crash", "namespace": namespace, "uid": "aia-uid"},
        "spec": {
            "signal": {"type": "CrashLoopBackOff", "severity": "high"},
            "resource": {"kind": "Deployment", "name": "orders", "namespace": namespace},
            "businessContext": {"environment": "production", "riskTolerance": "medium"},
        },
        "status": {**base, **status},
    }


def reviewed(subject: dict[str, Any]) -> approval.Binding:
    """What the approver reviewed: the analysis as it is."""
    proposal = approval.proposal_of(subject)
    assert isinstance(proposal, approval.Proposal), proposal
    return proposal.binding


def approved(subject: dict[str, Any], **options: Any) -> dict[str, Any]:
    decided = approval.approve_manually(
        subject, executions=[], approver="alice", bound=reviewed(subject), **options
    )
    assert isinstance(decided, approval.NewExecution), decided
    body = decided.body
    # as the API server writes them: created after the approval policy came into force, unchanged since
    body["metadata"].update(uid="wfe-uid", generation=1, creationTimestamp="2026-11-20T10:04:30Z")
    return body


def facts(execution: dict[str, Any], subject: dict[str, Any] | None, **changes: Any) -> admission.Facts:
    values: dict[str, Any] = {
        "execution": execution,
        "spec": resources.WorkflowExecutionSpec.model_validate(execution["spec"]),
        "analysis": subject,
        "workflow": WORKFLOW,
        "approval_policy": IN_FORCE,
        "auto": approval.AutoPolicy(),
    }
    return admission.Facts(**{**values, **changes})


def refused(execution: dict[str, Any], subject: dict[str, Any] | None, **changes: Any) -> admission.Refusal:
    found = admission.refusal_for(facts(execution, subject, **changes))
    assert found is not None, "expected a refusal"
    return found


def test_the_approved_selection_runs_and_carries_exactly_what_was_validated() -> None:
    subject = analysis()
    execution = approved(subject)
    spec = execution["spec"]
    assert spec["parameters"] == VALIDATED and spec["workflowRef"]["specDigest"] == WORKFLOW.digest
    assert spec["analysisUID"] == "aia-uid" and spec["approval"]["approvedBy"] == "alice"
    assert spec["targetResource"] == {"kind": "Deployment", "name": "orders", "namespace": "prod"}
    assert admission.refusal_for(facts(execution, subject)) is None


def test_a_hand_written_execution_aimed_at_another_namespace_is_refused() -> None:
    subject = analysis()
    forged = approved(subject)
    forged["spec"]["parameters"] = {**VALIDATED, "TARGET_NAMESPACE": "kube-system"}
    forged["spec"]["targetResource"] = {"kind": "Deployment", "name": "coredns", "namespace": "kube-system"}
    del forged["spec"]["approval"]
    why = refused(forged, subject)
    assert why.reason == admission.SELECTION_MISMATCH
    assert "TARGET_NAMESPACE" in why.message and "coredns" in why.message


def test_an_exact_copy_without_an_approval_is_not_approved() -> None:
    subject = analysis()
    copy = approved(subject)
    del copy["spec"]["approval"]
    assert refused(copy, subject).reason == admission.NOT_APPROVED


def test_an_approval_for_another_selection_is_not_approved() -> None:
    subject = analysis()
    execution = approved(subject)
    execution["spec"]["approval"]["selectionDigest"] = "sha256:" + "0" * 64
    assert refused(execution, subject).reason == admission.NOT_APPROVED


def test_approvals_are_not_trusted_when_the_admission_policy_is_missing() -> None:
    subject = analysis()
    why = refused(approved(subject), subject, approval_policy="ValidatingAdmissionPolicy x is not installed")
    assert why.reason == admission.NOT_APPROVED and "cannot be verified" in why.message


@pytest.mark.parametrize(
    ("meta", "said"),
    [
        ({"creationTimestamp": "2026-11-20T09:00:00Z"}, "before the approval policy was certainly in force"),
        ({"creationTimestamp": "2026-11-20T10:00:10Z"}, "before the approval policy was certainly in force"),
        ({"generation": 2}, "its spec changed after it was created"),
    ],
)
def test_an_approval_the_policy_cannot_have_checked_is_not_trusted(meta: dict[str, Any], said: str) -> None:
    """Created before the policy (with the shipped content) was in force — its margin included — or
    changed since: whatever its approval says, nothing proves the API server checked it."""
    subject = analysis()
    execution = approved(subject)
    execution["metadata"].update(meta)
    why = refused(execution, subject)
    assert why.reason == admission.NOT_APPROVED and said in why.message, why.message


def test_an_execution_bound_to_an_earlier_analysis_of_the_same_name_is_refused() -> None:
    execution = approved(analysis())
    recreated = analysis()
    recreated["metadata"]["uid"] = "another-uid"
    assert refused(execution, recreated).reason == admission.SELECTION_MISMATCH
    assert refused(execution, None).reason == admission.SELECTION_MISMATCH


def test_a_workflow_whose_spec_changed_after_approval_is_refused() -> None:
    subject = analysis()
    execution = approved(subject)
    why = refused(execution, subject, workflow=workflow(image="registry.example/evil:latest"))
    assert why.reason == admission.WORKFLOW_CHANGED and "changed since it was validated" in why.message
    assert refused(execution, subject, workflow=None).reason == admission.WORKFLOW_CHANGED


def test_the_executor_refuses_what_the_analysis_would_refuse() -> None:
    """A status written by hand (or by a compromised writer) with values the validator rejects:
    the executor's verdict is the validator's own error, not a weaker copy."""
    forged = {**VALIDATED, "REPLICAS": "9"}
    subject = analysis(selectedWorkflow={**analysis()["status"]["selectedWorkflow"], "parameters": forged})
    why = refused(approved(subject), subject)
    expected = validation.check_parameters(WORKFLOW.spec.parameters, forged).errors
    assert why.reason == admission.SELECTION_INVALID and expected and set(expected) <= set(why.problems)
    staging = analysis()
    staging["spec"]["businessContext"]["environment"] = "staging"
    why = refused(approved(staging), staging)
    assert why.reason == admission.SELECTION_INVALID and "[policy]" in why.message


GITOPS = {"gitOpsManaged": True, "gitOpsTool": "argocd"}


def gitops_workflow() -> catalog.Workflow:
    spec = WORKFLOW.spec.model_dump(by_alias=True, exclude_none=True)
    return catalog.Workflow(
        name="restart-v1",
        spec=resources.RemediationWorkflowSpec.model_validate({**spec, "detectedLabels": GITOPS}),
    )


def seen(environment: str | None, **detected: Any) -> aianalysis.analysis.facts.AsAnalysed:
    """What the executor read from the cluster: the namespace's business context, the target's facts."""
    return aianalysis.analysis.facts.AsAnalysed(
        business=resources.BusinessContext(environment=environment, risk_tolerance="medium"),
        target=catalog.TargetFacts(**detected),
        warnings=[],
    )


def test_a_workflow_requiring_detected_facts_is_revalidated_with_the_facts_read_from_the_cluster() -> None:
    """The analysis validated it with the target's facts (an Argo CD-managed Deployment) and its
    namespace's environment; the executor re-validates with the same facts, read again — never with
    none (every requirement unmet) nor with the analysis' status."""
    gitops = gitops_workflow()
    subject = analysis(
        selectedWorkflow={**analysis()["status"]["selectedWorkflow"], "specDigest": gitops.digest}
    )
    del subject["spec"]["businessContext"]["environment"]  # the namespace's label says production
    execution = approved(subject)
    wanted = admission.to_read(subject, gitops, namespace="prod")
    assert wanted is not None and wanted.target is not None
    assert (wanted.target.kind, wanted.target.name, wanted.target.api_version) == (
        "Deployment",
        "orders",
        "apps/v1",
    )
    managed = seen("production", gitops_managed=True, gitops_tool="argocd")
    assert admission.refusal_for(facts(execution, subject, workflow=gitops, as_analysed=managed)) is None
    unread = refused(execution, subject, workflow=gitops)
    assert unread.reason == admission.SELECTION_INVALID
    assert "detectedLabels.gitOpsManaged requires True but the target's is unknown" in unread.message
    assert "environment" in unread.message
    unmanaged = refused(
        execution, subject, workflow=gitops, as_analysed=seen("production", gitops_managed=False)
    )
    assert unmanaged.reason == admission.SELECTION_INVALID and "is False" in unmanaged.message


def test_the_executor_reads_facts_only_for_a_workflow_that_requires_them_and_only_in_its_namespace() -> None:
    subject = analysis()
    plain = admission.to_read(subject, WORKFLOW, namespace="prod")
    assert plain is not None and plain.target is None  # the business context only
    elsewhere = analysis(target_ns="shared")
    assert admission.to_read(elsewhere, gitops_workflow(), namespace="prod") is None  # refused, never read
    paired = admission.to_read(
        elsewhere, gitops_workflow(), namespace="prod", cross_namespace={("prod", "shared")}
    )
    assert paired is not None and paired.target is not None and paired.target.namespace == "shared"
    assert admission.to_read(analysis(phase="Failed"), WORKFLOW, namespace="prod") is None
    assert admission.to_read(None, WORKFLOW, namespace="prod") is None


def test_needs_review_runs_only_with_an_explicit_override() -> None:
    unsure = analysis(needsHumanReview=True, humanReviewReason="low_confidence")
    assert admission.refusal_for(facts(approved(unsure, override_review="low_confidence"), unsure)) is None
    execution = approved(unsure, override_review="low_confidence")
    assert execution["spec"]["approval"]["overriddenReason"] == "low_confidence"
    execution["spec"]["approval"]["overrideReview"] = False
    assert refused(execution, unsure).reason == admission.NOT_APPROVED
    # An override of another reason than the analysis' own (written by hand: the CLI refuses it).
    other = approved(unsure, override_review="low_confidence")
    other["spec"]["approval"]["overriddenReason"] = "previously_ineffective"
    assert "for previously_ineffective" in refused(other, unsure).message


def test_a_target_in_another_namespace_needs_an_allowed_pair() -> None:
    subject = analysis(
        target_ns="shared",
        selectedWorkflow={
            **analysis()["status"]["selectedWorkflow"],
            "parameters": {**VALIDATED, "TARGET_NAMESPACE": "shared"},
        },
    )
    execution = approved(subject)
    assert refused(execution, subject).reason == admission.NAMESPACE_NOT_ALLOWED
    assert admission.refusal_for(facts(execution, subject, cross_namespace={("prod", "shared")})) is None


def test_a_namespace_target_is_in_the_namespace_it_names_not_the_executions() -> None:
    """An analysis in prod about Namespace kube-system (written by an operator that took it for its
    own namespace): the executor refuses it unless (prod, kube-system) is an allowed pair."""
    chosen = analysis()["status"]["selectedWorkflow"]
    subject = analysis(selectedWorkflow={**chosen, "parameters": {"REPLICAS": "2", "STRATEGY": "rolling"}})
    subject["status"]["rootCause"]["affectedResource"] = {"kind": "Namespace", "name": "kube-system"}
    execution = approved(subject)
    assert execution["spec"]["targetResource"] == {"kind": "Namespace", "name": "kube-system"}
    why = refused(execution, subject)
    assert why.reason == admission.NAMESPACE_NOT_ALLOWED and "in namespace kube-system" in why.message
    assert admission.refusal_for(facts(execution, subject, cross_namespace={("prod", "kube-system")})) is None
    subject["status"]["rootCause"]["affectedResource"]["name"] = "prod"  # its own namespace: runs
    assert admission.refusal_for(facts(approved(subject), subject)) is None


# ---- autoExecute: server-side facts only ---------------------------------------------------------

POLICY = approval.AutoPolicy(enabled=True, namespaces=("prod",), max_risk="medium", min_confidence=0.9)
OPTED_IN = approval.AutoFacts(namespace_labels={"kubernaut.io/auto-execute": "true"}, workflow=WORKFLOW)


def auto(
    subject: dict[str, Any], *, policy: approval.AutoPolicy = POLICY, known: approval.AutoFacts = OPTED_IN
) -> Any:
    return approval.approve_automatically(
        subject, executions=[], policy=policy, facts=known, now=NOW, approver="system:serviceaccount:x:exec"
    )


def test_auto_execute_admits_only_what_the_cluster_says() -> None:
    assert isinstance(auto(analysis()), approval.NewExecution)
    unlabelled = approval.AutoFacts(namespace_labels={}, workflow=WORKFLOW)
    assert "not labelled" in auto(analysis(), known=unlabelled).message
    elsewhere = analysis(namespace="team-b", target_ns="team-b")
    assert "allowlist" in auto(elsewhere).message
    risky = approval.AutoFacts(namespace_labels=OPTED_IN.namespace_labels, workflow=workflow(risk="high"))
    assert "ceiling" in auto(analysis(), known=risky).message
    assert (
        "ceiling" in auto(analysis(), policy=approval.AutoPolicy(enabled=True, namespaces=("prod",))).message
    )


@pytest.mark.parametrize(
    "requester_says",
    [{"environment": "production", "riskTolerance": "high"}, {"environment": "dev", "riskTolerance": "low"}],
)
def test_the_specs_business_context_and_a_high_confidence_do_not_open_auto_execute(
    requester_says: dict[str, str],
) -> None:
    subject = analysis(selectedWorkflow={**analysis()["status"]["selectedWorkflow"], "confidence": 1.0})
    subject["spec"]["businessContext"] = requester_says
    unlabelled = approval.AutoFacts(namespace_labels={}, workflow=WORKFLOW)
    assert isinstance(auto(subject, known=unlabelled), approval.Refuse)
    envs = approval.AutoPolicy(
        enabled=True, namespaces=("prod",), max_risk="medium", environments=("production",)
    )
    assert "environment label" in auto(subject, policy=envs).message  # the Namespace has no such label
    labelled = approval.AutoFacts(
        namespace_labels={**OPTED_IN.namespace_labels, "kubernaut.io/environment": "production"},
        workflow=WORKFLOW,
    )
    assert isinstance(auto(subject, policy=envs, known=labelled), approval.NewExecution)


@pytest.mark.parametrize(
    ("affected", "where"),
    [
        ({"kind": "Namespace", "name": "kube-system"}, "belongs to namespace kube-system"),
        ({"kind": "Node", "name": "worker-1"}, "belongs to the cluster"),
        ({"kind": "Deployment", "name": "orders", "namespace": "shared"}, "belongs to namespace shared"),
    ],
)
def test_auto_execute_acts_only_on_what_belongs_to_the_analysis_namespace(
    affected: dict[str, str], where: str
) -> None:
    """Nobody is asked: never another namespace (pairs or not), nor a cluster-scoped object."""
    subject = analysis()
    subject["status"]["rootCause"]["affectedResource"] = affected
    declined = auto(subject)
    assert isinstance(declined, approval.Refuse) and where in declined.message, declined
    subject["status"]["rootCause"]["affectedResource"] = {"kind": "Namespace", "name": "prod"}
    assert isinstance(auto(subject), approval.NewExecution)  # its own Namespace


def test_an_auto_approval_is_checked_again_before_the_job() -> None:
    subject = analysis()
    created = auto(subject)
    assert isinstance(created, approval.NewExecution)
    server_set = {"uid": "wfe-uid", "generation": 1, "creationTimestamp": "2026-11-20T10:04:30Z"}
    execution = {**created.body, "metadata": {**created.body["metadata"], **server_set}}
    assert admission.refusal_for(facts(execution, subject, auto=POLICY, auto_facts=OPTED_IN)) is None
    opted_out = approval.AutoFacts(namespace_labels={}, workflow=WORKFLOW)
    why = refused(execution, subject, auto=POLICY, auto_facts=opted_out)
    assert why.reason == admission.NOT_APPROVED and "autoExecute" in why.message


def test_a_hand_written_execution_does_not_block_an_approval() -> None:
    subject = analysis()
    squatter = {"metadata": {"name": "orders-crash-exec-1"}, "spec": {"analysisRef": "orders-crash"}}
    decided = approval.approve_manually(
        subject, executions=[squatter], approver="alice", bound=reviewed(subject)
    )
    assert isinstance(decided, approval.NewExecution) and decided.name == "orders-crash-exec-2"
    first = approved(subject)
    again = approval.approve_manually(subject, executions=[first], approver="alice", bound=reviewed(subject))
    assert isinstance(again, approval.Refuse) and "already has an execution" in again.message


def test_a_refused_execution_starts_no_recovery() -> None:
    from aianalysis.controller import execution_reconciler  # noqa: PLC0415

    refused_body = {"status": {"phase": "Refused", "conditions": []}}
    failed_body = {"status": {"phase": "Failed", "conditions": []}}
    assert not execution_reconciler.needs_recovery(refused_body)
    assert execution_reconciler.needs_recovery(failed_body)


def test_a_selection_binding_a_denied_role_is_refused_before_its_job() -> None:
    """Validated before the role was denied (or by an operator configured otherwise): the executor's
    re-check applies the executor's own deny list."""
    binder = catalog.Workflow(
        name="bind-role-v1",
        spec=resources.RemediationWorkflowSpec.model_validate(
            {
                "workflowId": "bind-role", "version": "1.0.0", "title": "Bind",
                "description": "Binds a role.",
                "labels": {"signalTypes": ["Forbidden"]}, "riskLevel": "low",
                "parameters": [{"name": "ROLE_NAME", "type": "string", "required": True}],
                "execution": {"engine": "job", "containerImage": "registry.example/wf/bind:1"},
            }
        ),
    )  # fmt: skip
    subject = analysis()
    subject["status"]["selectedWorkflow"] = {
        "workflowId": "bind-role", "version": "1.0.0", "containerImage": "registry.example/wf/bind:1",
        "confidence": 0.95, "rationale": "missing binding", "parameters": {"ROLE_NAME": "ops-approver"},
        "specDigest": binder.digest,
    }  # fmt: skip
    execution = approved(subject)
    assert admission.refusal_for(facts(execution, subject, workflow=binder)) is None
    why = refused(execution, subject, workflow=binder, privileged_roles=("ops-approver",))
    assert why.reason == admission.SELECTION_INVALID and "ops-approver" in why.message
