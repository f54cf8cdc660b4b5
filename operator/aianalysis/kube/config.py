"""Where the API server is and who we are to it: the in-cluster service account, else a kubeconfig.

**In a Pod** (the image): the service account, read here — the token (read again every minute, and
at once after a 401: the kubelet rotates bound tokens), the CA, the namespace. No dependency beyond
the standard library, so the image keeps its memory.

**Outside a Pod**: a kubeconfig, read by the official ``kubernetes`` client's loader
(``KubeConfigLoader``, from the ``kubeconfig`` extra, imported only then), which tracks client-go:
a merged ``$KUBECONFIG`` list, relative paths, ``token``/``tokenFile``, client certificates, basic
auth, ``exec`` credential plugins (tokens and certificates), the ``oidc`` provider, ``proxy-url``
(else the ``HTTPS_PROXY``/``NO_PROXY`` environment), ``tls-server-name``. Around it, what it leaves
to its caller or does differently from client-go:

* the first file that sets ``current-context`` wins (the loader takes the last); a token file's
  content is trimmed (the loader keeps its newline);
* ``insecure-skip-tls-verify`` beside a CA is refused, as client-go refuses it (the loader would
  silently verify nothing); the ``gcp``/``azure`` auth providers are refused as kubectl does;
* a failing exec plugin is an error carrying its message (the loader only logs it);
* a credential is loaded again when it expires (an exec plugin's token *or certificate*) and once
  after the API server answered 401 (:meth:`Login.refresh`), the request then sent again once;
* a load (an exec plugin may wait on a browser) is bounded in time;
* the CA, certificate and key the loader writes to temporary files (Python's TLS loads files) are
  read back into memory and removed the moment it returns, not at the process' exit; the client
  key then reaches the TLS context through an anonymous memory file, never the disk.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import datetime
import functools
import logging
import os
import ssl
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
TOKEN_REREAD_SECONDS = 60.0
LOAD_TIMEOUT_SECONDS = 60.0
"""A load of the credentials (an exec plugin's run) gives up after this."""
EXTRA = "pip install 'aianalysis-operator[kubeconfig]'"


class KubeconfigError(Exception):
    """No usable way to reach the API server (no cluster, an unusable kubeconfig)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Connection:
    """One load's credentials: everything the transport needs, as they are now."""

    server: str
    ca_file: str | None = None
    ca_data: str | None = None
    """The CA as PEM text (the kubeconfig's ``certificate-authority-data``)."""
    insecure: bool = False
    tls_server_name: str | None = None
    proxy_url: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    """A client certificate in the user's own files."""
    cert_pem: bytes | None = dataclasses.field(default=None, repr=False)
    key_pem: bytes | None = dataclasses.field(default=None, repr=False)
    """A client certificate held in memory only (inline data, an exec plugin's)."""
    authorization: str | None = dataclasses.field(default=None, repr=False)
    """The ``Authorization`` header (None: none, or the client certificate authenticates)."""
    expires: datetime.datetime | None = None
    """Load again from then on (an exec plugin's ``expirationTimestamp``)."""
    reread_seconds: float | None = None
    """Load again once this old (a token file that is rotated in place)."""
    namespace: str = "default"

    def ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=self.ca_file, cadata=self.ca_data)
        if self.insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if self.cert_file:
            context.load_cert_chain(self.cert_file, self.key_file)
        elif self.cert_pem:
            _load_chain(context, self.cert_pem, self.key_pem or b"")
        return context

    @property
    def transport(self) -> tuple[object, ...]:
        """What the TLS context and the pool are made of: a new one is needed when it changes."""
        return (
            self.server, self.ca_file, self.ca_data, self.insecure, self.tls_server_name,
            self.proxy_url, self.cert_file, self.key_file, self.cert_pem, self.key_pem,
        )  # fmt: skip


class Login:
    """The process' way in: the current :class:`Connection`, loaded again when it expired, when it
    is ``reread_seconds`` old, and after the API server refused it (:meth:`refresh`). One load at a
    time; a caller waits for it at most ``wait_seconds`` (the load goes on, the next caller waits
    for the same one)."""

    def __init__(self, load: Callable[[], Connection], *, wait_seconds: float = LOAD_TIMEOUT_SECONDS) -> None:
        self._load = load
        self._lock = threading.Lock()
        self._loading: concurrent.futures.Future[Connection] | None = None
        self._current: Connection | None = None
        self._loaded_at = 0.0
        self._current = self._reload(None, wait_seconds=wait_seconds)

    @classmethod
    def fixed(cls, connection: Connection) -> Login:
        """Always ``connection`` (a server without credentials, in tests)."""
        return cls(lambda: connection)

    @property
    def current(self) -> Connection:
        """What was loaded last, however old (its server, its namespace, its TLS material)."""
        with self._lock:
            assert self._current is not None, "loaded in __init__"
            return self._current

    @property
    def server(self) -> str:
        return self.current.server

    @property
    def namespace(self) -> str:
        return self.current.namespace

    def connection(self, *, wait_seconds: float = LOAD_TIMEOUT_SECONDS) -> Connection:
        """The credentials to use now."""
        with self._lock:
            current, age = self._current, time.monotonic() - self._loaded_at
        assert current is not None, "loaded in __init__"
        now = datetime.datetime.now(datetime.UTC)
        if current.expires is not None and now >= current.expires:
            return self._reload(current, wait_seconds=wait_seconds)
        if current.reread_seconds is not None and age >= current.reread_seconds:
            try:
                return self._reload(current, wait_seconds=wait_seconds)
            except KubeconfigError:  # a token file being replaced: the last token, until it is there
                with self._lock:
                    self._loaded_at = time.monotonic()
        return current

    def refresh(self, stale: Connection, *, wait_seconds: float = LOAD_TIMEOUT_SECONDS) -> Connection:
        """After the API server refused ``stale`` (401): the credentials loaded again — unless
        another caller did so already — as client-go's exec and token-file sources do."""
        return self._reload(stale, wait_seconds=wait_seconds)

    def _reload(self, stale: Connection | None, *, wait_seconds: float) -> Connection:
        with self._lock:
            if self._current is not stale and self._current is not None:
                return self._current
            if self._loading is None:
                self._loading = concurrent.futures.Future()
                threading.Thread(
                    target=self._run, args=(self._loading,), name="aianalysis-kube-login", daemon=True
                ).start()  # a daemon: an exec plugin that never returns does not hold the exit
            loading = self._loading
        try:
            return loading.result(timeout=max(wait_seconds, 0.0))
        except concurrent.futures.TimeoutError:
            raise KubeconfigError(f"loading the credentials took more than {wait_seconds:g}s") from None

    def _run(self, loading: concurrent.futures.Future[Connection]) -> None:
        try:
            fresh = self._load()
        except Exception as exc:  # noqa: BLE001  # the loader is third-party code: any failure is a failed load, for the waiter
            with self._lock:
                self._loading = None
            failed = (
                exc if isinstance(exc, KubeconfigError) else KubeconfigError(f"{type(exc).__name__}: {exc}")
            )
            loading.set_exception(failed)
            return
        with self._lock:
            self._current, self._loaded_at, self._loading = fresh, time.monotonic(), None
        loading.set_result(fresh)


def load(kubeconfig: str | None = None) -> Login:
    """``kubeconfig``'s current context when given; else in a Pod the service account, else the
    kubeconfig ``$KUBECONFIG`` / ``~/.kube/config`` names."""
    if kubeconfig is None and _in_a_pod():
        return in_cluster()
    return from_kubeconfig(kubeconfig)


def current_namespace(kubeconfig: str | None = None) -> str:
    """The namespace requests default to: the service account's in a Pod, else the kubeconfig's
    current context's (``default`` when it names none or there is no usable kubeconfig). Reads no
    credential (runs no exec plugin)."""
    if kubeconfig is None and _in_a_pod():
        return _service_account_namespace(SERVICE_ACCOUNT)
    try:
        kube_config = _loader_module()
        paths = _paths(kubeconfig)
    except KubeconfigError:
        return "default"
    try:
        merged, active = _merged(kube_config, paths)
        context = merged["contexts"].get_with_name(active)["context"]
    except (kube_config.ConfigException, KubeconfigError, OSError, yaml.YAMLError):
        return "default"
    return str(context.safe_get("namespace") or "default")


# ---- in a Pod ------------------------------------------------------------------------------


def _in_a_pod() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and (SERVICE_ACCOUNT / "token").exists()


def in_cluster(directory: Path | None = None) -> Login:
    """The service account of ``directory`` (the Pod's mount by default)."""
    directory = directory or SERVICE_ACCOUNT
    host, port = os.environ.get("KUBERNETES_SERVICE_HOST", ""), os.environ.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise KubeconfigError("in a Pod without KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT")
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    server = f"https://{host}:{port}"
    return Login(functools.partial(_service_account, directory, server=server))


def _service_account(directory: Path, *, server: str) -> Connection:
    token_file = directory / "token"
    try:
        token = token_file.read_text().strip()
    except OSError as exc:
        raise KubeconfigError(f"cannot read the token file {token_file}: {exc}") from exc
    if not token:
        raise KubeconfigError(f"the token file {token_file} is empty")
    return Connection(
        server=server,
        ca_file=str(directory / "ca.crt"),
        namespace=_service_account_namespace(directory),
        authorization=f"Bearer {token}",
        reread_seconds=TOKEN_REREAD_SECONDS,
    )


def _service_account_namespace(directory: Path) -> str:
    try:
        return (directory / "namespace").read_text().strip() or "default"
    except OSError:
        return "default"


# ---- a kubeconfig, through the official loader ----------------------------------------------


def from_kubeconfig(kubeconfig: str | None = None) -> Login:
    """``kubeconfig`` (else ``$KUBECONFIG``, else ``~/.kube/config``), its current context."""
    kube_config = _loader_module()
    paths = _paths(kubeconfig)
    return Login(functools.partial(_from_kubeconfig, kube_config, paths), wait_seconds=LOAD_TIMEOUT_SECONDS)


def _loader_module() -> Any:
    try:
        from kubernetes.config import kube_config  # noqa: PLC0415  # outside a Pod only: the extra
    except ImportError as exc:
        raise KubeconfigError(
            f"not in a Pod, and reading a kubeconfig needs the kubeconfig extra: {EXTRA}"
        ) from exc
    return kube_config


def _paths(kubeconfig: str | None) -> list[str]:
    if kubeconfig is not None:
        path = Path(kubeconfig).expanduser()
        if not path.exists():
            raise KubeconfigError(f"kubeconfig {path} does not exist")
        return [str(path)]
    listed = [p.strip() for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p.strip()]
    found = [str(Path(p).expanduser()) for p in listed or ["~/.kube/config"] if Path(p).expanduser().exists()]
    if not found:
        raise KubeconfigError("no kubeconfig (none at $KUBECONFIG or ~/.kube/config) and not in a Pod")
    return found


def _merged(kube_config: Any, paths: list[str]) -> tuple[Any, str]:
    """The merged kubeconfig (first file wins for each name) and its current context: the first
    file's that sets one, as client-go has it."""
    merger = kube_config.KubeConfigMerger(os.pathsep.join(paths))
    if merger.config is None:
        raise KubeconfigError(f"the kubeconfig {os.pathsep.join(paths)} is empty")
    active = next(
        (
            str(found)
            for p in merger.paths
            if (found := (merger.config_files[p] or {}).get("current-context"))
        ),
        None,
    )
    if not active:
        raise KubeconfigError("the kubeconfig sets no current-context")
    return merger.config, active


_LOADING = threading.Lock()
"""One load at a time in the process: the loader keeps module-wide state (the temporary files it
wrote, by content), and its error log is collected per load."""


def _from_kubeconfig(kube_config: Any, paths: list[str]) -> Connection:
    # The loader writes certificate and key data into a private directory (mode 0700) that lives
    # for this load only: a process killed later leaves nothing behind.
    with (
        _LOADING,
        _logged_errors() as logged,
        tempfile.TemporaryDirectory(prefix="aianalysis-kube-") as private,
    ):
        try:
            merged, active = _merged(kube_config, paths)
            context = merged["contexts"].get_with_name(active)["context"]
            user_node = (
                merged["users"].get_with_name(context.safe_get("user") or "", safe=True)
                if "users" in merged
                else None
            )
            user: dict[str, Any] = dict(user_node.safe_get("user") or {}) if user_node is not None else {}
            cluster = dict(merged["clusters"].get_with_name(context["cluster"])["cluster"].value)
            if not cluster.get("server"):  # the loader would talk to http://localhost
                raise KubeconfigError(f"the kubeconfig's cluster {context['cluster']!r} names no server")
            _refuse_removed_providers(user)
            loader = kube_config.KubeConfigLoader(
                config_dict=merged,
                active_context=active,
                config_base_path=None,
                temp_file_path=private,
            )
            loaded = kube_config.Configuration()
            loader.load_and_set(loaded)
        except kube_config.ConfigException as exc:
            raise KubeconfigError(f"the kubeconfig: {exc}") from exc
        except yaml.YAMLError as exc:
            raise KubeconfigError(f"the kubeconfig {os.pathsep.join(paths)} is not YAML: {exc}") from exc
        finally:
            written = _take_back_written(private)
    # client-go trims a token file's content; the loader keeps its newline (an invalid header).
    authorization = str(loaded.api_key.get("BearerToken") or "").strip() or None
    cert_file, key_file = _own(loaded.cert_file, written), _own(loaded.key_file, written)
    cert_pem, key_pem = written.get(loaded.cert_file or ""), written.get(loaded.key_file or "")
    if user.get("exec") and not authorization and not cert_pem:
        raise KubeconfigError(f"the kubeconfig's exec plugin gave no credential: {logged() or 'no output'}")
    ca_file, ca_pem = _own(loaded.ssl_ca_cert, written), written.get(loaded.ssl_ca_cert or "")
    insecure = not loaded.verify_ssl
    if insecure and (ca_file or ca_pem):
        raise KubeconfigError(
            f"the kubeconfig's cluster {context['cluster']!r} sets insecure-skip-tls-verify and a "
            "certificate authority; client-go refuses that (specifying a root certificates file with "
            "the insecure flag is not allowed): remove one"
        )
    expires = getattr(loader, "expiry", None)
    return Connection(
        server=str(loaded.host).rstrip("/"),
        ca_file=ca_file,
        ca_data=ca_pem.decode() if ca_pem else None,
        insecure=insecure,
        tls_server_name=loaded.tls_server_name or None,
        proxy_url=_proxy(loaded, explicit=bool(cluster.get("proxy-url"))),
        cert_file=cert_file,
        key_file=key_file,
        cert_pem=cert_pem,
        key_pem=key_pem,
        authorization=authorization,
        expires=expires if isinstance(expires, datetime.datetime) else None,
        reread_seconds=TOKEN_REREAD_SECONDS if user.get("tokenFile") and not user.get("exec") else None,
        namespace=str(context.safe_get("namespace") or "default"),
    )


def _refuse_removed_providers(user: dict[str, Any]) -> None:
    name = (user.get("auth-provider") or {}).get("name")
    if name in ("gcp", "azure"):
        raise KubeconfigError(
            f"the kubeconfig's user uses the auth-provider {name!r}, which kubectl removed in 1.26; "
            "use its exec credential plugin instead (gke-gcloud-auth-plugin, kubelogin)"
        )


def _proxy(loaded: Any, *, explicit: bool) -> str | None:
    """``proxy-url``, else the environment's proxy for the server unless ``NO_PROXY`` names it."""
    proxy = loaded.proxy or None
    if proxy and not explicit and urllib.request.proxy_bypass(urlparse(str(loaded.host)).hostname or ""):
        return None
    return proxy


def _own(path: str | None, written: dict[str, bytes]) -> str | None:
    """``path`` when it is the user's own file (not one the loader wrote)."""
    return path if path and path not in written else None


def _take_back_written(private: str) -> dict[str, bytes]:
    """What the loader wrote to the private directory, by path, each file removed."""
    written: dict[str, bytes] = {}
    for entry in Path(private).iterdir():
        written[str(entry)] = entry.read_bytes()
        entry.unlink()
    return written


@contextlib.contextmanager
def _logged_errors() -> Iterator[Callable[[], str]]:
    """What the loader logs as errors meanwhile, on this thread (it logs a failing exec plugin
    instead of raising)."""
    lines: list[str] = []
    me = threading.get_ident()

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.thread == me and record.levelno >= logging.ERROR:
                lines.append(record.getMessage())

    handler = Collect()
    logging.getLogger().addHandler(handler)
    try:
        yield lambda: "; ".join(lines)
    finally:
        logging.getLogger().removeHandler(handler)


# ---- a client key from memory ----------------------------------------------------------------


def _load_chain(context: ssl.SSLContext, cert_pem: bytes, key_pem: bytes) -> None:
    """Python's TLS loads a chain from files only: anonymous memory files (Linux), else private
    files removed right after."""
    if hasattr(os, "memfd_create"):
        cert_fd, key_fd = os.memfd_create("aianalysis-cert"), os.memfd_create("aianalysis-key")
        try:
            os.write(cert_fd, cert_pem)
            os.write(key_fd, key_pem)
            context.load_cert_chain(f"/proc/self/fd/{cert_fd}", f"/proc/self/fd/{key_fd}")
        finally:
            os.close(cert_fd)
            os.close(key_fd)
        return
    with tempfile.TemporaryDirectory(prefix="aianalysis-kube-") as directory:
        cert, key = Path(directory) / "cert.pem", Path(directory) / "key.pem"
        cert.write_bytes(cert_pem)
        key.write_bytes(key_pem)
        context.load_cert_chain(str(cert), str(key))
