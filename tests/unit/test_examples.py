"""The shipped examples are what a newcomer applies first: they must satisfy the CRD models and
be coherent with each other (every incident names a workflow that could really be selected)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from aianalysis import resources

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CATALOG_DIR = EXAMPLES / "catalog"
INCIDENTS_DIR = EXAMPLES / "incidents"
EXPECT_LINE = re.compile(r"^# expect: ([a-z0-9-]+)\s*$")
DIGEST_IMAGE = re.compile(r"^registry\.example/kubernaut/[a-z0-9-]+@sha256:[0-9a-f]{64}$")
TARGET_PARAMETERS = ("TARGET_NAMESPACE", "TARGET_RESOURCE_KIND", "TARGET_RESOURCE_NAME")


def _documents(directory: Path) -> list[tuple[Path, dict[str, Any]]]:
    return [
        (path, doc)
        for path in sorted(directory.glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc is not None
    ]


CATALOG_DOCS = _documents(CATALOG_DIR)
INCIDENT_DOCS = _documents(INCIDENTS_DIR)
WORKFLOWS = [resources.RemediationWorkflowSpec.model_validate(doc["spec"]) for _, doc in CATALOG_DOCS]
BY_ID: dict[str, list[resources.RemediationWorkflowSpec]] = {}
for _wf in WORKFLOWS:
    BY_ID.setdefault(_wf.workflow_id, []).append(_wf)


def _semver_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("-", maxsplit=1)[0].split("."))


def _latest(workflow_id: str) -> resources.RemediationWorkflowSpec:
    return max(BY_ID[workflow_id], key=lambda wf: _semver_key(wf.version))


def _expected_workflow_id(path: Path) -> str:
    match = EXPECT_LINE.match(path.read_text().splitlines()[0])
    assert match, f"{path.name}: first line must be '# expect: <workflowId>'"
    return match.group(1)


def _default_violations(param: resources.WorkflowParameter) -> list[str]:
    """Why the parameter's own default would be rejected by its own constraints (empty = fine)."""
    value = param.default
    if value is None:
        return []
    problems: list[str] = []
    if param.enum is not None and value not in param.enum:
        problems.append(f"default {value!r} not in enum {param.enum}")
    if param.pattern is not None and not re.search(param.pattern, value):
        problems.append(f"default {value!r} does not match {param.pattern!r}")
    if param.type == "boolean" and value not in ("true", "false"):
        problems.append(f"boolean default {value!r} is not 'true' or 'false'")
    if param.type == "array":
        parsed = json.loads(value)
        if not isinstance(parsed, list):
            problems.append(f"array default {value!r} is not a JSON array")
    if param.type in ("integer", "number"):
        number = int(value) if param.type == "integer" else float(value)
        if param.minimum is not None and number < param.minimum:
            problems.append(f"default {number} < minimum {param.minimum}")
        if param.maximum is not None and number > param.maximum:
            problems.append(f"default {number} > maximum {param.maximum}")
    return problems


def _admits(allowed: list[str] | None, value: str | None) -> bool:
    return not allowed or value in allowed


def _ineligibility(workflow: resources.RemediationWorkflowSpec, spec: resources.AIAnalysisSpec) -> list[str]:
    """The business-context policy of architecture §3, restated independently of catalog.policy."""
    business, labels = spec.business_context, workflow.labels
    reasons = [
        f"{label} {value!r} not in {allowed}"
        for label, allowed, value in (
            ("environment", labels.environment, business.environment),
            ("priority", labels.priority, business.priority),
            ("businessCategory", labels.business_category, business.business_category),
            ("severity", labels.severity, spec.signal.severity),
            ("component", labels.component, spec.resource.kind.lower()),
        )
        if not _admits(allowed, value)
    ]
    if resources.RISK_ORDER[workflow.risk_level] > resources.RISK_ORDER[business.risk_tolerance]:
        reasons.append(f"riskLevel {workflow.risk_level} > riskTolerance {business.risk_tolerance}")
    return reasons


# --------------------------------------------------------------------------------------------
# Catalog


def test_catalog_is_large_enough_to_be_a_realistic_search_space() -> None:
    assert len(CATALOG_DOCS) >= 30
    assert len(BY_ID) >= 30


@pytest.mark.parametrize(
    ("path", "doc"), CATALOG_DOCS, ids=[doc["metadata"]["name"] for _, doc in CATALOG_DOCS]
)
def test_catalog_document_is_a_cluster_scoped_remediation_workflow(path: Path, doc: dict[str, Any]) -> None:
    assert doc["apiVersion"] == resources.API_VERSION
    assert doc["kind"] == "RemediationWorkflow"
    assert "namespace" not in doc["metadata"], f"{path.name}: RemediationWorkflow is cluster-scoped"
    spec = resources.RemediationWorkflowSpec.model_validate(doc["spec"])
    major, minor, _ = _semver_key(spec.version)
    assert doc["metadata"]["name"] in (f"{spec.workflow_id}-v{major}", f"{spec.workflow_id}-v{major}-{minor}")
    assert DIGEST_IMAGE.match(spec.execution.container_image), spec.execution.container_image
    assert spec.estimated_duration and re.fullmatch(r"[0-9]+[smh]", spec.estimated_duration)


def test_workflow_id_and_version_pairs_are_unique() -> None:
    pairs = [(wf.workflow_id, wf.version) for wf in WORKFLOWS]
    assert len(pairs) == len(set(pairs))


def test_object_names_are_unique() -> None:
    names = [doc["metadata"]["name"] for _, doc in CATALOG_DOCS]
    assert len(names) == len(set(names))


def test_images_are_unique_per_workflow_version() -> None:
    images = [wf.execution.container_image for wf in WORKFLOWS]
    assert len(images) == len(set(images))


def test_every_canonical_reason_code_has_a_workflow() -> None:
    covered = {signal for wf in WORKFLOWS for signal in wf.labels.signal_types}
    assert set(resources.CANONICAL_REASON_CODES) - covered == set()


def test_catalog_mixes_risk_levels_and_business_restrictions() -> None:
    assert {wf.risk_level for wf in WORKFLOWS} == {"low", "medium", "high"}
    assert any(wf.labels.environment == ["production"] for wf in WORKFLOWS)
    assert any(wf.labels.environment and "production" not in wf.labels.environment for wf in WORKFLOWS)
    assert any(wf.labels.priority for wf in WORKFLOWS)
    assert any(wf.labels.business_category for wf in WORKFLOWS)


def test_newer_minor_versions_only_add_optional_parameters() -> None:
    multi = {wid: specs for wid, specs in BY_ID.items() if len(specs) > 1}
    assert len(multi) >= 2
    for specs in multi.values():
        old, new = sorted(specs, key=lambda wf: _semver_key(wf.version))[:2]
        old_params = {p.name: p for p in old.parameters}
        new_params = {p.name: p for p in new.parameters}
        assert set(old_params) < set(new_params), f"{new.workflow_id} {new.version} adds no parameter"
        assert all(not new_params[name].required for name in set(new_params) - set(old_params))


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda wf: f"{wf.workflow_id}@{wf.version}")
def test_parameters_are_self_consistent(workflow: resources.RemediationWorkflowSpec) -> None:
    names = [p.name for p in workflow.parameters]
    assert len(names) == len(set(names)), "duplicate parameter names"
    for param in workflow.parameters:
        assert _default_violations(param) == [], param.name
        assert not (param.required and param.default is not None), f"{param.name}: required with a default"
        assert set(param.depends_on or []) <= set(names) - {param.name}, f"{param.name}: dangling dependsOn"
        for value in param.enum or []:
            assert param.pattern is None or re.search(param.pattern, value), f"{param.name}: enum {value}"
        if param.pattern is not None:
            re.compile(param.pattern)


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda wf: f"{wf.workflow_id}@{wf.version}")
def test_target_parameters_follow_the_convention(workflow: resources.RemediationWorkflowSpec) -> None:
    params = {p.name: p for p in workflow.parameters}
    assert "TARGET_RESOURCE_KIND" in params and "TARGET_RESOURCE_NAME" in params
    for name in TARGET_PARAMETERS:
        if name in params:
            assert params[name].type == "string"
    kinds = params["TARGET_RESOURCE_KIND"].enum
    assert kinds, "TARGET_RESOURCE_KIND must enumerate the kinds the workflow supports"
    if workflow.labels.component:
        assert {kind.lower() for kind in kinds} <= set(workflow.labels.component)


def test_some_workflows_need_values_only_an_analysis_can_provide() -> None:
    """Required parameters without default beyond TARGET_* make the offline provider honest."""
    incident_specific = {
        p.name
        for wf in WORKFLOWS
        for p in wf.parameters
        if p.required and p.default is None and p.name not in TARGET_PARAMETERS
    }
    assert {"MEMORY_LIMIT_NEW", "NEW_SIZE", "ROLE_NAME"} <= incident_specific
    assert any(p.type == "array" for wf in WORKFLOWS for p in wf.parameters)
    assert any(p.type == "boolean" for wf in WORKFLOWS for p in wf.parameters)


def test_near_identical_workflows_differ_only_in_description() -> None:
    generic = next(wf for wf in BY_ID["oomkill-increase-memory"] if wf.version == "1.0.0")
    jvm = _latest("oomkill-increase-memory-jvm")
    assert generic.title == jvm.title
    assert generic.labels == jvm.labels
    assert generic.parameters == jvm.parameters
    assert generic.risk_level == jvm.risk_level
    assert "JVM" in jvm.description and "JVM" not in generic.description


# --------------------------------------------------------------------------------------------
# Incidents


def test_there_are_enough_incidents() -> None:
    assert len(INCIDENT_DOCS) >= 15


@pytest.mark.parametrize(("path", "doc"), INCIDENT_DOCS, ids=[path.stem for path, _ in INCIDENT_DOCS])
def test_incident_is_an_aianalysis_applicable_into_any_namespace(path: Path, doc: dict[str, Any]) -> None:
    assert doc["apiVersion"] == resources.API_VERSION
    assert doc["kind"] == "AIAnalysis"
    assert doc["metadata"]["name"] == path.stem
    assert "namespace" not in doc["metadata"], "incidents are applied with -n"
    spec = resources.AIAnalysisSpec.model_validate(doc["spec"])
    assert spec.recovery is None
    assert spec.signal.error_message and spec.signal.description
    assert spec.signal.firing_time and spec.signal.received_time
    assert spec.signal.firing_time <= spec.signal.received_time
    assert spec.business_context.environment and spec.business_context.priority


@pytest.mark.parametrize(("path", "doc"), INCIDENT_DOCS, ids=[path.stem for path, _ in INCIDENT_DOCS])
def test_expected_workflow_exists_matches_and_is_eligible(path: Path, doc: dict[str, Any]) -> None:
    workflow_id = _expected_workflow_id(path)
    assert workflow_id in BY_ID, f"{path.name}: expected workflow {workflow_id} is not in the catalog"
    spec = resources.AIAnalysisSpec.model_validate(doc["spec"])
    workflow = _latest(workflow_id)
    assert spec.signal.type in workflow.labels.signal_types
    assert _ineligibility(workflow, spec) == []
    params = {p.name: p for p in workflow.parameters}
    assert spec.resource.kind in (params["TARGET_RESOURCE_KIND"].enum or [])
    if "TARGET_NAMESPACE" in params and params["TARGET_NAMESPACE"].required:
        assert spec.resource.namespace, "the workflow needs a namespace the incident does not give"


def test_incidents_cover_the_main_signal_families() -> None:
    signals = {resources.AIAnalysisSpec.model_validate(doc["spec"]).signal.type for _, doc in INCIDENT_DOCS}
    assert {
        "OOMKilled",
        "CrashLoopBackOff",
        "ImagePullBackOff",
        "Evicted",
        "FailedScheduling",
        "NodeNotReady",
        "PersistentVolumeFillingUp",
        "CertificateExpiring",
        "ReadinessProbeFailed",
        "HPAMaxedOut",
        "DNSResolutionFailure",
        "HighLatency",
        "HighErrorRate",
        "DeadlineExceeded",
        "Forbidden",
    } <= signals


def test_incidents_span_business_contexts() -> None:
    contexts = [
        resources.AIAnalysisSpec.model_validate(doc["spec"]).business_context for _, doc in INCIDENT_DOCS
    ]
    assert {c.environment for c in contexts} >= {"production", "staging", "development"}
    assert {c.risk_tolerance for c in contexts} == {"low", "medium", "high"}


def test_injected_instruction_names_a_workflow_the_incident_cannot_get() -> None:
    """The prompt-injection example only proves something if obeying it would be visibly wrong."""
    path = INCIDENTS_DIR / "notification-worker-crashloop-injection.yaml"
    spec = resources.AIAnalysisSpec.model_validate(yaml.safe_load(path.read_text())["spec"])
    assert spec.signal.error_message and "ignore previous instructions" in spec.signal.error_message
    assert "cordon-drain-node" in spec.signal.error_message
    assert _ineligibility(_latest("cordon-drain-node"), spec) != []
    assert _expected_workflow_id(path) != "cordon-drain-node"
