"""The product as a user sees it with the embedded default (offline provider): example catalog,
example incidents, operator running, results in ``kubectl get aia``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.conftest import ROOT, wait_terminal

INCIDENTS = sorted((ROOT / "examples" / "incidents").glob("*.yaml"))


def _catalog_ids(catalog: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {f"{w['spec']['workflowId']}@{w['spec']['version']}": w["spec"] for w in catalog}


def test_every_example_incident_ends_with_a_valid_selection_or_a_review_reason(
    cluster: Any, namespace: str, example_catalog: list[dict[str, Any]], start_operator: Any, tmp_path: Path
) -> None:
    operator = start_operator(AIANALYSIS_PROVIDER="offline")
    cluster.kubectl("apply", "-n", namespace, "-f", str(ROOT / "examples" / "incidents"))

    done = wait_terminal(cluster, namespace, len(INCIDENTS), logs=operator.logs)

    by_id = _catalog_ids(example_catalog)
    for item in done:
        st = item["status"]
        assert st["phase"] == "Completed", (item["metadata"]["name"], st)
        assert st["llm"]["provider"] == "offline"
        selected = st.get("selectedWorkflow")
        if selected is None:
            assert st["needsHumanReview"] is True and st["humanReviewReason"], st
            continue
        spec = by_id[f"{selected['workflowId']}@{selected['version']}"]
        assert selected["containerImage"] == spec["execution"]["containerImage"]
        declared = {p["name"] for p in spec.get("parameters", [])}
        required = {p["name"] for p in spec.get("parameters", []) if p.get("required")}
        assert set(selected["parameters"]) <= declared
        assert required <= set(selected["parameters"])
        assert [c["type"] for c in st["conditions"]] == ["Ready"]
        assert st["conditions"][0]["status"] == "True"
    selected_count = sum(1 for item in done if item["status"].get("selectedWorkflow"))
    assert selected_count >= len(INCIDENTS) // 2, "the offline provider should solve most example incidents"


def test_kubectl_get_aia_shows_workflow_and_confidence(
    cluster: Any, namespace: str, example_catalog: list[dict[str, Any]], start_operator: Any
) -> None:
    operator = start_operator(AIANALYSIS_PROVIDER="offline")
    # rank first: a crash loop's best-ranked workflow (rollback) needs no value the offline provider
    # cannot know, an OOM's (a new memory limit) does and ends parameters_incomplete
    crash = next(p for p in INCIDENTS if p.name == "orders-api-crashloop.yaml")
    doc = yaml.safe_load(crash.read_text())
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(doc))
    [item] = wait_terminal(cluster, namespace, 1, logs=operator.logs)

    table = cluster.kubectl("get", "aia", "-n", namespace).stdout
    header, row = table.splitlines()[:2]
    assert header.split()[:5] == ["NAME", "PHASE", "WORKFLOW", "CONFIDENCE", "REVIEW"]
    selected = item["status"]["selectedWorkflow"]
    assert selected["workflowId"] in row and "Completed" in row
    assert str(selected["confidence"])[:3] in row


def test_incident_no_workflow_fits_ends_with_a_review_reason(
    cluster: Any, namespace: str, example_catalog: list[dict[str, Any]], start_operator: Any
) -> None:
    """No catalog entry fits: the analysis still ends, with no selection and a clear reason."""
    operator = start_operator(AIANALYSIS_PROVIDER="offline")
    body = {
        "apiVersion": "kubernaut.io/v1alpha1",
        "kind": "AIAnalysis",
        "metadata": {"name": "unknown-signal"},
        "spec": {
            "signal": {"type": "SomethingNoCatalogKnows", "severity": "low"},
            "resource": {"kind": "Deployment", "name": "x", "namespace": namespace},
            "businessContext": {"environment": "production", "priority": "P3", "riskTolerance": "low"},
        },
    }
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(body))
    [item] = wait_terminal(cluster, namespace, 1, logs=operator.logs)
    st = item["status"]
    assert "selectedWorkflow" not in st
    assert st["needsHumanReview"] is True
    # the offline provider investigates first: Deployment x does not exist, so every read failed
    assert st["humanReviewReason"] in (
        "no_eligible_workflow",
        "parameters_incomplete",
        "validation_failed",
        "investigation_failed",
    )
