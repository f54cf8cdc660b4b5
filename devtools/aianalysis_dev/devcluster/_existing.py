"""ExistingCluster: the ``Cluster`` interface bound to a cluster someone else runs (kind, k3d, …)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes

from aianalysis import errors
from aianalysis_dev.devcluster import _base, _binaries


class ExistingCluster:
    """Uses a kubeconfig's current context as is. It has only the kubeconfig's own user: RBAC tests
    that need extra users (``kubeconfig_for``/``user=``) require a ``DevCluster``. ``stop`` does nothing."""

    def __init__(self, kubeconfig: Path) -> None:
        self.kubeconfig = kubeconfig
        self._config = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config(  # type: ignore[no-untyped-call]  # kubernetes is untyped
            config_file=str(kubeconfig), client_configuration=self._config
        )
        self._kubectl = _find_kubectl()

    @property
    def server(self) -> str:
        return str(self._config.host)

    @property
    def token(self) -> str:
        """The bearer token if the kubeconfig uses one ("" for client certificates)."""
        header = str(self._config.api_key.get("BearerToken", ""))
        return header.removeprefix("Bearer ") if header.startswith("Bearer ") else ""

    @property
    def ca_file(self) -> Path | None:
        """The CA bundle (kubeconfig ``certificate-authority-data`` is written to a temp file)."""
        return Path(self._config.ssl_ca_cert) if self._config.ssl_ca_cert else None

    @property
    def bin_dir(self) -> Path:
        return self._kubectl.parent

    def kubeconfig_for(self, user: str) -> Path:
        raise _base.DevClusterError(
            f"ExistingCluster has no user {user!r}: extra users need a DevCluster "
            "(unset AIANALYSIS_TEST_KUBECONFIG)"
        )

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, user: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        kubeconfig = self.kubeconfig_for(user) if user else self.kubeconfig
        return _base.run_kubectl(self._kubectl, args, kubeconfig=kubeconfig, input=input, check=check)

    def api_client(self, user: str | None = None) -> Any:
        kubeconfig = self.kubeconfig_for(user) if user else self.kubeconfig
        return kubernetes.config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]  # untyped

    def stop(self) -> None:
        """Someone else's cluster: left running."""


def _find_kubectl() -> Path:
    try:
        return _binaries.find_binaries().kubectl
    except errors.ConfigError:
        if found := shutil.which("kubectl"):
            return Path(found)
        raise
