"""The operator run outside a Pod the way the image runs it in one: through the service-account path
of ``aianalysis.kube.config`` (which needs no ``kubernetes`` package — a kubeconfig would need the
``kubeconfig`` extra, which the image does not have), the mount given as a directory.

For the tests and the benchmark that measure what the image does (its imports, its memory) from a
venv installed as the image's is.
"""

from __future__ import annotations

from pathlib import Path

from aianalysis_dev.devcluster import Cluster, DevClusterError

LAUNCHER = (
    "import pathlib, sys; from aianalysis.kube import config; "
    "config.SERVICE_ACCOUNT = pathlib.Path(sys.argv[1]); "
    "from aianalysis import cli; sys.exit(cli.main(sys.argv[2:]))"
)
"""``python -c LAUNCHER MOUNT ARGS...``: ``aianalysis ARGS...`` with its service account at MOUNT."""


def argv(python: str | Path, mount: Path, *arguments: str) -> list[str]:
    """``aianalysis *arguments`` on ``python``, its service account mounted at ``mount``."""
    return [str(python), "-c", LAUNCHER, str(mount), *arguments]


def environment(cluster: Cluster) -> dict[str, str]:
    """What the kubelet puts in a Pod's environment for the ``kubernetes`` Service."""
    host, _, port = cluster.server.removeprefix("https://").rpartition(":")
    return {"KUBERNETES_SERVICE_HOST": host.strip("[]"), "KUBERNETES_SERVICE_PORT": port}


def mount(cluster: Cluster, directory: Path, *, namespace: str, name: str = "aianalysis-in-a-pod") -> Path:
    """``directory`` as a Pod's service-account mount (``token``, ``ca.crt``, ``namespace``) for the
    ServiceAccount ``name`` in ``namespace``, bound to cluster-admin (what the admin kubeconfig the
    operator had before could do); made if missing, a fresh token each time."""
    if cluster.ca_file is None:
        raise DevClusterError("a service-account mount needs the cluster's CA file")
    binding = f"{name}-{namespace}"
    if cluster.kubectl("get", "serviceaccount", name, "-n", namespace, check=False).returncode != 0:
        cluster.kubectl("create", "serviceaccount", name, "-n", namespace)
    if cluster.kubectl("get", "clusterrolebinding", binding, check=False).returncode != 0:
        cluster.kubectl(
            "create", "clusterrolebinding", binding, "--clusterrole=cluster-admin",
            f"--serviceaccount={namespace}:{name}",
        )  # fmt: skip
    token = cluster.kubectl("create", "token", name, "-n", namespace, "--duration=24h").stdout.strip()
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "token").write_text(token)
    (directory / "ca.crt").write_bytes(Path(cluster.ca_file).read_bytes())
    (directory / "namespace").write_text(namespace)
    return directory
