"""The index's bounded search (posting lists cut to the candidates, top-k by confidence tiers with
early termination) returns exactly what a full scan of the documented ranking returns: the same
workflows, the same order, bit-identical confidences. The reference below is the previous
implementation's way: score every candidate from its own terms, sort everything, take the top k.

Checked on the shipped catalog with queries from the shipped scenarios, and on a generated
10,000-workflow catalog (``bench/catalog_search.py``) after churn (removals and re-additions move
posting lists between their array and bitset forms) with all three bench query profiles.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest
from bench import catalog_search

from aianalysis import catalog, resources
from aianalysis.catalog import index, model
from aianalysis.evaluation import suite

ROOT = Path(__file__).resolve().parents[2]


def reference(
    found: index.Index, query: model.SearchQuery, business: resources.BusinessContext
) -> list[model.SearchHit]:
    """Full scan: every candidate scored from its own title / description / whenNotToUse terms."""
    every_version = found._candidates(dataclasses.replace(query, all_versions=True), business=business)
    slots = [i for i, bit in enumerate(reversed(bin(every_version)[2:])) if bit == "1"]
    if not query.all_versions:
        highest: dict[str, int] = {}
        for i in slots:
            entry = found._entry(i)
            held = highest.get(entry.workflow_id)
            if held is None or entry.version_key > found._entry(held).version_key:
                highest[entry.workflow_id] = i
        slots = sorted(highest.values())
    wanted = found._wanted_signals(query)
    terms = found._weighted_terms(query.text, wanted)
    if not wanted and not terms:
        listed = sorted((found._entry(i).rank, i) for i in slots)
        return [found._hit(i, 0.0) for _, i in listed[: query.top_k]]
    total = sum(weight for _, weight in terms)
    denominator = index.SIGNAL_WEIGHT * bool(wanted) + index.TEXT_WEIGHT * bool(terms)
    candidates = sum(1 << i for i in slots)
    signalled = found._signalled(candidates, wanted)
    signalled_slots = {i for i, bit in enumerate(reversed(bin(signalled)[2:])) if bit == "1"}
    scored = []
    for i in slots:
        title, description, negative = _terms(found, i)
        matched = 0.0
        for term, weight in terms:
            if term in title:
                matched += weight * index.TITLE_MATCH
            elif term in description:
                matched += weight * index.DESCRIPTION_MATCH
            elif term in negative:
                matched += weight * index.NOT_MATCH
        signal = i in signalled_slots
        if signal or matched > 0.0:
            share = matched / total if terms else 0.0
            confidence = min(1.0, (index.SIGNAL_WEIGHT * signal + index.TEXT_WEIGHT * share) / denominator)
            scored.append((-confidence, found._entry(i).rank, i))
    scored.sort()
    return [found._hit(i, -negative) for negative, _, i in scored[: query.top_k]]


_TERMS: dict[index.Index, dict[int, tuple[frozenset[str], frozenset[str], frozenset[str]]]] = {}


def _terms(found: index.Index, slot: int) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """A slot's terms, derived from its spec once per index (the indexes here never change after
    they are built; the cache holds each index, so no other one can take its place)."""
    known = _TERMS.setdefault(found, {})
    if slot not in known:
        known[slot] = found._entry(slot).terms()
    return known[slot]


def same(found: index.Index, query: model.SearchQuery, business: resources.BusinessContext) -> None:
    assert found.search(query, business=business) == reference(found, query, business), query


def test_the_shipped_catalog_ranks_the_shipped_incidents_as_a_full_scan_does() -> None:
    shipped = catalog.load_paths([ROOT / "examples" / "catalog"])
    found = index.Index()
    for workflow in shipped.all():
        found.add(workflow)
    scenarios = suite.load_scenarios([ROOT / "examples" / "eval"])
    assert len(scenarios) > 50
    for case in scenarios:
        signal = case.spec.signal
        words = " ".join(
            part for part in (signal.description, signal.error_message, signal.alert_name) if part
        )
        business = case.spec.business_context or resources.BusinessContext()
        for query in (
            catalog.SearchQuery(text=words, signal_type=signal.type),
            catalog.SearchQuery(text=f"{words} {signal.type}"),
            catalog.SearchQuery(text=words, top_k=3, all_versions=True),
            catalog.SearchQuery(signal_type=signal.type),
        ):
            same(found, query, business)


@pytest.fixture(scope="module")
def generated() -> tuple[index.Index, catalog_search.Vocabulary]:
    specs, vocabulary = catalog_search.synthetic_specs(10_000)
    found = index.Index()
    slots = [found.add(catalog.Workflow(name=name, spec=spec)) for name, spec in specs]
    rng = random.Random(3)
    removed = rng.sample(range(len(specs)), 1500)
    for number in removed:
        found.discard(slots[number])
    for number in removed[:700]:
        name, spec = specs[number]
        found.add(catalog.Workflow(name=name, spec=spec))
    return found, vocabulary


@pytest.mark.parametrize("profile", sorted(catalog_search.PROFILES))
def test_a_generated_10k_catalog_ranks_as_a_full_scan_does(
    generated: tuple[index.Index, catalog_search.Vocabulary], profile: str
) -> None:
    found, vocabulary = generated
    rng = random.Random(profile)
    for _ in range(15):
        query, business = catalog_search.PROFILES[profile](rng, vocabulary)
        for top_k in (1, 10, 100):
            same(found, dataclasses.replace(query, top_k=top_k, all_versions=rng.random() < 0.3), business)
