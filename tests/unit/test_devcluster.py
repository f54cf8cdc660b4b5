"""The parts of the dev control plane that need no binaries: files it writes, where it looks for
the binaries, and how it finds what a killed run left behind."""

from __future__ import annotations

import csv
import socket
from pathlib import Path

import kubernetes
import pytest

from aianalysis import errors
from aianalysis_dev import devcluster
from aianalysis_dev.devcluster import _config, _processes

ROOT = Path(__file__).resolve().parents[2]


def test_kubeconfig_is_read_by_the_kubernetes_client(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    (tmp_path / "ca.crt").write_text("")  # the loader checks it exists
    user = _config.User("viewer", "s3cret")
    kubeconfig.write_text(
        _config.kubeconfig_text(server="https://127.0.0.1:6443", ca_file=tmp_path / "ca.crt", user=user)
    )
    config = kubernetes.client.Configuration()
    kubernetes.config.load_kube_config(config_file=str(kubeconfig), client_configuration=config)  # type: ignore[no-untyped-call]
    assert config.host == "https://127.0.0.1:6443"
    assert config.ssl_ca_cert == str(tmp_path / "ca.crt")
    assert config.api_key["BearerToken"] == "Bearer s3cret"


def test_token_file_keeps_several_groups_in_one_field() -> None:
    text = _config.tokens_csv([_config.User("bob", "t1", ("a", "b")), _config.User("eve", "t2")])
    assert list(csv.reader(text.splitlines())) == [["t1", "bob", "bob-uid", "a,b"], ["t2", "eve", "eve-uid"]]


def test_free_ports_are_distinct_bindable_and_never_ephemeral() -> None:
    """Outgoing connections take their local ports from the ephemeral range: a port from there could
    be taken before the server meant for it binds."""
    ports = _config.free_ports(3)
    assert len(set(ports)) == 3
    low, high = map(int, _config.EPHEMERAL_RANGE.read_text().split())
    assert not any(low <= port <= high for port in ports), (ports, low, high)
    for port in ports:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_free_ports_where_the_ephemeral_range_leaves_none_outside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A machine may hand every port from 1024 up to outgoing connections: ports are still found."""
    whole = tmp_path / "ip_local_port_range"
    whole.write_text("1024\t65535\n")
    monkeypatch.setattr(_config, "EPHEMERAL_RANGE", whole)
    ports = _config.free_ports(3)
    assert len(set(ports)) == 3 and all(_config.LOWEST_PORT <= port < 65536 for port in ports)


def test_advertise_address_is_never_loopback() -> None:
    assert not _config.advertise_address().startswith("127.")


def test_version_matches_the_go_module_we_build() -> None:
    go_mod = (ROOT / "hack" / "k8s" / "go.mod").read_text()
    assert f"k8s.io/kubernetes {devcluster.K8S_VERSION}\n" in go_mod
    containerd_mod = (ROOT / "hack" / "containerd" / "go.mod").read_text()
    assert f"github.com/containerd/containerd/v2 {devcluster.CONTAINERD_VERSION}\n" in containerd_mod


def fake_bin_dir(path: Path) -> Path:
    path.mkdir()
    for name in ("etcd", "kube-apiserver", "kubectl"):
        (path / name).write_text("#!/bin/sh\n")
        (path / name).chmod(0o755)
    return path


def test_missing_binaries_tell_the_user_to_run_make_k8s(tmp_path: Path) -> None:
    (tmp_path / "etcd").write_text("")
    with pytest.raises(errors.ConfigError, match=r"make k8s") as raised:
        devcluster.find_binaries(tmp_path)
    assert "kube-apiserver" in str(raised.value) and str(tmp_path) in str(raised.value)


def test_env_dir_is_used_and_an_explicit_dir_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from_env, explicit = fake_bin_dir(tmp_path / "env"), fake_bin_dir(tmp_path / "explicit")
    monkeypatch.setenv("AIANALYSIS_K8S_BIN", str(from_env))
    assert devcluster.find_binaries().kubectl == from_env / "kubectl"
    assert devcluster.find_binaries(explicit).kube_apiserver == explicit / "kube-apiserver"


def test_env_dir_without_binaries_is_an_error_not_a_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIANALYSIS_K8S_BIN", str(tmp_path))
    with pytest.raises(errors.ConfigError, match=str(tmp_path)):
        devcluster.find_binaries()


def test_sweep_removes_only_directories_whose_owner_died(tmp_path: Path) -> None:
    dead, alive, starting = (tmp_path / f"dc-{name}" for name in ("dead", "alive", "starting"))
    for directory in (dead, alive, starting):
        directory.mkdir()
    _processes.claim(dead).close()  # the owner exited: its lock is free
    held = _processes.claim(alive)
    try:
        _processes.sweep(tmp_path, prefix="dc-", min_age_s=0)
        assert not dead.exists()
        assert alive.exists() and starting.exists()  # locked, or not yet claimed
    finally:
        held.close()


def test_sweep_spares_a_fresh_directory(tmp_path: Path) -> None:
    fresh = tmp_path / "dc-fresh"
    fresh.mkdir()
    _processes.claim(fresh).close()
    _processes.sweep(tmp_path, prefix="dc-", min_age_s=60)
    assert fresh.exists()
