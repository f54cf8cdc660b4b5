"""DD-CONTEXT-005: the incident's business context decides which workflows are eligible, in the
policy function the validator uses AND in the search the LLM uses; the LLM can only narrow."""

from __future__ import annotations

import itertools
import random

import pytest

from aianalysis import catalog, resources
from aianalysis.catalog import policy

from .test_catalog import business, catalog_of, ids, spec

PROD_P1_PAYMENTS = business(environment="production", priority="P1", business_category="payments")
LABELS = [
    ("environment", "production", "staging"),
    ("priority", "P1", "P3"),
    ("business_category", "payments", "search"),
]


@pytest.mark.parametrize(("label", "incident_value", "other_value"), LABELS)
def test_a_restricting_label_must_admit_the_incident_value(
    label: str, incident_value: str, other_value: str
) -> None:
    incident = business(**{label: incident_value})
    assert policy.ineligibility(spec("wf", **{label: [other_value, incident_value]}), incident) == []
    reasons = policy.ineligibility(spec("wf", **{label: [other_value]}), incident)
    assert len(reasons) == 1
    assert incident_value in reasons[0]
    assert other_value in reasons[0]


@pytest.mark.parametrize(("label", "incident_value", "other_value"), LABELS)
def test_an_absent_or_empty_label_list_admits_any_incident(
    label: str, incident_value: str, other_value: str
) -> None:
    incident = business(**{label: incident_value})
    assert policy.ineligibility(spec("wf"), incident) == []
    assert policy.ineligibility(spec("wf", **{label: []}), incident) == []


@pytest.mark.parametrize(("label", "incident_value", "other_value"), LABELS)
def test_an_incident_without_the_value_only_gets_workflows_that_do_not_restrict_it(
    label: str, incident_value: str, other_value: str
) -> None:
    unknown = business()
    reasons = policy.ineligibility(spec("wf", **{label: [incident_value]}), unknown)
    assert len(reasons) == 1
    assert "the incident has no" in reasons[0]
    assert policy.ineligibility(spec("wf"), unknown) == []
    found = catalog_of(spec("restricted", **{label: [incident_value]}), spec("unrestricted"))
    assert ids(found.search(catalog.SearchQuery(signal_type="OOMKilled"), business=unknown)) == [
        "unrestricted"
    ]


def test_label_values_compare_case_insensitively() -> None:
    incident = business(environment="Production", priority="P1", business_category="PAYMENTS")
    workflow = spec("wf", environment=[" production"], priority=["p1"], business_category=["Payments"])
    assert policy.ineligibility(workflow, incident) == []


@pytest.mark.parametrize(
    ("risk", "tolerance"), list(itertools.product(resources.RISK_ORDER, resources.RISK_ORDER))
)
def test_risk_level_must_not_exceed_risk_tolerance(risk: str, tolerance: str) -> None:
    reasons = policy.ineligibility(spec("wf", risk=risk), business(risk_tolerance=tolerance))
    allowed = resources.RISK_ORDER[risk] <= resources.RISK_ORDER[tolerance]
    assert reasons == (
        [] if allowed else [f"riskLevel {risk} exceeds the incident's risk tolerance {tolerance}"]
    )


def test_every_violated_rule_is_reported() -> None:
    workflow = spec("wf", risk="high", environment=["staging"], priority=["P3"], business_category=["search"])
    reasons = policy.ineligibility(workflow, PROD_P1_PAYMENTS)
    assert [reason.split(" ")[0] for reason in reasons] == [
        "environment",
        "priority",
        "businessCategory",
        "riskLevel",
    ]


# ---- the search applies the policy whatever the LLM asks -----------------------------------

MIXED = catalog_of(
    spec("prod-low", environment=["production"]),
    spec("staging-low", environment=["staging"]),
    spec("any-medium", risk="medium"),
    spec("any-high", risk="high"),
    spec("prod-p1-payments", environment=["production"], priority=["P1"], business_category=["payments"]),
)


def search(incident: resources.BusinessContext, **query: str) -> list[str]:
    return sorted(ids(MIXED.search(catalog.SearchQuery(signal_type="OOMKilled", **query), business=incident)))


def test_search_returns_only_eligible_workflows() -> None:
    assert search(PROD_P1_PAYMENTS) == ["prod-low", "prod-p1-payments"]


def test_llm_asking_for_another_environment_gets_nothing_not_a_wider_set() -> None:
    assert search(PROD_P1_PAYMENTS, environment="staging") == []
    assert search(PROD_P1_PAYMENTS, priority="P0") == []
    assert search(PROD_P1_PAYMENTS, business_category="search") == []


def test_llm_repeating_the_incident_values_changes_nothing() -> None:
    repeated = search(PROD_P1_PAYMENTS, environment="PRODUCTION", priority="P1", business_category="payments")
    assert repeated == search(PROD_P1_PAYMENTS)


def test_llm_asking_for_more_risk_gets_the_incident_risk_tolerance() -> None:
    assert search(PROD_P1_PAYMENTS, risk_tolerance="high") == ["prod-low", "prod-p1-payments"]
    assert "any-high" not in search(
        business(environment="production", risk_tolerance="medium"), risk_tolerance="high"
    )


def test_llm_may_narrow_the_risk_tolerance() -> None:
    tolerant = business(environment="production", risk_tolerance="high")
    assert search(tolerant) == ["any-high", "any-medium", "prod-low"]
    assert search(tolerant, risk_tolerance="low") == ["prod-low"]


def test_llm_value_where_the_incident_has_none_cannot_unlock_restricted_workflows() -> None:
    assert search(business(), environment="staging") == []
    assert search(business(risk_tolerance="high"), environment="staging") == ["any-high", "any-medium"]


def test_narrow_explains_conflicts_for_the_tool_to_report() -> None:
    narrowing = policy.narrow(PROD_P1_PAYMENTS, environment="staging", risk_tolerance="high")
    assert narrowing.business.risk_tolerance == "low"
    assert len(narrowing.conflicts) == 1
    assert "'production'" in narrowing.conflicts[0]
    assert "'staging'" in narrowing.conflicts[0]


def test_search_filter_agrees_with_the_policy_function_on_random_catalogs() -> None:
    """The search uses precomputed bitsets, the validator uses ``ineligibility``: they must agree
    for every combination, or the LLM would be shown workflows the validator then rejects."""
    rng = random.Random(1234)
    values = {
        "environment": ["production", "staging", "development"],
        "priority": ["P0", "P1", "P2"],
        "business_category": ["payments", "search"],
    }

    def labels() -> dict[str, list[str] | None]:
        return {
            label: rng.choice([None, [], rng.sample(options, rng.randint(1, len(options)))])
            for label, options in values.items()
        }

    specs = [
        spec(
            f"wf-{n:02d}", f"1.0.{rng.randint(0, 3)}", risk=rng.choice(list(resources.RISK_ORDER)), **labels()
        )
        for n in range(80)
    ]
    found = catalog_of(*specs)
    incidents = [
        business(environment=env, priority=prio, business_category=cat, risk_tolerance=risk)
        for env in [None, *values["environment"]]
        for prio in [None, *values["priority"]]
        for cat in [None, *values["business_category"]]
        for risk in resources.RISK_ORDER
    ]
    for incident in incidents:
        hits = found.search(catalog.SearchQuery(top_k=100, all_versions=True), business=incident)
        expected = sorted(s.workflow_id for s in specs if not policy.ineligibility(s, incident))
        assert sorted(ids(hits)) == expected, incident


@pytest.mark.parametrize(
    "value",
    [
        "cluster-admin", "admin", "edit", "Admin", " edit ", "system:masters",
        "system:aggregate-to-edit", "system:controller:clusterrole-aggregation-controller",
        "ClusterRole/admin", "rbac.authorization.k8s.io/ClusterRole/cluster-admin",
        '["view","cluster-admin"]', "view,edit",
    ],
)  # fmt: skip
def test_roles_that_hand_over_a_namespace_or_the_cluster_are_never_bound(value: str) -> None:
    """``admin`` and ``edit`` hand a namespace over (edit reads its Secrets and runs Pods as any of
    its ServiceAccounts), ``system:*`` roles are the control plane's own; in any spelling, in a list."""
    assert policy.privileged_binding({"ROLE_NAME": value}), value
    assert policy.privileged_binding({"CLUSTER_ROLE": value}), value


def test_ordinary_roles_may_be_bound() -> None:
    for value in ("view", "reader", "pod-restarter", "editor-of-dashboards", "administrator-notes"):
        assert policy.privileged_binding({"ROLE_NAME": value}) == [], value


def test_more_roles_are_denied_by_configuration() -> None:
    """The operator's own roles (an approver binding is a self-approval) and whatever the admin adds,
    as names or globs."""
    also = ("aianalysis-operator*", "team-*-breakglass")
    assert policy.privileged_binding({"ROLE_NAME": "aianalysis-operator-approver"}, also=also)
    assert policy.privileged_binding({"ROLE_NAME": "team-a-breakglass"}, also=also)
    assert policy.privileged_binding({"ROLE_NAME": "team-a-reader"}, also=also) == []
