"""How one watch event changes the operator's catalog (no cluster: events are applied directly)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from aianalysis import catalog, errors
from aianalysis.catalog import sync as catalog_sync
from aianalysis.kube import client as kube_client
from aianalysis.kube import config as kube_config
from aianalysis.kube import rest as kube_rest
from aianalysis.kube import watching


def obj(name: str, **spec: Any) -> dict[str, Any]:
    body = {
        "workflowId": name,
        "version": "1.0.0",
        "title": "Restart the workload",
        "description": "Restarts the pods of the owning workload.",
        "labels": {"signalTypes": ["CrashLoopBackOff"]},
        "riskLevel": "low",
        "execution": {"containerImage": "registry.example/wf/restart@sha256:" + "0" * 64},
    }
    return {"metadata": {"name": name}, "spec": {**body, **spec}}


def make() -> tuple[catalog_sync.CatalogSync, catalog.Catalog, list[int]]:
    found = catalog.Catalog()
    changes: list[int] = []
    sync = catalog_sync.CatalogSync(
        api=kube_rest.ApiClient(
            kube_config.Connection(server="http://127.0.0.1:9"), pool_size=1, timeouts=kube_client.timeouts()
        ),
        catalog=found,
        on_change=lambda: changes.append(1),
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


def _pages(count: int, *, fail_at: int | None = None) -> Iterator[watching.Listing]:
    for n in range(count):
        if n == fail_at:
            raise errors.ClusterError("listing remediationworkflows: 500 boom", status=500)
        yield watching.Listing(items=[obj(f"wf-{n}")], resource_version=str(n))


def test_pages_read_ahead_arrive_in_order_and_all() -> None:
    got = [page.resource_version for page in catalog_sync._ahead(_pages(7))]
    assert got == [str(n) for n in range(7)]


def test_a_list_failure_while_reading_ahead_reaches_the_loader() -> None:
    seen: list[str] = []
    with pytest.raises(errors.ClusterError, match="500 boom"):
        for page in catalog_sync._ahead(_pages(5, fail_at=3)):
            seen.append(page.resource_version)
    assert seen == ["0", "1", "2"]


def test_a_loader_that_stops_early_ends_the_reading_thread() -> None:
    before = {t for t in threading.enumerate() if t.name == "catalog-list"}
    pages = catalog_sync._ahead(_pages(100))
    next(pages)
    pages.close()
    deadline = time.monotonic() + 5
    while (
        time.monotonic() < deadline
        and {t for t in threading.enumerate() if t.name == "catalog-list"} - before
    ):
        time.sleep(0.05)
    assert not {t for t in threading.enumerate() if t.name == "catalog-list"} - before
