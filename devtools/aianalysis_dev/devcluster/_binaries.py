"""Where the locally built etcd, kube-apiserver and kubectl live (built by ``hack/build-k8s.sh``)."""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Iterator
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


CONTAINERD_VERSION = "v2.4.2"
"""The containerd we build for the real node; must match ``hack/containerd/go.mod`` (a unit test checks)."""

CONTAINERD_BIN_ENV = "AIANALYSIS_CONTAINERD_BIN"
"""Set by the Makefile to the directory ``hack/build-containerd.sh`` printed."""

NODE_DEBS_ENV = "AIANALYSIS_NODE_DEBS"
"""Set by the Makefile to the directory ``hack/build-node-debs.sh`` printed."""

NODE_K8S_NAMES = ("kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy")
CONTAINERD_NAMES = ("containerd", "ctr", "containerd-shim-runc-v2", "pause", "apiprobe")
NODE_DEBS_NAMES = ("bin/runc", "bin/nft", "bin/busybox", "cni/bridge", "cni/host-local", "cni/loopback")


@dataclasses.dataclass(frozen=True)
class NodeBinaries:
    """What a real node runs besides the control plane: kubelet, kube-scheduler and kube-proxy (beside
    kube-apiserver), containerd and our pause (``hack/build-containerd.sh``), and the distribution's
    runc, CNI plugins, busybox and nft (``hack/build-node-debs.sh``)."""

    k8s: Path
    containerd_dir: Path
    debs: Path

    def k8s_binary(self, name: str) -> Path:
        return self.k8s / name

    def containerd_binary(self, name: str) -> Path:
        return self.containerd_dir / name

    @property
    def runc(self) -> Path:
        return self.debs / "bin" / "runc"

    @property
    def nft(self) -> Path:
        return self.debs / "bin" / "nft"

    @property
    def busybox(self) -> Path:
        return self.debs / "bin" / "busybox"

    @property
    def cni(self) -> Path:
        return self.debs / "cni"


def find_node_binaries(k8s_dir: Path) -> NodeBinaries:
    """The node's binaries: the Kubernetes ones beside kube-apiserver in ``k8s_dir``, the others in
    ``$AIANALYSIS_CONTAINERD_BIN`` / ``$AIANALYSIS_NODE_DEBS`` or the build caches."""
    cache = default_cache_dir().parent
    containerd = Path(os.environ.get(CONTAINERD_BIN_ENV) or cache / f"containerd-{CONTAINERD_VERSION}")
    debs = Path(os.environ.get(NODE_DEBS_ENV) or _newest(cache.glob("node-debs-*/VERSIONS"), cache))
    wanted = [k8s_dir / n for n in NODE_K8S_NAMES] + [containerd / n for n in CONTAINERD_NAMES]
    wanted += [debs / n for n in NODE_DEBS_NAMES]
    if missing := [str(path) for path in wanted if not os.access(path, os.X_OK)]:
        raise errors.ConfigError(
            f"the real node's binaries are missing ({', '.join(missing[:4])}); run `make node` "
            "(hack/build-k8s.sh, hack/build-containerd.sh, hack/build-node-debs.sh)"
        )
    return NodeBinaries(k8s_dir, containerd, debs)


def _newest(stamps: Iterator[Path], fallback: Path) -> Path:
    found = sorted(stamps, key=lambda stamp: stamp.stat().st_mtime)
    return found[-1].parent if found else fallback / "node-debs"
