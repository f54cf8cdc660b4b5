"""Where the API server is and who we are to it: the service account in a Pod (ours), a kubeconfig
outside one (the official loader, and what kube/config.py adds around it), and the TLS they feed.
The behaviours that depend on the API server (a 401 refreshed, a rotated certificate, a proxy) are
in tests/integration/test_kube_credentials.py."""

from __future__ import annotations

import base64
import datetime
import json
import os
import ssl
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

import kopf
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from aianalysis import errors, kube
from aianalysis.kube import calls, config, rest

SERVER = "https://k8s.example:6443"


@pytest.fixture(autouse=True)
def _no_ambient_cluster(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
        monkeypatch.delenv(name, raising=False)
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.kube/config of the machine
    # The loader's private directory is made under the temporary directory, this test's own here.
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))


def kubeconfig(
    user: dict[str, Any], *, cluster: dict[str, Any] | None = None, **context: Any
) -> dict[str, Any]:
    return {
        "current-context": "ctx",
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u", **context}}],
        "clusters": [{"name": "c", "cluster": cluster or {"server": SERVER}}],
        "users": [{"name": "u", "user": user}],
    }


def write(path: Path, content: dict[str, Any]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(content))
    return str(path)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def connect(path: str) -> config.Connection:
    return config.from_kubeconfig(path).connection()


def private_files() -> list[Path]:
    """What is on disk under the temporary directory, where the loader's private directory (its
    certificate and key data) is made for each load and removed."""
    return list(Path(tempfile.gettempdir()).rglob("*"))


def test_a_token_user_gives_the_server_the_ca_beside_the_kubeconfig_and_the_context_namespace(
    tmp_path: Path,
) -> None:
    ca, _ = self_signed("cluster-ca")
    (tmp_path / "kube" / "pki").mkdir(parents=True)
    (tmp_path / "kube" / "pki" / "ca.crt").write_text(ca)
    cluster = {
        "server": SERVER + "/",
        "certificate-authority": "pki/ca.crt",
        "tls-server-name": "api.internal",
    }
    path = write(
        tmp_path / "kube" / "config", kubeconfig({"token": "s3cret"}, cluster=cluster, namespace="team")
    )

    conn = connect(path)

    assert (conn.server, conn.ca_file) == (SERVER, str(tmp_path / "kube" / "pki" / "ca.crt"))
    assert (conn.authorization, conn.namespace, conn.tls_server_name) == (
        "Bearer s3cret",
        "team",
        "api.internal",
    )
    assert (conn.insecure, conn.cert_file, conn.cert_pem, conn.proxy_url) == (False, None, None, None)
    assert config.current_namespace(path) == "team"


def test_basic_auth_is_a_basic_header(tmp_path: Path) -> None:
    conn = connect(write(tmp_path / "config", kubeconfig({"username": "ann", "password": "pw"})))
    assert conn.authorization == "Basic " + b64("ann:pw")


def test_kubeconfig_files_merge_first_wins_and_relative_paths_are_read_beside_their_own_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """client-go's rules: each name from the first file naming it, the current context from the
    first file setting one (the official loader alone takes the last), relative paths beside the
    file that names them."""
    first = kubeconfig({"token": "first-user"}, namespace="from-first")
    first["contexts"][0]["context"]["user"] = "only-in-second"
    first["clusters"][0]["cluster"] = {"server": "https://first:6443"}
    second = kubeconfig({"tokenFile": "token"}, namespace="from-second")
    second["current-context"] = "other"
    second["clusters"][0]["cluster"] = {"server": "https://second:6443"}
    second["users"][0]["name"] = "only-in-second"
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "token").write_text("second-token\n")
    paths = [write(tmp_path / "a" / "config", first), write(tmp_path / "b" / "config", second)]
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(tmp_path / "absent"), *paths]))

    conn = config.load().connection()

    assert (conn.server, conn.namespace) == ("https://first:6443", "from-first")
    assert conn.authorization == "Bearer second-token"
    assert config.current_namespace() == "from-first"


def test_a_token_file_is_read_again_once_it_is_a_minute_old_and_kept_while_it_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [1000.0]
    monkeypatch.setattr(config, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    token = tmp_path / "token"
    path = write(tmp_path / "config", kubeconfig({"tokenFile": str(token)}))
    with pytest.raises(config.KubeconfigError, match=f"No such file or directory: '{token}'"):
        config.from_kubeconfig(path)  # at start: said at once, naming the file
    token.write_text("one\n")
    login = config.from_kubeconfig(path)
    assert login.connection().authorization == "Bearer one"

    token.write_text("two")
    now[0] += config.TOKEN_REREAD_SECONDS - 1
    assert login.connection().authorization == "Bearer one"
    now[0] += 1
    assert login.connection().authorization == "Bearer two"

    token.unlink()  # the kubelet is replacing it: the last token stays
    now[0] += config.TOKEN_REREAD_SECONDS
    assert login.connection().authorization == "Bearer two"
    token.write_text("three")
    assert login.refresh(login.connection()).authorization == "Bearer three"  # after a 401: at once


def self_signed(name: str) -> tuple[str, str]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM).decode(), key_pem.decode()


def test_certificate_data_is_held_in_memory_and_never_left_on_disk(tmp_path: Path) -> None:
    """The loader writes inline certificate, key and CA data to temporary files (removed, by it, only
    at a clean exit); they are read back and removed as it returns, and the TLS context loads the
    key from memory."""
    cert, key = self_signed("me")
    ca, _ = self_signed("cluster-ca")
    user = {"client-certificate-data": b64(cert), "client-key-data": b64(key)}
    cluster = {"server": SERVER, "certificate-authority-data": b64(ca), "tls-server-name": "api.internal"}

    conn = connect(write(tmp_path / "config", kubeconfig(user, cluster=cluster)))

    assert (conn.cert_pem, conn.key_pem, conn.ca_data) == (cert.encode(), key.encode(), ca)
    assert (conn.cert_file, conn.key_file, conn.ca_file, conn.authorization) == (None, None, None, None)
    assert private_files() == []
    with rest.ApiClient(conn, pool_size=1, timeouts=kube.client.timeouts()) as api:
        options = api._pool.connection_pool_kw
        assert options["server_hostname"] == "api.internal"
        assert options["ssl_context"].verify_mode == ssl.CERT_REQUIRED
        subjects = [c["subject"] for c in options["ssl_context"].get_ca_certs()]
        assert subjects == [((("commonName", "cluster-ca"),),)]

    _, other_key = self_signed("someone-else")
    mismatched = connect(
        write(tmp_path / "other", kubeconfig({**user, "client-key-data": b64(other_key)}, cluster=cluster))
    )
    with pytest.raises(ssl.SSLError):  # the chain really is loaded: a key not matching is refused
        rest.ApiClient(mismatched, pool_size=1, timeouts=kube.client.timeouts())


def test_insecure_skip_tls_verify_beside_a_ca_is_refused_as_client_go_refuses_it(tmp_path: Path) -> None:
    """The loader would keep the CA and verify nothing; client-go refuses the pair. Without a CA it
    stays what the user asked for."""
    ca, _ = self_signed("cluster-ca")
    both = {"server": SERVER, "certificate-authority-data": b64(ca), "insecure-skip-tls-verify": True}
    with pytest.raises(config.KubeconfigError, match=r"insecure-skip-tls-verify and a certificate authority"):
        connect(write(tmp_path / "both", kubeconfig({"token": "t"}, cluster=both)))

    insecure = connect(
        write(
            tmp_path / "insecure",
            kubeconfig({"token": "t"}, cluster={"server": SERVER, "insecure-skip-tls-verify": True}),
        )
    )
    assert insecure.insecure and insecure.ssl_context().verify_mode == ssl.CERT_NONE


def test_proxy_url_is_used_and_the_environments_proxy_honours_no_proxy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = {"server": SERVER, "proxy-url": "http://proxy.corp:3128"}
    assert connect(write(tmp_path / "p", kubeconfig({"token": "t"}, cluster=cluster))).proxy_url == (
        "http://proxy.corp:3128"
    )
    plain = write(tmp_path / "plain", kubeconfig({"token": "t"}))
    monkeypatch.setenv("HTTPS_PROXY", "http://env-proxy:3128")
    assert connect(plain).proxy_url == "http://env-proxy:3128"
    monkeypatch.setenv("NO_PROXY", ".example")
    assert connect(plain).proxy_url is None


PLUGIN = """#!/bin/sh
set -eu
echo run >> "$RUNS"
printf '%s' "$KUBERNETES_EXEC_INFO" > "$RUNS.info"
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",'
printf '"status":{"token":"tok-%s","expirationTimestamp":"%s"}}' "$(wc -l < "$RUNS" | tr -d ' ')" "$EXPIRES"
"""


def exec_login(tmp_path: Path, script: str, expires: datetime.datetime) -> config.Login:
    plugin = tmp_path / "kube" / "plugin.sh"
    plugin.parent.mkdir(exist_ok=True)
    plugin.write_text(script)
    plugin.chmod(0o700)
    stamp = expires.strftime("%Y-%m-%dT%H:%M:%SZ")
    spec = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": "./plugin.sh",  # beside the kubeconfig, not the working directory
        "env": [{"name": "RUNS", "value": str(tmp_path / "runs")}, {"name": "EXPIRES", "value": stamp}],
        "provideClusterInfo": True,
    }
    return config.from_kubeconfig(write(tmp_path / "kube" / "config", kubeconfig({"exec": spec})))


def runs(tmp_path: Path) -> int:
    return len((tmp_path / "runs").read_text().splitlines())


def test_an_exec_plugin_gets_its_env_and_exec_info_and_is_not_run_again_before_expiry(tmp_path: Path) -> None:
    login = exec_login(tmp_path, PLUGIN, datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=1))

    assert [login.connection().authorization, login.connection().authorization, runs(tmp_path)] == [
        "Bearer tok-1",
        "Bearer tok-1",
        1,
    ]
    info = json.loads((tmp_path / "runs.info").read_text())
    assert (info["kind"], info["apiVersion"]) == ("ExecCredential", "client.authentication.k8s.io/v1")
    assert (info["spec"]["interactive"], info["spec"]["cluster"]["server"]) == (False, SERVER)


def test_an_expired_exec_credential_is_fetched_again_on_the_next_call(tmp_path: Path) -> None:
    login = exec_login(tmp_path, PLUGIN, datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=1))

    assert runs(tmp_path) == 1
    assert [login.connection().authorization, login.connection().authorization, runs(tmp_path)] == [
        "Bearer tok-2",
        "Bearer tok-3",
        3,
    ]


CERT_PLUGIN = """#!/bin/sh
set -eu
echo run >> "$RUNS"
n=$(wc -l < "$RUNS" | tr -d ' ')
[ "$n" = 1 ] && expires="$EXPIRES" || expires=2999-01-01T00:00:00Z
python3 -c 'import json, sys; print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1",
  "kind": "ExecCredential", "status": {"clientCertificateData": open(sys.argv[1]).read(),
  "clientKeyData": open(sys.argv[2]).read(), "expirationTimestamp": sys.argv[3]}}))' \\
  "$CERTS/$n.crt" "$CERTS/$n.key" "$expires"
"""


def test_an_exec_plugins_certificate_is_rotated_when_it_expires_and_kept_off_the_disk(tmp_path: Path) -> None:
    """The official loader loads an exec plugin's certificate once and never again; here it is
    fetched again when the ExecCredential expires, and the client's pool is made anew for it."""
    (tmp_path / "certs").mkdir()
    for n in (1, 2):
        cert, key = self_signed(f"exec-{n}")
        (tmp_path / "certs" / f"{n}.crt").write_text(cert)
        (tmp_path / "certs" / f"{n}.key").write_text(key)
    script = CERT_PLUGIN.replace("$CERTS", str(tmp_path / "certs"))
    login = exec_login(tmp_path, script, datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=1))
    assert login.current.cert_pem == (tmp_path / "certs" / "1.crt").read_bytes()  # the first run's
    assert private_files() == []

    with rest.ApiClient(login, pool_size=1, timeouts=kube.client.timeouts()) as api:
        rotated = login.connection()
        assert rotated.cert_pem == (tmp_path / "certs" / "2.crt").read_bytes() and runs(tmp_path) == 2
        before = api._pool
        assert api._pool_for(rotated) is not before  # new connections present the new certificate
    assert private_files() == []


def test_a_failing_exec_plugin_names_its_exit_code_and_stderr(tmp_path: Path) -> None:
    """The loader only logs a plugin's failure (and would go on without credentials)."""
    failing = "#!/bin/sh\necho 'noise' >&2\necho 'login required: run sso login' >&2\nexit 3\n"
    with pytest.raises(config.KubeconfigError, match=r"returned 3\. noise\nlogin required: run sso login"):
        exec_login(tmp_path, failing, datetime.datetime.now(datetime.UTC))


def test_an_exec_plugin_that_never_answers_fails_the_load_on_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loader waits for a plugin without a limit (one waiting on a browser login waits forever)."""
    monkeypatch.setattr(config, "LOAD_TIMEOUT_SECONDS", 0.5)
    with pytest.raises(config.KubeconfigError, match=r"took more than 0\.5s"):
        exec_login(tmp_path, "#!/bin/sh\nexec sleep 3\n", datetime.datetime.now(datetime.UTC))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda c: c["users"][0].update(user={"auth-provider": {"name": "gcp"}}),
            "'gcp', which kubectl removed in 1.26.*exec credential plugin",
        ),
        (lambda c: c.pop("current-context"), "sets no current-context"),
        (lambda c: c.update({"current-context": "gone"}), "object with name gone in .*contexts"),
        (
            lambda c: c["contexts"][0]["context"].update(cluster="nowhere"),
            "object with name nowhere in .*clusters",
        ),
        (lambda c: c["clusters"][0].update(cluster={}), "cluster 'c' names no server"),
    ],
)
def test_an_unusable_kubeconfig_says_why(tmp_path: Path, change: Any, message: str) -> None:
    content = kubeconfig({"token": "t"})
    change(content)
    with pytest.raises(config.KubeconfigError, match=message):
        connect(write(tmp_path / "config", content))


def test_missing_or_broken_kubeconfigs_say_why_and_the_namespace_falls_back_to_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(config.KubeconfigError, match=f"kubeconfig {tmp_path / 'absent'} does not exist"):
        config.from_kubeconfig(str(tmp_path / "absent"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    with pytest.raises(config.KubeconfigError, match="no kubeconfig"):
        config.load()
    assert config.current_namespace() == "default"
    (tmp_path / "broken").write_text("contexts: [\n")
    with pytest.raises(config.KubeconfigError, match="is not YAML"):
        config.from_kubeconfig(str(tmp_path / "broken"))
    assert config.current_namespace(write(tmp_path / "plain", kubeconfig({}))) == "default"


def test_without_the_extra_a_kubeconfig_is_refused_in_one_line_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As in the image (no ``kubernetes`` installed) outside a Pod: one line that says what to install."""
    for name in [m for m in sys.modules if m == "kubernetes" or m.startswith("kubernetes.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "kubernetes", None)
    monkeypatch.setenv("KUBECONFIG", write(tmp_path / "config", kubeconfig({"token": "t"})))

    with pytest.raises(errors.ConfigError) as refused:
        kube.api_client()

    assert "\n" not in str(refused.value)
    assert "pip install 'aianalysis-operator[kubeconfig]'" in str(refused.value)


@pytest.mark.parametrize(
    ("host", "server"), [("10.0.0.1", "https://10.0.0.1:443"), ("fd00::1", "https://[fd00::1]:443")]
)
def test_in_cluster_reads_the_service_account(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, host: str, server: str
) -> None:
    with pytest.raises(config.KubeconfigError, match="KUBERNETES_SERVICE_HOST"):
        config.in_cluster(tmp_path)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", host)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    (tmp_path / "token").write_text("sa-token\n")
    assert config.in_cluster(tmp_path).namespace == "default"  # no namespace file
    (tmp_path / "namespace").write_text("ops\n")

    conn = config.in_cluster(tmp_path).connection()

    assert (conn.server, conn.namespace, conn.ca_file) == (server, "ops", str(tmp_path / "ca.crt"))
    assert (conn.authorization, conn.reread_seconds) == ("Bearer sa-token", config.TOKEN_REREAD_SECONDS)


def test_in_a_pod_nothing_of_the_kubernetes_client_is_needed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The image has no ``kubernetes``: the service account path never asks for it."""
    monkeypatch.setitem(sys.modules, "kubernetes", None)
    (tmp_path / "token").write_text("sa-token")
    (tmp_path / "namespace").write_text("ops")
    monkeypatch.setattr(config, "SERVICE_ACCOUNT", tmp_path)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")

    assert config.load().connection().authorization == "Bearer sa-token"
    assert config.current_namespace() == "ops"


def test_load_prefers_an_explicit_kubeconfig_even_in_a_pod(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "token").write_text("sa-token")
    monkeypatch.setattr(config, "SERVICE_ACCOUNT", tmp_path)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    monkeypatch.setenv("KUBECONFIG", write(tmp_path / "env-config", kubeconfig({"token": "t"})))

    assert config.load(write(tmp_path / "config", kubeconfig({"token": "t"}))).server == SERVER
    assert config.load().server == "https://10.0.0.1:443"  # in a Pod, $KUBECONFIG is not read


def test_kopf_logs_in_with_the_operators_own_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kopf's ``on.login`` handler builds its ConnectionInfo from ``kube.login_fields()``: a tokenFile
    (which kopf's built-in kubeconfig login ignores), the CA data, a client certificate held in
    memory, the proxy and the credential's expiry reach it."""
    cert, key = self_signed("me")
    ca, _ = self_signed("cluster-ca")
    (tmp_path / "token").write_text("from-file\n")
    user = {"tokenFile": "token", "client-certificate-data": b64(cert), "client-key-data": b64(key)}
    cluster = {"server": SERVER, "certificate-authority-data": b64(ca), "proxy-url": "http://proxy:3128"}
    monkeypatch.setenv(
        "KUBECONFIG", write(tmp_path / "config", kubeconfig(user, cluster=cluster, namespace="ops"))
    )

    info = kopf.ConnectionInfo(**kube.login_fields())

    assert (info.server, info.default_namespace, info.proxy_url) == (SERVER, "ops", "http://proxy:3128")
    assert info.as_http_headers() == {"Authorization": "Bearer from-file"}
    context = info.as_ssl_context()  # loads the client chain: a wrong key would raise
    assert [c["subject"] for c in context.get_ca_certs()] == [((("commonName", "cluster-ca"),),)]
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert private_files() == []


def test_credentials_that_cannot_be_had_for_a_request_are_a_retryable_cluster_error(tmp_path: Path) -> None:
    """An exec credential that expired and whose plugin fails now (an SSO session ended) reaches
    the caller as the project's retryable ClusterError, like an unreachable API server — not as an
    exception of kube/'s own."""
    script = '#!/bin/sh\nset -eu\n[ -e "$RUNS" ] && { echo "sso session expired" >&2; exit 1; }\n' + PLUGIN
    login = exec_login(tmp_path, script, datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=1))
    with (
        rest.ApiClient(login, pool_size=1, timeouts=kube.client.timeouts()) as api,
        pytest.raises(
            errors.ClusterError, match=r"no credentials for the API server.*sso session expired"
        ) as raised,
    ):
        calls.blocking("reading the version", rest.get_json, api, "/version", timeout=1)
    assert raised.value.retryable
