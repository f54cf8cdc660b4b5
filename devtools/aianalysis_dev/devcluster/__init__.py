"""A real local Kubernetes control plane (etcd + kube-apiserver built from Go modules) for tests and
the demo, without Docker; ``NodeCluster`` adds a real worker node (kubelet, containerd, runc, CNI,
kube-proxy). ``python -m aianalysis_dev.devcluster [--node]`` starts one for people."""

from aianalysis_dev.devcluster._base import Cluster, DevClusterError, apply_crds
from aianalysis_dev.devcluster._binaries import CONTAINERD_VERSION, K8S_VERSION, Binaries, find_binaries
from aianalysis_dev.devcluster._cluster import ADMIN, DevCluster
from aianalysis_dev.devcluster._config import free_ports, make_client_ca, sign_client_certificate
from aianalysis_dev.devcluster._existing import ExistingCluster
from aianalysis_dev.devcluster._host import NodeUnavailableError
from aianalysis_dev.devcluster._node import NodeCluster, node_unavailable_reason

__all__ = [
    "ADMIN",
    "CONTAINERD_VERSION",
    "K8S_VERSION",
    "Binaries",
    "Cluster",
    "DevCluster",
    "DevClusterError",
    "ExistingCluster",
    "NodeCluster",
    "NodeUnavailableError",
    "apply_crds",
    "find_binaries",
    "free_ports",
    "make_client_ca",
    "node_unavailable_reason",
    "sign_client_certificate",
]
