"""Session-wide fixtures: a real kube-apiserver (``cluster``), our CRDs on it (``crds``), and a fresh
namespace per test (``namespace``). Set ``AIANALYSIS_TEST_KUBECONFIG`` to run against an existing
cluster (kind, …) instead of starting etcd + kube-apiserver here.

The tests on the real node live in ``tests/node/`` (their own session fixture, ``node_cluster``).
The machine runs one node at a time, so with pytest-xdist they all go to one worker (the scheduler
below); ``AIANALYSIS_NODE_TESTS=off`` leaves them out where no node can run (they fail otherwise).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from aianalysis_dev import devcluster

ROOT = Path(__file__).resolve().parents[1]
CRD_DIR = ROOT / "crds"
NODE_TESTS = "tests/node/"
NODE_TESTS_ENV = "AIANALYSIS_NODE_TESTS"

if os.environ.get(NODE_TESTS_ENV) == "off":
    collect_ignore = ["node"]


def pytest_report_header() -> str:
    if os.environ.get(NODE_TESTS_ENV) == "off":
        return f"tests on the real node: left out ({NODE_TESTS_ENV}=off)"
    reason = devcluster.node_unavailable_reason()
    return f"tests on the real node: {'this machine cannot run them: ' + reason if reason else 'on'}"


SLOW_FIRST = (NODE_TESTS, "tests/e2e/", "tests/browser/", "tests/integration/")
"""The order in which workers take files: the node's tests (one unit, the longest) and the slow
end-to-end files first, the many quick unit files last to fill the gaps (not xdist's default,
the files with the most tests first)."""


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile``, except that every test of ``tests/node/`` goes to the same worker: one
    node session instead of workers queueing on the machine's node lock; slow files first."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling  # noqa: PLC0415  # only under xdist

    def rank(scope: str) -> int:
        return next((i for i, prefix in enumerate(SLOW_FIRST) if scope.startswith(prefix)), len(SLOW_FIRST))

    class NodeTestsTogether(LoadFileScheduling):  # type: ignore[misc]  # xdist is untyped
        def _split_scope(self, nodeid: str) -> str:
            return NODE_TESTS if nodeid.startswith(NODE_TESTS) else str(super()._split_scope(nodeid))

        def _assign_work_unit(self, node: Any) -> None:
            ordered = sorted(self.workqueue.items(), key=lambda unit: rank(unit[0]))  # stable
            self.workqueue.clear()
            self.workqueue.update(ordered)
            super()._assign_work_unit(node)

    return NodeTestsTogether(config, log)


@pytest.fixture(scope="session")
def cluster() -> Iterator[devcluster.Cluster]:
    """Started once per session. KUBECONFIG points at it for the session, so anything that reads the
    default kubeconfig (kopf, the kubernetes client) talks to the test cluster, never a real one."""
    existing = os.environ.get("AIANALYSIS_TEST_KUBECONFIG")
    running: devcluster.Cluster = (
        devcluster.ExistingCluster(Path(existing)) if existing else devcluster.DevCluster().start()
    )
    with pytest.MonkeyPatch.context() as env:
        env.setenv("KUBECONFIG", str(running.kubeconfig))
        try:
            yield running
        finally:
            running.stop()


@pytest.fixture(scope="session")
def crds(cluster: devcluster.Cluster) -> list[str]:
    """The repo's CRDs, applied and Established; the applied names."""
    return devcluster.apply_crds(cluster, CRD_DIR)


@pytest.fixture
def namespace(cluster: devcluster.Cluster) -> str:
    """A fresh namespace. Never deleted: without kube-controller-manager it would hang Terminating."""
    name = f"t-{secrets.token_hex(4)}"
    body = kubernetes.client.V1Namespace(metadata=kubernetes.client.V1ObjectMeta(name=name))
    with cluster.api_client() as api:
        kubernetes.client.CoreV1Api(api).create_namespace(body)
    return name
