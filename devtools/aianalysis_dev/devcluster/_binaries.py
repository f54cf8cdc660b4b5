"""Where the locally built etcd, kube-apiserver and kubectl live (built by ``hack/build-k8s.sh``)."""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

from aianalysis import errors

K8S_VERSION = "v1.36.3"
"""The Kubernetes release we build and test against; must match ``hack/k8s/go.mod`` (a unit test checks)."""

BIN_DIR_ENV = "AIANALYSIS_K8S_BIN"
"""Set by the Makefile to the directory ``hack/build-k8s.sh`` printed."""

NAMES = ("etcd", "kube-apiserver", "kubectl")


@dataclasses.dataclass(frozen=True)
class Binaries:
    """A directory holding all three executables."""

    dir: Path

    @property
    def etcd(self) -> Path:
        return self.dir / "etcd"

    @property
    def kube_apiserver(self) -> Path:
        return self.dir / "kube-apiserver"

    @property
    def kubectl(self) -> Path:
        return self.dir / "kubectl"

    @property
    def kube_controller_manager(self) -> Path:
        """Optional (``DevCluster(controller_manager=True)``): the Job controller and garbage collector."""
        path = self.dir / "kube-controller-manager"
        if not os.access(path, os.X_OK):
            raise errors.ConfigError(
                f"kube-controller-manager not found in {self.dir}; run `make k8s` (hack/build-k8s.sh)"
            )
        return path


def default_cache_dir() -> Path:
    """Mirrors the cache location of ``hack/build-k8s.sh`` so a plain ``make k8s`` is found."""
    if cache := os.environ.get("AIANALYSIS_K8S_CACHE"):
        return Path(cache)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "aianalysis-operator" / f"k8s-{K8S_VERSION}"


def find_binaries(bin_dir: Path | None = None) -> Binaries:
    """An explicit directory (argument, then ``$AIANALYSIS_K8S_BIN``) must hold the binaries; otherwise
    the build cache, then ``$PATH``, are searched."""
    explicit = bin_dir or (Path(env) if (env := os.environ.get(BIN_DIR_ENV)) else None)
    candidates = [explicit] if explicit else [default_cache_dir(), *_dir_on_path()]
    for candidate in candidates:
        if not _missing(candidate):
            return Binaries(candidate)
    where = candidates[0]
    raise errors.ConfigError(
        f"Kubernetes {K8S_VERSION} binaries not found in {where} (missing: {', '.join(_missing(where))}); "
        "run `make k8s` to build etcd, kube-apiserver and kubectl, or set "
        f"{BIN_DIR_ENV} to the directory holding them"
    )


def _dir_on_path() -> list[Path]:
    found = shutil.which("kube-apiserver")
    return [Path(found).parent] if found else []


def _missing(directory: Path) -> list[str]:
    return [name for name in NAMES if not os.access(directory / name, os.X_OK)]
