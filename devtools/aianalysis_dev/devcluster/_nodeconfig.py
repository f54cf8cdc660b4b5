"""The configuration files of the node's daemons: containerd (with the CNI network and a registry
configuration that sends every pull to a closed loopback port), kubelet and kube-proxy. Paths are
all under the node's directory; ``_host`` holds the fixed names and ranges."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import yaml

from aianalysis_dev.devcluster import _host

PAUSE_IMAGE = "aianalysis.local/pause:1"
CLOSED_REGISTRY = "http://127.0.0.1:9"
"""Every image pull goes here (the discard port, nothing listens): a missing image fails on the
machine with "connection refused" instead of reaching a registry."""


@dataclasses.dataclass(frozen=True)
class Layout:
    """Where the node's daemons keep their state, under the cluster's directory ``root``."""

    root: Path

    @property
    def etc(self) -> Path:
        return self.root / "etc"

    @property
    def containerd_config(self) -> Path:
        return self.etc / "containerd" / "config.toml"

    @property
    def registry_hosts(self) -> Path:
        return self.etc / "containerd" / "certs.d"

    @property
    def cni_config(self) -> Path:
        return self.etc / "cni" / "net.d"

    @property
    def kubelet_config(self) -> Path:
        return self.etc / "kubelet.yaml"

    @property
    def kube_proxy_config(self) -> Path:
        return self.etc / "kube-proxy.yaml"

    @property
    def containerd_socket(self) -> Path:
        return self.root / "run" / "containerd" / "containerd.sock"

    @property
    def kubelet_root(self) -> Path:
        return self.root / "var" / "lib" / "kubelet"

    @property
    def bin(self) -> Path:
        """Put first on the daemons' PATH: runc for ctr, nft for kube-proxy."""
        return self.root / "bin"

    @property
    def pki(self) -> Path:
        """Certificates and keys, beside the cluster's CA (``client-ca.crt``)."""
        return self.root


def write_containerd(layout: Layout, *, runc: Path, cni_bin: Path) -> None:
    state = layout.root / "run" / "containerd"
    runtime = "plugins.'io.containerd.cri.v1.runtime'"
    images = "plugins.'io.containerd.cri.v1.images'"
    config = f"""version = 3
root = {_toml(layout.root / "var" / "lib" / "containerd")}
state = {_toml(state)}
# NRI would listen on /var/run/nri; tracing and the other snapshotters are not used here.
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.blockfile",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = {_toml(layout.containerd_socket)}
[ttrpc]
  address = {_toml(state / "containerd.sock.ttrpc")}

[plugins.'io.containerd.internal.v1.opt']
  path = {_toml(layout.root / "opt" / "containerd")}
[{images}]
  snapshotter = "overlayfs"
  [{images}.pinned_images]
    sandbox = "{PAUSE_IMAGE}"
  [{images}.registry]
    config_path = {_toml(layout.registry_hosts)}
[{runtime}]
  enable_selinux = false
  # This machine's root lacks CAP_SYS_RESOURCE: runc cannot lower a sandbox's oom_score_adj below
  # containerd's own, and every sandbox failed until the score was clamped.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [{runtime}.containerd]
    default_runtime_name = "runc"
    [{runtime}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [{runtime}.containerd.runtimes.runc.options]
        BinaryName = {_toml(runc)}
        Root = {_toml(layout.root / "run" / "runc")}
        SystemdCgroup = false
  [{runtime}.cni]
    bin_dirs = [{_toml(cni_bin)}]
    conf_dir = {_toml(layout.cni_config)}
    max_conf_num = 1
[plugins.'io.containerd.grpc.v1.cri']
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
"""
    _write(layout.containerd_config, config)
    _write(layout.registry_hosts / "_default" / "hosts.toml", f'server = "{CLOSED_REGISTRY}"\n')
    network = {
        "cniVersion": "1.0.0",
        "name": _host.CNI_NETWORK,
        "plugins": [
            {
                # Not a gateway: with isGateway the plugin turns IP forwarding on. The bridge gets its
                # address from _host.prepare_network; Pods get a route to the Service range only (no
                # default route: a connect to any other address fails inside the Pod).
                "type": "bridge",
                "bridge": _host.BRIDGE,
                "isGateway": False,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": _host.POD_CIDR, "gateway": _host.GATEWAY}]],
                    "routes": [{"dst": _host.SERVICE_CIDR, "gw": _host.GATEWAY}],
                    "dataDir": str(layout.root / "var" / "lib" / "cni" / "networks"),
                },
            }
        ],
    }
    _write(layout.cni_config / "10-aianalysis.conflist", json.dumps(network, indent=2))


def write_kubelet(layout: Layout, *, address: str, port: int, healthz_port: int) -> None:
    config: dict[str, Any] = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "failCgroupV1": False,  # this machine is cgroup v1; kubelet 1.35+ refuses it by default
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": f"/{_host.CGROUP_PARENT}",  # all Pod cgroups under one parent of ours
        "containerRuntimeEndpoint": f"unix://{layout.containerd_socket}",
        "imageServiceEndpoint": f"unix://{layout.containerd_socket}",
        "address": address,
        "port": port,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": healthz_port,
        "tlsCertFile": str(layout.pki / "kubelet-serving.crt"),
        "tlsPrivateKeyFile": str(layout.pki / "kubelet-serving.key"),
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": False},
            "x509": {"clientCAFile": str(layout.pki / "client-ca.crt")},
        },
        "authorization": {"mode": "AlwaysAllow"},  # only the API server's client certificate gets in
        "failSwapOn": False,
        "podLogsDir": str(layout.root / "var" / "log" / "pods"),
        "volumePluginDir": str(layout.kubelet_root / "volume-plugins"),
        "resolvConf": "",  # Pods must not ask the host's resolver
        # No DNS server runs there: a lookup fails at once on the machine (nothing translates the
        # address), and kubelet does not warn "MissingClusterDNS" on every Pod sync — events an
        # analysis reads.
        "clusterDNS": [_host.CLUSTER_DNS_IP],
        "clusterDomain": "cluster.local",
        "serializeImagePulls": False,
        "protectKernelDefaults": False,
        "evictionHard": {
            "memory.available": "100Mi",
            "nodefs.available": "2%",
            "imagefs.available": "2%",
            "nodefs.inodesFree": "2%",
        },
        "imageGCHighThresholdPercent": 99,
        "imageGCLowThresholdPercent": 98,
        "maxPods": 40,
        "localStorageCapacityIsolation": True,
    }
    _write(layout.kubelet_config, yaml.safe_dump(config, sort_keys=False))


def write_kube_proxy(
    layout: Layout, *, kubeconfig: Path, node: str, healthz_port: int, metrics_port: int
) -> None:
    config = {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "mode": "nftables",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "hostnameOverride": node,
        "healthzBindAddress": f"127.0.0.1:{healthz_port}",
        "metricsBindAddress": f"127.0.0.1:{metrics_port}",
        "clusterCIDR": _host.POD_CIDR,
        "nodePortAddresses": [f"{_host.GATEWAY}/32"],  # NodePorts only on the Pod bridge
        # Leave the machine's conntrack settings alone.
        "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
    }
    _write(layout.kube_proxy_config, yaml.safe_dump(config, sort_keys=False))


def _toml(path: Path) -> str:
    return json.dumps(str(path))  # a TOML basic string is a JSON string for paths


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
