"""What every test cluster offers (``Cluster``), and the kubectl-driven helpers built on it."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from aianalysis import errors

KUBECTL_TIMEOUT_S = 180.0


class DevClusterError(errors.AIAnalysisError):
    """A test cluster failed to start, or a kubectl call against it failed."""

    reason = "DevClusterError"


class Cluster(Protocol):
    """A running API server and the ways to talk to it; ``DevCluster`` and ``ExistingCluster`` both are."""

    @property
    def kubeconfig(self) -> Path: ...
    @property
    def server(self) -> str: ...
    @property
    def token(self) -> str: ...
    @property
    def ca_file(self) -> Path | None: ...
    @property
    def bin_dir(self) -> Path: ...

    def kubeconfig_for(self, user: str) -> Path: ...

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, user: str | None = None
    ) -> subprocess.CompletedProcess[str]: ...

    def api_client(self, user: str | None = None) -> Any: ...

    def stop(self) -> None: ...


def run_kubectl(
    kubectl: Path, args: Sequence[str], *, kubeconfig: Path, input: str | None, check: bool
) -> subprocess.CompletedProcess[str]:
    """Run kubectl; with ``check``, a failure raises with kubectl's own stderr in the message."""
    argv = [str(kubectl), f"--kubeconfig={kubeconfig}", *args]
    result = subprocess.run(
        argv, input=input, capture_output=True, text=True, timeout=KUBECTL_TIMEOUT_S, check=False
    )
    if check and result.returncode != 0:
        command = " ".join(args)
        raise DevClusterError(f"kubectl {command} failed ({result.returncode}): {result.stderr.strip()}")
    return result


def apply_crds(cluster: Cluster, crd_dir: Path) -> list[str]:
    """Apply every manifest in ``crd_dir`` (the CRDs and what ships with them, such as the approval
    admission policy) and wait until each CRD is Established (objects of a kind created before that
    are rejected). Returns the applied names (``customresourcedefinition.../x``, ...)."""
    manifests = [p for p in crd_dir.glob("*") if p.suffix in {".yaml", ".yml", ".json"}]
    if not manifests:
        raise DevClusterError(f"no CRD manifests (*.yaml, *.yml, *.json) in {crd_dir}")
    applied = cluster.kubectl("apply", "--server-side", "--force-conflicts", "-o", "name", "-f", str(crd_dir))
    names = applied.stdout.split()
    crds = [n for n in names if n.startswith("customresourcedefinition")]
    if crds:
        cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", *crds)
    return names
