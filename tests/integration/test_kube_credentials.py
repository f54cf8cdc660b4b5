"""The operator's own API client against a real kube-apiserver, with the credentials users' kubeconfigs
carry besides a token: a client certificate (kubeadm's, kind's and minikube's kubeconfigs), as files
beside the kubeconfig or inline data, and the CA as data. The API server says who it authenticated."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml

from aianalysis import errors, kube
from aianalysis.executor import server_facts
from aianalysis_dev import devcluster

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
