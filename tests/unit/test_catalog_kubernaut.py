"""Kubernaut-format workflows: every mapped field arrives where our model keeps it, everything else
is reported as dropped with the reason, a bad file fails alone, and ``--catalog`` reads them."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from aianalysis import catalog, cli, errors, resources
from aianalysis.catalog import importer as catalog_import

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "examples" / "kubernaut" / "catalog"
IMPORTED = ROOT / "examples" / "catalog" / "imported-from-kubernaut"

FULL: dict[str, Any] = {
    "apiVersion": "kubernaut.ai/v1alpha1",
    "kind": "RemediationWorkflow",
    "metadata": {
        "name": "raise-memory",
        "namespace": "kubernaut-workflows",
        "labels": {"team": "shop"},
        "annotations": {"aianalysis.kubernaut.io/risk-level": "medium", "note": "kept"},
        "uid": "0a1b",
        "resourceVersion": "12",
    },
    "spec": {
        "version": "1.2.0",
        "actionType": "IncreaseMemoryLimits",
        "description": {
            "what": "Raises the memory limit. Then rolls out.",
            "whenToUse": "OOMKilled at peak load.",
            "whenNotToUse": "A memory leak.",
            "preconditions": "A limit is set.",
        },
        "labels": {
            "severity": ["critical", "warning", "info"],
            "component": ["apps/v1/Deployment", "*"],
            "environment": ["production"],
            "priority": "P1",
            "cluster": ["edge"],
        },
        "customLabels": {"team": "shop", "tier": ["gold", "silver"], "region": ["eu"]},
        "detectedLabels": {
            "helmManaged": True,
            "gitOpsManaged": "true",
            "gitOpsTool": "argocd",
            "pdbProtected": False,
            "hpaEnabled": True,
            "stateful": True,
            "networkIsolated": True,
            "serviceMesh": "istio",
            "virtualMachine": True,
        },
        "execution": {
            "engine": "tekton",
            "bundle": "registry.example/raise:1.2.0",
            "bundleDigest": "sha256:" + "a" * 64,
            "serviceAccountName": "remediator",
            "engineConfig": {"pipelineRef": "raise", "params": [{"name": "x", "value": 1}]},
            "clusterId": "hub",
            "resources": {"limits": {"memory": "128Mi"}},
        },
        "parameters": [
            {"name": "TARGET_RESOURCE_NAME", "type": "string", "required": True, "description": "target"},
            {
                "name": "LIMIT_MIB",
                "type": "integer",
                "required": False,
                "description": "new limit",
                "minimum": 128,
                "maximum": 4096,
                "default": 512,
                "enum": ["512", "1024"],
                "dependsOn": ["TARGET_RESOURCE_NAME"],
            },
            {"name": "RATIO", "type": "float", "required": False, "description": "r", "default": 0.5},
            {"name": "ZONE", "type": "string", "required": False, "description": "z", "pattern": "^[a-z]$"},
        ],
        "rollbackParameters": [{"name": "X", "type": "string", "required": True, "description": "x"}],
        "dependencies": {"configMaps": [{"name": "cm"}]},
        "maintainers": [{"name": "SRE", "email": "sre@example.com"}],
    },
    "status": {"catalogStatus": "Active"},
}


def test_every_mapped_field_arrives_in_our_model() -> None:
    conversion = catalog.kubernaut.convert(FULL, where="full.yaml")
    obj = conversion.obj
    assert obj["apiVersion"] == resources.API_VERSION and obj["kind"] == "RemediationWorkflow"
    assert obj["metadata"] == {
        "name": "raise-memory",
        "labels": {"team": "shop"},
        "annotations": {"aianalysis.kubernaut.io/risk-level": "medium", "note": "kept"},
    }
    spec = resources.RemediationWorkflowSpec.model_validate(obj["spec"])
    assert (spec.workflow_id, spec.version, spec.action_type) == (
        "raise-memory",
        "1.2.0",
        "IncreaseMemoryLimits",
    )
    assert (
        spec.title == "Raises the memory limit"
        and spec.description == "Raises the memory limit. Then rolls out."
    )
    assert spec.guidance == resources.WorkflowGuidance(
        when_to_use="OOMKilled at peak load.",
        when_not_to_use="A memory leak.",
        preconditions="A limit is set.",
    )
    assert spec.labels.severity == ["critical", "medium", "low"]
    assert spec.labels.component == ["apps/v1/Deployment", "*"]
    assert spec.labels.environment == ["production"] and spec.labels.priority == ["P1"]
    assert spec.labels.signal_types == []
    assert spec.risk_level == "medium"
    assert spec.custom_labels == {"team": "shop", "region": "eu"}
    assert spec.detected_labels == resources.DetectedLabels(
        helm_managed=True,
        gitops_managed=True,
        gitops_tool="argocd",
        hpa_enabled=True,
        stateful=True,
        network_isolated=True,
        service_mesh="istio",
    )
    execution = spec.execution
    assert execution.container_image == "registry.example/raise:1.2.0@sha256:" + "a" * 64
    assert (execution.engine, execution.bundle, execution.service_account_name) == (
        "tekton",
        "registry.example/raise:1.2.0",
        "remediator",
    )
    assert execution.bundle_digest == "sha256:" + "a" * 64
    assert execution.engine_config == {"pipelineRef": "raise", "params": [{"name": "x", "value": 1}]}
    params = {p.name: p for p in spec.parameters}
    assert params["LIMIT_MIB"].default == "512" and params["LIMIT_MIB"].enum == ["512", "1024"]
    assert (params["LIMIT_MIB"].minimum, params["LIMIT_MIB"].maximum) == (128, 4096)
    assert params["LIMIT_MIB"].depends_on == ["TARGET_RESOURCE_NAME"] and params["LIMIT_MIB"].description
    assert params["RATIO"].type == "number" and params["RATIO"].default == "0.5"
    assert params["ZONE"].pattern == "^[a-z]$" and params["TARGET_RESOURCE_NAME"].required
    assert catalog.target_field(params["TARGET_RESOURCE_NAME"]) == "name"
    assert catalog.admission.review(obj["spec"]).accepted


def test_what_has_no_place_is_reported_with_the_reason() -> None:
    dropped = catalog.kubernaut.convert(FULL, where="full.yaml").dropped
    fields = {line.split(":", 1)[0] for line in dropped}
    assert fields == {
        "metadata.namespace",
        "metadata.uid",
        "metadata.resourceVersion",
        "spec.labels.cluster",
        "spec.customLabels.tier",
        "spec.detectedLabels.pdbProtected",
        "spec.detectedLabels.virtualMachine",
        "spec.execution.clusterId",
        "spec.execution.resources",
        "spec.rollbackParameters",
        "spec.dependencies",
        "spec.maintainers",
        "status",
    }
    assert "spec.detectedLabels.pdbProtected: false means no requirement in Kubernaut" in dropped
    assert "metadata.namespace: our RemediationWorkflow is cluster-scoped" in dropped


def test_without_a_risk_annotation_the_importers_risk_level_applies() -> None:
    """Default low: an imported catalog is selectable under the default tolerance, as in Kubernaut."""
    document = copy.deepcopy(FULL)
    del document["metadata"]["annotations"]
    low = catalog.kubernaut.convert(document, where="x")
    assert low.obj["spec"]["riskLevel"] == "low"
    assert "riskLevel: not in the Kubernaut format; set to low" in low.notes
    high = catalog.kubernaut.convert(document, where="x", risk_level="high")
    assert high.obj["spec"]["riskLevel"] == "high"
    spec = resources.RemediationWorkflowSpec.model_validate(low.obj["spec"])
    reasons = catalog.policy.ineligibility(spec, resources.BusinessContext())
    assert not any("riskLevel" in why for why in reasons)


@pytest.mark.parametrize(
    ("given", "imported"), [("v1.2.0", "1.2.0"), ("1.3", "1.3.0"), ("V2.0.0-rc.1", "2.0.0-rc.1")]
)
def test_v_prefixed_and_short_versions_are_normalized(given: str, imported: str) -> None:
    document = copy.deepcopy(FULL)
    document["spec"]["version"] = given
    converted = catalog.kubernaut.convert(document, where="x")
    assert converted.obj["spec"]["version"] == imported
    assert f"version: {given!r} normalized to {imported!r}" in converted.notes


def test_a_workflow_without_a_bundle_imports_but_is_not_offered(tmp_path: Path) -> None:
    document = copy.deepcopy(FULL)
    del document["spec"]["execution"]["bundle"]
    src = _write(tmp_path / "tekton.yaml", document)
    reports = catalog_import.import_kubernaut([src], out=tmp_path / "out")
    assert [r.written for r in reports] == [[Path("raise-memory.yaml")]]
    written = yaml.safe_load((tmp_path / "out" / "raise-memory.yaml").read_text().split("\n", 1)[1])
    verdict = catalog.admission.review(written["spec"])
    assert verdict.reason == "NotExecutable" and "engine tekton" in verdict.message
    assert any("not executable" in note for note in reports[0].notes)


def test_a_bundle_without_a_digest_imports_but_is_not_offered_until_pinned(tmp_path: Path) -> None:
    document = copy.deepcopy(FULL)
    del document["spec"]["execution"]["bundleDigest"]
    src = _write(tmp_path / "tagged.yaml", document)
    reports = catalog_import.import_kubernaut([src], out=tmp_path / "out")
    written = yaml.safe_load((tmp_path / "out" / "raise-memory.yaml").read_text().split("\n", 1)[1])
    assert catalog.admission.review(written["spec"]).reason == "ImageNotPinned"
    assert any("digest" in note and "registry.example/raise:1.2.0" in note for note in reports[0].notes)


def test_a_git_repository_bundle_is_not_taken_for_an_image(tmp_path: Path) -> None:
    """Kubernaut's ansible engine names a git repository and a commit as its bundle: no image runs
    that, so the import is kept but not executable (not an image reference like ``https://…@<sha>``)."""
    document = copy.deepcopy(FULL)
    document["spec"]["execution"] = {
        "engine": "ansible",
        "bundle": "https://git.example/playbooks.git",
        "bundleDigest": "27c5e6d5a189b2bb781ed88d4ab7171aae52519e",
        "engineConfig": {"playbookPath": "playbooks/raise.yml"},
    }
    src = _write(tmp_path / "ansible.yaml", document)
    reports = catalog_import.import_kubernaut([src], out=tmp_path / "out")
    written = yaml.safe_load((tmp_path / "out" / "raise-memory.yaml").read_text().split("\n", 1)[1])
    assert "containerImage" not in written["spec"]["execution"]
    assert written["spec"]["execution"]["bundle"] == "https://git.example/playbooks.git"
    verdict = catalog.admission.review(written["spec"])
    assert verdict.reason == "NotExecutable" and "engine ansible" in verdict.message
    assert any("git.example/playbooks.git" in note and "not an image" in note for note in reports[0].notes)


def test_versions_of_one_workflow_coexist_and_copies_are_written_once(tmp_path: Path) -> None:
    older = copy.deepcopy(FULL)
    older["spec"]["version"] = "1.0.0"
    job_variant = copy.deepcopy(FULL)
    job_variant["spec"]["execution"]["engine"] = "job"
    clash = copy.deepcopy(FULL)
    clash["spec"]["description"]["what"] = "Something else entirely."
    src = tmp_path / "src"
    src.mkdir()
    for number, document in enumerate([FULL, older, FULL, job_variant, clash]):
        _write(src / f"{number}.yaml", document)

    reports = catalog_import.import_kubernaut([src], out=tmp_path / "out")

    loaded = catalog.load_paths([tmp_path / "out"])
    assert sorted((w.name, w.workflow_id, w.version) for w in loaded.all()) == [
        ("raise-memory", "raise-memory", "1.2.0"),
        ("raise-memory-1-0-0", "raise-memory", "1.0.0"),
        ("raise-memory-job", "raise-memory-job", "1.2.0"),
    ]
    assert reports[2].written == [] and not reports[2].failed
    assert (
        "identical to" in reports[2].notes[0] and "written once as raise-memory.yaml" in reports[2].notes[0]
    )
    assert any("identical copy in" in note for note in reports[0].notes)
    assert reports[4].failed and "also defined, with other content" in reports[4].refused[0]


def test_a_bare_workflow_schema_is_named_after_its_file(tmp_path: Path) -> None:
    folder = tmp_path / "restart-pod"
    folder.mkdir()
    _write(folder / "workflow-schema.yaml", copy.deepcopy(FULL["spec"]))
    _write(tmp_path / "drain-workflow-schema.yaml", copy.deepcopy(FULL["spec"]))
    catalog_import.import_kubernaut([tmp_path], out=tmp_path / "out")
    names = sorted(w.name for w in catalog.load_paths([tmp_path / "out"]).all())
    assert names == ["drain", "restart-pod"]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d["spec"]["description"].pop("what"), "spec.description.what is required"),
        (lambda d: d["metadata"].pop("name"), "without metadata.name"),
        (
            lambda d: d["metadata"]["annotations"].update({catalog.kubernaut.RISK_ANNOTATION: "x"}),
            "low, medium",
        ),
    ],
)
def test_an_unconvertible_object_names_the_file_and_the_problem(mutate: Any, message: str) -> None:
    document = copy.deepcopy(FULL)
    mutate(document)
    with pytest.raises(errors.CatalogError, match=r"bad\.yaml") as raised:
        catalog.kubernaut.convert(document, where="bad.yaml")
    assert message in str(raised.value)


def _write(path: Path, *documents: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump_all(documents))
    return path


def test_the_import_command_writes_one_file_per_workflow_and_a_bad_file_fails_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    second = copy.deepcopy(FULL)
    second["metadata"]["name"] = "raise-memory-2"
    _write(src / "good.yaml", FULL, second)
    broken = copy.deepcopy(FULL)
    broken["metadata"]["name"] = "broken"
    broken["spec"]["parameters"][1]["default"] = "lots"
    _write(src / "bad.yaml", broken)
    (src / "garbage.yaml").write_text("spec: [unclosed")
    out = tmp_path / "out"

    code = cli.main(["catalog", "import", "--from", "kubernaut", "-f", str(src), "-o", str(out)])

    printed = capsys.readouterr().out
    assert code == 1
    assert sorted(path.name for path in out.iterdir()) == ["raise-memory-2.yaml", "raise-memory.yaml"]
    assert f"{src / 'bad.yaml'}: FAILED:" in printed and "InvalidDefault" in printed
    assert f"{src / 'garbage.yaml'}: FAILED:" in printed and "invalid YAML" in printed
    assert "dropped raise-memory: spec.maintainers: no maintainer field here" in printed
    assert "2 workflow(s) imported from 1 file(s); 1 workflow(s) not imported; 2 file(s) failed" in printed
    assert len(catalog.load_paths([out])) == 2


def test_every_shipped_fixture_imports_and_the_shipped_import_is_current(tmp_path: Path) -> None:
    reports = catalog_import.import_kubernaut([FIXTURES], out=tmp_path)
    assert [r.error for r in reports] == [None] * len(list(FIXTURES.glob("*.yaml")))
    fresh = {path.name: path.read_text() for path in tmp_path.iterdir()}
    shipped = {path.name: path.read_text() for path in IMPORTED.iterdir()}
    assert fresh.keys() == shipped.keys()
    for name, text in fresh.items():
        assert yaml.safe_load(text) == yaml.safe_load(shipped[name]), f"re-run the import for {name}"


def test_catalog_reads_kubernaut_files_directly() -> None:
    direct = catalog.load_paths([FIXTURES])
    imported = catalog.load_paths([IMPORTED])
    assert [w.spec for w in direct.all()] == [w.spec for w in imported.all()]
    storefront = resources.BusinessContext(
        environment="production", priority="P1", risk_tolerance="high", custom_labels={"team": "storefront"}
    )
    hits = direct.search(catalog.SearchQuery(action_type="RollbackDeployment"), business=storefront)
    assert [hit.workflow_id for hit in hits] == ["storefront-rollback-deployment"]
