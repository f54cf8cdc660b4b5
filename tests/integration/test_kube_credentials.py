"""The operator's own API client against a real kube-apiserver, with the credentials users' kubeconfigs
carry besides a token: a client certificate (kubeadm's, kind's and minikube's kubeconfigs), as files
beside the kubeconfig or inline data, and the CA as data; an exec plugin's token refreshed after a
401 and its certificate rotated when it expires; a ``proxy-url``; and the service account path a Pod
takes, its token rotated under it. The API server says who it authenticated."""

from __future__ import annotations

import base64
import datetime
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from aianalysis import errors, kube
from aianalysis.executor import server_facts
from aianalysis.kube import config, rest
from aianalysis_dev import devcluster
from tests.support import connect_proxy, typed

pytestmark = pytest.mark.cluster


@pytest.fixture
def dev(cluster: devcluster.Cluster) -> devcluster.DevCluster:
    if not isinstance(cluster, devcluster.DevCluster):
        pytest.skip("signs client certificates with the dev cluster's client CA")
    return cluster


def kubeconfig(path: Path, *, server: str, cluster: dict[str, Any], user: dict[str, Any]) -> str:
    path.write_text(
        yaml.safe_dump(
            {
                "current-context": "c",
                "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
                "clusters": [{"name": "k", "cluster": {"server": server, **cluster}}],
                "users": [{"name": "u", "user": user}],
            }
        )
    )
    return str(path)


def b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def test_a_client_certificate_in_files_beside_the_kubeconfig_authenticates(
    dev: devcluster.DevCluster, tmp_path: Path
) -> None:
    cert, key = dev.client_certificate("cert-admin", groups=["system:masters"])
    (tmp_path / "pki").mkdir()
    (tmp_path / "pki" / "me.crt").write_bytes(cert.read_bytes())
    (tmp_path / "pki" / "me.key").write_bytes(key.read_bytes())
    (tmp_path / "pki" / "ca.crt").write_bytes(dev.ca_file.read_bytes())
    path = kubeconfig(
        tmp_path / "config",
        server=dev.server,
        cluster={"certificate-authority": "pki/ca.crt"},
        user={"client-certificate": "pki/me.crt", "client-key": "pki/me.key"},
    )
    with kube.api_client(path) as api:
        assert server_facts.whoami(api) == "cert-admin"
        assert kube.server_version(api).startswith("v1.")


def test_a_client_certificate_and_the_ca_as_inline_data_authenticate(
    dev: devcluster.DevCluster, tmp_path: Path
) -> None:
    cert, key = dev.client_certificate("inline-user", groups=["system:masters"])
    path = kubeconfig(
        tmp_path / "config",
        server=dev.server,
        cluster={"certificate-authority-data": b64(dev.ca_file)},
        user={"client-certificate-data": b64(cert), "client-key-data": b64(key)},
    )
    with kube.api_client(path) as api:
        assert server_facts.whoami(api) == "inline-user"


def test_a_certificate_the_api_server_does_not_trust_is_refused_as_unauthorized(
    dev: devcluster.DevCluster, tmp_path: Path
) -> None:
    """Signed by another CA (the serving certificate's own key is not a client CA): 401, a retryable
    cluster error (a rotated credential may pass), never a silent anonymous answer."""
    stranger = tmp_path / "stranger"
    stranger.mkdir()
    devcluster.make_client_ca(stranger)
    cert, key = devcluster.sign_client_certificate(stranger, user="mallory", groups=["system:masters"])
    path = kubeconfig(
        tmp_path / "config",
        server=dev.server,
        cluster={"certificate-authority-data": b64(dev.ca_file)},
        user={"client-certificate-data": b64(cert), "client-key-data": b64(key)},
    )
    with kube.api_client(path) as api, pytest.raises(errors.ClusterError) as refused:
        server_facts.whoami(api)
    assert refused.value.status == 401


# ---- who a service account is, and how its token stops working -------------------------------


@pytest.fixture
def service_accounts(namespace: str) -> Iterator[Callable[[str], str]]:
    """``make(name)``: a ServiceAccount in ``namespace`` and a fresh bound token of it; the API
    server refuses the token (401) once the ServiceAccount is deleted."""
    core = client.CoreV1Api(typed.client())

    def make(name: str) -> str:
        core.create_namespaced_service_account(namespace, client.V1ServiceAccount(metadata={"name": name}))
        request = client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[]))
        token: str = core.create_namespaced_service_account_token(name, namespace, request).status.token
        return token

    yield make


def revoke(namespace: str, name: str) -> None:
    """Delete the ServiceAccount: the API server refuses its tokens from then on (401)."""
    client.CoreV1Api(typed.client()).delete_namespaced_service_account(name, namespace)


def until(check: Callable[[], bool], *, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {seconds:g}s: {what}")
        time.sleep(0.1)


def test_in_a_pod_a_rotated_service_account_token_is_read_again_after_a_401(
    dev: devcluster.DevCluster,
    namespace: str,
    service_accounts: Callable[[str], str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Pod's path (``config.in_cluster``: the mounted token, CA and namespace) against the API
    server. The kubelet replaces the token file; a request made with the old token, refused with
    401, reads the file again at once and is sent once more — no minute-long outage until the next
    periodic read."""
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", dev.server.rsplit(":", 1)[1])
    shutil.copy(dev.ca_file, tmp_path / "ca.crt")
    (tmp_path / "namespace").write_text(namespace)
    (tmp_path / "token").write_text(service_accounts("first"))
    login = config.in_cluster(tmp_path)
    with rest.ApiClient(login, pool_size=2, timeouts=kube.client.timeouts()) as api:
        assert server_facts.whoami(api) == f"system:serviceaccount:{namespace}:first"
        assert login.namespace == namespace

        (tmp_path / "token").write_text(service_accounts("second"))  # the kubelet's rotation
        revoke(namespace, "first")
        until(
            lambda: server_facts.whoami(api) == f"system:serviceaccount:{namespace}:second",
            seconds=10,  # the authenticator's cache of the deleted account; far below the minute
            what="the request after the 401 uses the token read again",
        )


EXEC_TOKEN = """#!/bin/sh
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}' \
  "$(cat "$TOKEN_FILE")"
"""


def exec_kubeconfig(path: Path, *, server: str, ca: Path, script: str, env: dict[str, str]) -> str:
    plugin = path.parent / "plugin.sh"
    plugin.write_text(script)
    plugin.chmod(0o700)
    spec = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": str(plugin),
        "env": [{"name": k, "value": v} for k, v in env.items()],
    }
    return kubeconfig(
        path, server=server, cluster={"certificate-authority-data": b64(ca)}, user={"exec": spec}
    )


def test_an_exec_plugins_token_refused_with_401_is_fetched_again_and_the_request_sent_once_more(
    dev: devcluster.DevCluster, namespace: str, service_accounts: Callable[[str], str], tmp_path: Path
) -> None:
    """A token without an expiry that stops working (revoked, or the SSO session behind it ended):
    client-go runs the plugin again after a 401. The official loader alone never would."""
    token_file = tmp_path / "token"
    token_file.write_text(service_accounts("plugin-one"))
    path = exec_kubeconfig(
        tmp_path / "config", server=dev.server, ca=dev.ca_file, script=EXEC_TOKEN,
        env={"TOKEN_FILE": str(token_file)},
    )  # fmt: skip
    with kube.api_client(path) as api:
        assert server_facts.whoami(api) == f"system:serviceaccount:{namespace}:plugin-one"
        token_file.write_text(service_accounts("plugin-two"))
        revoke(namespace, "plugin-one")
        until(
            lambda: server_facts.whoami(api) == f"system:serviceaccount:{namespace}:plugin-two",
            seconds=10,
            what="the request after the 401 carries the plugin's new token",
        )


EXEC_CERT = """#!/bin/sh
set -eu
python3 -c 'import json, sys; print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1",
  "kind": "ExecCredential", "status": {"clientCertificateData": open(sys.argv[1]).read(),
  "clientKeyData": open(sys.argv[2]).read(), "expirationTimestamp": open(sys.argv[3]).read()}}))' \
  "$DIR/current.crt" "$DIR/current.key" "$DIR/expires"
"""


def test_an_exec_plugins_client_certificate_is_rotated_when_it_expires(
    dev: devcluster.DevCluster, tmp_path: Path
) -> None:
    """An exec plugin that gives a short-lived client certificate (a cloud's or Teleport's): when
    its ExecCredential expires, the plugin runs again and the next connections present the new
    certificate — the API server sees the new identity. (The official loader loads it once.)"""
    for user in ("rotating-one", "rotating-two"):
        cert, key = dev.client_certificate(user)
        shutil.copy(cert, tmp_path / f"{user}.crt")
        shutil.copy(key, tmp_path / f"{user}.key")
    shutil.copy(tmp_path / "rotating-one.crt", tmp_path / "current.crt")
    shutil.copy(tmp_path / "rotating-one.key", tmp_path / "current.key")
    soon = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=3)
    (tmp_path / "expires").write_text(soon.strftime("%Y-%m-%dT%H:%M:%SZ"))
    path = exec_kubeconfig(
        tmp_path / "config", server=dev.server, ca=dev.ca_file, script=EXEC_CERT, env={"DIR": str(tmp_path)}
    )
    with kube.api_client(path) as api:
        assert server_facts.whoami(api) == "rotating-one"
        shutil.copy(tmp_path / "rotating-two.crt", tmp_path / "current.crt")
        shutil.copy(tmp_path / "rotating-two.key", tmp_path / "current.key")
        (tmp_path / "expires").write_text("2999-01-01T00:00:00Z")
        until(
            lambda: server_facts.whoami(api) == "rotating-two",
            seconds=20,
            what="the rotated certificate is used",
        )


def test_a_proxy_url_carries_the_connections_to_the_api_server(
    dev: devcluster.DevCluster, tmp_path: Path
) -> None:
    """``proxy-url`` (a corporate egress proxy): the API client tunnels through it (HTTP CONNECT;
    TLS to the API server inside), and kopf's login is given it too."""
    with connect_proxy.ConnectProxy() as proxy:
        path = kubeconfig(
            tmp_path / "config",
            server=dev.server,
            cluster={"certificate-authority-data": b64(dev.ca_file), "proxy-url": proxy.url},
            user={"token": dev.token},
        )
        with kube.api_client(path) as api:
            assert server_facts.whoami(api) == "admin"
        assert proxy.tunnels == [dev.server.removeprefix("https://")]
        assert kube.login_fields(path)["proxy_url"] == proxy.url


def test_a_kubeconfig_read_outside_a_pod_leaves_no_key_on_disk(
    dev: devcluster.DevCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inline key data authenticates (the request succeeds) while nothing of it is on disk: the
    loader's temporary copies, and the private directory made for them, are gone as it returns;
    the TLS context holds the key."""
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    cert, key = dev.client_certificate(f"memory-{secrets.token_hex(2)}", groups=["system:masters"])
    path = kubeconfig(
        tmp_path / "config",
        server=dev.server,
        cluster={"certificate-authority-data": b64(dev.ca_file)},
        user={"client-certificate-data": b64(cert), "client-key-data": b64(key)},
    )
    with kube.api_client(path) as api:
        assert server_facts.whoami(api).startswith("memory-")
        assert list((tmp_path / "tmp").rglob("*")) == []
