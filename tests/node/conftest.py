"""The real node's fixtures: one ``NodeCluster`` per session (all of ``tests/node/`` runs on one
pytest-xdist worker, see ``tests/conftest.py``), the busybox test image imported into it, and a
fresh namespace per test. No test here writes the status of a Pod, a Job or a Node: the kubelet,
the scheduler and the controllers do."""

from __future__ import annotations

import dataclasses
import secrets
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from aianalysis_dev import devcluster, oci, reads
from tests.e2e.conftest import ROOT, OperatorProcess
from tests.support import nodes, programs


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that start nodes of their own run first, before ``node_cluster`` holds the machine's
    one node (they would wait for it forever)."""
    here = Path(__file__).parent
    positions = [i for i, item in enumerate(items) if here in item.path.parents]
    ours = sorted(
        (items[i] for i in positions), key=lambda item: "node_cluster" in getattr(item, "fixturenames", ())
    )
    for position, item in zip(positions, ours, strict=True):
        items[position] = item


@pytest.fixture(scope="package")
def node_cluster() -> Iterator[devcluster.NodeCluster]:
    """Fails (never skips) where the machine cannot run a node, with the reason. Stopped after the
    package's last test (the machine lock is released for other runs), and then nothing of the node
    may be left on the machine."""
    if reason := devcluster.node_unavailable_reason():
        pytest.fail(
            f"the tests in tests/node need a real node, and this machine cannot run one: {reason} "
            "(AIANALYSIS_NODE_TESTS=off leaves them out)",
            pytrace=False,
        )
    cluster = devcluster.NodeCluster().start()
    try:
        yield cluster
    finally:
        cluster.stop()
    left = nodes.leftovers(Path(tempfile.gettempdir()))
    assert not left, f"the node left things on the machine: {left}"


@pytest.fixture(scope="package")
def busybox(node_cluster: devcluster.NodeCluster, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The busybox test image (with ``apiprobe``, the in-cluster API client) on the node; its ref."""
    binaries = node_cluster.node_binaries
    tar = oci.busybox_image(
        tmp_path_factory.mktemp("images") / "busybox.tar",
        busybox=binaries.busybox,
        extra={"bin/apiprobe": binaries.containerd_binary("apiprobe")},
    )
    (ref,) = node_cluster.import_image(tar)
    return ref


@pytest.fixture
def node_namespace(node_cluster: devcluster.NodeCluster) -> Iterator[str]:
    """A fresh namespace whose ``default`` ServiceAccount exists (ServiceAccount admission refuses
    Pods before the controller made it); deleted afterwards, without waiting."""
    name = f"n-{secrets.token_hex(4)}"
    node_cluster.kubectl("create", "namespace", name)
    nodes.wait_for(
        lambda: reads.get(node_cluster, "serviceaccount", "default", name) is not None,
        what=f"the default ServiceAccount of {name}",
        timeout=30,
    )
    yield name
    node_cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


ASSESSMENT_WINDOW_SECONDS = "20"


@dataclasses.dataclass
class NodeOperator:
    """The operator (offline provider, intake on) watching every namespace of the node's cluster,
    with the CRDs and the example catalog applied."""

    process: OperatorProcess
    intake: str
    token: str

    def post(self, payload: dict[str, Any]) -> None:
        """Post an Alertmanager webhook payload to the intake, as Alertmanager does."""
        answer = httpx.post(
            self.intake, json=payload, headers={"Authorization": f"Bearer {self.token}"}, timeout=10
        )
        assert answer.status_code == 200, (answer.status_code, answer.text)


@pytest.fixture(scope="package")
def node_operator(
    node_cluster: devcluster.NodeCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[NodeOperator]:
    devcluster.apply_crds(node_cluster, ROOT / "crds")
    node_cluster.kubectl("apply", "-f", str(ROOT / "examples" / "catalog"))
    port, token = programs.free_port(), secrets.token_hex(16)
    log_dir = tmp_path_factory.mktemp("operator")
    mapping = log_dir / "intake-mapping.yaml"
    mapping.write_text('namespaces: ["*"]\n')  # every test namespace (each is made afresh)
    process = OperatorProcess(
        kubeconfig=node_cluster.kubeconfig,
        log_dir=log_dir,
        env={
            "AIANALYSIS_PROVIDER": "offline",
            "AIANALYSIS_INTAKE_PORT": str(port),
            "AIANALYSIS_INTAKE_TOKEN": token,
            "AIANALYSIS_INTAKE_MAPPING_FILE": str(mapping),
            "AIANALYSIS_INTAKE_ALLOW_PLAIN_HTTP": "true",  # loopback only, the token stays on the machine
            # A fixed workflow's effect is judged this long after it ended (tests/node/test_loop.py).
            "AIANALYSIS_ASSESSMENT_WINDOW_SECONDS": ASSESSMENT_WINDOW_SECONDS,
        },
    )
    process.start()
    try:
        yield NodeOperator(
            process=process, intake=f"http://127.0.0.1:{port}/api/v1/alertmanager", token=token
        )
    finally:
        process.stop()
