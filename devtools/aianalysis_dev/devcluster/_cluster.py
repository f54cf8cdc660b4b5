"""DevCluster: etcd + kube-apiserver on random loopback ports, started and stopped by Python.

No scheduler and no kubelet: objects are stored and served. By default nothing reconciles them
(namespaces never finish deleting, pods stay Pending), which is enough for the operator's tests.
``controller_manager=True`` adds kube-controller-manager with the controllers the executor needs —
the Job controller and the garbage collector — so Jobs create Pods and react for real to the Pod
status a test (standing in for a kubelet) writes through ``/status``.
"""

from __future__ import annotations

import re
import secrets
import shutil
import ssl
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any, NoReturn

import httpx
import kubernetes

from aianalysis_dev.devcluster import _base, _binaries, _config, _pki, _processes

ADMIN = "admin"
_SHM = Path("/dev/shm")  # noqa: S108 — tmpfs makes etcd fast; mkdtemp creates a private 0700 dir in it
_START_ATTEMPTS = 3  # a random port can be taken by someone else between picking and binding it


class _PortTaken(_base.DevClusterError):
    pass


class DevCluster:
    """``with DevCluster() as cluster:`` — a fresh, empty API server for the block's duration."""

    dir_prefix = "aianalysis-devcluster-"
    """The data directory's name starts with this; a start sweeps the ones whose owner died."""

    def __init__(
        self,
        *,
        bin_dir: Path | None = None,
        users: Mapping[str, Sequence[str]] | None = None,
        start_timeout_s: float = 90.0,
        stop_grace_s: float = 5.0,
        controller_manager: bool = False,
    ) -> None:
        self.binaries = _binaries.find_binaries(bin_dir)
        self.controller_manager = controller_manager
        self.start_timeout_s = start_timeout_s
        self.stop_grace_s = stop_grace_s
        self._dir: Path | None = None
        self._lock: IO[str] | None = None
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._host = "127.0.0.1"
        self._port = 0
        self._etcd_port = 0
        self._users = {ADMIN: _config.User(ADMIN, secrets.token_hex(16), ("system:masters",))}
        for name, groups in (users or {}).items():
            self.add_user(name, groups)

    # --- lifecycle -------------------------------------------------------------------------------

    def __enter__(self) -> DevCluster:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> DevCluster:
        """Start etcd and kube-apiserver and wait for ``/readyz``; on failure nothing is left running."""
        if self._dir is not None:
            raise _base.DevClusterError("DevCluster already started")
        for attempt in range(1, _START_ATTEMPTS + 1):
            _processes.register(self.stop)  # before spawning: a Ctrl-C during start cleans up too
            try:
                self._launch()
                return self
            except _PortTaken:
                self.stop()
                if attempt == _START_ATTEMPTS:
                    raise
            except BaseException:
                self.stop()
                raise
        raise AssertionError("unreachable")

    def stop(self) -> None:
        """Kill both process groups and delete the data directory. Idempotent."""
        for proc in self._procs.values():  # apiserver first: it still talks to etcd while shutting down
            _processes.terminate(proc, grace_s=self.stop_grace_s)
        self._procs, self._port = {}, 0
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        if self._lock is not None:
            self._lock.close()
            self._lock = None
        _processes.unregister(self.stop)

    def restart_apiserver(self) -> None:
        """Stop kube-apiserver and start it again on the same port, data and certificates (etcd
        keeps running): what clients see when a control plane is upgraded or its Pod restarts —
        connections reset, then refused, watches ended. Returns once it is ready again."""
        name = "kube-apiserver"
        _processes.terminate(self._procs[name], grace_s=self.stop_grace_s)
        argv = self._apiserver_argv(self._etcd_port)
        self._procs[name] = _processes.spawn(argv, log=self._log(name), env=self._child_env())
        self._wait_ready()

    # --- users and clients -----------------------------------------------------------------------

    def add_user(self, name: str, groups: Sequence[str] = ()) -> str:
        """Add a static-token user; only before ``start`` (the apiserver reads its token file once).
        Returns the user's bearer token."""
        if self._dir is not None:
            raise _base.DevClusterError("add_user() must be called before start()")
        if name in self._users:
            raise _base.DevClusterError(f"user {name!r} already exists")
        self._users[name] = _config.User(name, secrets.token_hex(16), tuple(groups))
        return self._users[name].token

    @property
    def bin_dir(self) -> Path:
        return self.binaries.dir

    @property
    def data_dir(self) -> Path:
        if self._dir is None:
            raise _base.DevClusterError("DevCluster is not running")
        return self._dir

    @property
    def server(self) -> str:
        if not self._port:
            raise _base.DevClusterError("DevCluster is not running")
        return f"https://{self._host}:{self._port}"

    @property
    def token(self) -> str:
        return self._users[ADMIN].token

    @property
    def ca_file(self) -> Path:
        return self.data_dir / "cert" / "apiserver.crt"

    @property
    def kubeconfig(self) -> Path:
        return self.kubeconfig_for(ADMIN)

    def kubeconfig_for(self, user: str) -> Path:
        """A kubeconfig authenticating as ``user`` (``admin``, or one given to ``users``/``add_user``)."""
        if user not in self._users:
            raise _base.DevClusterError(f"unknown user {user!r}; known: {sorted(self._users)}")
        # ``:`` (as in ServiceAccount user names) would split KUBECONFIG-style path lists
        path = self.data_dir / f"kubeconfig-{re.sub(r'[^A-Za-z0-9_.-]', '_', user)}.yaml"
        if not path.exists():
            text = _config.kubeconfig_text(server=self.server, ca_file=self.ca_file, user=self._users[user])
            path.write_text(text)
        return path

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, user: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run the built kubectl against this cluster (discovery cache inside the data dir, not ~/.kube)."""
        return _base.run_kubectl(
            self.binaries.kubectl,
            [f"--cache-dir={self.data_dir / 'kubectl-cache'}", *args],
            kubeconfig=self.kubeconfig_for(user or ADMIN),
            input=input,
            check=check,
        )

    def api_client(self, user: str | None = None) -> Any:
        """A ``kubernetes.client.ApiClient`` for ``user`` (default admin); close it when done."""
        config_file = str(self.kubeconfig_for(user or ADMIN))
        return kubernetes.config.new_client_from_config(config_file=config_file)  # type: ignore[no-untyped-call]  # kubernetes is untyped

    # --- start internals -------------------------------------------------------------------------

    def _parent_dir(self) -> Path:
        return _SHM if _SHM.is_dir() else Path(tempfile.gettempdir())

    def _launch(self) -> None:
        self._create_dir()
        self._spawn_control_plane()
        self._wait_ready()
        if self.controller_manager:
            self._wait_healthy("kube-controller-manager", self._spawn_controller_manager())

    def _create_dir(self) -> None:
        parent = self._parent_dir()
        _processes.sweep(parent, prefix=self.dir_prefix)
        self._dir = Path(tempfile.mkdtemp(prefix=self.dir_prefix, dir=parent))
        self._lock = _processes.claim(self._dir)

    def _spawn_control_plane(self) -> None:
        """etcd and kube-apiserver, started; ``_wait_ready`` waits for the API server."""
        etcd_port, peer_port, self._port = _config.free_ports(3)
        self._write_auth_files()
        self._etcd_port = etcd_port
        argvs = {
            "kube-apiserver": self._apiserver_argv(etcd_port),
            "etcd": self._etcd_argv(etcd_port, peer_port),
        }
        env = self._child_env()
        self._procs = {
            name: _processes.spawn(argv, log=self._log(name), env=env) for name, argv in argvs.items()
        }

    def _spawn_controller_manager(self) -> str:
        """Started after the apiserver is ready (it would only retry before); ready once it serves
        the returned ``/healthz``, and its Job controller is running from then on."""
        (port,) = _config.free_ports(1)
        flags = self._controller_manager_flags(port)
        self._start_first(
            "kube-controller-manager", [str(self.binaries.kube_controller_manager), *_argv(flags)]
        )
        return f"https://127.0.0.1:{port}/healthz"

    def _controller_manager_flags(self, port: int) -> dict[str, str]:
        return {
            "kubeconfig": str(self.kubeconfig), "authentication-kubeconfig": str(self.kubeconfig),
            "authorization-kubeconfig": str(self.kubeconfig), "controllers": "job,garbagecollector",
            "leader-elect": "false", "bind-address": "127.0.0.1", "secure-port": str(port),
            "cert-dir": str(self.data_dir / "kcm-cert"),
            "concurrent-job-syncs": "2", "concurrent-gc-syncs": "2",
        }  # fmt: skip

    def _start_first(self, name: str, argv: Sequence[str], *, env: Mapping[str, str] | None = None) -> None:
        """Spawn ``name``; ``stop`` ends the processes started last first, the API server and etcd last."""
        env = self._child_env() if env is None else env
        self._procs = {name: _processes.spawn(argv, log=self._log(name), env=env), **self._procs}

    def _child_env(self) -> dict[str, str] | None:
        """The environment of the cluster's processes (None: ours)."""
        return None

    def _wait_healthy(self, name: str, url: str) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while not self._serves(url):
            if self._procs[name].poll() is not None:
                self._fail(f"{name} exited early")
            if time.monotonic() > deadline:
                self._fail(f"{name} not healthy after {self.start_timeout_s:.0f}s")
            time.sleep(0.1)

    def _serves(self, url: str) -> bool:
        try:  # its self-signed serving certificate: nothing secret is exchanged on this probe
            return httpx.get(url, verify=False, timeout=2.0).status_code == 200  # noqa: S501
        except httpx.HTTPError:
            return False

    def _log(self, name: str) -> Path:
        return self.data_dir / f"{name}.log"

    def _write_auth_files(self) -> None:
        (self.data_dir / "tokens.csv").write_text(_config.tokens_csv(list(self._users.values())))
        key = self.data_dir / "sa.key"
        subprocess.run([_pki.openssl(), "genrsa", "-out", str(key), "2048"], check=True, capture_output=True)
        # A CA the API server trusts for client certificates (kubeadm's, kind's and minikube's
        # kubeconfigs authenticate that way): ``client_certificate`` signs with it.
        _config.make_client_ca(self.data_dir)

    def client_certificate(self, user: str, groups: Sequence[str] = ()) -> tuple[Path, Path]:
        """A client certificate and key for ``user`` in ``groups`` (the certificate's CN and O), signed
        by the CA the API server trusts; written beside the cluster's other files."""
        return _config.sign_client_certificate(self.data_dir, user=user, groups=groups)

    def _etcd_argv(self, port: int, peer_port: int) -> list[str]:
        client, peer = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{peer_port}"
        return [
            str(self.binaries.etcd), "--name=dev", f"--data-dir={self.data_dir / 'etcd'}",
            f"--listen-client-urls={client}", f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=dev={peer}", "--unsafe-no-fsync", "--log-level=warn",
        ]  # fmt: skip

    def _apiserver_argv(self, etcd_port: int) -> list[str]:
        return [str(self.binaries.kube_apiserver), *_argv(self._apiserver_flags(etcd_port))]

    def _apiserver_flags(self, etcd_port: int) -> dict[str, str]:
        directory = self.data_dir
        return {
            "etcd-servers": f"http://127.0.0.1:{etcd_port}", "bind-address": self._host,
            "secure-port": str(self._port), "advertise-address": _config.advertise_address(),
            "cert-dir": str(directory / "cert"), "service-cluster-ip-range": "10.0.0.0/24",
            "service-account-issuer": f"{self.server}/",
            "service-account-key-file": str(directory / "sa.key"),
            "service-account-signing-key-file": str(directory / "sa.key"),
            "token-auth-file": str(directory / "tokens.csv"), "authorization-mode": "RBAC",
            "client-ca-file": str(directory / "client-ca.crt"),
            "disable-admission-plugins": "ServiceAccount", "allow-privileged": "true",
        }  # fmt: skip

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while True:
            # Exits first: an apiserver whose etcd died may have reached someone else's etcd on that port.
            if exited := [name for name, proc in self._procs.items() if proc.poll() is not None]:
                self._fail(f"{exited[0]} exited early")
            if self._ready():
                return
            if time.monotonic() > deadline:
                self._fail(f"kube-apiserver not ready after {self.start_timeout_s:.0f}s")
            time.sleep(0.1)

    def _ready(self) -> bool:
        if not self.ca_file.exists():
            return False
        try:
            context = ssl.create_default_context(cafile=str(self.ca_file))
            headers = {"Authorization": f"Bearer {self.token}"}
            response = httpx.get(f"{self.server}/readyz", headers=headers, verify=context, timeout=2.0)
        except (httpx.HTTPError, ssl.SSLError, OSError):  # not listening yet, or the cert half written
            return False
        return response.status_code == 200

    def _fail(self, what: str) -> NoReturn:
        logs = [_config.log_tail(self._log(name)) for name in self._procs]
        error = _PortTaken if any("address already in use" in log for log in logs) else _base.DevClusterError
        raise error("\n".join([f"DevCluster failed to start: {what}", *logs]))


def _argv(flags: Mapping[str, str]) -> list[str]:
    return [f"--{name}={value}" for name, value in flags.items()]
