"""The operator's catalog follows the cluster's RemediationWorkflows (real kube-apiserver): a LIST
fills it, the watch applies creations, updates and deletions, a re-list forgets what disappeared."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from aianalysis import catalog, kube
from aianalysis.catalog import sync as catalog_sync
from aianalysis_dev import devcluster

pytestmark = pytest.mark.cluster


def workflow(name: str, *, title: str = "Restart the workload") -> dict[str, Any]:
    return {
        "apiVersion": "kubernaut.io/v1alpha1",
        "kind": "RemediationWorkflow",
        "metadata": {"name": name, "labels": {"test": "catalog-sync"}},
        "spec": {
            "workflowId": name,
            "version": "1.0.0",
            "title": title,
            "description": "Restarts the pods of the owning workload.",
            "labels": {"signalTypes": ["CrashLoopBackOff"]},
            "riskLevel": "low",
            "execution": {"containerImage": "registry.example/wf/restart@sha256:" + "0" * 64},
        },
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


def title(found: catalog.Catalog, name: str) -> str | None:
    entry = found.get(name)
    return entry.spec.title if entry is not None else None


@pytest.fixture
def names(cluster: devcluster.Cluster, crds: list[str]) -> Iterator[list[str]]:
    prefix = f"sync-{secrets.token_hex(3)}"
    made = [f"{prefix}-{n}" for n in range(5)]
    yield made
    cluster.kubectl("delete", "rw", *made, "--ignore-not-found")


@pytest.fixture
def api(cluster: devcluster.Cluster) -> Iterator[Any]:
    client = kube.api_client(str(cluster.kubeconfig))
    yield client
    client.close()


def test_load_then_watch_keeps_the_catalog_equal_to_the_cluster(
    cluster: devcluster.Cluster, names: list[str], api: Any
) -> None:
    first, second, third, later = names[:4]
    apply(cluster, workflow(first), workflow(second), workflow(third))
    found = catalog.Catalog()
    changes: list[int] = []
    sync = catalog_sync.CatalogSync(api=api, catalog=found, on_change=lambda: changes.append(len(found)))

    listed = sync.load()
    sync.start()
    try:
        assert listed >= 3
        assert all(found.get(name) is not None for name in (first, second, third))
        assert changes, "the gauge callback runs after the load"

        apply(cluster, workflow(later), workflow(first, title="Restart it again"))
        cluster.kubectl("delete", "rw", second)

        eventually(lambda: found.get(later) is not None, "the created workflow")
        eventually(lambda: found.get(second) is None, "the deleted workflow to leave")
        eventually(lambda: title(found, first) == "Restart it again", "the update")
    finally:
        sync.stop()


def test_a_relist_forgets_workflows_deleted_while_nobody_watched(
    cluster: devcluster.Cluster, names: list[str], api: Any
) -> None:
    kept, gone = names[:2]
    apply(cluster, workflow(kept), workflow(gone))
    found = catalog.Catalog()
    sync = catalog_sync.CatalogSync(api=api, catalog=found, page_size=2)
    sync.load()
    assert found.get(gone) is not None

    cluster.kubectl("delete", "rw", gone)
    sync.load()  # what the watch does after 410 Gone

    assert found.get(gone) is None
    assert found.get(kept) is not None


def test_load_pages_through_the_whole_catalog(
    cluster: devcluster.Cluster, names: list[str], api: Any
) -> None:
    apply(cluster, *(workflow(name) for name in names))
    found = catalog.Catalog()

    listed = catalog_sync.CatalogSync(api=api, catalog=found, page_size=2).load()

    assert listed >= len(names)
    assert all(found.get(name) is not None for name in names)
