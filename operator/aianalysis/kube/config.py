"""Where the API server is and who we are to it: the in-cluster service account, else a kubeconfig.

What ``kubectl`` reads, minus what no operator needs: a kubeconfig (``$KUBECONFIG``, a
``os.pathsep``-separated list merged first-wins as kubectl does, else ``~/.kube/config``) gives
the current context's server, CA (file or data), ``insecure-skip-tls-verify``, ``tls-server-name``,
and one way to authenticate — a bearer ``token`` or ``tokenFile``, a client certificate and key
(files or data), basic auth, or an ``exec`` credential plugin (``client.authentication.k8s.io``
v1/v1beta1: the token it prints, run again when it expires; or the certificate it prints at
start, kept for the process' life). Relative paths are read beside the kubeconfig
that names them. The legacy ``auth-provider`` plugins (removed from kubectl in 1.26) are refused
with the reason. In a Pod the service account's token is read again every minute (bound tokens
are rotated by the kubelet).

Secrets given as data (a key, a certificate) go to files of a private temporary directory only
because Python's TLS loads them from files; the directory is removed at exit.
"""

from __future__ import annotations

import atexit
import base64
import dataclasses
import datetime
import functools
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
TOKEN_REREAD_SECONDS = 60.0
EXEC_TIMEOUT_SECONDS = 60.0


class ConfigError(Exception):
    """No usable way to reach the API server (no cluster, an unusable kubeconfig)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Connection:
    """Everything the transport needs; ``authorization`` gives the current ``Authorization``
    header (None: none, or the client certificate authenticates)."""

    server: str
    ca_file: str | None = None
    ca_data: str | None = None
    insecure: bool = False
    tls_server_name: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    namespace: str = "default"
    authorization: Callable[[], str | None] = dataclasses.field(default=lambda: None, repr=False)


def load(kubeconfig: str | None = None) -> Connection:
    """``kubeconfig``'s current context when given; else in a Pod the service account, else the
    kubeconfig ``$KUBECONFIG`` / ``~/.kube/config`` names."""
    if (
        kubeconfig is None
        and os.environ.get("KUBERNETES_SERVICE_HOST")
        and (SERVICE_ACCOUNT / "token").exists()
    ):
        return in_cluster()
    return from_kubeconfig(kubeconfig)


def in_cluster(directory: Path | None = None) -> Connection:
    directory = directory or SERVICE_ACCOUNT
    host, port = os.environ.get("KUBERNETES_SERVICE_HOST", ""), os.environ.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise ConfigError("in a Pod without KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT")
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    namespace_file = directory / "namespace"
    namespace = namespace_file.read_text().strip() if namespace_file.exists() else "default"
    token = _TokenFile(directory / "token")
    return Connection(
        server=f"https://{host}:{port}",
        ca_file=str(directory / "ca.crt"),
        namespace=namespace or "default",
        authorization=token.authorization,
    )


def from_kubeconfig(kubeconfig: str | None = None) -> Connection:
    picked = _current(kubeconfig)
    context, cluster, user = picked.context, picked.cluster, picked.user
    cluster_dir, user_dir = picked.cluster_dir, picked.user_dir
    server = cluster.get("server")
    if not server:
        raise ConfigError(f"the kubeconfig's cluster for context {picked.name!r} names no server")
    cert_file = _file(user, "client-certificate", user_dir)
    key_file = _file(user, "client-key", user_dir)
    authorization: Callable[[], str | None] = lambda: None  # noqa: E731  # the certificate authenticates
    if user.get("auth-provider"):
        name = (user["auth-provider"] or {}).get("name", "?")
        raise ConfigError(
            f"the kubeconfig's user uses the auth-provider {name!r}, which kubectl removed in 1.26; "
            "use its exec credential plugin instead"
        )
    if user.get("exec"):
        plugin = _ExecPlugin(user["exec"], cluster=cluster, where=user_dir)
        authorization = plugin.authorization
        if plugin.certificate is not None:
            cert_file, key_file = plugin.certificate
    elif user.get("tokenFile"):  # read again as it changes; preferred to ``token``, as client-go does
        authorization = _TokenFile(_resolve(str(user["tokenFile"]), user_dir)).authorization
    elif user.get("token"):
        header = f"Bearer {user['token']}"
        authorization = lambda: header  # noqa: E731
    elif user.get("username"):
        basic = base64.b64encode(f"{user['username']}:{user.get('password', '')}".encode()).decode()
        header = f"Basic {basic}"
        authorization = lambda: header  # noqa: E731
    return Connection(
        server=str(server).rstrip("/"),
        ca_file=_resolve(cluster["certificate-authority"], cluster_dir)
        if cluster.get("certificate-authority")
        else None,
        ca_data=_decoded(cluster["certificate-authority-data"])
        if cluster.get("certificate-authority-data")
        else None,
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
        tls_server_name=cluster.get("tls-server-name") or None,
        cert_file=cert_file,
        key_file=key_file,
        namespace=str(context.get("namespace") or "default"),
        authorization=authorization,
    )


def current_namespace(kubeconfig: str | None = None) -> str:
    """The namespace of the kubeconfig's current context (``default`` when it names none or there
    is no usable kubeconfig)."""
    try:
        picked = _current(kubeconfig)
    except (ConfigError, OSError):
        return "default"
    return str(picked.context.get("namespace") or "default")


# ---- the kubeconfig ------------------------------------------------------------------------


def _paths(kubeconfig: str | None) -> list[Path]:
    if kubeconfig is not None:
        return [Path(kubeconfig).expanduser()]
    listed = [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p.strip()]
    if listed:
        return [Path(p.strip()).expanduser() for p in listed]
    return [Path("~/.kube/config").expanduser()]


@dataclasses.dataclass(frozen=True)
class _Current:
    """The current context, its cluster and user, each with the directory of the file that named it
    (a relative path is read beside its own file)."""

    name: str
    context: dict[str, Any]
    cluster: dict[str, Any]
    cluster_dir: Path
    user: dict[str, Any]
    user_dir: Path


def _current(kubeconfig: str | None) -> _Current:
    current: str | None = None
    named: dict[str, dict[str, tuple[dict[str, Any], Path]]] = {"contexts": {}, "clusters": {}, "users": {}}
    found_any = False
    for path in _paths(kubeconfig):
        if not path.exists():
            if kubeconfig is not None:
                raise ConfigError(f"kubeconfig {path} does not exist")
            continue
        found_any = True
        try:
            loaded = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"kubeconfig {path} is not YAML: {exc}") from exc
        if not isinstance(loaded, dict):
            raise ConfigError(f"kubeconfig {path} is not a mapping")
        current = current or loaded.get("current-context") or None
        for section, key in (("contexts", "context"), ("clusters", "cluster"), ("users", "user")):
            for item in loaded.get(section) or []:
                if isinstance(item, dict) and item.get("name") and item["name"] not in named[section]:
                    named[section][item["name"]] = (dict(item.get(key) or {}), path.parent)
    if not found_any:
        raise ConfigError("no kubeconfig (none at $KUBECONFIG or ~/.kube/config) and not in a Pod")
    if not current:
        raise ConfigError("the kubeconfig sets no current-context")
    if current not in named["contexts"]:
        raise ConfigError(f"the kubeconfig's current-context {current!r} is not among its contexts")
    context, where = named["contexts"][current]
    cluster_name = context.get("cluster")
    if cluster_name not in named["clusters"]:
        raise ConfigError(
            f"context {current!r} names the cluster {cluster_name!r}, which is not in the kubeconfig"
        )
    cluster, cluster_dir = named["clusters"][cluster_name]
    user, user_dir = named["users"].get(str(context.get("user") or ""), ({}, where))
    return _Current(current, context, cluster, cluster_dir, user, user_dir)


def _resolve(value: str, where: Path) -> str:
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else where / path)


def _file(entry: Mapping[str, Any], key: str, where: Path) -> str | None:
    """``key`` (a path, beside the kubeconfig) or ``key-data`` (base64 PEM, written to a private file)."""
    if entry.get(key):
        return _resolve(str(entry[key]), where)
    if entry.get(f"{key}-data"):
        return _private_file(_decoded(entry[f"{key}-data"]), suffix=".pem")
    return None


def _decoded(data: str) -> str:
    try:
        return base64.b64decode(data, validate=False).decode()
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"kubeconfig data is not base64 PEM: {exc}") from exc


def _private_file(content: str, *, suffix: str) -> str:
    descriptor, name = tempfile.mkstemp(suffix=suffix, dir=_private_dir())
    with os.fdopen(descriptor, "w") as out:
        out.write(content)
    return name


@functools.cache
def _private_dir() -> str:
    """One per process, mode 0700, removed at exit."""
    made = tempfile.mkdtemp(prefix="aianalysis-kube-")
    atexit.register(shutil.rmtree, made, True)
    return made


# ---- tokens that change --------------------------------------------------------------------


class _TokenFile:
    """A bearer token read from a file, again once it is a minute old (the kubelet rotates it)."""

    def __init__(self, path: Path | str) -> None:
        self._path = Path(path)
        self._lock = threading.Lock()
        self._header: str | None = None
        self._read_at = float("-inf")

    def authorization(self) -> str | None:
        with self._lock:
            if time.monotonic() - self._read_at >= TOKEN_REREAD_SECONDS:
                try:
                    token = self._path.read_text().strip()
                except OSError as exc:
                    if self._header is None:
                        raise ConfigError(f"cannot read the token file {self._path}: {exc}") from exc
                    token = ""  # keep the last one while the file is being replaced
                if token:
                    self._header = f"Bearer {token}"
                self._read_at = time.monotonic()
            return self._header


class _ExecPlugin:
    """An ``exec`` credential plugin: run at first use and again when its credential expires."""

    def __init__(self, spec: Mapping[str, Any], *, cluster: Mapping[str, Any], where: Path) -> None:
        command = spec.get("command")
        if not command:
            raise ConfigError("the kubeconfig's exec plugin names no command")
        self._argv = [str(command), *(str(a) for a in spec.get("args") or [])]
        if os.sep in str(command) and not Path(str(command)).is_absolute():
            self._argv[0] = _resolve(str(command), where)
        self._env = {
            **os.environ,
            **{str(e["name"]): str(e.get("value", "")) for e in spec.get("env") or [] if isinstance(e, dict)},
        }
        self._api_version = str(spec.get("apiVersion") or "client.authentication.k8s.io/v1")
        self._cluster = cluster
        self._provide_cluster = bool(spec.get("provideClusterInfo"))
        self._lock = threading.Lock()
        self._header: str | None = None
        self._expires: datetime.datetime | None = None
        self.certificate: tuple[str, str] | None = None
        status = self._run()
        if status.get("clientCertificateData") and status.get("clientKeyData"):
            self.certificate = (
                _private_file(str(status["clientCertificateData"]), suffix=".pem"),
                _private_file(str(status["clientKeyData"]), suffix=".pem"),
            )

    def authorization(self) -> str | None:
        with self._lock:
            if self._expires is not None and datetime.datetime.now(datetime.UTC) >= self._expires:
                self._run()
            return self._header

    def _run(self) -> dict[str, Any]:
        request: dict[str, Any] = {
            "apiVersion": self._api_version,
            "kind": "ExecCredential",
            "spec": {"interactive": False},
        }
        if self._provide_cluster:
            request["spec"]["cluster"] = {
                "server": self._cluster.get("server"),
                "certificate-authority-data": self._cluster.get("certificate-authority-data"),
                "insecure-skip-tls-verify": bool(self._cluster.get("insecure-skip-tls-verify")),
            }
        env = {**self._env, "KUBERNETES_EXEC_INFO": json.dumps(request)}
        try:
            done = subprocess.run(  # the kubeconfig's own plugin, as kubectl runs it
                self._argv, env=env, capture_output=True, timeout=EXEC_TIMEOUT_SECONDS, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ConfigError(f"the kubeconfig's exec plugin {self._argv[0]!r} did not run: {exc}") from exc
        if done.returncode != 0:
            tail = done.stderr.decode(errors="replace").strip()[-300:]
            raise ConfigError(
                f"the kubeconfig's exec plugin {self._argv[0]!r} exited {done.returncode}: {tail}"
            )
        try:
            status = dict(json.loads(done.stdout).get("status") or {})
        except (ValueError, AttributeError) as exc:
            raise ConfigError(
                f"the kubeconfig's exec plugin {self._argv[0]!r} printed no ExecCredential"
            ) from exc
        self._header = f"Bearer {status['token']}" if status.get("token") else None
        stamp = status.get("expirationTimestamp")
        self._expires = None
        if stamp:
            try:
                expires = datetime.datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
            except ValueError as exc:
                plugin = self._argv[0]
                raise ConfigError(
                    f"the exec plugin {plugin!r} printed a bad expirationTimestamp {stamp!r}"
                ) from exc
            self._expires = expires if expires.tzinfo else expires.replace(tzinfo=datetime.UTC)
        return status
