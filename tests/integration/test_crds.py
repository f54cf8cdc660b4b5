"""The three CRDs as a user meets them on a real kube-apiserver: invalid objects are refused with a
message that says what is wrong, specs cannot be changed after creation, every status field the
operator writes survives the round trip (nothing pruned), and kubectl shows useful columns and docs.

Objects are built from the pydantic models, so these tests also prove that what the operator would
write is what the apiserver accepts; and each object the apiserver refuses at creation, the model
refuses too.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pydantic
import pytest
import yaml

from aianalysis import resources

pytestmark = pytest.mark.cluster

Obj = dict[str, Any]
T0 = "2026-11-20T10:00:00Z"
T1 = "2026-11-20T10:02:34Z"


# --------------------------------------------------------------------------------------------
# Valid objects (from the models; architecture §2)


def workflow_spec(workflow_id: str = "crdtest-increase-memory") -> resources.RemediationWorkflowSpec:
    # RemediationWorkflows are cluster-wide: these are deleted after each test, and their "crdtest-" ids
    # cannot shadow an example catalog entry should one ever outlive its test.
    return resources.RemediationWorkflowSpec(
        workflow_id=workflow_id,
        version="1.2.0",
        title="Increase memory limit",
        description="Raises the memory limit of the owning Deployment and rolls it.",
        labels=resources.WorkflowLabels(
            signal_types=["OOMKilled", "ContainerOOM"],
            severity=["critical", "high"],
            component=["deployment"],
            environment=["production"],
            priority=["P0", "P1"],
            business_category=["payments"],
        ),
        risk_level="medium",
        parameters=[
            resources.WorkflowParameter(
                name="TARGET_NAMESPACE",
                type="string",
                required=True,
                description="ns",
                from_target="namespace",
            ),
            resources.WorkflowParameter(name="MEMORY_LIMIT_NEW", type="string", pattern="^[0-9]+(Mi|Gi)$"),
            resources.WorkflowParameter(
                name="REPLICAS", type="integer", minimum=1, maximum=50, depends_on=["TARGET_NAMESPACE"]
            ),
            resources.WorkflowParameter(
                name="STRATEGY", type="string", enum=["rolling", "recreate"], default="rolling"
            ),
        ],
        execution=resources.WorkflowExecutionSettings(
            engine="job",
            container_image="registry.example/wf/oom:1.2.0",
            service_account_name="remediator",
            bundle="registry.example/wf/oom:1.2.0",
            bundle_digest="sha256:" + "0" * 64,
            engine_config={"timeout": "5m", "retries": 2, "dryRun": False},
        ),
        estimated_duration="5m",
        action_type="IncreaseMemoryLimits",
        guidance=resources.WorkflowGuidance(
            when_to_use="OOMKilled at peak load",
            when_not_to_use="a memory leak",
            preconditions="a limit is set",
        ),
        custom_labels={"team": "payments"},
        detected_labels=resources.DetectedLabels(
            helm_managed=True,
            gitops_managed=False,
            gitops_tool="argocd",
            pdb_protected=True,
            hpa_enabled=False,
            stateful=False,
            network_isolated=True,
            service_mesh="istio",
        ),
        lifecycle="Deprecated",
    )


def analysis_spec(*, recovery: bool = False) -> resources.AIAnalysisSpec:
    history = resources.RecoverySpec(
        attempt_number=2,
        original_analysis_ref="payment-oom-1",
        previous_executions=[
            resources.PreviousExecution(
                workflow_execution_ref="payment-oom-1-exec-1",
                original_rca=resources.OriginalRCA(
                    summary="memory limit too low",
                    signal_type="OOMKilled",
                    severity="critical",
                    contributing_factors=["traffic spike"],
                ),
                selected_workflow=resources.ExecutedWorkflow(
                    workflow_id="crdtest-increase-memory",
                    version="1.2.0",
                    container_image="registry.example/wf:1",
                    parameters={"TARGET_NAMESPACE": "production", "REPLICAS": "3"},
                    rationale="fits",
                ),
                failure=resources.ExecutionFailure(
                    failed_step_index=0,
                    failed_step_name="patch",
                    reason="Forbidden",
                    message="denied",
                    exit_code=1,
                    failed_at=T1,
                    execution_time="2m34s",
                ),
            )
        ],
    )
    return resources.AIAnalysisSpec(
        signal=resources.Signal(
            type="OOMKilled",
            severity="critical",
            alert_name="PodOOMKilled",
            source="prometheus-adapter",
            labels={"team": "payments"},
            error_message="Container killed due to OOM",
            description="payment-api pods restarted 5 times in 10 minutes",
            firing_time=T0,
            received_time=T0,
        ),
        resource=resources.ResourceRef(kind="Deployment", name="payment-api", namespace="production"),
        cluster="prod-eu-1",
        business_context=resources.BusinessContext(
            environment="production", priority="P1", business_category="payments", risk_tolerance="medium"
        ),
        recovery=history if recovery else None,
    )


def execution_spec() -> resources.WorkflowExecutionSpec:
    return resources.WorkflowExecutionSpec(
        analysis_ref="payment-oom-1",
        workflow_ref=resources.WorkflowRef(
            workflow_id="crdtest-increase-memory", version="1.2.0", container_image="registry.example/wf:1"
        ),
        parameters={"TARGET_NAMESPACE": "production", "REPLICAS": "3", "TAGS": '["a","b"]'},
        target_resource=resources.ResourceRef(kind="Deployment", name="payment-api", namespace="production"),
    )


def full_analysis_status() -> resources.AIAnalysisStatus:
    """Every field of AIAnalysisStatus set, down to the leaves (checked by ``unset_fields``)."""
    condition = resources.Condition(
        type="Ready",
        status="True",
        reason="WorkflowSelected",
        message="selected",
        last_transition_time=T1,
        observed_generation=1,
    )
    return resources.AIAnalysisStatus(
        phase="Completed",
        reason="WorkflowSelected",
        message="selected crdtest-increase-memory 1.2.0",
        observed_generation=1,
        attempt=2,
        started_at=T0,
        completed_at=T1,
        root_cause=resources.RootCause(
            summary="JVM heap above the container limit",
            severity="high",
            signal_type="OOMKilled",
            contributing_factors=["traffic spike", "heap setting"],
            affected_resource=resources.AffectedResource(
                kind="Deployment", name="payment-api", namespace="production", api_version="apps/v1"
            ),
        ),
        selected_workflow=resources.SelectedWorkflow(
            workflow_id="crdtest-increase-memory",
            version="1.2.0",
            container_image="registry.example/wf:1",
            confidence=0.87,
            rationale="memory limit is the root cause",
            spec_digest="sha256:" + "a" * 64,
            parameters={
                "TARGET_NAMESPACE": "production",
                "REPLICAS": "3",
                "DRY_RUN": "false",
                "TAGS": '["a"]',
            },
        ),
        alternative_workflows=[
            resources.AlternativeWorkflow(
                workflow_id="crdtest-restart-pod", version="latest", confidence=0.4, rationale="symptom only"
            )
        ],
        warnings=["parameter FOO is not declared by the workflow and was removed"],
        needs_human_review=True,
        human_review_reason="low_confidence",
        validation_attempts=[
            resources.ValidationAttempt(
                attempt=1,
                workflow_id="crdtest-made-up",
                valid=False,
                errors=["[unknown_workflow] no such id"],
                at=T0,
            ),
            resources.ValidationAttempt(
                attempt=2, workflow_id="crdtest-increase-memory", valid=True, errors=["[none] ok"], at=T1
            ),
        ],
        recovery=resources.RecoveryStatus(
            attempt_number=2,
            recovery_analysis=resources.RecoveryAnalysis(
                previous_attempt_assessment=resources.PreviousAttemptAssessment(
                    failure_understood=True,
                    failure_reason_analysis="RBAC denied the patch",
                    state_changed=False,
                    current_signal_type="OOMKilled",
                ),
                current_rca=resources.RecoveryRCA(
                    summary="still OOM",
                    severity="critical",
                    signal_type="OOMKilled",
                    contributing_factors=["limit unchanged"],
                ),
            ),
            recovery_strategy=resources.RecoveryStrategy(
                approach="different_permissions", differs_from_previous=True, why_different="uses a bound SA"
            ),
        ),
        llm=resources.LLMUsage(
            provider="anthropic",
            model="claude-sonnet-4-5",
            requests=4,
            input_tokens=5120,
            output_tokens=812,
            cache_read_tokens=4096,
            cache_write_tokens=2048,
            tool_calls=6,
            cost=resources.LLMCost(amount=0.031415, currency="USD", price_table_date="2026-11-27"),
        ),
        investigation=resources.InvestigationAudit(
            calls=[
                resources.ToolCallRecord(
                    tool="list_resources",
                    arguments='{"kind":"Pod","label_selector":"app=web"}',
                    result_chars=812,
                    result_tokens=203,
                    duration_ms=41,
                    truncated=True,
                    error=False,
                ),
                resources.ToolCallRecord(
                    tool="prometheus_query",
                    arguments='{"query":"up"}',
                    result_chars=120,
                    result_tokens=30,
                    duration_ms=1200,
                    truncated=False,
                    error=True,
                ),
            ],
            calls_not_recorded=3,
            output_tokens=233,
            budget_tokens=20000,
            budget_exhausted=True,
        ),
        conditions=[condition],
        intake=resources.IntakeStatus(occurrences=7, first_seen_at=T0, last_seen_at=T1, resolved_at=T1),
        auto_execution=resources.AutoExecutionRecord(execution="api-oom-exec-1", decided_at=T1),
        rejection=resources.Rejection(
            rejected_by="alice",
            reason="fix forward",
            at=T1,
            workflow_rejection="a-rejected-1",
            selection_digest="sha256:" + "e" * 64,
        ),
    )


def full_execution_status() -> resources.WorkflowExecutionStatus:
    return resources.WorkflowExecutionStatus(
        phase="Failed",
        started_at=T0,
        completed_at=T1,
        failure_details=resources.ExecutionFailureDetails(
            failed_step_index=1,
            failed_step_name="rollout",
            reason="OOMKilled",
            message="container OOM",
            exit_code=137,
            failed_at=T1,
            execution_time="2m34s",
        ),
        recovery_analysis_ref="payment-oom-1-recovery-1",
        needs_human_review=True,
        human_review_reason="max_recovery_attempts",
        dry_run=False,
        assessment=resources.Assessment(
            phase="Assessed",
            before=resources.AssessmentBaseline(
                at=T0, spec_hash="sha256:0123456789abcdef", target_found=True
            ),
            after_spec_hash="sha256:1111111111111111",
            window_seconds=300,
            assess_after=T1,
            assessed_at=T1,
            current_spec_hash="sha256:1111111111111111",
            verdict="partial",
            score=0.62,
            reason="AlertStillFiring",
            message="Pods are healthy but the alert still fires",
            evidence=[
                resources.AssessmentEvidence(
                    check="podHealth", result="pass", detail="1/1 pods ready", score=1.0
                )
            ],
        ),
        conditions=[
            resources.Condition(
                type="Succeeded",
                status="False",
                reason="OOMKilled",
                message="step rollout failed",
                last_transition_time=T1,
                observed_generation=1,
            )
        ],
    )


def unset_fields(value: Any, path: str = "") -> list[str]:
    """Paths of fields left None or empty: a round trip only proves something for fields that are set."""
    if isinstance(value, pydantic.BaseModel):
        return [
            p
            for name in type(value).model_fields
            for p in unset_fields(getattr(value, name), f"{path}.{name}")
        ]
    if value is None or (isinstance(value, list | dict) and not value):
        return [path]
    if isinstance(value, list):
        return [p for i, item in enumerate(value) for p in unset_fields(item, f"{path}[{i}]")]
    return []


SPECS: dict[str, Callable[[], resources.Model]] = {
    "AIAnalysis": analysis_spec,
    "WorkflowExecution": execution_spec,
    "RemediationWorkflow": workflow_spec,
}
SPEC_MODELS: dict[str, type[resources.Model]] = {
    "AIAnalysis": resources.AIAnalysisSpec,
    "WorkflowExecution": resources.WorkflowExecutionSpec,
    "RemediationWorkflow": resources.RemediationWorkflowSpec,
}
STATUS_MODELS: dict[str, type[resources.Model]] = {
    "AIAnalysis": resources.AIAnalysisStatus,
    "WorkflowExecution": resources.WorkflowExecutionStatus,
}
STATUSES: dict[str, Callable[[], resources.Model]] = {
    "AIAnalysis": full_analysis_status,
    "WorkflowExecution": full_execution_status,
}


def manifest(kind: str, name: str, namespace: str, spec: resources.Model | None = None) -> Obj:
    metadata = {"name": name} if kind == "RemediationWorkflow" else {"name": name, "namespace": namespace}
    body = (spec or SPECS[kind]()).wire()
    return {"apiVersion": resources.API_VERSION, "kind": kind, "metadata": metadata, "spec": body}


# --------------------------------------------------------------------------------------------
# kubectl helpers


class Objects:
    """Creates objects and deletes them after the test: RemediationWorkflows are cluster-wide, and a
    leftover AIAnalysis or failed WorkflowExecution would be picked up by any operator started later."""

    def __init__(self, cluster: Any, namespace: str) -> None:
        self.cluster = cluster
        self.namespace = namespace
        self.created: list[tuple[str, str]] = []

    def name(self, stem: str) -> str:
        return f"{stem}-{uuid.uuid4().hex[:6]}"

    def apply(self, obj: Obj) -> Obj:
        self.created.append((obj["kind"], obj["metadata"]["name"]))
        out = self.cluster.kubectl("apply", "--server-side", "-o", "json", "-f", "-", input=json.dumps(obj))
        applied: Obj = json.loads(out.stdout)
        return applied

    def get(self, kind: str, name: str) -> Obj:
        got: Obj = json.loads(self.cluster.kubectl("get", kind, name, *self._ns(kind), "-o", "json").stdout)
        return got

    def patch_status(self, kind: str, name: str, status: Obj, *, check: bool = True) -> Any:
        """A JSON merge patch of ``status`` through the /status subresource, as the operator writes it."""
        return self.cluster.kubectl(
            "patch",
            kind,
            name,
            *self._ns(kind),
            "--subresource=status",
            "--type=merge",
            "-p",
            json.dumps({"status": status}),
            check=check,
        )

    def delete_all(self) -> None:
        for kind, name in self.created:
            self.cluster.kubectl("delete", kind, name, *self._ns(kind), "--ignore-not-found", "--wait=false")

    def _ns(self, kind: str) -> list[str]:
        return [] if kind == "RemediationWorkflow" else ["-n", self.namespace]


@pytest.fixture
def objects(cluster: Any, crds: Any, namespace: str) -> Iterator[Objects]:
    made = Objects(cluster, namespace)
    yield made
    made.delete_all()


def table(stdout: str) -> list[dict[str, str]]:
    """kubectl's table output as dicts; columns are located by the header (names may contain spaces)."""
    header, *rows = stdout.rstrip("\n").splitlines()
    starts = [m.start() for m in re.finditer(r"\S+(?: \S+)*", header)]
    names = [header[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]
    return [
        {n: row[a:b].strip() for n, a, b in zip(names, starts, [*starts[1:], None], strict=True)}
        for row in rows
    ]


# --------------------------------------------------------------------------------------------
# The CRDs are installed and discoverable


def test_crds_are_established_with_short_names_and_category(cluster: Any, crds: Any) -> None:
    for plural in (
        resources.AIANALYSIS_PLURAL,
        resources.WORKFLOWEXECUTION_PLURAL,
        resources.REMEDIATIONWORKFLOW_PLURAL,
        resources.WORKFLOWREJECTION_PLURAL,
    ):
        crd = json.loads(cluster.kubectl("get", "crd", f"{plural}.{resources.GROUP}", "-o", "json").stdout)
        conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
        assert conditions["Established"] == "True"
        assert conditions["NamesAccepted"] == "True"
    listed = table(cluster.kubectl("api-resources", f"--api-group={resources.GROUP}", "-o", "wide").stdout)
    by_kind = {row["KIND"]: row for row in listed}
    assert {k: (r["SHORTNAMES"], r["NAMESPACED"], r["CATEGORIES"]) for k, r in by_kind.items()} == {
        "AIAnalysis": ("aia", "true", "kubernaut"),
        "WorkflowExecution": ("wfe", "true", "kubernaut"),
        "RemediationWorkflow": ("rw", "false", "kubernaut"),
        "WorkflowRejection": ("wfr", "true", "kubernaut"),
    }


# --------------------------------------------------------------------------------------------
# Invalid objects are refused, with a message saying what is wrong


def at(obj: Obj, path: str) -> tuple[Any, str | int]:
    """The container holding ``path`` (dots; digits index lists) and the last key."""
    *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
    node: Any = obj
    for part in parents:
        node = node[part]
    return node, last


def setting(path: str, value: Any) -> Callable[[Obj], None]:
    def mutate(obj: Obj) -> None:
        node, key = at(obj, path)
        node[key] = value

    return mutate


def dropping(path: str) -> Callable[[Obj], None]:
    def mutate(obj: Obj) -> None:
        node, key = at(obj, path)
        del node[key]

    return mutate


def appending(path: str, value: Any) -> Callable[[Obj], None]:
    def mutate(obj: Obj) -> None:
        node, key = at(obj, path)
        node[key].append(value)

    return mutate


@dataclasses.dataclass(frozen=True)
class Case:
    """``stage``: "create" (the mutated object is created), "update" (a valid object is created, then
    the mutated one applied over it) or "status" (a valid object gets the mutated status via /status)."""

    id: str
    kind: str
    mutate: Callable[[Obj], None]
    expected: str
    stage: str = "create"


def aia(id: str, mutate: Callable[[Obj], None], expected: str, stage: str = "create") -> Case:
    return Case(f"aia-{id}", "AIAnalysis", mutate, expected, stage)


def wfe(id: str, mutate: Callable[[Obj], None], expected: str, stage: str = "create") -> Case:
    return Case(f"wfe-{id}", "WorkflowExecution", mutate, expected, stage)


def rw(id: str, mutate: Callable[[Obj], None], expected: str) -> Case:
    return Case(f"rw-{id}", "RemediationWorkflow", mutate, expected)


IMMUTABLE = "spec is immutable"
NOT_IN_ENUM = "Unsupported value"
CEL = "Invalid value: "

CASES = [
    # AIAnalysis, at creation ("recovery" in the id: the valid object is a recovery analysis)
    aia("no-spec", dropping("spec"), "spec: Required value"),
    aia("no-signal", dropping("spec.signal"), "spec.signal: Required value"),
    aia("no-signal-type", dropping("spec.signal.type"), "spec.signal.type: Required value"),
    aia(
        "empty-signal-type",
        setting("spec.signal.type", ""),
        "spec.signal.type in body should be at least 1 chars",
    ),
    aia(
        "bad-severity",
        setting("spec.signal.severity", "urgent"),
        'spec.signal.severity: Unsupported value: "urgent": supported values: '
        '"critical", "high", "medium", "low"',
    ),
    aia(
        "label-not-string",
        setting("spec.signal.labels.team", 7),
        'spec.signal.labels.team: Invalid value: "integer"',
    ),
    aia("unknown-field", setting("spec.signal.colour", "red"), 'unknown field "spec.signal.colour"'),
    aia("no-resource-name", dropping("spec.resource.name"), "spec.resource.name: Required value"),
    aia(
        "bad-priority",
        setting("spec.businessContext.priority", "high"),
        "priority in body should match '^P[0-9]$'",
    ),
    aia(
        "bad-risk-tolerance",
        setting("spec.businessContext.riskTolerance", "any"),
        f'riskTolerance: {NOT_IN_ENUM}: "any"',
    ),
    aia(
        "recovery-attempt-0",
        setting("spec.recovery.attemptNumber", 0),
        "should be greater than or equal to 1",
    ),
    aia(
        "recovery-no-history",
        setting("spec.recovery.previousExecutions", []),
        "spec.recovery.previousExecutions in body should have at least 1 items",
    ),
    aia(
        "recovery-bad-version",
        setting("spec.recovery.previousExecutions.0.selectedWorkflow.version", "v1"),
        "spec.recovery.previousExecutions[0].selectedWorkflow.version in body should match",
    ),
    aia(
        "recovery-no-reason",
        dropping("spec.recovery.previousExecutions.0.failure.reason"),
        "spec.recovery.previousExecutions[0].failure.reason: Required value",
    ),
    # AIAnalysis, after creation
    aia("change-severity", setting("spec.signal.severity", "low"), IMMUTABLE, "update"),
    aia("change-resource", setting("spec.resource.name", "other"), IMMUTABLE, "update"),
    aia("recovery-dropped", dropping("spec.recovery"), IMMUTABLE, "update"),
    aia(
        "status-bad-phase", setting("status.phase", "Done"), f'status.phase: {NOT_IN_ENUM}: "Done"', "status"
    ),
    aia(
        "status-bad-review-reason",
        setting("status.humanReviewReason", "because"),
        f'status.humanReviewReason: {NOT_IN_ENUM}: "because"',
        "status",
    ),
    aia(
        "status-confidence-above-1",
        setting("status.selectedWorkflow.confidence", 1.5),
        "status.selectedWorkflow.confidence: Invalid value: 1.5: "
        "selectedWorkflow.confidence in body should be less than or equal to 1",
        "status",
    ),
    aia(
        "status-selection-no-image",
        dropping("status.selectedWorkflow.containerImage"),
        "status.selectedWorkflow.containerImage: Required value",
        "status",
    ),
    aia(
        "status-bad-condition",
        setting("status.conditions.0.status", "Yes"),
        f'status.conditions[0].status: {NOT_IN_ENUM}: "Yes"',
        "status",
    ),
    # WorkflowExecution
    wfe("no-analysis-ref", dropping("spec.analysisRef"), "spec.analysisRef: Required value"),
    wfe(
        "version-latest",
        setting("spec.workflowRef.version", "latest"),
        "spec.workflowRef.version in body should match",
    ),
    wfe(
        "no-workflow-id",
        dropping("spec.workflowRef.workflowId"),
        "spec.workflowRef.workflowId: Required value",
    ),
    wfe("change-parameters", setting("spec.parameters.REPLICAS", "5"), IMMUTABLE, "update"),
    wfe("change-workflow", setting("spec.workflowRef.version", "1.3.0"), IMMUTABLE, "update"),
    wfe(
        "status-bad-phase",
        setting("status.phase", "Succeeded"),
        f'status.phase: {NOT_IN_ENUM}: "Succeeded"',
        "status",
    ),
    wfe(
        "status-empty-reason",
        setting("status.failureDetails.reason", ""),
        'status.failureDetails.reason: Invalid value: "": '
        "failureDetails.reason in body should be at least 1 chars long",
        "status",
    ),
    # RemediationWorkflow
    rw("bad-semver", setting("spec.version", "1.0"), "spec.version in body should match"),
    rw("bad-workflow-id", setting("spec.workflowId", "OOM_Fix"), "spec.workflowId in body should match"),
    rw(
        "no-signal-types-nor-action-type",
        lambda obj: (setting("spec.labels.signalTypes", [])(obj), dropping("spec.actionType")(obj)),
        f"spec: {CEL}a workflow needs labels.signalTypes or actionType (or both)",
    ),
    rw(
        "bad-action-type",
        setting("spec.actionType", "restart_pod"),
        "spec.actionType in body should match",
    ),
    rw(
        "bad-lifecycle",
        setting("spec.lifecycle", "Retired"),
        f'spec.lifecycle: {NOT_IN_ENUM}: "Retired"',
    ),
    rw(
        "bad-from-target",
        setting("spec.parameters.0.fromTarget", "uid"),
        f'spec.parameters[0].fromTarget: {NOT_IN_ENUM}: "uid"',
    ),
    rw(
        "bad-label-severity",
        setting("spec.labels.severity", ["urgent"]),
        f'severity[0]: {NOT_IN_ENUM}: "urgent"',
    ),
    rw(
        "bad-risk-level",
        setting("spec.riskLevel", "extreme"),
        'spec.riskLevel: Unsupported value: "extreme": supported values: "low", "medium", "high"',
    ),
    rw("no-title", dropping("spec.title"), "spec.title: Required value"),
    rw(
        "empty-image",
        setting("spec.execution.containerImage", ""),
        "spec.execution.containerImage in body should be at least 1 chars long",
    ),
    rw(
        "bad-engine",
        setting("spec.execution.engine", "shell"),
        f'spec.execution.engine: {NOT_IN_ENUM}: "shell"',
    ),
    rw(
        "parameter-type-float",
        setting("spec.parameters.0.type", "float"),
        'spec.parameters[0].type: Unsupported value: "float": supported values: '
        '"string", "integer", "number", "boolean", "array"',
    ),
    rw(
        "parameter-bad-name",
        setting("spec.parameters.0.name", "ns-x"),
        "parameters[0].name in body should match",
    ),
    rw(
        "parameter-min-above-max",
        setting("spec.parameters.2.minimum", 51),
        f"spec.parameters[2]: {CEL}minimum must be less than or equal to maximum",
    ),
    rw(
        "parameter-range-on-a-string",
        setting("spec.parameters.0.minimum", 1),
        f"spec.parameters[0]: {CEL}minimum and maximum apply to integer and number parameters only",
    ),
    rw(
        "parameter-pattern-on-an-integer",
        setting("spec.parameters.2.pattern", "^[0-9]+$"),
        f"spec.parameters[2]: {CEL}pattern applies to string and array parameters only",
    ),
    rw(
        "parameter-depends-on-unknown",
        setting("spec.parameters.2.dependsOn", ["NAMESPACE"]),
        f"spec: {CEL}dependsOn must name parameters declared in spec.parameters",
    ),
    rw(
        "parameter-depends-on-itself",
        setting("spec.parameters.2.dependsOn", ["REPLICAS"]),
        f"spec.parameters[2]: {CEL}a parameter cannot depend on itself",
    ),
    rw(
        "parameter-duplicate",
        appending("spec.parameters", {"name": "REPLICAS", "type": "string"}),
        'spec.parameters[4]: Duplicate value: {"name":"REPLICAS"}',
    ),
]


def test_there_are_many_rejection_cases() -> None:
    assert len(CASES) >= 20
    assert len({c.id for c in CASES}) == len(CASES)


def _valid(case: Case, objects: Objects) -> Obj:
    recovery = case.kind == "AIAnalysis" and "recovery" in case.id
    spec = analysis_spec(recovery=True) if recovery else SPECS[case.kind]()
    return manifest(case.kind, objects.name(case.id), objects.namespace, spec)


def _refused(result: Any, case: Case) -> str:
    assert result.returncode != 0, f"{case.id}: the apiserver accepted it: {result.stdout}"
    message: str = result.stderr
    assert case.expected in message, f"{case.id}: expected {case.expected!r} in:\n{message}"
    return message


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_invalid_object_is_refused_with_a_clear_message(case: Case, cluster: Any, objects: Objects) -> None:
    obj = _valid(case, objects)
    kind, name = case.kind, obj["metadata"]["name"]
    if case.stage == "create":
        case.mutate(obj)
        objects.created.append((kind, name))
        _refused(cluster.kubectl("create", "-f", "-", input=json.dumps(obj), check=False), case)
        with pytest.raises(pydantic.ValidationError):  # the operator's models refuse it too
            SPEC_MODELS[kind].model_validate(obj.get("spec"))
    elif case.stage == "update":
        original = objects.apply(copy.deepcopy(obj))["spec"]
        case.mutate(obj)
        result = cluster.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(obj), check=False)
        _refused(result, case)
        assert objects.get(kind, name)["spec"] == original
    else:
        objects.apply(obj)
        full = {"status": STATUSES[kind]().wire()}
        case.mutate(full)
        _refused(objects.patch_status(kind, name, full["status"], check=False), case)
        with pytest.raises(pydantic.ValidationError):
            STATUS_MODELS[kind].model_validate(full["status"])


# --------------------------------------------------------------------------------------------
# Status: everything the operator writes comes back (nothing pruned)


@pytest.mark.parametrize("kind", sorted(STATUSES))
def test_full_status_round_trips_through_the_status_subresource(kind: str, objects: Objects) -> None:
    written = STATUSES[kind]()
    assert unset_fields(written) == []  # a field added to the model must be added to this fixture too
    name = objects.name("full-status")
    objects.apply(manifest(kind, name, objects.namespace))

    objects.patch_status(kind, name, written.wire())

    stored = objects.get(kind, name)["status"]
    assert stored == written.wire()
    assert STATUS_MODELS[kind].model_validate(stored) == written


def test_operator_status_patch_with_nulls_replaces_the_previous_status(objects: Objects) -> None:
    """The operator sends the whole status as a merge patch with explicit nulls (``merge_patch()``):
    the fields it leaves unset must disappear, and nulls nested in lists must not be refused."""
    name = objects.name("null-patch")
    objects.apply(manifest("AIAnalysis", name, objects.namespace))
    objects.patch_status("AIAnalysis", name, full_analysis_status().wire())
    sparse = resources.AIAnalysisStatus(
        phase="Investigating",
        attempt=3,
        conditions=[
            resources.Condition(type="Ready", status="False", reason="Investigating", last_transition_time=T1)
        ],
        validation_attempts=[resources.ValidationAttempt(attempt=1, valid=False, at=T1)],
    )

    objects.patch_status("AIAnalysis", name, sparse.merge_patch())

    stored = objects.get("AIAnalysis", name)["status"]
    assert stored.pop("intake") == full_analysis_status().wire()["intake"], "the intake's fields are not ours"
    assert stored.pop("autoExecution") == full_analysis_status().wire()["autoExecution"], "nor the executor's"
    assert stored.pop("rejection") == full_analysis_status().wire()["rejection"], "a person's rejection stays"
    assert resources.AIAnalysisStatus.model_validate(stored) == sparse
    assert "selectedWorkflow" not in stored
    assert "workflowId" not in stored["validationAttempts"][0]


def test_status_in_the_object_body_is_ignored(objects: Objects) -> None:
    """Only /status writes status: a user applying an object cannot forge the operator's verdict."""
    name = objects.name("forged")
    obj = manifest("AIAnalysis", name, objects.namespace)
    obj["status"] = full_analysis_status().wire()
    objects.apply(obj)
    assert "status" not in objects.get("AIAnalysis", name)


def test_defaults_are_visible_on_stored_objects(objects: Objects) -> None:
    spec = workflow_spec().wire()
    spec["parameters"] = [{"name": "TARGET_NAMESPACE", "type": "string"}]
    del spec["execution"]["engine"]
    rw_name = objects.name("crdtest-defaults")
    stored_rw = objects.apply({**manifest("RemediationWorkflow", rw_name, ""), "spec": spec})["spec"]
    assert stored_rw["parameters"][0]["required"] is False
    assert stored_rw["execution"]["engine"] == "job"

    aia = manifest("AIAnalysis", objects.name("defaults"), objects.namespace)
    del aia["spec"]["businessContext"]
    stored_aia = objects.apply(aia)["spec"]
    assert stored_aia["businessContext"] == {"riskTolerance": "low"}
    assert resources.AIAnalysisSpec.model_validate(stored_aia) == resources.AIAnalysisSpec.model_validate(
        aia["spec"]
    )


# --------------------------------------------------------------------------------------------
# kubectl get / explain


def test_kubectl_get_aianalyses_shows_phase_workflow_confidence_review(
    cluster: Any, objects: Objects
) -> None:
    name = objects.name("columns")
    objects.apply(manifest("AIAnalysis", name, objects.namespace, analysis_spec(recovery=True)))
    objects.patch_status("AIAnalysis", name, full_analysis_status().wire())

    rows = table(cluster.kubectl("get", "aia", "-n", objects.namespace).stdout)
    wide = table(cluster.kubectl("get", "aia", "-n", objects.namespace, "-o", "wide").stdout)

    assert [{k: v for k, v in row.items() if k != "AGE"} for row in rows] == [
        {
            "NAME": name,
            "PHASE": "Completed",
            "WORKFLOW": "crdtest-increase-memory",
            "CONFIDENCE": "0.87",
            "REVIEW": "low_confidence",
        }
    ]
    assert re.fullmatch(r"\d+s", rows[0]["AGE"])
    assert wide[0]["REASON"] == "WorkflowSelected"
    assert wide[0]["ATTEMPT"] == "2"


def test_kubectl_get_workflowexecutions_shows_the_failure_reason(cluster: Any, objects: Objects) -> None:
    name = objects.name("columns")
    objects.apply(manifest("WorkflowExecution", name, objects.namespace))
    objects.patch_status("WorkflowExecution", name, full_execution_status().wire())

    [row] = table(cluster.kubectl("get", "wfe", "-n", objects.namespace, "-o", "wide").stdout)

    assert row["PHASE"] == "Failed"
    assert row["WORKFLOW"] == "crdtest-increase-memory"
    assert row["REASON"] == "OOMKilled"
    assert row["RECOVERY"] == "payment-oom-1-recovery-1"


def test_kubectl_get_remediationworkflows_shows_id_version_action_risk_accepted(
    cluster: Any, objects: Objects
) -> None:
    name = objects.name("crdtest-columns")
    objects.apply(manifest("RemediationWorkflow", name, ""))

    rows = table(cluster.kubectl("get", "rw", name).stdout)

    assert [{k: v for k, v in row.items() if k != "AGE"} for row in rows] == [
        {
            "NAME": name,
            "WORKFLOW ID": "crdtest-increase-memory",
            "VERSION": "1.2.0",
            "ACTION": "IncreaseMemoryLimits",
            "RISK": "medium",
            "ACCEPTED": "",
        }
    ]


def test_kubectl_get_kubernaut_lists_every_kind(cluster: Any, objects: Objects) -> None:
    names = {kind: objects.name("crdtest-category") for kind in SPECS}
    for kind, name in names.items():
        objects.apply(manifest(kind, name, objects.namespace))

    listed = cluster.kubectl("get", "kubernaut", "-n", objects.namespace, "-o", "name").stdout.split()

    for kind, name in names.items():
        assert f"{kind.lower()}.{resources.GROUP}/{name}" in listed


def _explain(cluster: Any, field: str) -> str:
    """kubectl explain reads the published OpenAPI v3, which lags the CRD becoming Established a little."""
    deadline = time.monotonic() + 30
    while True:
        result = cluster.kubectl("explain", field, check=False)
        if result.returncode == 0 or time.monotonic() > deadline:
            assert result.returncode == 0, result.stderr
            out: str = result.stdout
            return out
        time.sleep(0.5)


def test_kubectl_explain_describes_the_signal(cluster: Any, crds: Any) -> None:
    out = _explain(cluster, "aianalysis.spec.signal")
    assert "The alert or event that reported the incident." in out
    fields = dict(re.findall(r"^  (\w+)\s+<([^>]+)>", out, flags=re.MULTILINE))
    assert fields == {
        "type": "string",
        "severity": "string",
        "alertName": "string",
        "source": "string",
        "labels": "map[string]string",
        "errorMessage": "string",
        "description": "string",
        "firingTime": "string",
        "receivedTime": "string",
    }
    assert "usually a Kubernetes reason code" in out
    assert "enum: critical, high, medium, low" in out


def test_kubectl_explain_documents_every_status_field(cluster: Any, crds: Any) -> None:
    out = _explain(cluster, "aianalysis.status.selectedWorkflow")
    assert "passed every validation check" in out
    assert "canonical string form" in out


def test_catalog_entry_round_trips_unchanged(objects: Objects) -> None:
    """A fully specified RemediationWorkflow reads back as the same model (nothing pruned or altered)."""
    written = workflow_spec()
    stored = objects.apply(manifest("RemediationWorkflow", objects.name("crdtest-full"), ""))["spec"]
    assert resources.RemediationWorkflowSpec.model_validate(stored) == written


def test_example_yaml_from_the_docs_is_accepted(objects: Objects) -> None:
    """The AIAnalysis a user copies from the documentation (architecture §2) is valid as written."""
    doc = yaml.safe_load(DOC_EXAMPLE)
    doc["metadata"] = {"name": objects.name("doc"), "namespace": objects.namespace}
    stored = objects.apply(doc)
    assert stored["spec"]["signal"]["firingTime"] == "2026-11-20T10:00:00Z"


DOC_EXAMPLE = """
apiVersion: kubernaut.io/v1alpha1
kind: AIAnalysis
metadata: {name: payment-oom-1, namespace: production}
spec:
  signal:
    type: OOMKilled
    severity: critical
    alertName: PodOOMKilled
    source: prometheus-adapter
    labels: {team: payments}
    errorMessage: Container killed due to OOM
    description: payment-api pods restarted 5 times in 10 minutes
    firingTime: "2026-11-20T10:00:00Z"
    receivedTime: "2026-11-20T10:00:05Z"
  resource: {kind: Deployment, name: payment-api, namespace: production}
  cluster: prod-eu-1
  businessContext: {environment: production, priority: P1, businessCategory: payments, riskTolerance: low}
"""
