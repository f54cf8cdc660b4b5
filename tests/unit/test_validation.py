"""The validator: every rule, accepted and rejected, as the LLM and a person reading status see it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from aianalysis import catalog, resources
from aianalysis.analysis import scope, tools, validation

OOM = "oomkill-increase-memory"
RESTART = "restart-deployment"
PRODUCTION_LOW = resources.BusinessContext(environment="production", priority="P1", risk_tolerance="low")


def param(name: str, ptype: str = "string", **fields: Any) -> resources.WorkflowParameter:
    return resources.WorkflowParameter.model_validate({"name": name, "type": ptype, **fields})


OOM_PARAMS = [
    param("TARGET_NAMESPACE", required=True, description="namespace of the Deployment"),
    param("MEMORY_LIMIT_NEW", required=True, pattern="^[0-9]+(Mi|Gi)$"),
    param("REPLICAS", "integer", minimum=1, maximum=50, dependsOn=["TARGET_NAMESPACE"]),
    param("STRATEGY", enum=["rolling", "recreate"], default="rolling"),
]


def spec(
    workflow_id: str = OOM,
    version: str = "1.0.0",
    *,
    risk: str = "low",
    environment: list[str] | None = None,
    parameters: list[resources.WorkflowParameter] | None = None,
) -> resources.RemediationWorkflowSpec:
    return resources.RemediationWorkflowSpec.model_validate(
        {
            "workflowId": workflow_id,
            "version": version,
            "title": workflow_id.replace("-", " "),
            "description": f"{workflow_id} remediation",
            "labels": {"signalTypes": ["OOMKilled"], "environment": environment},
            "riskLevel": risk,
            "parameters": [p.wire() for p in (OOM_PARAMS if parameters is None else parameters)],
            "execution": {"containerImage": f"registry.example/wf/{workflow_id}:{version}"},
        }
    )


def make_catalog(*specs: resources.RemediationWorkflowSpec) -> catalog.Catalog:
    index = catalog.Catalog()
    for entry in specs or (spec(), spec(RESTART, parameters=[param("TARGET_NAMESPACE", required=True)])):
        index.upsert(f"{entry.workflow_id}-v{entry.version}", entry)
    return index


GOOD_PARAMS: dict[str, Any] = {"TARGET_NAMESPACE": "production", "MEMORY_LIMIT_NEW": "1Gi"}


def answer(
    workflow_id: str | None = OOM,
    *,
    parameters: Mapping[str, Any] | None = None,
    version: str | None = None,
    **top: Any,
) -> dict[str, Any]:
    selected = None
    if workflow_id is not None:
        selected = {
            "workflow_id": workflow_id,
            "confidence": 0.9,
            "rationale": "memory limit too low for the working set",
            "parameters": dict(GOOD_PARAMS if parameters is None else parameters),
        }
        if version is not None:
            selected["version"] = version
    return {
        "analysis_summary": "payment-api is OOMKilled under load",
        "root_cause_assessment": "memory limit 256Mi is below the working set",
        "rca_severity": "high",
        "selected_workflow": selected,
        **top,
    }


def run(
    raw: dict[str, Any] | None,
    *,
    index: catalog.Catalog | None = None,
    seen: Mapping[str, set[str]] | None = None,
    business: resources.BusinessContext = PRODUCTION_LOW,
    recovery: resources.RecoverySpec | None = None,
    truncated: bool = False,
    prose: str | None = None,
) -> validation.Verdict:
    return validation.validate(
        raw=raw,
        truncated=truncated,
        catalog=make_catalog() if index is None else index,
        seen={OOM: {"1.0.0"}, RESTART: {"1.0.0"}} if seen is None else seen,
        business=business,
        recovery=recovery,
        prose=prose,
    )


def assert_user_facing(verdict: validation.Verdict) -> None:
    for error in verdict.errors:
        assert error.startswith("[") and error[1 : error.index("]")] in validation.RULES, error
        assert len(error) <= validation.MAX_MESSAGE_CHARS, error


# --------------------------------------------------------------------------------------------
# 1. parse


def test_valid_answer_resolves_workflow_and_canonical_parameters() -> None:
    verdict = run(answer(parameters={**GOOD_PARAMS, "REPLICAS": "3"}))
    assert verdict.valid, verdict.errors
    assert verdict.errors == [] and verdict.rules_failed == []
    assert verdict.workflow is not None and verdict.workflow.spec.workflow_id == OOM
    assert verdict.parameters == {**GOOD_PARAMS, "REPLICAS": "3", "STRATEGY": "rolling"}
    assert verdict.answer is not None and verdict.answer.selected_workflow is not None


def test_prose_without_submit_is_invalid() -> None:
    verdict = run(None, prose="I think you should increase the memory.")
    assert not verdict.valid
    assert verdict.rules_failed == ["no_submission"]
    assert "submit_selection" in verdict.errors[0] and "increase the memory" in verdict.errors[0]
    assert verdict.answer is None


def test_truncated_answer_is_invalid_even_when_it_parses() -> None:
    verdict = run(answer(), truncated=True)
    assert not verdict.valid
    assert verdict.rules_failed == ["truncated"]
    assert "max_tokens" in verdict.errors[0]


def test_schema_errors_name_the_field_path() -> None:
    raw = answer()
    raw["selected_workflow"]["confidence"] = 1.5
    del raw["analysis_summary"]
    raw["surprise"] = True
    verdict = run(raw)
    assert not verdict.valid and verdict.answer is None
    assert set(verdict.rules_failed) == {"schema"}
    joined = "\n".join(verdict.errors)
    assert "[schema] selected_workflow.confidence:" in joined and "1.5" in joined
    assert "[schema] analysis_summary: Field required" in joined
    assert "[schema] surprise:" in joined
    assert_user_facing(verdict)


def test_schema_error_paths_index_into_lists() -> None:
    verdict = run(answer(alternative_workflows=[{"workflow_id": RESTART}, {"confidence": 0.3}]))
    assert verdict.errors == ["[schema] alternative_workflows[1].workflow_id: Field required"]


# --------------------------------------------------------------------------------------------
# 7. selection / human review consistency


def test_no_selection_without_human_review_is_invalid() -> None:
    verdict = run(answer(None))
    assert verdict.rules_failed == ["no_selection"]
    assert "needs_human_review" in verdict.errors[0]


def test_no_selection_with_human_review_is_a_valid_verdict() -> None:
    verdict = run(answer(None, needs_human_review=True, human_review_reason="no_eligible_workflow"))
    assert verdict.valid, verdict.errors
    assert verdict.workflow is None and verdict.parameters == {}
    assert verdict.answer is not None and verdict.answer.human_review_reason == "no_eligible_workflow"


def test_selection_on_human_review_path_is_still_fully_checked() -> None:
    verdict = run(answer(parameters={"TARGET_NAMESPACE": "production"}, needs_human_review=True))
    assert not verdict.valid
    assert verdict.rules_failed == ["missing_parameter"]


# --------------------------------------------------------------------------------------------
# 2. unknown workflow


def test_hallucinated_id_rejected_on_human_review_path() -> None:
    verdict = run(answer("scale-to-the-moon", needs_human_review=True, human_review_reason="inconclusive"))
    assert not verdict.valid
    assert verdict.rules_failed == ["unknown_workflow"]
    assert "'scale-to-the-moon' does not exist" in verdict.errors[0]
    assert OOM in verdict.errors[0] and RESTART in verdict.errors[0]  # tells the LLM what it may pick
    assert verdict.workflow is None


def test_id_seen_but_removed_from_catalog_is_rejected() -> None:
    index = make_catalog()
    index.remove(f"{OOM}-v1.0.0")
    verdict = run(answer(), index=index)
    assert verdict.rules_failed == ["unknown_workflow"]
    assert "no longer in the catalog" in verdict.errors[0]
    assert f"conversation: {RESTART}" in verdict.errors[0]


def test_id_in_catalog_but_not_shown_in_this_conversation_is_rejected() -> None:
    verdict = run(answer(), seen={RESTART: {"1.0.0"}})
    assert verdict.rules_failed == ["unknown_workflow"]
    assert "was not returned by search_workflow_catalog" in verdict.errors[0]


def test_nothing_seen_yet_says_so() -> None:
    verdict = run(answer(), seen={})
    assert "(none)" in verdict.errors[0] and "search the catalog" in verdict.errors[0]


# --------------------------------------------------------------------------------------------
# 3. versions


def versioned_catalog() -> catalog.Catalog:
    return make_catalog(spec(version="1.9.0"), spec(version="1.10.0"), spec(version="0.3.0"))


ALL_SHOWN = {OOM: {"1.9.0", "1.10.0", "0.3.0"}}


@pytest.mark.parametrize("version", [None, "latest"])
def test_absent_or_latest_version_resolves_to_highest_semver(version: str | None) -> None:
    verdict = run(answer(version=version), index=versioned_catalog(), seen=ALL_SHOWN)
    assert verdict.valid, verdict.errors
    assert verdict.workflow is not None and verdict.workflow.spec.version == "1.10.0"


def test_explicit_existing_version_is_used() -> None:
    verdict = run(answer(version="0.3.0"), index=versioned_catalog(), seen=ALL_SHOWN)
    assert verdict.valid and verdict.workflow is not None and verdict.workflow.spec.version == "0.3.0"


# 6b. the version must be one a catalog tool showed


@pytest.mark.parametrize("version", [None, "latest"])
def test_absent_version_means_the_highest_version_shown_not_the_catalogs(version: str | None) -> None:
    """Search offered 1.9.0 (say 1.10.0 was ineligible): omitting the version selects 1.9.0."""
    verdict = run(answer(version=version), index=versioned_catalog(), seen={OOM: {"1.9.0", "0.3.0"}})
    assert verdict.valid, verdict.errors
    assert verdict.workflow is not None and verdict.workflow.spec.version == "1.9.0"


def test_a_version_no_catalog_tool_showed_is_rejected() -> None:
    verdict = run(answer(version="1.10.0"), index=versioned_catalog(), seen={OOM: {"1.9.0"}})
    assert verdict.rules_failed == ["version_not_shown"]
    assert "'1.10.0'" in verdict.errors[0] and "shown: 1.9.0" in verdict.errors[0]
    assert_user_facing(verdict)


def test_unknown_version_lists_available_versions() -> None:
    verdict = run(answer(version="2.0.0"), index=versioned_catalog())
    assert verdict.rules_failed == ["unknown_version"]
    assert (
        "0.3.0" in verdict.errors[0] and "1.10.0" in verdict.errors[0] and "omit version" in verdict.errors[0]
    )


# --------------------------------------------------------------------------------------------
# 4. policy


def test_high_risk_workflow_in_low_tolerance_production_is_rejected() -> None:
    index = make_catalog(spec(risk="high"))
    verdict = run(answer(), index=index)
    assert verdict.rules_failed == ["policy"]
    assert "not eligible" in verdict.errors[0]
    assert verdict.workflow is not None  # the candidate is still named for the human


def test_high_risk_workflow_accepted_when_tolerance_is_high() -> None:
    index = make_catalog(spec(risk="high"))
    business = resources.BusinessContext(environment="production", risk_tolerance="high")
    assert run(answer(), index=index, business=business).valid


def test_environment_label_must_admit_the_incident() -> None:
    index = make_catalog(spec(environment=["staging"]))
    verdict = run(answer(), index=index)
    assert verdict.rules_failed == ["policy"]
    assert "staging" in verdict.errors[0]


# --------------------------------------------------------------------------------------------
# 5. parameters


def check(
    values: Mapping[str, Any], params: list[resources.WorkflowParameter] | None = None
) -> validation.ParameterCheck:
    return validation.check_parameters(OOM_PARAMS if params is None else params, values)


def test_default_fills_a_required_parameter() -> None:
    params = [param("MODE", required=True, default="safe"), param("LEVEL", "integer", default="2")]
    result = check({}, params)
    assert result.errors == []
    assert result.canonical == {"MODE": "safe", "LEVEL": "2"}


def test_missing_required_parameter_reports_its_schema() -> None:
    result = check({"TARGET_NAMESPACE": "production"})
    assert len(result.errors) == 1
    error = result.errors[0]
    assert error.startswith("[missing_parameter]") and "MEMORY_LIMIT_NEW" in error
    assert "type string" in error and "^[0-9]+(Mi|Gi)$" in error


def test_undeclared_parameter_is_stripped_with_a_warning() -> None:
    verdict = run(answer(parameters={**GOOD_PARAMS, "FORCE": True}))
    assert verdict.valid, verdict.errors
    assert "FORCE" not in verdict.parameters
    assert (
        len(verdict.warnings) == 1 and "'FORCE'" in verdict.warnings[0] and "ignored" in verdict.warnings[0]
    )


def test_name_differing_only_by_case_is_an_error_with_a_suggestion() -> None:
    result = check({**GOOD_PARAMS, "replicas": 3})
    assert len(result.errors) == 1
    assert "did you mean 'REPLICAS'" in result.errors[0] and "case-sensitive" in result.errors[0]
    assert "replicas" not in result.canonical and "REPLICAS" not in result.canonical


def test_case_variant_of_a_missing_required_parameter_is_reported_once() -> None:
    result = check({"target_namespace": "production", "MEMORY_LIMIT_NEW": "1Gi"})
    assert len(result.errors) == 1 and "did you mean 'TARGET_NAMESPACE'" in result.errors[0]


@pytest.mark.parametrize(("value", "canonical"), [(1, "1"), (50, "50"), ("3", "3"), (7.0, "7")])
def test_integer_within_range_accepted(value: Any, canonical: str) -> None:
    result = check({**GOOD_PARAMS, "REPLICAS": value})
    assert result.errors == [] and result.canonical["REPLICAS"] == canonical


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (0, "below the minimum 1"),
        (51, "above the maximum 50"),
        ("51", "above the maximum 50"),
        (-3, "below the minimum 1"),
    ],
)
def test_integer_range_enforced(value: Any, message: str) -> None:
    result = check({**GOOD_PARAMS, "REPLICAS": value})
    assert len(result.errors) == 1 and result.errors[0].startswith("[parameters] REPLICAS")
    assert message in result.errors[0] and "minimum 1, maximum 50" in result.errors[0]


@pytest.mark.parametrize("value", [True, False, "3.5", 3.5, "three", "1_000", [3], None, "0x10"])
def test_integer_rejects_booleans_and_non_integers(value: Any) -> None:
    result = check({**GOOD_PARAMS, "REPLICAS": value})
    assert len(result.errors) == 1 and "expected an integer" in result.errors[0]


def test_number_coercion_and_range() -> None:
    params = [param("RATIO", "number", minimum=0, maximum=1)]
    assert check({"RATIO": 0.5}, params).canonical == {"RATIO": "0.5"}
    assert check({"RATIO": "0.25"}, params).canonical == {"RATIO": "0.25"}
    assert check({"RATIO": 1}, params).canonical == {"RATIO": "1"}
    assert check({"RATIO": "1e-1"}, params).canonical == {"RATIO": "0.1"}
    assert "above the maximum 1" in check({"RATIO": 1.5}, params).errors[0]
    for bad in (True, "nan", "inf", "1e999", float("nan"), "½"):
        assert "expected a finite number" in check({"RATIO": bad}, params).errors[0], bad


def test_boolean_accepts_json_booleans_and_quoted_ones() -> None:
    params = [param("DRY_RUN", "boolean")]
    assert check({"DRY_RUN": True}, params).canonical == {"DRY_RUN": "true"}
    assert check({"DRY_RUN": "False"}, params).canonical == {"DRY_RUN": "false"}
    for bad in (1, 0, "yes", None):
        assert "expected a boolean" in check({"DRY_RUN": bad}, params).errors[0], bad


def test_string_does_not_silently_stringify_other_types() -> None:
    result = check({**GOOD_PARAMS, "TARGET_NAMESPACE": 42})
    assert "expected a string, got a number (quote it)" in result.errors[0]


def test_array_of_scalars_is_canonical_json() -> None:
    params = [param("NODES", "array", enum=["a", "b", "c"])]
    assert check({"NODES": ["a", "b"]}, params).canonical == {"NODES": '["a","b"]'}
    assert check({"NODES": '["c"]'}, params).canonical == {"NODES": '["c"]'}
    assert "item 'z' not one of the allowed values" in check({"NODES": ["a", "z"]}, params).errors[0]
    assert "array items must be" in check({"NODES": [["a"]]}, params).errors[0]
    assert "expected an array" in check({"NODES": "a"}, params).errors[0]


def test_enum_lists_allowed_values() -> None:
    result = check({**GOOD_PARAMS, "STRATEGY": "fast"})
    assert len(result.errors) == 1
    assert "STRATEGY: value 'fast' is invalid: not one of the allowed values" in result.errors[0]
    assert "one of [rolling, recreate]" in result.errors[0]
    assert check({**GOOD_PARAMS, "STRATEGY": "recreate"}).canonical["STRATEGY"] == "recreate"


def test_numeric_enum_compares_numbers_not_spelling() -> None:
    params = [param("SHARDS", "integer", enum=["1", "2", "4"])]
    assert check({"SHARDS": 4.0}, params).errors == []
    assert check({"SHARDS": "2"}, params).errors == []
    assert check({"SHARDS": 3}, params).errors != []


def test_pattern_enforced_with_full_match() -> None:
    assert check({**GOOD_PARAMS, "MEMORY_LIMIT_NEW": "512Mi"}).errors == []
    result = check({**GOOD_PARAMS, "MEMORY_LIMIT_NEW": "512MB"})
    assert "does not match the pattern" in result.errors[0] and "^[0-9]+(Mi|Gi)$" in result.errors[0]
    unanchored = [param("COUNT_TEXT", pattern="[0-9]+")]
    assert check({"COUNT_TEXT": "12"}, unanchored).errors == []
    assert check({"COUNT_TEXT": "12; rm -rf /"}, unanchored).errors != []


def test_pattern_refuses_values_over_the_cap_before_matching() -> None:
    params = [param("NAME", pattern="^(a|aa)+$")]  # backtracks badly on long non-matching input
    result = check({"NAME": "a" * (validation.MAX_PATTERNED_VALUE_CHARS + 1) + "!"}, params)
    assert "at most 1024 can be checked" in result.errors[0]
    assert len(result.errors[0]) <= validation.MAX_MESSAGE_CHARS


def test_unusable_catalog_patterns_are_refused_not_run() -> None:
    too_long = resources.WorkflowParameter.model_construct(name="X", type="string", pattern="a" * 300)
    broken = param("Y", pattern="([a-z")
    result = check({"X": "a", "Y": "b"}, [too_long, broken])
    assert len(result.errors) == 2 and all("pattern is unusable" in e for e in result.errors)


def test_depends_on_enforced() -> None:
    result = check(
        {"MEMORY_LIMIT_NEW": "1Gi", "REPLICAS": 3},
        [p for p in OOM_PARAMS if p.name != "TARGET_NAMESPACE"] + [param("TARGET_NAMESPACE")],
    )
    assert result.errors == [
        "[missing_parameter] 'REPLICAS' depends on 'TARGET_NAMESPACE', which is missing; "
        "TARGET_NAMESPACE: type string, optional"
    ]
    assert check({**GOOD_PARAMS, "REPLICAS": 3}).errors == []


def test_depends_on_satisfied_by_a_default_and_not_triggered_by_one() -> None:
    params = [
        param("A", default="x"),
        param("B", dependsOn=["A"]),
        param("C", default="y", dependsOn=["Z"]),
        param("Z"),
    ]
    assert check({"B": "v"}, params).errors == []
    assert check({}, params).errors == []  # C only defaulted: its dependency is not demanded


def test_invalid_catalog_default_asks_for_an_explicit_value() -> None:
    params = [param("LEVEL", "integer", default="high")]
    result = check({}, params)
    assert "declared default 'high' is invalid (set it explicitly)" in result.errors[0]
    assert check({"LEVEL": 2}, params).errors == []


def test_canonical_value_forms() -> None:
    assert validation.canonical_value("string", "a b") == "a b"
    assert validation.canonical_value("integer", 3) == "3"
    assert validation.canonical_value("number", 0.5) == "0.5"
    assert validation.canonical_value("number", 2) == "2"
    assert validation.canonical_value("boolean", False) == "false"
    assert validation.canonical_value("array", ["a", 1, True]) == '["a",1,true]'
    with pytest.raises(ValueError, match="unknown parameter type"):
        validation.canonical_value("object", {})


def test_parameter_errors_fail_the_verdict_and_keep_the_candidate() -> None:
    verdict = run(answer(parameters={**GOOD_PARAMS, "REPLICAS": True}))
    assert not verdict.valid and verdict.rules_failed == ["parameters"]
    assert verdict.workflow is not None and verdict.workflow.spec.workflow_id == OOM


# --------------------------------------------------------------------------------------------
# 6 + 8. recovery


def recovery_spec(
    parameters: dict[str, str], *, workflow_id: str = OOM, version: str = "1.0.0"
) -> resources.RecoverySpec:
    return resources.RecoverySpec.model_validate(
        {
            "attemptNumber": 1,
            "previousExecutions": [
                {
                    "workflowExecutionRef": "payment-oom-1-exec-1",
                    "original_rca": {"summary": "limit too low", "signalType": "OOMKilled"},
                    "selectedWorkflow": {
                        "workflowId": workflow_id,
                        "version": version,
                        "parameters": parameters,
                    },
                    "failure": {"reason": "OOMKilled", "exitCode": 137},
                }
            ],
        }
    )


RECOVERY_FIELDS: dict[str, Any] = {
    "recovery_analysis": {
        "previous_attempt_assessment": {
            "failure_understood": True,
            "failure_reason_analysis": "1Gi was still too small",
            "state_changed": False,
        }
    },
    "recovery_strategy": {"approach": "raise further", "differs_from_previous": True, "why_different": "2Gi"},
}


def test_repeated_failure_rejected() -> None:
    recovery = recovery_spec({**GOOD_PARAMS, "STRATEGY": "rolling"})
    verdict = run(answer(**RECOVERY_FIELDS), recovery=recovery)
    assert verdict.rules_failed == ["repeated_failure"]
    assert "payment-oom-1-exec-1" in verdict.errors[0] and "OOMKilled" in verdict.errors[0]
    assert_user_facing(verdict)


def test_repeat_detection_normalizes_the_recorded_execution() -> None:
    # recorded without the defaulted STRATEGY and with a hand-written "03": still the same input
    recovery = recovery_spec({**GOOD_PARAMS, "REPLICAS": "03"})
    verdict = run(answer(parameters={**GOOD_PARAMS, "REPLICAS": 3}, **RECOVERY_FIELDS), recovery=recovery)
    assert verdict.rules_failed == ["repeated_failure"]


def test_repeat_is_version_insensitive() -> None:
    index = make_catalog(spec(version="1.0.0"), spec(version="1.1.0"))
    seen = {OOM: {"1.0.0", "1.1.0"}}
    verdict = run(
        answer(**RECOVERY_FIELDS), index=index, seen=seen, recovery=recovery_spec(dict(GOOD_PARAMS))
    )
    assert verdict.workflow is not None and verdict.workflow.spec.version == "1.1.0"
    assert verdict.rules_failed == ["repeated_failure"]


def test_same_workflow_with_different_parameters_accepted() -> None:
    recovery = recovery_spec(dict(GOOD_PARAMS))
    verdict = run(
        answer(parameters={**GOOD_PARAMS, "MEMORY_LIMIT_NEW": "2Gi"}, **RECOVERY_FIELDS), recovery=recovery
    )
    assert verdict.valid, verdict.errors
    assert verdict.parameters["MEMORY_LIMIT_NEW"] == "2Gi"


def test_other_workflow_after_failure_accepted() -> None:
    verdict = run(
        answer(RESTART, parameters={"TARGET_NAMESPACE": "production"}, **RECOVERY_FIELDS),
        recovery=recovery_spec(dict(GOOD_PARAMS)),
    )
    assert verdict.valid, verdict.errors


def test_recovery_answer_requires_recovery_fields() -> None:
    verdict = run(
        answer(parameters={**GOOD_PARAMS, "MEMORY_LIMIT_NEW": "2Gi"}), recovery=recovery_spec(GOOD_PARAMS)
    )
    assert verdict.rules_failed == ["recovery_fields"]
    assert "recovery_analysis and recovery_strategy are required" in verdict.errors[0]


def test_recovery_strategy_must_differ_from_previous() -> None:
    fields = {
        **RECOVERY_FIELDS,
        "recovery_strategy": {**RECOVERY_FIELDS["recovery_strategy"], "differs_from_previous": False},
    }
    verdict = run(
        answer(parameters={**GOOD_PARAMS, "MEMORY_LIMIT_NEW": "2Gi"}, **fields),
        recovery=recovery_spec(GOOD_PARAMS),
    )
    assert verdict.rules_failed == ["recovery_fields"]
    assert "differs_from_previous is false" in verdict.errors[0]


def test_recovery_fields_checked_on_human_review_path_too() -> None:
    verdict = run(answer(None, needs_human_review=True), recovery=recovery_spec(GOOD_PARAMS))
    assert verdict.rules_failed == ["recovery_fields"]


def test_first_analysis_does_not_need_recovery_fields() -> None:
    assert run(answer(), recovery=None).valid


# --------------------------------------------------------------------------------------------
# alternatives, message hygiene


def test_unknown_alternatives_dropped_with_warning() -> None:
    alternatives = [
        {"workflow_id": RESTART, "confidence": 0.4},
        {"workflow_id": "made-up", "confidence": 0.2},
        {"workflow_id": OOM, "version": "9.9.9"},
    ]
    verdict = run(answer(alternative_workflows=alternatives))
    assert verdict.valid, verdict.errors
    assert verdict.answer is not None
    assert [a.workflow_id for a in verdict.answer.alternative_workflows] == [RESTART]
    assert len(verdict.warnings) == 2
    assert "'made-up' is not in the catalog; dropped" in verdict.warnings[0]
    assert "version '9.9.9'" in verdict.warnings[1]


def test_every_check_reports_at_once_and_messages_stay_short() -> None:
    huge = param(
        "FLAVOUR", enum=[f"option-{i}-" + "x" * 40 for i in range(30)], description="d" * 500, required=True
    )
    index = make_catalog(spec(risk="high", parameters=[huge, *OOM_PARAMS]))
    verdict = run(
        answer(parameters={"FLAVOUR": "y" * 2000, "REPLICAS": 99, "MEMORY_LIMIT_NEW": "lots"}),
        index=index,
        recovery=recovery_spec(GOOD_PARAMS),
    )
    assert set(verdict.rules_failed) == {"recovery_fields", "policy", "parameters", "missing_parameter"}
    assert len(verdict.errors) == 6
    assert_user_facing(verdict)


# --------------------------------------------------------------------------------------------
# 6a. the remediation target


def target_scope() -> scope.Scope:
    incident = resources.ResourceRef(kind="Deployment", name="payment-api", namespace="production")
    return scope.Scope.of(incident, cluster=False, kinds=tools.target_kinds())


def run_target(
    raw: dict[str, Any],
    *,
    index: catalog.Catalog | None = None,
    facts: catalog.TargetFacts | None = None,
) -> validation.Verdict:
    where = target_scope()
    chosen = where.target(raw.get("affected_resource"))
    return validation.validate(
        raw=raw,
        truncated=False,
        catalog=make_catalog() if index is None else index,
        seen={OOM: {"1.0.0"}, RESTART: {"1.0.0"}},
        business=PRODUCTION_LOW,
        recovery=None,
        scope=where,
        facts={chosen.key: facts} if facts is not None else None,
    )


def test_a_target_in_the_incidents_namespace_is_accepted_and_recorded() -> None:
    verdict = run_target(answer(affected_resource={"kind": "deployment", "name": "payment-api"}))
    assert verdict.valid, verdict.errors
    assert verdict.target == scope.ObjectRef(
        kind="Deployment", name="payment-api", namespace="production", api_version="apps/v1"
    )


def test_a_target_in_another_namespace_is_out_of_scope_and_never_the_recorded_target() -> None:
    raw = answer(affected_resource={"kind": "Deployment", "name": "coredns", "namespace": "kube-system"})
    verdict = run_target(raw)
    assert verdict.rules_failed == ["target_out_of_scope"]
    assert "outside the incident's namespace 'production'" in verdict.errors[0]
    assert verdict.target is not None and verdict.target.namespace == "production"
    assert_user_facing(verdict)


def target_params() -> list[resources.WorkflowParameter]:
    return [
        param("TARGET_NAMESPACE", required=True),
        param("TARGET_RESOURCE_KIND", required=True, enum=["deployment", "statefulset"]),
        param("TARGET_RESOURCE_NAME", required=True),
        param("MEMORY_LIMIT_NEW", required=True),
    ]


def test_system_filled_parameters_come_from_the_target_and_the_llms_value_never_wins() -> None:
    index = make_catalog(spec(parameters=target_params()))
    raw = answer(parameters={"TARGET_NAMESPACE": "kube-system", "MEMORY_LIMIT_NEW": "1Gi"})
    verdict = run_target(raw, index=index)
    assert verdict.valid, verdict.errors
    assert verdict.parameters == {
        "TARGET_NAMESPACE": "production",
        "TARGET_RESOURCE_KIND": "deployment",  # the enum's spelling
        "TARGET_RESOURCE_NAME": "payment-api",
        "MEMORY_LIMIT_NEW": "1Gi",
    }
    assert [w for w in verdict.warnings if w.startswith("[system_filled]")] == [
        "[system_filled] TARGET_NAMESPACE is filled by the system from the target Deployment "
        "production/payment-api (namespace='production'); the submitted 'kube-system' was ignored."
    ]


def test_a_matching_llm_value_for_a_system_filled_parameter_is_no_warning() -> None:
    index = make_catalog(spec(parameters=target_params()))
    raw = answer(parameters={"TARGET_NAMESPACE": "production", "MEMORY_LIMIT_NEW": "1Gi"})
    assert run_target(raw, index=index).warnings == []


def test_from_target_none_leaves_a_conventional_name_to_the_llm() -> None:
    index = make_catalog(spec(parameters=[param("NAMESPACE", required=True, fromTarget="none")]))
    verdict = run_target(answer(parameters={"NAMESPACE": "monitoring"}), index=index)
    assert verdict.valid and verdict.parameters == {"NAMESPACE": "monitoring"}


def component_spec(component: list[str]) -> resources.RemediationWorkflowSpec:
    data = spec().model_dump(by_alias=True, exclude_none=True)
    data["labels"]["component"] = component
    return resources.RemediationWorkflowSpec.model_validate(data)


@pytest.mark.parametrize(
    "component", [["deployment"], ["apps/v1/Deployment"], ["*"], ["statefulset", "deployment"]]
)
def test_a_component_that_admits_the_targets_kind_is_accepted(component: list[str]) -> None:
    assert run_target(answer(), index=make_catalog(component_spec(component))).valid


@pytest.mark.parametrize("component", [["node"], ["v1/Pod"], ["batch/v1/Deployment"]])
def test_a_component_that_does_not_admit_the_targets_kind_is_a_mismatch(component: list[str]) -> None:
    verdict = run_target(answer(), index=make_catalog(component_spec(component)))
    assert verdict.rules_failed == ["component_mismatch"]
    assert "Deployment production/payment-api" in verdict.errors[0]
    assert_user_facing(verdict)


def run_inferred(raw: dict[str, Any], *candidates: str) -> validation.Verdict:
    """An answer for a workflow acting on ConfigMaps, with the ConfigMaps the caller inferred."""
    where = target_scope()
    found = tuple(where.resolve(kind="ConfigMap", name=name) for name in candidates)
    return validation.validate(
        raw=raw,
        truncated=False,
        catalog=make_catalog(component_spec(["v1/ConfigMap"])),
        seen={OOM: {"1.0.0"}},
        business=PRODUCTION_LOW,
        recovery=None,
        scope=where,
        inferred=scope.Inference(kinds=("ConfigMap",), candidates=found),
    )


def test_an_inferred_target_is_the_target_with_a_warning() -> None:
    verdict = run_inferred(
        answer(affected_resource={"kind": "Unknown", "name": "unknown"}), "payment-settings"
    )
    assert verdict.valid, verdict.errors
    assert verdict.target == target_scope().resolve(kind="ConfigMap", name="payment-settings")
    assert [w for w in verdict.warnings if w.startswith("[inferred_target]")] == [
        "[inferred_target] affected_resource named no object; the workflow acts on ConfigMap and "
        "ConfigMap production/payment-settings is the only one the incident concerns: it is the target."
    ]


@pytest.mark.parametrize("found", [(), ("settings-a", "settings-b")])
def test_without_exactly_one_candidate_the_mismatch_stays_and_names_what_the_incident_concerns(
    found: tuple[str, ...],
) -> None:
    verdict = run_inferred(answer(), *found)
    assert verdict.rules_failed == ["component_mismatch"]
    assert verdict.target == target_scope().incident
    assert "affected_resource names no object" in verdict.errors[0]
    assert ("2 ConfigMap objects" if found else "no ConfigMap") in verdict.errors[0]
    assert_user_facing(verdict)


def helm_spec() -> resources.RemediationWorkflowSpec:
    data = spec().model_dump(by_alias=True, exclude_none=True)
    data["detectedLabels"] = {"helmManaged": True}
    return resources.RemediationWorkflowSpec.model_validate(data)


def test_detected_labels_met_by_the_targets_facts_are_accepted() -> None:
    verdict = run_target(
        answer(), index=make_catalog(helm_spec()), facts=catalog.TargetFacts(helm_managed=True)
    )
    assert verdict.valid, verdict.errors


@pytest.mark.parametrize("facts", [None, catalog.TargetFacts(helm_managed=False)])
def test_detected_labels_unmet_or_unknown_make_the_workflow_ineligible(
    facts: catalog.TargetFacts | None,
) -> None:
    verdict = run_target(answer(), index=make_catalog(helm_spec()), facts=facts)
    assert verdict.rules_failed == ["policy"]
    assert "helmManaged" in verdict.errors[0]


def node_scope() -> tuple[scope.Scope, scope.ObjectRef]:
    incident = resources.ResourceRef(kind="Deployment", name="payment-api", namespace="production")
    bare = scope.Scope.of(incident, cluster=True, kinds=tools.target_kinds())
    node = bare.resolve(kind="Node", name="worker-2")
    return scope.Scope.of(
        incident, cluster=True, kinds=tools.target_kinds(), related={node.key: "Node worker-2"}
    ), node


def run_on(where: scope.Scope, raw: dict[str, Any], index: catalog.Catalog) -> validation.Verdict:
    return validation.validate(
        raw=raw,
        truncated=False,
        catalog=index,
        seen={OOM: {"1.0.0"}},
        business=PRODUCTION_LOW,
        recovery=None,
        scope=where,
    )


def test_a_cluster_scoped_target_fills_no_namespace_and_does_not_miss_one() -> None:
    params = [
        param("TARGET_NAMESPACE", required=True),
        param("TARGET_RESOURCE_NAMESPACE", required=True),
        param("TARGET_RESOURCE_KIND", required=True),
        param("TARGET_RESOURCE_NAME", required=True),
        param("MEMORY_LIMIT_NEW", required=True),
    ]
    data = spec(parameters=params).model_dump(by_alias=True, exclude_none=True)
    data["labels"]["component"] = ["v1/Node", "apps/v1/Deployment"]
    index = make_catalog(resources.RemediationWorkflowSpec.model_validate(data))
    where, _ = node_scope()
    verdict = run_on(where, answer(affected_resource={"kind": "Node", "name": "worker-2"}), index)
    assert verdict.valid, verdict.errors
    assert (
        "TARGET_RESOURCE_NAMESPACE" not in verdict.parameters and "TARGET_NAMESPACE" not in verdict.parameters
    )
    assert verdict.parameters["TARGET_RESOURCE_NAME"] == "worker-2"


def test_a_node_scoped_workflow_on_a_node_the_incident_does_not_concern_is_refused() -> None:
    data = spec().model_dump(by_alias=True, exclude_none=True)
    data["labels"]["component"] = ["v1/Node"]
    index = make_catalog(resources.RemediationWorkflowSpec.model_validate(data))
    where, _ = node_scope()
    stranger = run_on(where, answer(affected_resource={"kind": "Node", "name": "control-plane-1"}), index)
    assert stranger.rules_failed == ["target_out_of_scope"]
    on_the_deployment = run_on(where, answer(), index)
    assert on_the_deployment.rules_failed == ["component_mismatch"]


def test_a_cluster_admin_binding_is_refused_by_policy_whatever_the_catalog_allows() -> None:
    """A catalog entry whose own pattern would admit it (or an injected instruction) cannot bind
    cluster-admin: the policy refuses it in the analysis, and so in the executor's re-check."""
    binder = resources.RemediationWorkflowSpec.model_validate(
        {
            "workflowId": "bind-role",
            "version": "1.0.0",
            "title": "Bind",
            "description": "Binds a role.",
            "labels": {"signalTypes": ["Forbidden"]},
            "riskLevel": "low",
            "parameters": [{"name": "ROLE_NAME", "type": "string", "required": True}],
            "execution": {"engine": "job", "containerImage": "registry.example/wf/bind:1"},
        }
    )
    index = catalog.Catalog([catalog.Workflow(name="bind-role-v1", spec=binder)])
    raw = answer("bind-role", parameters={"ROLE_NAME": "cluster-admin"})
    verdict = validation.validate(
        raw=raw, truncated=False, catalog=index, seen={"bind-role": {"1.0.0"}},
        business=resources.BusinessContext(), recovery=None,
    )  # fmt: skip
    assert not verdict.valid and any(
        e.startswith("[policy]") and "cluster-admin" in e for e in verdict.errors
    )
    fine = answer("bind-role", parameters={"ROLE_NAME": "reader"})
    ok = validation.validate(
        raw=fine, truncated=False, catalog=index, seen={"bind-role": {"1.0.0"}},
        business=resources.BusinessContext(), recovery=None,
    )  # fmt: skip
    assert ok.valid, ok.errors


def test_the_configured_role_deny_list_holds_in_the_analysis_and_in_the_executor_s_recheck() -> None:
    binder = resources.RemediationWorkflowSpec.model_validate(
        {
            "workflowId": "bind-role", "version": "1.0.0", "title": "Bind", "description": "Binds a role.",
            "labels": {"signalTypes": ["Forbidden"]}, "riskLevel": "low",
            "parameters": [{"name": "ROLE_NAME", "type": "string", "required": True}],
            "execution": {"engine": "job", "containerImage": "registry.example/wf/bind:1"},
        }
    )  # fmt: skip
    flow = catalog.Workflow(name="bind-role-v1", spec=binder)
    raw = answer("bind-role", parameters={"ROLE_NAME": "team-a-breakglass"})
    verdict = validation.validate(
        raw=raw, truncated=False, catalog=catalog.Catalog([flow]), seen={"bind-role": {"1.0.0"}},
        business=resources.BusinessContext(), recovery=None, privileged_roles=("team-*-breakglass",),
    )  # fmt: skip
    assert not verdict.valid and any("team-a-breakglass" in e for e in verdict.errors), verdict.errors
    chosen = resources.SelectedWorkflow(
        workflow_id="bind-role", version="1.0.0", container_image="registry.example/wf/bind:1",
        confidence=0.9, rationale="-", parameters={"ROLE_NAME": "team-a-breakglass"},
    )  # fmt: skip
    again = validation.revalidate(
        chosen, workflow=flow, business=resources.BusinessContext(), recovery=None, target=None,
        privileged_roles=("team-*-breakglass",),
    )  # fmt: skip
    assert not again.valid and any(e.startswith("[policy]") for e in again.errors), again.errors


def test_alternatives_are_only_eligible_workflows_shown_in_this_conversation() -> None:
    """Injected text pushed an out-of-policy workflow into alternativeWorkflows (9 of 10 cases):
    an alternative must have been shown by a catalog tool and be eligible for the incident."""
    index = make_catalog(
        spec(),
        spec(RESTART, parameters=[param("TARGET_NAMESPACE", required=True)]),
        spec("drain-node", risk="high"),
        spec("never-shown"),
    )
    alternatives = [
        {"workflow_id": RESTART, "confidence": 0.4},
        {"workflow_id": "drain-node", "confidence": 0.3},
        {"workflow_id": "never-shown", "confidence": 0.2},
    ]
    seen = {OOM: {"1.0.0"}, RESTART: {"1.0.0"}, "drain-node": {"1.0.0"}}
    verdict = run(answer(alternative_workflows=alternatives), index=index, seen=seen)
    assert verdict.valid, verdict.errors
    assert verdict.answer is not None
    assert [a.workflow_id for a in verdict.answer.alternative_workflows] == [RESTART]
    assert any("'drain-node'" in w and "not eligible" in w for w in verdict.warnings)
    assert any("'never-shown'" in w and "not shown" in w for w in verdict.warnings)
