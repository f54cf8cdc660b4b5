"""Catalog admission against the real kube-apiserver: typed defaults apply, the CRD's CEL rules
refuse what they can, the operator's gate refuses the rest with an ``Accepted=False`` condition,
a Warning Event and a metric, and a refused workflow is never offered. An imported Kubernaut-format
directory applies cleanly and its workflows are selectable."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s_client

from aianalysis import catalog, kube, metrics, resources
from aianalysis.catalog import importer as catalog_import
from aianalysis.catalog import sync as catalog_sync
from aianalysis_dev import devcluster
from tests.support import typed

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[2]
KUBERNAUT_CATALOG = ROOT / "examples" / "kubernaut" / "catalog"
BULK = "catalog-admission-bulk"
STOREFRONT = resources.BusinessContext(
    environment="production", priority="P1", risk_tolerance="high", custom_labels={"team": "storefront"}
)


def workflow(name: str, *, workflow_id: str | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "workflowId": workflow_id or name,
        "version": "1.0.0",
        "title": "Raise the memory limit",
        "description": "Raises the memory limit of the workload.",
        "labels": {"signalTypes": ["OOMKilled"]},
        "riskLevel": "low",
        "execution": {"containerImage": "registry.example/wf/memory@sha256:" + "0" * 64},
    }
    body.update(spec)
    return {
        "apiVersion": resources.API_VERSION,
        "kind": "RemediationWorkflow",
        "metadata": {"name": name, "labels": {"test": "catalog-admission"}},
        "spec": body,
    }


def apply(cluster: devcluster.Cluster, *objects: dict[str, Any]) -> None:
    doc = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})
    cluster.kubectl("apply", "-f", "-", input=doc)


def eventually(check: Callable[[], bool], what: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def accepted(cluster: devcluster.Cluster, name: str) -> dict[str, Any] | None:
    obj = json.loads(cluster.kubectl("get", "rw", name, "-o", "json").stdout)
    conditions = (obj.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "Accepted"), None)


def refusals(reason: str) -> float:
    return metrics.REGISTRY.get_sample_value("aianalysis_catalog_refusals_total", {"reason": reason}) or 0.0


@pytest.fixture
def prefix(cluster: devcluster.Cluster, crds: list[str]) -> Iterator[str]:
    made = f"adm-{secrets.token_hex(3)}"
    yield made
    cluster.kubectl("delete", "rw", "-l", "test=catalog-admission", "--ignore-not-found")


@pytest.fixture
def api(cluster: devcluster.Cluster) -> Iterator[Any]:
    client = kube.api_client(str(cluster.kubeconfig))
    yield client
    client.close()


@pytest.fixture
def synced(api: Any) -> Iterator[tuple[catalog.Catalog, catalog_sync.CatalogSync]]:
    found = catalog.Catalog()
    sync = catalog_sync.CatalogSync(api=api, catalog=found)
    sync.load()
    sync.start()
    yield found, sync
    sync.stop()


def test_typed_defaults_and_enums_apply_and_are_offered(
    cluster: devcluster.Cluster, prefix: str, synced: tuple[catalog.Catalog, catalog_sync.CatalogSync]
) -> None:
    found, _ = synced
    parameters = [
        {"name": "MEMORY_MIB", "type": "integer", "default": 30, "minimum": 1, "enum": [30, 60]},
        {"name": "RATIO", "type": "number", "default": 0.75},
        {"name": "DRY_RUN", "type": "boolean", "default": True},
        {"name": "ZONES", "type": "array", "default": ["a", "b"]},
        {"name": "MODE", "type": "string", "default": "fast", "enum": ["fast", "safe"]},
    ]
    apply(cluster, workflow(f"{prefix}-typed", parameters=parameters))

    eventually(lambda: found.get(f"{prefix}-typed") is not None, "the typed workflow in the catalog")
    entry = found.get(f"{prefix}-typed")
    assert entry is not None
    defaults = {p.name: p.default for p in entry.spec.parameters}
    assert defaults == {
        "MEMORY_MIB": "30",
        "RATIO": "0.75",
        "DRY_RUN": "true",
        "ZONES": '["a","b"]',
        "MODE": "fast",
    }
    eventually(lambda: (accepted(cluster, f"{prefix}-typed") or {}).get("status") == "True", "Accepted=True")
    stored = json.loads(cluster.kubectl("get", "rw", f"{prefix}-typed", "-o", "json").stdout)
    assert stored["spec"]["parameters"][0]["default"] == 30, "the API server keeps the typed value"
    printed = cluster.kubectl("get", "rw", f"{prefix}-typed").stdout
    assert printed.split("\n")[0].split() == [
        "NAME",
        "WORKFLOW",
        "ID",
        "VERSION",
        "ACTION",
        "RISK",
        "ACCEPTED",
        "AGE",
    ]
    assert "True" in printed.split("\n")[1].split()


@pytest.mark.parametrize(
    ("parameter", "message"),
    [
        ({"name": "N", "type": "string", "minimum": 1}, "minimum and maximum apply to integer and number"),
        ({"name": "B", "type": "boolean", "pattern": "^t"}, "pattern applies to string and array"),
        ({"name": "N", "type": "integer", "minimum": 5, "maximum": 1}, "minimum must be less than or equal"),
    ],
)
def test_the_crd_refuses_what_cel_can_see(
    cluster: devcluster.Cluster, prefix: str, parameter: dict[str, Any], message: str
) -> None:
    with pytest.raises(devcluster.DevClusterError) as refused:
        apply(cluster, workflow(f"{prefix}-bad", parameters=[parameter]))
    assert message in str(refused.value)


def test_a_default_of_the_wrong_type_is_refused_by_the_operator(
    cluster: devcluster.Cluster, prefix: str, synced: tuple[catalog.Catalog, catalog_sync.CatalogSync]
) -> None:
    """Typed defaults are free-form to the API server (CEL cannot see them): the gate refuses."""
    found, _ = synced
    bad = workflow(f"{prefix}-default", parameters=[{"name": "N", "type": "integer", "default": "thirty"}])
    apply(cluster, bad, workflow(f"{prefix}-ok"))

    eventually(lambda: accepted(cluster, f"{prefix}-default") is not None, "the Accepted condition")
    condition = accepted(cluster, f"{prefix}-default")
    assert condition is not None and (condition["status"], condition["reason"]) == ("False", "InvalidDefault")
    assert "'thirty' is not of type integer" in condition["message"]
    eventually(lambda: found.get(f"{prefix}-ok") is not None, "the valid sibling")
    assert found.get(f"{prefix}-default") is None


def test_a_broken_regex_is_refused_reported_and_never_offered(
    cluster: devcluster.Cluster, prefix: str, synced: tuple[catalog.Catalog, catalog_sync.CatalogSync]
) -> None:
    found, _ = synced
    before = refusals("InvalidPattern")
    broken = workflow(
        f"{prefix}-regex",
        title="Raise the memory limit with a broken pattern",
        parameters=[{"name": "LIMIT", "type": "string", "pattern": "^[0-9+(Mi|Gi)$"}],
    )
    apply(cluster, broken, workflow(f"{prefix}-sentinel"))

    eventually(lambda: found.get(f"{prefix}-sentinel") is not None, "the sentinel after the broken one")
    eventually(lambda: accepted(cluster, f"{prefix}-regex") is not None, "the Accepted condition")
    condition = accepted(cluster, f"{prefix}-regex")
    assert condition is not None and condition["status"] == "False"
    assert condition["reason"] == "InvalidPattern" and "LIMIT" in condition["message"]
    assert found.get(f"{prefix}-regex") is None
    hits = found.search(catalog.SearchQuery(text="broken pattern", all_versions=True), business=STOREFRONT)
    assert f"{prefix}-regex" not in {hit.workflow_id for hit in hits}
    assert refusals("InvalidPattern") == before + 1
    assert (metrics.REGISTRY.get_sample_value("aianalysis_catalog_workflows_refused") or 0) >= 1

    def warned() -> bool:
        events = json.loads(cluster.kubectl("get", "events", "-n", "default", "-o", "json").stdout)["items"]
        return any(
            e["involvedObject"].get("name") == f"{prefix}-regex"
            and e["type"] == "Warning"
            and e["reason"] == "InvalidPattern"
            for e in events
        )

    eventually(warned, "the Warning Event")


def test_two_definitions_of_one_id_and_version_are_not_both_accepted(
    cluster: devcluster.Cluster, prefix: str, synced: tuple[catalog.Catalog, catalog_sync.CatalogSync]
) -> None:
    found, _ = synced
    workflow_id = f"{prefix}-shared"
    apply(cluster, workflow(f"{prefix}-first", workflow_id=workflow_id, title="First definition"))
    eventually(lambda: found.get(workflow_id) is not None, "the first definition")
    created = json.loads(cluster.kubectl("get", "rw", f"{prefix}-first", "-o", "json").stdout)["metadata"]
    # creationTimestamp has one-second resolution: let it tick so the second is strictly newer.
    eventually(
        lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) > created["creationTimestamp"],
        "the next second",
    )
    apply(cluster, workflow(f"{prefix}-0-second", workflow_id=workflow_id, title="Second definition"))

    eventually(lambda: accepted(cluster, f"{prefix}-0-second") is not None, "the second's condition")
    second = accepted(cluster, f"{prefix}-0-second")
    assert second is not None and second["status"] == "False" and second["reason"] == "ConflictingDefinition"
    assert f"{prefix}-first" in second["message"]
    assert (accepted(cluster, f"{prefix}-first") or {}).get("status") == "True"
    assert found.get(workflow_id).spec.title == "First definition"  # type: ignore[union-attr]

    cluster.kubectl("delete", "rw", f"{prefix}-first")
    eventually(
        lambda: (accepted(cluster, f"{prefix}-0-second") or {}).get("status") == "True",
        "the remaining definition to be accepted",
    )
    assert found.get(workflow_id).spec.title == "Second definition"  # type: ignore[union-attr]


def test_an_imported_kubernaut_directory_applies_and_its_workflows_are_selectable(
    cluster: devcluster.Cluster, tmp_path: Path, synced: tuple[catalog.Catalog, catalog_sync.CatalogSync]
) -> None:
    found, _ = synced
    reports = catalog_import.import_kubernaut([KUBERNAUT_CATALOG], out=tmp_path)
    assert all(report.error is None for report in reports)
    names = [path.stem for report in reports for path in report.written]
    try:
        cluster.kubectl("apply", "--server-side", "--validate=strict", "-f", str(tmp_path))
        for name in names:
            eventually(
                lambda name=name: (accepted(cluster, name) or {}).get("status") == "True", f"{name} accepted"
            )
        hits = found.search(
            catalog.SearchQuery(text="OOMKilled memory limit peak load", action_type="IncreaseMemoryLimits"),
            business=STOREFRONT,
        )
        assert [hit.workflow_id for hit in hits] == ["storefront-increase-memory-limits"]
        stored = json.loads(
            cluster.kubectl("get", "rw", "storefront-rollback-deployment", "-o", "json").stdout
        )
        assert stored["spec"]["execution"]["engineConfig"] == {
            "pipelineRef": "rollback-deployment",
            "timeout": "15m",
        }
    finally:
        cluster.kubectl("delete", "rw", *names, "--ignore-not-found")


def test_a_large_catalog_serves_before_its_conditions_are_written_and_a_restart_writes_none(
    cluster: devcluster.Cluster, prefix: str, api: Any
) -> None:
    """Loading never waits for the status writes (thousands at a fresh install): the catalog is
    complete when ``load`` returns, the Accepted conditions follow from the writer thread, and a
    second operator (a restart) finds them written and writes nothing."""
    names = [f"{prefix}-bulk-{n:03d}" for n in range(120)]
    bodies = [workflow(name) for name in names]
    for body in bodies:
        body["metadata"]["labels"] = {"test": BULK}
    apply(cluster, *bodies)
    try:
        _load_twice(cluster, api, names)
    finally:  # one request, where kubectl would delete them one by one
        custom = k8s_client.CustomObjectsApi(typed.client())
        custom.delete_collection_cluster_custom_object(
            resources.GROUP,
            resources.VERSION,
            resources.REMEDIATIONWORKFLOW_PLURAL,
            label_selector=f"test={BULK}",
        )


def _load_twice(cluster: devcluster.Cluster, api: Any, names: list[str]) -> None:
    first = catalog.Catalog()
    sync = catalog_sync.CatalogSync(api=api, catalog=first)
    sync.load()
    assert all(first.get(name) is not None for name in names)
    assert sync.flush(timeout=60)
    listed = json.loads(cluster.kubectl("get", "rw", "-l", f"test={BULK}", "-o", "json").stdout)
    versions = {}
    for obj in listed["items"]:
        conditions = (obj.get("status") or {}).get("conditions") or []
        assert [c["status"] for c in conditions if c["type"] == "Accepted"] == ["True"], obj["metadata"][
            "name"
        ]
        versions[obj["metadata"]["name"]] = obj["metadata"]["resourceVersion"]
    assert set(names) <= set(versions)
    sync.stop()

    again = catalog_sync.CatalogSync(api=api, catalog=catalog.Catalog())
    again.load()
    assert again.flush(timeout=60)
    again.stop()
    relisted = json.loads(cluster.kubectl("get", "rw", "-l", f"test={BULK}", "-o", "json").stdout)
    assert {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in relisted["items"]} == versions
