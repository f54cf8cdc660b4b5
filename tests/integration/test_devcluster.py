"""The local control plane: right version, usable by kubectl and the kubernetes client, and gone
without a trace after stop — also when the ``with`` block raises."""

from __future__ import annotations

import json
import signal
import ssl
import subprocess
import sys
import time
from pathlib import Path

import httpx
import kubernetes
import pytest

from aianalysis_dev import devcluster
from aianalysis_dev.devcluster._processes import sweep

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.test}
spec:
  group: example.test
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
"""


def pids_mentioning(path: Path) -> list[int]:
    """Independent of the code under test: every process whose command line names ``path``."""
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if str(path).encode() in cmdline.read_bytes():
                pids.append(int(cmdline.parent.name))
        except OSError:
            continue
    return pids


def test_version_is_the_one_we_build(cluster: devcluster.Cluster) -> None:
    ca = ssl.create_default_context(cafile=str(cluster.ca_file)) if cluster.ca_file else True
    version = httpx.get(
        f"{cluster.server}/version", headers={"Authorization": f"Bearer {cluster.token}"}, verify=ca
    )
    assert version.json()["gitVersion"] == devcluster.K8S_VERSION


def test_kubectl_and_client_see_the_same_objects(cluster: devcluster.Cluster, namespace: str) -> None:
    cluster.kubectl("create", "configmap", "hello", "-n", namespace, "--from-literal=greeting=hi")

    with cluster.api_client() as api:
        got = kubernetes.client.CoreV1Api(api).read_namespaced_config_map("hello", namespace)
    assert got.data == {"greeting": "hi"}
    listed = json.loads(cluster.kubectl("get", "configmaps", "-n", namespace, "-o", "json").stdout)
    assert "hello" in [item["metadata"]["name"] for item in listed["items"]]


def test_kubectl_failure_carries_kubectls_message(cluster: devcluster.Cluster, namespace: str) -> None:
    with pytest.raises(devcluster.DevClusterError, match=r"\(NotFound\)"):
        cluster.kubectl("get", "configmap", "does-not-exist", "-n", namespace)
    assert cluster.kubectl("get", "configmap", "does-not-exist", "-n", namespace, check=False).returncode == 1


def test_second_cluster_users_crds_and_clean_stop(tmp_path: Path) -> None:
    crd_dir = tmp_path / "crds"
    crd_dir.mkdir()
    (crd_dir / "gadget.yaml").write_text(CRD)
    with devcluster.DevCluster(users={"viewer": ["viewers"]}) as second:
        data_dir = second.data_dir
        assert len(pids_mentioning(data_dir)) == 2  # etcd and kube-apiserver

        assert devcluster.apply_crds(second, crd_dir) == [
            "customresourcedefinition.apiextensions.k8s.io/gadgets.example.test"
        ]
        second.kubectl("create", "namespace", "demo")
        second.kubectl(
            "apply",
            "-n",
            "demo",
            "-f",
            "-",
            input="apiVersion: example.test/v1\nkind: Gadget\nmetadata: {name: g}\nspec: {size: 3}\n",
        )
        assert second.kubectl("get", "gadget", "g", "-n", "demo", "-o", "jsonpath={.spec.size}").stdout == "3"

        # The extra user authenticates, and RBAC (not a blanket allow) decides what it may do.
        assert (
            second.kubectl(
                "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}", user="viewer"
            ).stdout
            == "viewer"
        )
        denied = second.kubectl("get", "gadgets", "-n", "demo", user="viewer", check=False)
        assert denied.returncode != 0 and "forbidden" in denied.stderr
        second.kubectl("create", "clusterrole", "gadget-reader", "--verb=get,list", "--resource=gadgets")
        second.kubectl(
            "create", "clusterrolebinding", "viewers-read", "--clusterrole=gadget-reader", "--group=viewers"
        )
        assert "g" in second.kubectl("get", "gadgets", "-n", "demo", "-o", "name", user="viewer").stdout

    assert pids_mentioning(data_dir) == []
    assert not data_dir.exists()
    second.stop()  # idempotent
    assert pids_mentioning(data_dir) == []


def test_exception_inside_with_still_cleans_up() -> None:
    cluster = devcluster.DevCluster()
    with pytest.raises(RuntimeError, match="boom"), cluster:
        data_dir = cluster.data_dir
        assert pids_mentioning(data_dir)
        raise RuntimeError("boom")
    assert pids_mentioning(data_dir) == []
    assert not data_dir.exists()


def test_existing_cluster_binds_to_a_kubeconfig(cluster: devcluster.Cluster, namespace: str) -> None:
    existing = devcluster.ExistingCluster(cluster.kubeconfig)
    assert (existing.server, existing.token) == (cluster.server, cluster.token)
    existing.kubectl("create", "configmap", "via-existing", "-n", namespace)
    with existing.api_client() as api:
        assert kubernetes.client.CoreV1Api(api).read_namespaced_config_map("via-existing", namespace)
    existing.stop()  # someone else's cluster: still there
    assert cluster.kubectl("get", "configmap", "via-existing", "-n", namespace).returncode == 0


def test_start_failure_reports_the_log_and_leaves_nothing(tmp_path: Path) -> None:
    real = devcluster.find_binaries()
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "etcd").symlink_to(real.etcd)
    (fake / "kubectl").symlink_to(real.kubectl)
    (fake / "kube-apiserver").write_text("#!/bin/sh\necho 'E0000 bad things happened' >&2\nexit 1\n")
    (fake / "kube-apiserver").chmod(0o755)

    with pytest.raises(
        devcluster.DevClusterError, match=r"(?s)kube-apiserver exited early.*bad things happened"
    ):
        devcluster.DevCluster(bin_dir=fake).start()
    assert pids_mentioning(fake) == []  # etcd was started from there, and is gone again


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_killed_owner_leaves_no_control_plane_running(signum: signal.Signals) -> None:
    # SIGINT explicitly restored: a CI shell may start us with it ignored, and children inherit that.
    code = (
        "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "from aianalysis_dev.devcluster.__main__ import main; main()"
    )
    owner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert owner.stdout is not None
    try:
        export = owner.stdout.readline()
        data_dir = Path(export.strip().removeprefix("export KUBECONFIG=")).parent
        assert export.startswith("export KUBECONFIG=") and len(pids_mentioning(data_dir)) == 2

        owner.send_signal(signum)
        owner.wait(timeout=30)
    finally:
        if owner.poll() is None:  # it failed to stop: not left running for the rest of the run
            owner.kill()
            owner.wait()
    deadline = time.monotonic() + 10  # SIGKILL: the kernel's parent-death signal, delivered asynchronously
    while pids_mentioning(data_dir) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pids_mentioning(data_dir) == []
    if signum == signal.SIGKILL:  # no chance to clean up: the next start sweeps the directory
        sweep(data_dir.parent, prefix=data_dir.name, min_age_s=0)
    assert not data_dir.exists()
