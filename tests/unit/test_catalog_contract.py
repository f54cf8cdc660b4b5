"""The catalog model real catalogs fit: typed values, severity synonyms, action types, guidance,
customLabels, detectedLabels, lifecycle and version-aware eligibility, through search and the
LLM's catalog tools."""

from __future__ import annotations

import json
from typing import Any

import pytest

from aianalysis import catalog, resources
from aianalysis.analysis import tools

ANY = resources.BusinessContext(risk_tolerance="high")


def spec(workflow_id: str, version: str = "1.0.0", **fields: Any) -> resources.RemediationWorkflowSpec:
    """A spec from wire (camelCase) fields; labels default to no signal types + an action type."""
    wire: dict[str, Any] = {
        "workflowId": workflow_id,
        "version": version,
        "title": workflow_id.replace("-", " "),
        "description": f"Runs {workflow_id}.",
        "labels": {},
        "actionType": "RestartPod",
        "riskLevel": "low",
        "execution": {"containerImage": f"registry.example/{workflow_id}:{version}"},
    }
    wire.update(fields)
    return resources.RemediationWorkflowSpec.model_validate(wire)


def catalog_of(*specs: resources.RemediationWorkflowSpec) -> catalog.Catalog:
    found = catalog.Catalog()
    for entry in specs:
        found.upsert(f"{entry.workflow_id}-{entry.version}".replace(".", "-"), entry)
    return found


def ids(hits: list[catalog.SearchHit]) -> list[tuple[str, str]]:
    return [(hit.workflow_id, hit.version) for hit in hits]


# ---- model -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ptype", "typed", "text"),
    [("integer", 30, "30"), ("number", 0.5, "0.5"), ("number", 2.0, "2"), ("boolean", True, "true"),
     ("array", ["a", 1], '["a",1]'), ("string", "x", "x")],
)  # fmt: skip
def test_typed_defaults_and_enums_are_held_in_canonical_text(ptype: str, typed: object, text: str) -> None:
    param = resources.WorkflowParameter.model_validate(
        {"name": "P", "type": ptype, "default": typed, "enum": [typed]}
    )
    assert param.default == text and param.enum == [text]


def test_severity_synonyms_are_stored_as_the_severity_they_mean() -> None:
    labels = resources.WorkflowLabels.model_validate({"severity": ["warning", "info", "medium", "critical"]})
    assert labels.severity == ["medium", "low", "critical"]


def test_a_workflow_is_classified_by_signal_types_or_action_type() -> None:
    assert spec("a", labels={}).action_type == "RestartPod"
    with pytest.raises(ValueError, match="signalTypes or actionType"):
        spec("a", labels={}, actionType=None)


def test_warning_severity_search_finds_medium_workflows() -> None:
    found = catalog_of(spec("restart", labels={"severity": ["warning"]}))
    assert ids(found.search(catalog.SearchQuery(severity="warning"), business=ANY)) == [("restart", "1.0.0")]
    assert ids(found.search(catalog.SearchQuery(severity="medium"), business=ANY)) == [("restart", "1.0.0")]
    assert found.search(catalog.SearchQuery(severity="critical"), business=ANY) == []


def test_gvk_components_are_found_by_lower_case_kind() -> None:
    found = catalog_of(
        spec("deploy", labels={"component": ["apps/v1/Deployment"]}),
        spec("anything", labels={"component": ["*"]}),
        spec("node", labels={"component": ["v1/Node"]}),
    )
    hits = found.search(catalog.SearchQuery(component="deployment"), business=ANY)
    assert sorted(ids(hits)) == [("anything", "1.0.0"), ("deploy", "1.0.0")]


# ---- eligibility -------------------------------------------------------------------------------


def test_custom_labels_match_exactly_and_wildcard_needs_the_label() -> None:
    found = catalog_of(
        spec("team-a", customLabels={"team": "payments"}),
        spec("any-team", customLabels={"team": "*"}),
        spec("open"),
    )

    def eligible(labels: dict[str, str] | None) -> list[str]:
        business = ANY.model_copy(update={"custom_labels": labels})
        return sorted(hit.workflow_id for hit in found.search(catalog.SearchQuery(), business=business))

    assert eligible({"team": "payments"}) == ["any-team", "open", "team-a"]
    assert eligible({"team": "Payments"}) == ["any-team", "open"]
    assert eligible({"team": "search"}) == ["any-team", "open"]
    assert eligible(None) == ["open"]


def test_the_risk_tolerance_custom_label_is_the_incidents_risk_tolerance() -> None:
    # Kubernaut's workflows for low- and high-tolerance teams carry it as a custom label.
    found = catalog_of(
        spec("for-careful-teams", customLabels={"risk_tolerance": "low"}),
        spec("for-bold-teams", customLabels={"risk_tolerance": "high"}),
    )

    def eligible(incident: resources.BusinessContext, *, narrowed: str | None = None) -> list[str]:
        query = catalog.SearchQuery(risk_tolerance=narrowed)
        searched = sorted(hit.workflow_id for hit in found.search(query, business=incident))
        shown = sorted(
            w for w in ("for-careful-teams", "for-bold-teams") if found.eligible(w, business=incident)
        )
        assert searched == shown, "search and details must agree"
        return searched

    assert eligible(resources.BusinessContext()) == ["for-careful-teams"]  # the default tolerance: low
    assert eligible(resources.BusinessContext(risk_tolerance="high")) == ["for-bold-teams"]
    # A lower tolerance asked for by the search filters risk levels; it does not turn the incident
    # into one of a careful team's (the validator would refuse what it showed).
    assert eligible(resources.BusinessContext(risk_tolerance="high"), narrowed="low") == ["for-bold-teams"]
    # A label the incident states itself is matched as stated.
    stated = resources.BusinessContext(risk_tolerance="low", custom_labels={"risk_tolerance": "high"})
    assert eligible(stated) == ["for-bold-teams"]


def test_detected_labels_filter_search_by_the_targets_facts() -> None:
    found = catalog_of(spec("gitops-sync", detectedLabels={"gitOpsTool": "argocd"}), spec("open"))
    query = catalog.SearchQuery()
    argocd = catalog.TargetFacts(gitops_managed=True, gitops_tool="argocd")
    assert sorted(h.workflow_id for h in found.search(query, business=ANY, facts=argocd)) == [
        "gitops-sync",
        "open",
    ]
    flux = catalog.TargetFacts(gitops_tool="flux")
    assert [h.workflow_id for h in found.search(query, business=ANY, facts=flux)] == ["open"]
    assert [h.workflow_id for h in found.search(query, business=ANY)] == ["open"]


def test_disabled_is_never_offered_and_deprecated_is_flagged() -> None:
    found = catalog_of(spec("old", lifecycle="Deprecated"), spec("off", lifecycle="Disabled"))
    hits = found.search(catalog.SearchQuery(text="old off"), business=ANY)
    assert [(h.workflow_id, h.deprecated) for h in hits] == [("old", True)]
    assert found.eligible("off", business=ANY) is None
    assert catalog.policy.ineligibility(found.get("off").spec, ANY) == ["lifecycle is Disabled"]  # type: ignore[union-attr]


def test_a_newer_ineligible_version_does_not_hide_an_older_eligible_one() -> None:
    found = catalog_of(
        spec("restart", "1.0.0", riskLevel="low"),
        spec("restart", "2.0.0", riskLevel="high"),
        spec("restart", "1.5.0", labels={"environment": ["staging"]}),
    )
    low = resources.BusinessContext(risk_tolerance="low", environment="production")
    assert ids(found.search(catalog.SearchQuery(), business=low)) == [("restart", "1.0.0")]
    assert found.eligible("restart", business=low).version == "1.0.0"  # type: ignore[union-attr]
    assert found.eligible("restart", "2.0.0", business=low) is None
    assert ids(found.search(catalog.SearchQuery(), business=ANY)) == [("restart", "2.0.0")]


# ---- ranking -----------------------------------------------------------------------------------


def test_action_type_is_a_hard_filter_and_its_words_are_searchable() -> None:
    found = catalog_of(
        spec("raise-memory", actionType="IncreaseMemoryLimits", title="Raise limits"),
        spec("bounce", actionType="RestartPod", title="Bounce"),
    )
    assert ids(found.search(catalog.SearchQuery(action_type="increasememorylimits"), business=ANY)) == [
        ("raise-memory", "1.0.0")
    ]
    assert [h.workflow_id for h in found.search(catalog.SearchQuery(text="memory"), business=ANY)] == [
        "raise-memory"
    ]


def test_when_not_to_use_ranks_a_look_alike_below_the_right_workflow() -> None:
    shared = "Restart the pods of a workload whose containers keep failing."
    found = catalog_of(
        spec(
            "restart-pods",
            title="Restart pods",
            description=shared,
            guidance={"whenToUse": "transient crash", "whenNotToUse": "the container was OOMKilled"},
        ),
        spec(
            "restart-pods-after-oom",
            title="Restart pods",
            description=shared,
            guidance={"whenToUse": "after an OOMKilled container got more memory"},
        ),
    )
    hits = found.search(catalog.SearchQuery(text="restart pods OOMKilled container"), business=ANY)
    assert [h.workflow_id for h in hits] == ["restart-pods-after-oom", "restart-pods"]
    assert hits[0].confidence > hits[1].confidence


def test_a_signal_type_admits_workflows_classified_only_by_action_type() -> None:
    found = catalog_of(
        spec("oom-memory", actionType="IncreaseMemoryLimits", guidance={"whenToUse": "OOMKilled containers"}),
        spec("labelled", labels={"signalTypes": ["OOMKilled"]}, actionType=None, title="labelled"),
        spec("unrelated", title="rotate certificates"),
    )
    hits = found.search(catalog.SearchQuery(signal_type="OOMKilled", text="memory"), business=ANY)
    assert sorted(h.workflow_id for h in hits) == ["labelled", "oom-memory"]


# ---- tools -------------------------------------------------------------------------------------


def _box(found: catalog.Catalog, *, facts: catalog.TargetFacts | None = None) -> tools.ToolBox:
    analysis = resources.AIAnalysisSpec.model_validate(
        {
            "signal": {"type": "OOMKilled", "severity": "high"},
            "resource": {"kind": "Deployment", "name": "api", "namespace": "shop"},
            "businessContext": {"riskTolerance": "high"},
        }
    )
    return tools.ToolBox(spec=analysis, catalog=found, reader=None, max_chars=20_000, facts=facts)


async def test_list_action_types_counts_eligible_workflows_with_a_meaning() -> None:
    found = catalog_of(
        spec("raise-memory", actionType="IncreaseMemoryLimits"),
        spec(
            "raise-memory-gitops", actionType="IncreaseMemoryLimits", detectedLabels={"gitOpsManaged": True}
        ),
        spec("bounce", actionType="RestartPod"),
        spec("bounce", "2.0.0", actionType="RestartPod"),
        spec("custom", actionType="FlushQueue", title="Flush the work queue"),
        spec("off", actionType="DrainNode", lifecycle="Disabled"),
    )
    result = await _box(found).call("list_action_types", {})
    payload = json.loads(result.text)
    assert payload["action_types"] == [
        {"action_type": "FlushQueue", "meaning": "Flush queue (e.g. Flush the work queue).", "workflows": 1},
        {"action_type": "IncreaseMemoryLimits", "meaning": catalog.actions.KNOWN["IncreaseMemoryLimits"],
         "workflows": 1},
        {"action_type": "RestartPod", "meaning": catalog.actions.KNOWN["RestartPod"], "workflows": 1},
    ]  # fmt: skip
    gitops = await _box(found, facts=catalog.TargetFacts(gitops_managed=True)).call("list_action_types", {})
    counts = {row["action_type"]: row["workflows"] for row in json.loads(gitops.text)["action_types"]}
    assert counts["IncreaseMemoryLimits"] == 2


async def test_the_catalog_is_filtered_for_the_target_the_llm_names() -> None:
    """An incident about a Node: what decides GitOps-only workflows is the object to change, as the
    validator will judge it, once the LLM names it (and only if it may be the target)."""
    found = catalog_of(spec("revert", detectedLabels={"gitOpsTool": "*"}), spec("open"))
    asked: list[dict[str, object]] = []

    async def facts_of(affected: dict[str, object], returned: frozenset[Any]) -> catalog.TargetFacts | str:
        del returned
        asked.append(affected)
        if affected["name"] == "elsewhere":
            return "affected_resource Deployment other/elsewhere is outside the incident's namespace"
        return catalog.TargetFacts(gitops_managed=True, gitops_tool="argocd")

    box = tools.ToolBox(
        spec=resources.AIAnalysisSpec.model_validate(
            {"signal": {"type": "OOMKilled", "severity": "high"}, "resource": {"kind": "Node", "name": "w-1"}}
        ),
        catalog=found,
        reader=None,
        max_chars=20_000,
        facts=catalog.TargetFacts(gitops_managed=False),
        target_facts=facts_of,
    )

    async def offered(**arguments: Any) -> list[str]:
        result = await box.call("search_workflow_catalog", arguments)
        assert not result.is_error, result.text
        return sorted(hit["workflow_id"] for hit in json.loads(result.text)["workflows"])

    assert await offered() == ["open"]
    refused = await box.call(
        "search_workflow_catalog", {"affected_resource": {"kind": "Deployment", "name": "elsewhere"}}
    )
    assert refused.is_error and "outside the incident's namespace" in refused.text
    assert await offered() == ["open"]  # a refused target changes nothing
    ingest = {"kind": "Deployment", "name": "ingest", "namespace": "data"}
    assert await offered(affected_resource=ingest) == ["open", "revert"]
    assert not (await box.call("get_workflow_details", {"workflow_id": "revert"})).is_error  # kept
    assert asked[-1] == ingest


async def test_without_a_cluster_no_target_can_be_named_to_the_catalog() -> None:
    result = await _box(catalog_of(spec("open"))).call(
        "list_action_types", {"affected_resource": {"kind": "Deployment", "name": "api"}}
    )
    assert result.is_error and "no cluster is attached" in result.text


async def test_details_show_guidance_system_filled_parameters_and_deprecation() -> None:
    found = catalog_of(
        spec(
            "raise-memory",
            actionType="IncreaseMemoryLimits",
            lifecycle="Deprecated",
            guidance={"whenToUse": "OOMKilled", "whenNotToUse": "memory leak", "preconditions": "limit set"},
            parameters=[
                {"name": "TARGET_RESOURCE_NAME", "type": "string", "required": True},
                {"name": "DEPLOYMENT", "type": "string", "required": True, "fromTarget": "name"},
                {"name": "MEMORY_LIMIT", "type": "integer", "default": 512},
            ],
        )
    )
    box = _box(found)
    payload = json.loads((await box.call("get_workflow_details", {"workflow_id": "raise-memory"})).text)
    assert payload["action_type"] == "IncreaseMemoryLimits"
    assert payload["guidance"] == {
        "when_to_use": "OOMKilled",
        "when_not_to_use": "memory leak",
        "preconditions": "limit set",
    }
    assert "Deprecated" in payload["warning"]
    params = {p["name"]: p for p in payload["parameters"]}
    assert params["TARGET_RESOURCE_NAME"]["filled_by"] == "system: target name"
    assert params["DEPLOYMENT"]["filled_by"] == "system: target name"
    assert "filled_by" not in params["MEMORY_LIMIT"] and params["MEMORY_LIMIT"]["default"] == "512"
    search = json.loads(
        (await box.call("search_workflow_catalog", {"action_type": "IncreaseMemoryLimits"})).text
    )
    assert search["workflows"][0]["warning"].startswith("Deprecated")
