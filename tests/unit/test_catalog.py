"""The catalog as the operator, the LLM's tools and the validator see it: versions, live updates,
and a search whose order and confidence a person can predict."""

from __future__ import annotations

import math
import random
import threading
import time
from typing import Any

import pytest

from aianalysis import catalog, resources
from aianalysis.catalog import semver

# ---- builders (also used by test_catalog_policy) -----------------------------------------------


def spec(
    workflow_id: str,
    version: str = "1.0.0",
    *,
    title: str | None = None,
    description: str | None = None,
    signals: list[str] | None = None,
    risk: str = "low",
    action_type: str | None = None,
    guidance: dict[str, str] | None = None,
    extra: dict[str, Any] | None = None,
    **labels: Any,
) -> resources.RemediationWorkflowSpec:
    """``labels`` take snake_case keys: environment, priority, business_category, severity, component.
    ``extra``: further spec fields, camelCase as on the wire."""
    wire_labels = {"signalTypes": signals if signals is not None else ["OOMKilled"]}
    wire_labels.update({_camel(key): value for key, value in labels.items()})
    optional = {"actionType": action_type, "guidance": guidance}
    return resources.RemediationWorkflowSpec.model_validate(
        {
            **{key: value for key, value in optional.items() if value is not None},
            **(extra or {}),
            "workflowId": workflow_id,
            "version": version,
            "title": title or workflow_id.replace("-", " "),
            "description": description or f"Runs the {workflow_id} remediation.",
            "labels": wire_labels,
            "riskLevel": risk,
            "execution": {"containerImage": f"registry.example/wf/{workflow_id}:{version}"},
        }
    )


def catalog_of(*specs: resources.RemediationWorkflowSpec) -> catalog.Catalog:
    found = catalog.Catalog()
    for entry in specs:
        found.upsert(f"{entry.workflow_id}-{entry.version}".replace(".", "-"), entry)
    return found


def business(**fields: Any) -> resources.BusinessContext:
    return resources.BusinessContext(**fields)


def ids(hits: list[catalog.SearchHit]) -> list[str]:
    return [hit.workflow_id for hit in hits]


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


ANY = business(risk_tolerance="high")


def search(
    found: catalog.Catalog, text: str = "", *, business: resources.BusinessContext = ANY, **query: Any
) -> list[catalog.SearchHit]:
    return found.search(catalog.SearchQuery(text=text, **query), business=business)


# ---- versions ------------------------------------------------------------------------------


def test_semver_precedence_follows_the_spec() -> None:
    ordered = [
        "0.9.9",
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "1.0.0",
        "1.2.0",
        "1.10.0",
        "2.0.0",
    ]
    shuffled = ordered[::-1]
    random.Random(3).shuffle(shuffled)
    assert sorted(shuffled, key=semver.key) == ordered


def test_semver_rejects_what_is_not_a_version() -> None:
    with pytest.raises(ValueError, match="not a semantic version"):
        semver.key("v1.2")


def test_latest_is_the_highest_semver_and_a_prerelease_is_not_newer_than_its_release() -> None:
    found = catalog_of(
        spec("oom", "1.2.0"), spec("oom", "1.10.0"), spec("oom", "1.10.1-rc.1"), spec("oom", "1.9.0")
    )
    assert found.versions("oom") == ["1.2.0", "1.9.0", "1.10.0", "1.10.1-rc.1"]
    latest = found.get("oom")
    assert latest is not None
    assert latest.version == "1.10.1-rc.1"
    found.upsert("oom-release", spec("oom", "1.10.1"))
    assert found.get("oom", "latest") == found.get("oom", None)
    assert found.get("oom", "latest") is not None and found.get("oom", "latest").version == "1.10.1"  # type: ignore[union-attr]


def test_get_exact_version_and_unknowns() -> None:
    found = catalog_of(spec("oom", "1.0.0"), spec("oom", "2.0.0"))
    old = found.get("oom", "1.0.0")
    assert old is not None and old.version == "1.0.0" and old.name == "oom-1-0-0"
    assert found.get("oom", "3.0.0") is None
    assert found.get("oom", "1.0") is None
    assert found.get("nope") is None
    assert found.versions("nope") == []


# ---- live updates --------------------------------------------------------------------------


def test_upsert_remove_and_replace_by_object_name() -> None:
    found = catalog.Catalog()
    found.upsert("oom-v1", spec("oom", "1.0.0"))
    found.upsert("oom-v2", spec("oom", "2.0.0"))
    assert len(found) == 2
    assert ids(search(found, signal_type="OOMKilled")) == ["oom"]
    assert [hit.version for hit in search(found, signal_type="OOMKilled")] == ["2.0.0"]

    assert found.remove("oom-v2") is True
    assert found.remove("oom-v2") is False
    assert [hit.version for hit in search(found, signal_type="OOMKilled")] == ["1.0.0"]

    found.upsert("oom-v1", spec("oom", "1.5.0", title="Raise the memory limit"))
    assert found.versions("oom") == ["1.5.0"]
    assert [hit.title for hit in search(found, "memory")] == ["Raise the memory limit"]
    assert [w.name for w in found.all()] == ["oom-v1"]


def test_redelivering_an_unchanged_object_changes_nothing() -> None:
    found = catalog_of(spec("oom"))
    before = search(found, "oom")
    found.upsert("oom-1-0-0", spec("oom"))
    assert search(found, "oom") == before
    assert len(found) == 1


def test_two_objects_with_the_same_id_and_version_resolve_by_name_whatever_the_event_order() -> None:
    first, second = spec("oom", title="From object a"), spec("oom", title="From object b")
    for order in ([("b", second), ("a", first)], [("a", first), ("b", second)]):
        found = catalog.Catalog()
        for name, entry in order:
            found.upsert(name, entry)
        assert len(found) == 1
        assert found.get("oom") is not None and found.get("oom").spec.title == "From object a"  # type: ignore[union-attr]
        assert found.conflicts() == ["oom 1.0.0 is defined by objects a, b; using a"]
        found.remove("a")
        assert found.get("oom").spec.title == "From object b"  # type: ignore[union-attr]
        assert [hit.title for hit in search(found, signal_type="OOMKilled")] == ["From object b"]
        assert found.conflicts() == []


def test_all_lists_every_version_in_order() -> None:
    found = catalog_of(spec("b", "1.0.0"), spec("a", "2.0.0"), spec("a", "10.0.0"))
    assert [(w.workflow_id, w.version) for w in found.all()] == [
        ("a", "2.0.0"),
        ("a", "10.0.0"),
        ("b", "1.0.0"),
    ]


def test_concurrent_updates_and_searches_stay_consistent() -> None:
    found = catalog.Catalog()
    errors: list[BaseException] = []

    def writer(worker: int) -> None:
        try:
            for n in range(200):
                found.upsert(f"w{worker}-{n % 20}", spec(f"wf-{worker}-{n % 20}", f"1.0.{n}"))
                if n % 3 == 0:
                    found.remove(f"w{worker}-{(n + 7) % 20}")
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    def reader() -> None:
        try:
            for _ in range(300):
                for hit in search(found, "wf", signal_type="OOMKilled", top_k=50):
                    assert 0.0 <= hit.confidence <= 1.0
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(3)] + [
        threading.Thread(target=reader) for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    listed = sorted((w.workflow_id, w.version) for w in found.all())
    searched = sorted(
        (h.workflow_id, h.version)
        for h in search(found, signal_type="OOMKilled", top_k=100, all_versions=True)
    )
    assert searched == listed
    assert len(found) == len(listed)


# ---- ranking ----------------------------------------------------------------------------------


def test_latest_version_only_unless_all_versions_is_asked() -> None:
    found = catalog_of(spec("oom", "1.0.0"), spec("oom", "1.1.0"), spec("oom", "1.1.0-rc.1"))
    assert [(h.workflow_id, h.version) for h in search(found, "oom")] == [("oom", "1.1.0")]
    assert [h.version for h in search(found, "oom", all_versions=True)] == ["1.1.0", "1.1.0-rc.1", "1.0.0"]


def test_a_workflow_for_the_signal_type_ranks_above_one_that_only_mentions_it() -> None:
    found = catalog_of(
        spec("mentions-oom", title="Fix OOMKilled memory pressure", signals=["CrashLoopBackOff"]),
        spec("handles-oom", title="Restart the workload", signals=["OOMKilled"]),
    )
    hits = search(found, "OOMKilled memory pressure")
    assert ids(hits) == ["handles-oom", "mentions-oom"]
    assert hits[0].confidence == pytest.approx(0.6)


def test_signal_type_filter_is_exact_and_case_insensitive() -> None:
    found = catalog_of(spec("oom", signals=["OOMKilled"]), spec("crash", signals=["CrashLoopBackOff"]))
    assert ids(search(found, signal_type="oomkilled")) == ["oom"]
    assert ids(search(found, signal_type="OOMKill")) == []


def test_title_match_outranks_description_match() -> None:
    found = catalog_of(
        spec("in-description", title="Restart pods", description="Cordons and drains the node."),
        spec("in-title", title="Drain the node", description="Moves pods elsewhere."),
    )
    hits = search(found, "drain node")
    assert ids(hits) == ["in-title", "in-description"]
    assert [hit.confidence for hit in hits] == [pytest.approx(1.0), pytest.approx(0.5)]


def test_description_breaks_the_tie_between_equal_titles() -> None:
    found = catalog_of(
        spec("a-generic", title="Increase memory limit", description="Raises the limit of a container."),
        spec("b-jvm", title="Increase memory limit", description="Raises the limit and the JVM heap size."),
    )
    assert ids(search(found, "increase memory limit jvm heap")) == ["b-jvm", "a-generic"]


def test_rare_words_weigh_more_than_common_ones() -> None:
    found = catalog_of(
        spec("a-common", title="Restart pod"),
        spec("b-rare", title="Rotate certificate"),
        spec("c", title="Restart deployment pod"),
        spec("d", title="Restart job pod"),
    )
    assert ids(search(found, "restart certificate"))[0] == "b-rare"


def test_ties_break_by_workflow_id_then_newest_version_whatever_the_insertion_order() -> None:
    specs = [spec("b", "1.0.0"), spec("a", "1.0.0"), spec("a", "2.0.0"), spec("c", "0.1.0")]
    expected = [("a", "2.0.0"), ("a", "1.0.0"), ("b", "1.0.0"), ("c", "0.1.0")]
    for seed in range(5):
        random.Random(seed).shuffle(specs)
        hits = search(catalog_of(*specs), signal_type="OOMKilled", all_versions=True)
        assert [(h.workflow_id, h.version) for h in hits] == expected
        assert {h.confidence for h in hits} == {1.0}


def test_hard_filters_for_severity_and_component() -> None:
    found = catalog_of(
        spec("critical-deploy", severity=["critical"], component=["deployment"]),
        spec("low-node", severity=["low"], component=["node"]),
        spec("unrestricted"),
    )
    assert ids(search(found, signal_type="OOMKilled", severity="critical")) == [
        "critical-deploy",
        "unrestricted",
    ]
    assert ids(search(found, signal_type="OOMKilled", component="Deployment")) == [
        "critical-deploy",
        "unrestricted",
    ]
    assert ids(search(found, signal_type="OOMKilled", component="node", severity="critical")) == [
        "unrestricted"
    ]


def test_top_k_limits_and_query_validation() -> None:
    found = catalog_of(*(spec(f"wf-{n}") for n in range(12)))
    assert len(search(found, signal_type="OOMKilled")) == 10
    assert len(search(found, signal_type="OOMKilled", top_k=3)) == 3
    with pytest.raises(ValueError, match="top_k"):
        catalog.SearchQuery(top_k=0)
    with pytest.raises(ValueError, match="risk_tolerance"):
        catalog.SearchQuery(risk_tolerance="extreme")


def test_no_match_returns_nothing_and_an_empty_query_lists_eligible_workflows() -> None:
    found = catalog_of(spec("b"), spec("a"), spec("risky", risk="high"))
    assert search(found, "certificate rotation") == []
    listed = found.search(catalog.SearchQuery(), business=business())
    assert [(h.workflow_id, h.confidence) for h in listed] == [("a", 0.0), ("b", 0.0)]
    assert catalog.Catalog().search(catalog.SearchQuery(text="x"), business=ANY) == []


# ---- confidence ------------------------------------------------------------------------------


def test_confidence_is_one_for_the_signal_type_and_every_term_in_the_title() -> None:
    found = catalog_of(
        spec("oom", title="Increase memory limit"), spec("other", title="Restart", signals=["Evicted"])
    )
    assert search(found, "increase memory limits", signal_type="OOMKilled")[0].confidence == 1.0
    assert search(found, "OOMKilled increase memory limit")[0].confidence == 1.0
    assert search(found, signal_type="OOMKilled")[0].confidence == 1.0


def test_confidence_counts_signal_match_as_six_tenths_and_terms_as_the_rest() -> None:
    found = catalog_of(spec("oom", title="Restart workload", description="Restarts it."))
    assert search(found, "quota", signal_type="OOMKilled")[0].confidence == pytest.approx(0.6)
    # One workflow: idf = ln(1 + 2/(df+1)) → "restart" (in the title) ln 2, "quota" (nowhere) ln 3.
    restart, quota = math.log(2), math.log(3)
    assert search(found, "restart quota", signal_type="OOMKilled")[0].confidence == pytest.approx(
        0.6 + 0.4 * restart / (restart + quota)
    )
    assert search(found, "restart quota")[0].confidence == pytest.approx(restart / (restart + quota))


def test_unmatched_query_terms_lower_confidence() -> None:
    found = catalog_of(spec("oom", title="Increase memory limit"))
    exact = search(found, "memory limit")[0].confidence
    partial = search(found, "memory limit unclosed database connection")[0].confidence
    assert exact == 1.0
    assert 0.0 < partial < 0.5


def test_confidence_always_within_zero_and_one() -> None:
    rng = random.Random(99)
    words = [
        "memory",
        "limit",
        "restart",
        "drain",
        "node",
        "certificate",
        "rotate",
        "quota",
        "pod",
        "evicted",
    ]
    found = catalog_of(
        *(
            spec(
                f"wf-{n}",
                title=" ".join(rng.sample(words, 3)),
                description=" ".join(rng.sample(words, 6)),
                signals=[rng.choice(["OOMKilled", "Evicted"])],
            )
            for n in range(40)
        )
    )
    for _ in range(200):
        for hit in search(found, " ".join(rng.sample(words, rng.randint(1, 5))), top_k=50):
            assert 0.0 < hit.confidence <= 1.0


def test_search_hits_carry_the_minimal_schema() -> None:
    hit = search(catalog_of(spec("oom", title="Increase memory", description="Raises it.")), "memory")[0]
    assert hit == catalog.SearchHit(
        workflow_id="oom", version="1.0.0", title="Increase memory", description="Raises it.", confidence=1.0
    )


def test_search_is_fast_enough_for_a_big_catalog() -> None:
    """Not a benchmark (bench/catalog_search.py is): a guard against an accidental O(n·terms)
    per-search rebuild, with a bound 20× above the measured p50 so a busy CI box does not flake."""
    rng = random.Random(1)
    words = [f"w{n}" for n in range(500)]
    found = catalog.Catalog()
    for n in range(3000):
        found.upsert(
            f"o{n}",
            spec(
                f"wf-{n}",
                title=" ".join(rng.sample(words, 4)),
                description=" ".join(rng.sample(words, 20)),
                risk=rng.choice(list(resources.RISK_ORDER)),
            ),
        )
    timings = []
    for _ in range(50):
        started = time.perf_counter()
        search(
            found,
            " ".join(rng.sample(words, 8)),
            signal_type="OOMKilled",
            business=business(environment="production"),
        )
        timings.append(time.perf_counter() - started)
    assert sorted(timings)[len(timings) // 2] < 0.05


def test_stored_specs_share_their_field_name_sets_and_dump_as_before() -> None:
    """The catalog shares pydantic's per-model ``__pydantic_fields_set__`` between equal ones
    (43% of a spec's memory); what a spec says and dumps stays the same."""
    first, second = spec("wf-a", title="Raise memory"), spec("wf-b", title="Restart pods")
    before = [s.model_dump(exclude_unset=True) for s in (first, second)]
    found = catalog.Catalog()
    found.upsert("a", first)
    found.upsert("b", second)
    stored = [found.get("wf-a"), found.get("wf-b")]
    assert stored[0] is not None and stored[1] is not None
    assert stored[0].spec.__pydantic_fields_set__ is stored[1].spec.__pydantic_fields_set__
    assert stored[0].spec.labels.__pydantic_fields_set__ is stored[1].spec.labels.__pydantic_fields_set__
    assert [w.spec.model_dump(exclude_unset=True) for w in stored] == before
    assert stored[0].spec == spec("wf-a", title="Raise memory")
