"""Files and addresses a dev control plane needs: kubeconfig, token file, client certificates, ports,
advertise address."""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import fcntl
import io
import random
import socket
import struct
from collections.abc import Sequence
from pathlib import Path

import yaml

from aianalysis_dev.devcluster import _pki

CONTEXT = "aianalysis-dev"
ADVERTISE_FALLBACK = "192.0.2.1"
"""TEST-NET-1: only used as the ``kubernetes`` Service endpoint when the host has no non-loopback IPv4.
Nothing here dials it (no kube-proxy, no pods run)."""

_SIOCGIFADDR = 0x8915


@dataclasses.dataclass(frozen=True)
class User:
    """A static-token user of the apiserver (``--token-auth-file``)."""

    name: str
    token: str
    groups: tuple[str, ...] = ()


def kubeconfig_text(*, server: str, ca_file: Path, user: User) -> str:
    """One cluster, one user, one context: what kubectl, kopf and the ``kubernetes`` client all read."""
    return _kubeconfig(server=server, ca_file=ca_file, name=user.name, credentials={"token": user.token})


def certificate_kubeconfig_text(*, server: str, ca_file: Path, name: str, cert: Path, key: Path) -> str:
    """The same for a user who authenticates with a client certificate (the node's daemons)."""
    credentials = {"client-certificate": str(cert), "client-key": str(key)}
    return _kubeconfig(server=server, ca_file=ca_file, name=name, credentials=credentials)


def _kubeconfig(*, server: str, ca_file: Path, name: str, credentials: dict[str, str]) -> str:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {"server": server, "certificate-authority": str(ca_file)}}],
        "users": [{"name": name, "user": credentials}],
        "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": name}}],
        "current-context": CONTEXT,
    }
    return yaml.safe_dump(config, sort_keys=False)


def tokens_csv(users: Sequence[User]) -> str:
    """The apiserver's static token file: ``token,user,uid[,"group1,group2"]`` per line."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for user in users:
        groups = [",".join(user.groups)] if user.groups else []
        writer.writerow([user.token, user.name, f"{user.name}-uid", *groups])
    return out.getvalue()


LOWEST_PORT = 10000
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def free_ports(count: int) -> list[int]:
    """Distinct loopback ports free right now, below the kernel's ephemeral range: a port handed out
    by ``bind(0)`` is an ephemeral one, which any outgoing connection (a kubectl, an HTTP client) may
    take as its local port before the process it was meant for binds it. All sockets stay open until
    every port is picked, so no port is handed out twice."""
    try:
        below = int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        below = 32768
    # a machine whose ephemeral range starts low leaves no port outside it: then any port above
    population = range(LOWEST_PORT, below) if below - LOWEST_PORT >= 1000 else range(LOWEST_PORT, 65536)
    candidates = random.sample(population, k=min(len(population), 4 * count + 200))
    with contextlib.ExitStack() as stack:
        picked: list[int] = []
        for port in candidates:
            sock = stack.enter_context(socket.socket())
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:  # in use (listening, connected, or TIME_WAIT)
                continue
            picked.append(port)
            if len(picked) == count:
                return picked
    raise OSError(f"no {count} free loopback ports among {len(candidates)} tried in {population}")


def advertise_address() -> str:
    """kube-apiserver rejects a loopback ``--advertise-address`` and can only guess one from a default
    route; passing the host's own IPv4 works with and without one."""
    for _, name in socket.if_nameindex():
        address = _interface_ipv4(name)
        if address and not address.startswith("127."):
            return address
    return ADVERTISE_FALLBACK


def _interface_ipv4(name: str) -> str | None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            request = struct.pack("256s", name.encode()[:15])
            answer = fcntl.ioctl(sock.fileno(), _SIOCGIFADDR, request)
        except OSError:  # interface without an IPv4 address
            return None
    return socket.inet_ntoa(answer[20:24])


def log_tail(path: Path, *, lines: int = 25) -> str:
    """The end of a process log, for start-failure messages."""
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return f"(no {path.name})"
    return f"--- last lines of {path.name} ---\n" + "\n".join(text.splitlines()[-lines:])


def make_client_ca(directory: Path) -> None:
    """``client-ca.key`` and ``client-ca.crt`` in ``directory``: a CA for client certificates."""
    _pki.make_ca(directory, stem="client-ca", name=f"{directory.name}-client-ca")


def sign_client_certificate(directory: Path, *, user: str, groups: Sequence[str] = ()) -> tuple[Path, Path]:
    """A certificate and key for ``user`` in ``groups`` (CN and O), signed by ``directory``'s client
    CA (:func:`make_client_ca`), written there."""
    return _pki.issue(directory, ca="client-ca", name=user, groups=groups, stem=f"client-{user}")
