"""catalog.admission: each rule accepts what it should and refuses what it should, with the
reason an operator reads on the object's Accepted condition."""

from __future__ import annotations

from typing import Any

import pytest

from aianalysis import catalog, errors, resources
from aianalysis.catalog import admission


def p(name: str, ptype: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "type": ptype, **fields}


def raw(*parameters: dict[str, Any], **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "workflowId": "raise-memory",
        "version": "1.0.0",
        "title": "Raise memory",
        "description": "Raises the memory limit.",
        "labels": {"signalTypes": ["OOMKilled"]},
        "riskLevel": "low",
        "execution": {"containerImage": "registry.example/wf@sha256:" + "0" * 64},
        "parameters": list(parameters),
    }
    body.update(spec)
    return body


@pytest.mark.parametrize(
    "parameter",
    [
        {"name": "N", "type": "integer", "default": 30, "minimum": 1, "maximum": 60},
        {"name": "N", "type": "integer", "default": "30", "enum": [30, 60]},
        {"name": "N", "type": "integer", "default": 30.0},
        {"name": "X", "type": "number", "default": 0.5, "enum": ["0.5", 1]},
        {"name": "B", "type": "boolean", "default": True, "enum": [True, False]},
        {"name": "B", "type": "boolean", "default": "false"},
        {"name": "A", "type": "array", "default": ["a", "b"], "enum": ["a", "b", "c"]},
        {"name": "A", "type": "array", "default": '["a"]', "pattern": "^[a-z]$"},
        {"name": "S", "type": "string", "default": "512Mi", "pattern": "^[0-9]+(Mi|Gi)$"},
    ],
)
def test_typed_values_that_fit_are_accepted(parameter: dict[str, Any]) -> None:
    verdict = admission.review(raw(parameter))
    assert verdict.accepted, verdict.message
    assert verdict.spec is not None


@pytest.mark.parametrize(
    ("parameter", "reason", "says"),
    [
        (p("P", "string", pattern="^[0-9+(Mi|Gi)$"), "InvalidPattern", "not a regular expression"),
        (p("N", "integer", default="thirty"), "InvalidDefault", "is not of type integer"),
        (p("N", "integer", default=2.5), "InvalidDefault", "is not of type integer"),
        (p("N", "integer", default=True), "InvalidDefault", "is not of type integer"),
        (p("N", "integer", default=90, maximum=60), "InvalidDefault", "above the maximum 60"),
        (p("N", "integer", default=0, minimum=1), "InvalidDefault", "below the minimum 1"),
        (p("N", "integer", default=45, enum=[30, 60]), "InvalidDefault", "not one of the enum"),
        (p("S", "string", default=30), "InvalidDefault", "is not of type string"),
        (p("S", "string", default="1T", pattern="^[0-9]+Mi$"), "InvalidDefault", "pattern"),
        (p("B", "boolean", default="yes"), "InvalidDefault", "is not of type boolean"),
        (p("A", "array", default={"a": 1}), "InvalidSpec", "default"),
        (p("A", "array", enum=["a", ["b"]]), "InvalidEnum", "['b'] is not a string, number or boolean"),
        (p("N", "integer", enum=[30, "sixty"]), "InvalidEnum", "'sixty' is not of type integer"),
        (p("S", "string", minimum=1), "InvalidSpec", "minimum and maximum apply"),
        (p("B", "boolean", pattern="^t"), "InvalidSpec", "pattern applies"),
    ],
)  # fmt: skip
def test_each_rule_refuses_with_its_reason(parameter: dict[str, Any], reason: str, says: str) -> None:
    verdict = admission.review(raw(parameter))
    assert not verdict.accepted
    assert verdict.reason == reason
    assert says in verdict.message


def test_a_spec_the_model_refuses_is_invalid_spec_with_the_wire_path() -> None:
    verdict = admission.review(raw(riskLevel="extreme"))
    assert verdict.reason == "InvalidSpec" and verdict.spec is None
    assert "spec.riskLevel" in verdict.message


def _claim(name: str, created: str, title: str) -> admission.Claim:
    spec = resources.RemediationWorkflowSpec.model_validate(raw(title=title))
    return admission.Claim(name=name, created=created, spec=spec)


def test_the_oldest_definition_holds_and_a_different_newer_one_is_refused() -> None:
    verdicts = admission.settle(
        [
            _claim("zz-old", "2026-01-01T00:00:00Z", "Original"),
            _claim("aa-new", "2026-02-01T00:00:00Z", "Changed"),
            _claim("copy", "2026-03-01T00:00:00Z", "Original"),
        ]
    )
    assert verdicts["zz-old"].accepted and verdicts["copy"].accepted
    assert verdicts["aa-new"].reason == "ConflictingDefinition"
    assert "zz-old" in verdicts["aa-new"].message


def test_equal_creation_times_fall_back_to_the_name() -> None:
    verdicts = admission.settle([_claim("b", "", "B"), _claim("a", "", "A")])
    assert verdicts["a"].accepted and verdicts["b"].reason == "ConflictingDefinition"


def test_files_are_held_to_admission_too(tmp_path: Any) -> None:
    path = tmp_path / "wf.yaml"
    path.write_text(
        "apiVersion: kubernaut.io/v1alpha1\nkind: RemediationWorkflow\nmetadata: {name: wf}\nspec:\n"
        "  workflowId: wf\n  version: 1.0.0\n  title: t\n  description: d\n  labels: {signalTypes: [X]}\n"
        "  riskLevel: low\n  execution: {containerImage: img}\n"
        "  parameters: [{name: N, type: integer, default: thirty}]\n"
    )
    with pytest.raises(errors.CatalogError, match=r"refused \(InvalidDefault\)"):
        catalog.load_paths([path])


DIGEST = "sha256:" + "4" * 64


@pytest.mark.parametrize(
    "image",
    [f"registry.example/wf@{DIGEST}", f"registry.example/wf:1.2@{DIGEST}",
     "registry.example:5000/team/wf@sha512:" + "c" * 128],
)  # fmt: skip
def test_an_image_pinned_by_digest_is_accepted(image: str) -> None:
    assert admission.review(raw(execution={"containerImage": image})).accepted


@pytest.mark.parametrize(
    "image",
    ["registry.example/wf:1", "registry.example/wf", "registry.example/wf:latest",
     "registry.example/wf@sha256:abc", "registry.example/wf@sha256:" + "G" * 64],
)  # fmt: skip
def test_an_image_by_tag_is_kept_but_never_offered(image: str) -> None:
    """A tag can be moved after the catalog was reviewed: what runs must be what was admitted."""
    verdict = admission.review(raw(execution={"containerImage": image}))
    assert not verdict.accepted and verdict.reason == "ImageNotPinned"
    assert "@sha256:" in verdict.message and image in verdict.message
    assert verdict.spec is not None  # kept (visible, not offered), as NotExecutable
