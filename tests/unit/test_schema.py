"""The lean JSON schemas the LLM reads: every field, type, enum, bound and requirement of the
pydantic model, none of the repetition (titles, null branches, $defs); a required field that may
be null still says so."""

from __future__ import annotations

import json
from typing import Any

import pytest

from aianalysis.analysis import answer, schema
from aianalysis.analysis.tools import _args, _specs


def _walk(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, list):
        return [found for item in node for found in _walk(item)]
    if not isinstance(node, dict):
        return []
    return [node, *(found for value in node.values() for found in _walk(value))]


SCHEMAS = {
    "submit_selection": answer.submit_tool_schema(),
    **{spec.name: spec.definition()["input_schema"] for spec in _specs.SPECS},
}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_no_titles_null_branches_or_references(name: str) -> None:
    text = json.dumps(SCHEMAS[name])
    assert '"title"' not in text and "$ref" not in text and "$defs" not in text
    assert SCHEMAS[name]["type"] == "object" and SCHEMAS[name]["additionalProperties"] is False


@pytest.mark.parametrize("spec", _specs.SPECS, ids=lambda spec: spec.name)
def test_tool_schemas_keep_every_argument_requirement_enum_and_bound(spec: _specs.Spec) -> None:
    full = spec.args.model_json_schema()
    lean = spec.definition()["input_schema"]
    assert list(lean["properties"]) == list(full.get("properties", {}))
    assert lean.get("required", []) == full.get("required", [])
    for name, prop in lean["properties"].items():
        original = json.dumps(full["properties"][name])
        for key in ("enum", "maximum", "minimum"):
            if f'"{key}"' in original:
                assert key in prop, (name, key)


def test_the_submit_schema_keeps_a_nullable_required_workflow() -> None:
    lean = answer.submit_tool_schema()
    assert lean["required"] == answer.SelectionAnswer.model_json_schema()["required"]
    assert set(lean["properties"]) == set(answer.SelectionAnswer.model_fields)
    workflow = lean["properties"]["selected_workflow"]
    assert {"type": "null"} in workflow["anyOf"]
    inlined = next(option for option in workflow["anyOf"] if option != {"type": "null"})
    assert inlined["required"] == ["workflow_id", "confidence", "rationale"]
    recovery = lean["properties"]["recovery_analysis"]["properties"]["previous_attempt_assessment"]
    assert "failure_understood" in recovery["required"]


def test_the_submit_schema_keeps_every_enum_of_the_answer() -> None:
    lean = answer.submit_tool_schema()["properties"]
    assert lean["rca_severity"]["enum"] == ["critical", "high", "medium", "low"]
    assert lean["human_review_reason"]["enum"] == ["no_eligible_workflow", "inconclusive"]
    alternative = lean["alternative_workflows"]["items"]["properties"]["confidence"]
    assert (alternative["minimum"], alternative["maximum"]) == (0.0, 1.0)


def test_string_bounds_are_left_to_validation_with_a_message_that_names_them() -> None:
    assert "pattern" not in json.dumps(_args.input_schema(_args.ResourceArgs))
    with pytest.raises(ValueError, match="pattern"):
        _args.ResourceArgs.model_validate({"kind": "Pod", "name": "Not A Name"})


def test_meaningful_defaults_stay_and_trivial_ones_go() -> None:
    lean = schema.lean(_args.TopArgs.model_json_schema())
    assert lean["properties"]["sort_by"]["default"] == "memory"
    assert lean["properties"]["limit"]["default"] == 20
    logs = schema.lean(_args.LogsArgs.model_json_schema())["properties"]
    assert "default" not in logs["previous"] and "default" not in logs["container"]
