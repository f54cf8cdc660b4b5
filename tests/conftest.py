"""Session-wide fixtures: a real kube-apiserver (``cluster``), our CRDs on it (``crds``), and a fresh
namespace per test (``namespace``). Set ``AIANALYSIS_TEST_KUBECONFIG`` to run against an existing
cluster (kind, …) instead of starting etcd + kube-apiserver here."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import kubernetes
import pytest

from aianalysis_dev import devcluster

ROOT = Path(__file__).resolve().parents[1]
CRD_DIR = ROOT / "crds"


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
