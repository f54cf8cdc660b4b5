"""NodeCluster: the dev control plane plus one real worker node — kubelet, containerd, runc, the CNI
bridge and kube-proxy — so Pods really run, crash, get OOM-killed and reach Services.

It needs root and a Linux machine with cgroups, overlayfs and bridge netfilter
(:func:`node_unavailable_reason` says why not, in one line). One node runs on a machine at a time:
a start waits for the machine-wide lock, then sweeps whatever a crashed run left. Everything lives
in one directory ``$TMPDIR/aianalysis-node-*``; what the daemons create outside it (the bridge,
cgroups under ``/aianalysis-node``, nftables tables, ``/run/containerd``, a few kubelet files) is
removed by ``stop`` — also on Ctrl-C, on a failing test and at interpreter exit.

No packet leaves the machine: see ``_host.prepare_network`` and the README's "Network" section.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import ssl
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import httpx

from aianalysis_dev import oci
from aianalysis_dev.devcluster import (
    _base,
    _binaries,
    _cluster,
    _config,
    _host,
    _nodeconfig,
    _pki,
    _processes,
)

NODE_NAME = "aianalysis-node"
_NODE_DAEMONS = ("kube-proxy", "kube-scheduler", "kubelet", "containerd")
_CONTROLLERS = (
    # What a real cluster runs for what we test: workloads and their Pods, Jobs, garbage collection,
    # namespaces, service accounts and their tokens, the root CA ConfigMap (mounted with every token),
    # aggregated ClusterRoles (admin/edit/view), Service endpoints, the node's lifecycle, Pod GC.
    "deployment,replicaset,statefulset,daemonset,job,cronjob,ttl-after-finished,disruption,"
    "garbagecollector,namespace,serviceaccount,serviceaccount-token,root-ca-cert-publisher,"
    "clusterrole-aggregation,resourcequota,endpoint,endpointslice,endpointslicemirroring,"
    "nodelifecycle,taint-eviction-controller,podgc"
)
_PROXY_VARIABLES = {"http_proxy", "https_proxy", "all_proxy", "no_proxy", "ftp_proxy"}
KEEP_LOGS_ENV = "AIANALYSIS_NODE_LOGS"
"""A directory: ``stop`` copies the node's daemon logs there before deleting them (CI, debugging)."""


def node_unavailable_reason() -> str | None:
    """Why this machine cannot run :class:`NodeCluster`, in one line; None if it can."""
    return _host.unavailable_reason()


class NodeCluster(_cluster.DevCluster):
    """``with NodeCluster() as cluster:`` — a control plane and a Ready node named ``aianalysis-node``.

    Beyond :class:`DevCluster`: ``import_image(path)`` loads an OCI image-layout tar into the node's
    containerd (Pods use it with ``imagePullPolicy: Never`` or ``IfNotPresent``; a pull of anything
    else fails on the machine); ``node_name``; ``timings`` (seconds since the machine lock was had:
    ``containerd_ready``, ``apiserver_ready``, ``node_ready``, ``all_ready``; and ``lock_wait``).
    The API server listens on the machine's own address (Pods reach it through the ``kubernetes``
    Service), with ServiceAccount admission and token controllers on, so Pods get projected
    ServiceAccount tokens.
    """

    dir_prefix = _host.DIR_PREFIX

    def __init__(
        self,
        *,
        bin_dir: Path | None = None,
        users: Mapping[str, Sequence[str]] | None = None,
        start_timeout_s: float = 120.0,
        stop_grace_s: float = 5.0,
        lock_timeout_s: float = 1800.0,
    ) -> None:
        super().__init__(
            bin_dir=bin_dir,
            users=users,
            start_timeout_s=start_timeout_s,
            stop_grace_s=stop_grace_s,
            controller_manager=True,
        )
        self.node_binaries = _binaries.find_node_binaries(self.binaries.dir)
        self.lock_timeout_s = lock_timeout_s
        self.timings: dict[str, float] = {}
        self._machine_lock: IO[str] | None = None
        self._bridge_nf_before = ""

    node_name = NODE_NAME

    # --- lifecycle -------------------------------------------------------------------------------

    def start(self) -> NodeCluster:
        if reason := node_unavailable_reason():
            raise _host.NodeUnavailableError(f"this machine cannot run a real node: {reason}")
        super().start()
        return self

    def __enter__(self) -> NodeCluster:
        return self.start()

    def stop(self) -> None:
        """Stop every daemon, then sweep the node off the machine (containers, shims, mounts, cgroups,
        the bridge, nftables tables, files outside the directory), then release the machine lock."""
        if self._machine_lock is None:
            super().stop()
            return
        try:
            self._keep_logs()
            for name in [n for n in self._procs if n in _NODE_DAEMONS]:
                _processes.terminate(self._procs.pop(name), grace_s=self.stop_grace_s)
            for proc in self._procs.values():
                _processes.terminate(proc, grace_s=self.stop_grace_s)
            _host.sweep(self._parent_dir(), nft=self.node_binaries.nft)
        finally:
            super().stop()
            if self._bridge_nf_before and self._bridge_nf_before != "1":
                _host.BRIDGE_NF_CALL.write_text(self._bridge_nf_before)
            self._machine_lock.close()
            self._machine_lock = None

    def _parent_dir(self) -> Path:
        return Path(tempfile.gettempdir())  # on disk, not tmpfs: images and container layers live here

    def _launch(self) -> None:
        """The slow parts overlap: containerd starts while the API server does, and kubelet,
        kube-proxy, kube-scheduler and kube-controller-manager together once it is ready."""
        started = time.monotonic()
        self._machine_lock = _host.lock_machine(timeout_s=self.lock_timeout_s)
        self.timings["lock_wait"] = time.monotonic() - started
        started = time.monotonic()
        _host.sweep(self._parent_dir(), nft=self.node_binaries.nft)
        address = _host.host_address()
        if address is None:
            raise _host.NodeUnavailableError("no non-loopback IPv4 address for the API server")
        self._host = address
        self._create_dir()
        layout = _nodeconfig.Layout(self.data_dir)
        env = self._node_env(layout)
        self._spawn_control_plane()
        self._start_containerd(layout, env)
        self.timings["containerd_ready"] = time.monotonic() - started
        self._wait_ready()
        self.timings["apiserver_ready"] = time.monotonic() - started
        health = {
            "kube-controller-manager": self._spawn_controller_manager(),
            "kube-scheduler": self._spawn_scheduler(),
            "kube-proxy": self._spawn_kube_proxy(layout, env),  # it waits for the Node to appear
        }
        self._spawn_kubelet(layout, env)
        self._wait_for("kubelet", self._node_ready)
        self.timings["node_ready"] = time.monotonic() - started
        for name, url in health.items():
            self._wait_healthy(name, url)
        self.timings["all_ready"] = time.monotonic() - started

    # --- what differs in the control plane -------------------------------------------------------

    @property
    def ca_file(self) -> Path:
        """The cluster's one CA: it signs the API server's and kubelet's serving certificates and
        every client certificate (``client_certificate``)."""
        return self.data_dir / "client-ca.crt"

    def _write_auth_files(self) -> None:
        super()._write_auth_files()
        directory = self.data_dir
        service_names = ["kubernetes", "kubernetes.default", "kubernetes.default.svc"]
        service_names.append("kubernetes.default.svc.cluster.local")
        _pki.issue(
            directory, ca="client-ca", name="kube-apiserver", usage="server",
            ips=[self._host, "127.0.0.1", _host.KUBERNETES_SERVICE_IP], dns=["localhost", *service_names],
        )  # fmt: skip
        _pki.issue(directory, ca="client-ca", name="kube-apiserver-kubelet-client", groups=["system:masters"])
        _pki.issue(
            directory,
            ca="client-ca",
            name=f"system:node:{NODE_NAME}",
            groups=["system:nodes"],
            stem="kubelet",
        )
        _pki.issue(
            directory, ca="client-ca", name=NODE_NAME, usage="server", ips=[self._host], dns=[NODE_NAME],
            stem="kubelet-serving",
        )  # fmt: skip
        for component in ("kube-proxy", "kube-scheduler", "kube-controller-manager"):
            _pki.issue(directory, ca="client-ca", name=f"system:{component}", stem=component)

    def _component_kubeconfig(self, stem: str, user: str) -> Path:
        path = self.data_dir / f"{stem}.kubeconfig"
        if not path.exists():
            cert, key = self.data_dir / f"{stem}.crt", self.data_dir / f"{stem}.key"
            text = _config.certificate_kubeconfig_text(
                server=self.server, ca_file=self.ca_file, name=user, cert=cert, key=key
            )
            path.write_text(text)
        return path

    def _apiserver_flags(self, etcd_port: int) -> dict[str, str]:
        flags = super()._apiserver_flags(etcd_port)
        del flags["cert-dir"], flags["disable-admission-plugins"]  # ServiceAccount admission: on
        directory = self.data_dir
        flags.update({
            "advertise-address": self._host,
            "tls-cert-file": str(directory / "kube-apiserver.crt"),
            "tls-private-key-file": str(directory / "kube-apiserver.key"),
            "service-cluster-ip-range": _host.SERVICE_CIDR,
            "enable-admission-plugins": "NodeRestriction",
            "authorization-mode": "Node,RBAC",
            "kubelet-client-certificate": str(directory / "kube-apiserver-kubelet-client.crt"),
            "kubelet-client-key": str(directory / "kube-apiserver-kubelet-client.key"),
            "kubelet-certificate-authority": str(self.ca_file),
            # The kubelet's hostname does not resolve here: logs and exec dial its InternalIP.
            "kubelet-preferred-address-types": "InternalIP",
            # Webhooks and aggregated APIs by endpoint, never by a Service address from the host.
            "enable-aggregator-routing": "true",
        })  # fmt: skip
        return flags

    def _controller_manager_flags(self, port: int) -> dict[str, str]:
        flags = super()._controller_manager_flags(port)
        kubeconfig = str(
            self._component_kubeconfig("kube-controller-manager", "system:kube-controller-manager")
        )
        flags.update({
            "kubeconfig": kubeconfig, "authentication-kubeconfig": kubeconfig,
            "authorization-kubeconfig": kubeconfig, "controllers": _CONTROLLERS,
            "use-service-account-credentials": "true",
            "service-account-private-key-file": str(self.data_dir / "sa.key"),
            "root-ca-file": str(self.ca_file),
            "service-cluster-ip-range": _host.SERVICE_CIDR,
            "node-monitor-grace-period": "40s",
        })  # fmt: skip
        return flags

    def _child_env(self) -> dict[str, str]:
        """Our environment without proxy settings: nothing of the cluster may be sent to a proxy."""
        return {k: v for k, v in os.environ.items() if k.lower() not in _PROXY_VARIABLES}

    # --- the node ----------------------------------------------------------------------------------

    def _node_env(self, layout: _nodeconfig.Layout) -> dict[str, str]:
        """The daemons' environment: no proxies; ``runc`` (for ctr) and ``nft`` (for kube-proxy) and
        the containerd shim on PATH."""
        binaries = self.node_binaries
        layout.bin.mkdir()
        for tool in (binaries.runc, binaries.nft):
            (layout.bin / tool.name).symlink_to(tool)
        env = self._child_env()
        env["PATH"] = os.pathsep.join([str(layout.bin), str(binaries.containerd_dir), env.get("PATH", "")])
        return env

    def _start_containerd(self, layout: _nodeconfig.Layout, env: dict[str, str]) -> None:
        """The machine's side first (cgroup parent, Pod network), then containerd with the pause
        image imported (it is the sandbox image: a pull of it would go nowhere)."""
        binaries = self.node_binaries
        self._bridge_nf_before = _host.BRIDGE_NF_CALL.read_text().strip()
        if self._bridge_nf_before != "1":  # Service translation of Pod-to-Pod traffic on the bridge
            _host.BRIDGE_NF_CALL.write_text("1")
        _host.make_cgroup_parent()
        _host.prepare_network(binaries.nft)
        _nodeconfig.write_containerd(layout, runc=binaries.runc, cni_bin=binaries.cni)
        argv = [str(binaries.containerd_binary("containerd")), f"--config={layout.containerd_config}"]
        self._start_first("containerd", argv, env=env)
        pause = oci.single_binary_image(
            self.data_dir / "pause.tar",
            binary=binaries.containerd_binary("pause"),
            ref=_nodeconfig.PAUSE_IMAGE,
        )
        self._wait_for("containerd", lambda: self._ctr("version", check=False).returncode == 0)
        self.import_image(pause)

    def _spawn_kubelet(self, layout: _nodeconfig.Layout, env: dict[str, str]) -> None:
        port, healthz = _config.free_ports(2)
        _nodeconfig.write_kubelet(layout, address=self._host, port=port, healthz_port=healthz)
        kubeconfig = self._component_kubeconfig("kubelet", f"system:node:{NODE_NAME}")
        argv = [
            str(self.node_binaries.k8s_binary("kubelet")), f"--config={layout.kubelet_config}",
            f"--kubeconfig={kubeconfig}", f"--root-dir={layout.kubelet_root}",
            f"--cert-dir={layout.kubelet_root / 'pki'}", f"--hostname-override={NODE_NAME}",
            f"--node-ip={self._host}", "--v=2",
        ]  # fmt: skip
        self._start_first("kubelet", argv, env=env)

    def _spawn_scheduler(self) -> str:
        (port,) = _config.free_ports(1)
        kubeconfig = self._component_kubeconfig("kube-scheduler", "system:kube-scheduler")
        flags = {
            "kubeconfig": kubeconfig, "authentication-kubeconfig": kubeconfig,
            "authorization-kubeconfig": kubeconfig, "leader-elect": "false",
            "bind-address": "127.0.0.1", "secure-port": port,
        }  # fmt: skip
        argv = [str(self.node_binaries.k8s_binary("kube-scheduler"))]
        argv += [f"--{name}={value}" for name, value in flags.items()]
        self._start_first("kube-scheduler", argv)
        return f"https://127.0.0.1:{port}/healthz"

    def _spawn_kube_proxy(self, layout: _nodeconfig.Layout, env: dict[str, str]) -> str:
        healthz, metrics = _config.free_ports(2)
        kubeconfig = self._component_kubeconfig("kube-proxy", "system:kube-proxy")
        _nodeconfig.write_kube_proxy(
            layout, kubeconfig=kubeconfig, node=NODE_NAME, healthz_port=healthz, metrics_port=metrics
        )
        argv = [str(self.node_binaries.k8s_binary("kube-proxy")), f"--config={layout.kube_proxy_config}"]
        self._start_first("kube-proxy", argv, env=env)
        return f"http://127.0.0.1:{healthz}/healthz"

    def _serves(self, url: str) -> bool:
        if url.startswith("http://"):
            try:
                return httpx.get(url, timeout=2.0).status_code == 200
            except httpx.HTTPError:
                return False
        return super()._serves(url)

    def _node_ready(self) -> bool:
        node = self._get(f"/api/v1/nodes/{NODE_NAME}")
        if node is None:
            return False
        ready = [c for c in node.get("status", {}).get("conditions", []) if c.get("type") == "Ready"]
        taints = [t.get("key") for t in node.get("spec", {}).get("taints", [])]
        return (
            bool(ready) and ready[0].get("status") == "True" and "node.kubernetes.io/not-ready" not in taints
        )

    def _get(self, path: str) -> dict[str, Any] | None:
        context = ssl.create_default_context(cafile=str(self.ca_file))
        headers = {"Authorization": f"Bearer {self.token}"}
        try:
            response = httpx.get(f"{self.server}{path}", headers=headers, verify=context, timeout=5.0)
        except httpx.HTTPError:
            return None
        body: dict[str, Any] = response.json() if response.status_code == 200 else {}
        return body or None

    def _wait_for(self, name: str, condition: Any) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while not condition():
            if exited := [n for n, proc in self._procs.items() if proc.poll() is not None]:
                self._fail(f"{exited[0]} exited early")
            if time.monotonic() > deadline:
                self._fail(f"{name} not ready after {self.start_timeout_s:.0f}s")
            time.sleep(0.2)

    # --- images --------------------------------------------------------------------------------------

    def import_image(self, path: Path) -> list[str]:
        """Load the OCI image-layout tar ``path`` (each index.json entry named by the annotation
        ``io.containerd.image.name``) into the node's containerd, also named ``repository@digest``
        (a Pod may name it either way); returns the image names."""
        names = oci.image_names(path)
        self._ctr("images", "import", "--platform", "linux/amd64", str(path))
        # The kubelet asks for a Pod's image by the reference it names; containerd's CRI finds
        # ``repository@sha256:…`` (a catalog pinned by digest) only under that very name.
        for name, digest in zip(names, oci.image_digests(path), strict=True):
            self._ctr("images", "tag", "--force", name, f"{name.rpartition(':')[0]}@{digest}")
        return names

    def _ctr(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        socket = _nodeconfig.Layout(self.data_dir).containerd_socket
        argv = [str(self.node_binaries.containerd_binary("ctr")), f"--address={socket}", "--namespace=k8s.io"]
        result = subprocess.run(
            [*argv, *args], capture_output=True, text=True, timeout=600, check=False, env=self._child_env()
        )
        if check and result.returncode != 0:
            raise _base.DevClusterError(f"ctr {' '.join(args[:2])} failed: {result.stderr.strip()}")
        return result

    def _keep_logs(self) -> None:
        target = os.environ.get(KEEP_LOGS_ENV)
        if not target or self._dir is None:
            return
        Path(target).mkdir(parents=True, exist_ok=True)
        for log in self._dir.glob("*.log"):
            with contextlib.suppress(OSError):
                shutil.copy(log, Path(target) / log.name)
