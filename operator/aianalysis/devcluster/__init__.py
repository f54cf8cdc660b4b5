"""A real local Kubernetes control plane (etcd + kube-apiserver built from Go modules) for tests and
the demo, without Docker. ``python -m aianalysis.devcluster`` starts one for people."""

from aianalysis.devcluster._base import Cluster, DevClusterError, apply_crds
from aianalysis.devcluster._binaries import K8S_VERSION, Binaries, find_binaries
from aianalysis.devcluster._cluster import ADMIN, DevCluster
from aianalysis.devcluster._existing import ExistingCluster

__all__ = [
    "ADMIN",
    "K8S_VERSION",
    "Binaries",
    "Cluster",
    "DevCluster",
    "DevClusterError",
    "ExistingCluster",
    "apply_crds",
    "find_binaries",
]
