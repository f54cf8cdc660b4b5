"""A real local Kubernetes control plane (etcd + kube-apiserver built from Go modules) for tests and
the demo, without Docker. ``python -m aianalysis_dev.devcluster`` starts one for people."""

from aianalysis_dev.devcluster._base import Cluster, DevClusterError, apply_crds
from aianalysis_dev.devcluster._binaries import K8S_VERSION, Binaries, find_binaries
from aianalysis_dev.devcluster._cluster import ADMIN, DevCluster
from aianalysis_dev.devcluster._config import make_client_ca, sign_client_certificate
from aianalysis_dev.devcluster._existing import ExistingCluster

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
    "make_client_ca",
    "sign_client_certificate",
]
