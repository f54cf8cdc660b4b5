"""Loading a catalog from YAML: what ``aianalysis catalog search --catalog`` and the demo read.
Every mistake must point at the file and document to fix."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from aianalysis import catalog, errors


def workflow_yaml(
    name: str, workflow_id: str, version: str = "1.0.0", *, risk: str = "low", signals: str = "[OOMKilled]"
) -> str:
    return textwrap.dedent(
        f"""\
        apiVersion: kubernaut.io/v1alpha1
        kind: RemediationWorkflow
        metadata: {{name: {name}}}
        spec:
          workflowId: {workflow_id}
          version: "{version}"
          title: Increase memory limit
          description: Raises the memory limit.
          labels: {{signalTypes: {signals}, environment: [production]}}
          riskLevel: {risk}
          parameters:
            - {{name: TARGET_NAMESPACE, type: string, required: true}}
          execution: {{containerImage: "registry.example/wf/{workflow_id}@{DIGEST}"}}
        """
    )


DIGEST = "sha256:" + "0" * 64


def write(path: Path, *documents: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("---\n".join(documents))
    return path


def test_loads_files_and_directories_with_many_documents_and_skips_other_kinds(tmp_path: Path) -> None:
    incident = "apiVersion: kubernaut.io/v1alpha1\nkind: AIAnalysis\nmetadata: {name: x}\nspec: {}\n"
    write(
        tmp_path / "dir" / "memory.yaml",
        workflow_yaml("oom-v1", "oom"),
        workflow_yaml("oom-v2", "oom", "2.0.0"),
        incident,
    )
    write(tmp_path / "dir" / "nested" / "restart.yml", workflow_yaml("restart", "restart"))
    write(tmp_path / "dir" / "README.md", "not yaml: [")
    single = write(tmp_path / "drain.yaml", "# comment only\n", workflow_yaml("drain", "drain"))

    found = catalog.load_paths([tmp_path / "dir", str(single)])

    assert [(w.name, w.workflow_id, w.version) for w in found.all()] == [
        ("drain", "drain", "1.0.0"),
        ("oom-v1", "oom", "1.0.0"),
        ("oom-v2", "oom", "2.0.0"),
        ("restart", "restart", "1.0.0"),
    ]
    loaded = found.get("oom")
    assert loaded is not None and loaded.spec.parameters[0].required is True


def test_loads_a_kubectl_list(tmp_path: Path) -> None:
    items = "\n".join(
        textwrap.indent(workflow_yaml(f"wf-{n}", f"wf-{n}"), "  ").replace("  apiVersion", "- apiVersion", 1)
        for n in range(2)
    )
    path = write(tmp_path / "list.yaml", f"apiVersion: v1\nkind: List\nitems:\n{items}")
    assert [w.workflow_id for w in catalog.load_paths([path]).all()] == ["wf-0", "wf-1"]


def test_bad_yaml_names_the_file(tmp_path: Path) -> None:
    write(tmp_path / "broken.yaml", "kind: RemediationWorkflow\nspec: [unclosed\n")
    with pytest.raises(errors.CatalogError, match=r"broken\.yaml: invalid YAML") as caught:
        catalog.load_paths([tmp_path])
    assert "line" in str(caught.value)


def test_a_bad_field_names_file_document_object_and_field(tmp_path: Path) -> None:
    path = write(
        tmp_path / "memory.yaml", workflow_yaml("ok", "ok"), workflow_yaml("oom-bad", "oom", risk="extreme")
    )
    with pytest.raises(errors.CatalogError) as caught:
        catalog.load_paths([path])
    message = str(caught.value)
    assert message.startswith(
        f"{path}: document 2 (RemediationWorkflow 'oom-bad'): invalid spec: spec.riskLevel:"
    )
    assert "'low', 'medium' or 'high'" in message


def test_a_workflow_without_signal_types_needs_an_action_type(tmp_path: Path) -> None:
    path = write(tmp_path / "a.yaml", workflow_yaml("oom", "oom", signals="[]"))
    with pytest.raises(errors.CatalogError, match=r"needs labels\.signalTypes or actionType"):
        catalog.load_paths([path])


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (
            workflow_yaml("x", "x").replace("kubernaut.io/v1alpha1", "kubernaut.io/v2"),
            "apiVersion must be 'kubernaut.io/v1alpha1'",
        ),
        (
            workflow_yaml("x", "x").replace("metadata: {name: x}", "metadata: {}"),
            "RemediationWorkflow without metadata.name",
        ),
        ("- just\n- a list\n", "expected a Kubernetes object"),
        (
            "apiVersion: kubernaut.io/v1alpha1\nkind: RemediationWorkflow\nmetadata: {name: x}\nspec: 3\n",
            "spec must be a mapping",
        ),
    ],
)
def test_malformed_objects(tmp_path: Path, document: str, message: str) -> None:
    path = write(tmp_path / "bad.yaml", document)
    with pytest.raises(errors.CatalogError, match=message) as caught:
        catalog.load_paths([path])
    assert str(caught.value).startswith(f"{path}: document 1")


def test_duplicates_in_files_are_mistakes(tmp_path: Path) -> None:
    first = write(tmp_path / "a.yaml", workflow_yaml("oom", "oom"))
    write(tmp_path / "b.yaml", workflow_yaml("oom", "oom-copy"))
    with pytest.raises(
        errors.CatalogError, match=rf"b\.yaml: document 1: object name 'oom' already defined at {first}"
    ):
        catalog.load_paths([tmp_path])
    (tmp_path / "b.yaml").write_text(workflow_yaml("oom-again", "oom"))
    with pytest.raises(errors.CatalogError, match=r"workflowId 'oom' version '1\.0\.0' already defined"):
        catalog.load_paths([tmp_path])


def test_missing_paths_and_empty_catalogs(tmp_path: Path) -> None:
    with pytest.raises(errors.CatalogError, match="no such file or directory"):
        catalog.load_paths([tmp_path / "nope"])
    with pytest.raises(errors.CatalogError, match="no RemediationWorkflow objects found"):
        catalog.load_paths([tmp_path])
    with pytest.raises(errors.CatalogError, match="no catalog path"):
        catalog.load_paths([])


def test_workflows_from_yaml_and_api_objects() -> None:
    workflows = catalog.workflows_from_yaml(workflow_yaml("oom", "oom"), source="configmap")
    assert [w.name for w in workflows] == ["oom"]
    with pytest.raises(errors.CatalogError, match=r"^configmap: invalid YAML"):
        catalog.workflows_from_yaml("a: [", source="configmap")
    body = {
        "apiVersion": "kubernaut.io/v1alpha1",
        "kind": "RemediationWorkflow",
        "metadata": {"name": "n"},
        "spec": workflows[0].spec.wire(),
    }
    assert catalog.parse_object(body, where="watch event") == catalog.Workflow(
        name="n", spec=workflows[0].spec
    )
