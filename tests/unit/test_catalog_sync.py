"""How one watch event changes the operator's catalog (no cluster: events are applied directly)."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from aianalysis import catalog
from aianalysis.catalog import sync as catalog_sync


def obj(name: str, **spec: Any) -> dict[str, Any]:
    body = {
        "workflowId": name,
        "version": "1.0.0",
        "title": "Restart the workload",
        "description": "Restarts the pods of the owning workload.",
        "labels": {"signalTypes": ["CrashLoopBackOff"]},
        "riskLevel": "low",
        "execution": {"containerImage": "registry.example/wf/restart:1"},
    }
    return {"metadata": {"name": name}, "spec": {**body, **spec}}


def make() -> tuple[catalog_sync.CatalogSync, catalog.Catalog, list[int]]:
    found = catalog.Catalog()
    changes: list[int] = []
    sync = catalog_sync.CatalogSync(
        api=client.ApiClient(), catalog=found, on_change=lambda: changes.append(1)
    )
    return sync, found, changes


def test_added_and_modified_workflows_are_searchable_and_deleted_ones_are_not() -> None:
    sync, found, changes = make()

    sync.apply("ADDED", obj("restart"))
    sync.apply("MODIFIED", obj("restart", title="Restart pods"))
    updated = found.get("restart")
    sync.apply("DELETED", obj("restart"))

    assert updated is not None and updated.spec.title == "Restart pods"
    assert found.get("restart") is None
    assert len(changes) == 3


def test_a_workflow_that_becomes_unusable_leaves_the_catalog() -> None:
    sync, found, _ = make()
    sync.apply("ADDED", obj("restart"))

    sync.apply("MODIFIED", obj("restart", riskLevel="extreme"))

    assert found.get("restart") is None


def test_bookmarks_change_nothing() -> None:
    sync, found, changes = make()

    sync.apply("BOOKMARK", {"metadata": {"resourceVersion": "42"}})

    assert len(found) == 0 and changes == []
