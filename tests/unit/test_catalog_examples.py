"""The shipped example catalog (examples/catalog/) searched the way a real incident searches it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aianalysis import catalog, cli, resources

CATALOG_DIR = Path(__file__).resolve().parents[2] / "examples" / "catalog"
EXAMPLES = catalog.load_paths([CATALOG_DIR])


def _risk(hit: catalog.SearchHit) -> str:
    workflow = EXAMPLES.get(hit.workflow_id, hit.version)
    assert workflow is not None
    return workflow.spec.risk_level


def _handles_oom(hit: catalog.SearchHit) -> bool:
    workflow = EXAMPLES.get(hit.workflow_id, hit.version)
    assert workflow is not None
    return "OOMKilled" in workflow.spec.labels.signal_types


def test_the_example_catalog_loads_and_has_high_risk_oom_workflows_to_exclude() -> None:
    assert len(EXAMPLES) >= 30
    oom = [w for w in EXAMPLES.all() if "OOMKilled" in w.spec.labels.signal_types]
    assert {w.spec.risk_level for w in oom} >= {"low", "high"}, "the policy test below would prove nothing"


@pytest.mark.parametrize("category", [None, "payments"])
@pytest.mark.parametrize(
    "query",
    [
        catalog.SearchQuery(signal_type="OOMKilled", text="container killed out of memory, restarts"),
        catalog.SearchQuery(text="OOMKilled memory limit", top_k=20),
        catalog.SearchQuery(signal_type="OOMKilled", risk_tolerance="high", top_k=20),
    ],
    ids=["signal-type", "text-only", "llm-asks-for-high-risk"],
)
def test_oomkilled_in_production_p1_low_risk_finds_an_oom_workflow_first_and_nothing_risky(
    query: catalog.SearchQuery, category: str | None
) -> None:
    incident = resources.BusinessContext(
        environment="production", priority="P1", business_category=category, risk_tolerance="low"
    )
    hits = EXAMPLES.search(query, business=incident)
    assert hits, "the examples must offer a low-risk OOM workflow for production"
    assert _handles_oom(hits[0])
    assert "memory" in hits[0].title.lower() or "heap" in hits[0].title.lower()
    assert [_risk(hit) for hit in hits] == ["low"] * len(hits)


def test_cli_over_the_examples(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "catalog",
        "search",
        "--catalog",
        str(CATALOG_DIR),
        "--signal-type",
        "OOMKilled",
        "--environment",
        "production",
        "--priority",
        "P1",
        "--query",
        "memory limit",
        "-o",
        "json",
    ]
    assert cli.main(argv) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["workflow_id"].startswith("oomkill-")
    assert all(_risk(catalog.SearchHit(**row)) == "low" for row in rows)
