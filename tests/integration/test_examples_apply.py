"""`kubectl apply -f examples/...` is the first thing a newcomer runs: the real API server must accept
every example under strict server-side validation and keep every field (nothing pruned)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from aianalysis import resources

pytestmark = pytest.mark.cluster

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CATALOG_DIR = EXAMPLES / "catalog"
INCIDENTS_DIR = EXAMPLES / "incidents"


def _documents(directory: Path) -> list[dict[str, Any]]:
    return [
        doc
        for path in sorted(directory.glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc is not None
    ]


def _apply(cluster: Any, directory: Path, *extra: str) -> set[str]:
    """Server-side apply with strict field validation: an unknown or misspelt field fails the apply
    instead of being silently pruned. Returns the applied object names."""
    result = cluster.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=examples-test",
        "--validate=strict",
        "-o",
        "name",
        "-f",
        str(directory),
        *extra,
    )
    return {line.rsplit("/", 1)[-1] for line in result.stdout.split()}


def _items(cluster: Any, *args: str) -> dict[str, dict[str, Any]]:
    listed = json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)["items"]
    return {item["metadata"]["name"]: item for item in listed}


@pytest.fixture
def applied_catalog(cluster: Any, crds: Any) -> Iterator[set[str]]:
    """Apply the catalog; afterwards delete only the workflows this test created, since other
    tests of the session may have applied (and rely on) the same cluster-scoped objects."""
    before = set(_items(cluster, "remediationworkflows"))
    names = _apply(cluster, CATALOG_DIR)
    yield names
    created = sorted(names - before)
    if created:
        cluster.kubectl("delete", "remediationworkflows", *created, "--wait=false", check=False)


def test_whole_catalog_is_accepted_and_stored_without_loss(cluster: Any, applied_catalog: set[str]) -> None:
    docs = _documents(CATALOG_DIR)
    expected = {doc["metadata"]["name"]: doc for doc in docs}
    assert applied_catalog == set(expected)

    stored = _items(cluster, "remediationworkflows")
    for name, doc in expected.items():
        assert name in stored, f"RemediationWorkflow {name} missing after apply"
        assert "namespace" not in stored[name]["metadata"]
        sent = resources.RemediationWorkflowSpec.model_validate(doc["spec"])
        kept = resources.RemediationWorkflowSpec.model_validate(stored[name]["spec"])
        assert kept == sent, f"{name}: the API server changed or pruned the spec"


def test_catalog_is_listed_by_short_name(cluster: Any, applied_catalog: set[str]) -> None:
    listed = cluster.kubectl("get", "rw", "-o", "name").stdout.split()
    assert applied_catalog <= {line.rsplit("/", 1)[-1] for line in listed}


def test_every_incident_is_accepted_into_the_callers_namespace(
    cluster: Any, crds: Any, namespace: str
) -> None:
    docs = _documents(INCIDENTS_DIR)
    expected = {doc["metadata"]["name"]: doc for doc in docs}

    applied = _apply(cluster, INCIDENTS_DIR, "-n", namespace)

    assert applied == set(expected)
    stored = _items(cluster, "aianalyses", "-n", namespace)
    assert set(stored) == set(expected)
    for name, doc in expected.items():
        assert stored[name]["metadata"]["namespace"] == namespace
        sent = resources.AIAnalysisSpec.model_validate(doc["spec"])
        kept = resources.AIAnalysisSpec.model_validate(stored[name]["spec"])
        assert kept == sent, f"{name}: the API server changed or pruned the spec"


def test_injected_text_is_stored_verbatim(cluster: Any, crds: Any, namespace: str) -> None:
    """The prompt-injection example is data: the API server keeps it byte for byte for the operator
    to fence, rather than any layer 'cleaning' it."""
    path = INCIDENTS_DIR / "notification-worker-crashloop-injection.yaml"
    sent = yaml.safe_load(path.read_text())["spec"]["signal"]["errorMessage"]

    cluster.kubectl(
        "apply", "--server-side", "--field-manager=examples-test", "-n", namespace, "-f", str(path)
    )

    got = cluster.kubectl(
        "get", "aianalysis", path.stem, "-n", namespace, "-o", "jsonpath={.spec.signal.errorMessage}"
    )
    assert got.stdout == sent
    assert "ignore previous instructions" in got.stdout
