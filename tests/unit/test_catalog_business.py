"""Business context from a namespace's labels and annotations: Kubernaut-labelled namespaces work as
they are, what the spec states wins, and odd or huge label sets never break an analysis."""

from __future__ import annotations

from aianalysis import resources
from aianalysis.analysis import tools
from aianalysis.catalog import business
from aianalysis.evaluation.cluster import InMemoryCluster

KUBERNAUT_LABELLED = {
    "kubernaut.ai/environment": "Production",
    "kubernaut.ai/criticality": "high",
    "kubernaut.ai/business-unit": "payments",
    "kubernaut.ai/service-owner": "checkout-team",
    "kubernaut.ai/sla-tier": "tier-1",
    "kubernaut.ai/risk-tolerance": "medium",
    "kubernaut.ai/label-remediation_strategy": "rollback",
    "app.kubernetes.io/part-of": "shop",
}


def test_a_kubernaut_labelled_namespace_gives_every_field_and_custom_label() -> None:
    derived = business.from_metadata(KUBERNAUT_LABELLED, None)
    context = business.merge(None, derived)
    assert context.environment == "production"
    assert context.priority == "P1"
    assert context.business_category == "payments"
    assert context.risk_tolerance == "medium"
    assert context.custom_labels == {
        "criticality": "high",
        "remediation_strategy": "rollback",
        "risk_tolerance": "medium",
        "sla": "tier-1",
        "team": "checkout-team",
    }
    assert derived.ignored == []


def test_both_prefixes_by_default_labels_before_annotations_earlier_prefix_first() -> None:
    labels = {"kubernaut.io/environment": "staging", "kubernaut.ai/environment": "production"}
    annotations = {"kubernaut.io/team": "from-annotation", "kubernaut.ai/priority": "P2"}
    context = business.merge(None, business.from_metadata(labels, annotations))
    assert (context.environment, context.priority) == ("staging", "P2")
    assert context.custom_labels == {"team": "from-annotation"}


def test_other_prefixes_are_never_read_unless_configured() -> None:
    labels = {"example.com/environment": "production", "environment": "production"}
    assert business.from_metadata(labels, None).values == {}
    configured = business.from_metadata(labels, None, prefixes=("example.com/",))
    assert configured.values == {"environment": "production"}


def test_what_the_spec_states_wins_field_by_field_and_label_by_label() -> None:
    stated = resources.BusinessContext(environment="staging", custom_labels={"team": "sre"})
    context = business.merge(stated, business.from_metadata(KUBERNAUT_LABELLED, None))
    assert context.environment == "staging"
    assert context.priority == "P1"
    assert context.custom_labels is not None
    assert context.custom_labels["team"] == "sre" and context.custom_labels["sla"] == "tier-1"


def test_values_outside_the_vocabulary_are_ignored_and_reported() -> None:
    labels = {"kubernaut.ai/priority": "urgent", "kubernaut.ai/risk-tolerance": "yolo"}
    derived = business.from_metadata(labels, None)
    context = business.merge(None, derived)
    assert context.priority is None and context.risk_tolerance == "low"
    assert len(derived.ignored) == 2 and "urgent" in derived.ignored[0]


def test_a_huge_label_set_is_bounded() -> None:
    labels = {f"kubernaut.ai/label-k{n:04d}": "v" * 5000 for n in range(500)}
    labels["kubernaut.ai/" + "x" * 300] = "too long a key"
    derived = business.from_metadata(labels, None)
    custom = business.merge(None, derived).custom_labels or {}
    assert len(custom) == business.MAX_CUSTOM_LABELS
    assert all(len(value) <= business.MAX_VALUE_CHARS for value in custom.values())
    assert any("beyond the first" in why for why in derived.ignored)


# ---- at analysis time (tools.with_business_context) ------------------------------------------------

SPEC = resources.AIAnalysisSpec.model_validate(
    {
        "signal": {"type": "CrashLoopBackOff", "severity": "critical"},
        "resource": {"kind": "Deployment", "name": "worker", "namespace": "checkout"},
        "businessContext": {"priority": "P0"},
    }
)


async def test_the_analysis_completes_the_specs_context_from_its_namespace() -> None:
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "checkout", "labels": KUBERNAUT_LABELLED},
    }
    spec, warnings = await tools.with_business_context(InMemoryCluster([namespace]), SPEC)
    assert spec.business_context.environment == "production"
    assert spec.business_context.priority == "P0"  # the spec's
    assert (spec.business_context.custom_labels or {})["risk_tolerance"] == "medium"
    assert warnings == []


async def test_a_vanished_namespace_leaves_the_specs_context_and_says_why() -> None:
    spec, warnings = await tools.with_business_context(InMemoryCluster([]), SPEC)
    assert spec == SPEC
    assert len(warnings) == 1 and "namespace checkout could not be read" in warnings[0]
