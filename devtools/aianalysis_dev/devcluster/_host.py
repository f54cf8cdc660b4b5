"""What a real node changes on the machine, made safe: the machine-wide lock (one node at a time),
whether this machine can run one at all, the network that keeps every packet on the machine, and
the sweep that removes all of it — after a normal stop, and before a start that finds the leftovers
of a crashed run.

Names are fixed (one node at a time): the bridge, the cgroup parent, the nftables table, the CNI
network. kubelet and containerd also write a few paths outside the node's own directory whatever
their configuration says; the sweep knows them (:data:`_OUTSIDE_FILES`).
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import fcntl
import ipaddress
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from aianalysis_dev.devcluster import _base

DIR_PREFIX = "aianalysis-node-"
BRIDGE = "aianode0"
CNI_NETWORK = "aianalysis-node"
CGROUP_PARENT = "aianalysis-node"
NFT_TABLE = "aianalysis-node"
POD_CIDR = "10.244.0.0/24"
GATEWAY = "10.244.0.1"
SERVICE_CIDR = "10.96.0.0/24"
KUBERNETES_SERVICE_IP = "10.96.0.1"
CLUSTER_DNS_IP = "10.96.0.10"
ROUTE_TABLE = "244"
"""The routing table of packets arriving from the Pod bridge: it knows the bridge and nothing else."""
LOCK_FILE = Path("/run/lock/aianalysis-operator-node.lock")
CGROUPS = Path("/sys/fs/cgroup")
IP_FORWARD = Path("/proc/sys/net/ipv4/ip_forward")
BRIDGE_NF_CALL = Path("/proc/sys/net/bridge/bridge-nf-call-iptables")
CONTAINERD_RUN = Path("/run/containerd")  # shim sockets and FIFOs: containerd hard-codes this
_OUTSIDE_FILES = (  # written by kubelet whatever --root-dir says; removed, then their dirs if empty
    Path("/var/lib/kubelet/device-plugins/kubelet.sock"),
    Path("/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"),
)
_CONTAINER_LOG_LINKS = Path("/var/log/containers")  # kubelet's symlinks to the pod logs
_CNI_CACHE = Path("/var/lib/cni/results")  # libcni's cache of ADD results
_KOBJ_WAIT_S = 20.0
_MNT_DETACH = 2


class NodeUnavailableError(_base.DevClusterError):
    """This machine cannot run a real node; the message is the one-line reason."""

    reason = "NodeUnavailable"


# --- can this machine run a node? ------------------------------------------------------------------


def unavailable_reason() -> str | None:
    """Why this machine cannot run the dev cluster's real node, in one line; None if it can."""
    checks: list[tuple[bool, str]] = [
        (sys.platform == "linux", "a real node needs Linux"),
        (os.geteuid() == 0, "a real node needs root (cgroups, mounts, a bridge and nftables rules)"),
        (_memory_cgroup(), "no memory cgroup controller mounted under /sys/fs/cgroup"),
        (_has_filesystem("overlay"), "the kernel has no overlay filesystem (containerd's snapshotter)"),
        (BRIDGE_NF_CALL.parent.is_dir(), "the kernel has no bridge netfilter (Services between Pods)"),
        (shutil.which("ip") is not None, "no `ip` command (iproute2) to set up the Pod bridge"),
        (_read(IP_FORWARD) == "0", "IP forwarding is on (net.ipv4.ip_forward=1): Pod packets could leave"),
        (host_address() is not None, "no non-loopback IPv4 address for the API server and the kubelet"),
    ]
    for ok, reason in checks:
        if not ok:
            return reason
    if clash := _overlapping_route():
        return f"the host already routes {clash}, which overlaps the node's Pod or Service range"
    return None


def _memory_cgroup() -> bool:
    if (CGROUPS / "memory").is_dir():
        return True
    return "memory" in _read(CGROUPS / "cgroup.controllers").split()


def _has_filesystem(name: str) -> bool:
    return any(line.split()[-1] == name for line in _read(Path("/proc/filesystems")).splitlines() if line)


def _overlapping_route() -> str | None:
    ours = [ipaddress.ip_network(POD_CIDR), ipaddress.ip_network(SERVICE_CIDR)]
    for route in _ip_json("route", "show", "table", "all"):
        dst, dev = str(route.get("dst", "")), route.get("dev", "")
        if dev == BRIDGE or dst in {"default", ""} or ":" in dst or route.get("type") == "unreachable":
            continue
        with contextlib.suppress(ValueError):
            network = ipaddress.ip_network(dst, strict=False)
            if any(network.overlaps(range_) for range_ in ours) and not network.is_loopback:
                return dst
    return None


def host_address() -> str | None:
    """The machine's own IPv4 address that the API server binds and advertises and the kubelet
    reports as its InternalIP: the default route's source, else the first non-loopback address
    (never our bridge's). Packets to it stay on the machine (the kernel delivers them locally)."""
    addresses: dict[str, str] = {
        str(info["local"]): str(link.get("ifname", ""))
        for link in _ip_json("-4", "addr", "show")
        for info in link.get("addr_info", [])
        if link.get("ifname") != BRIDGE and not str(info.get("local", "127.")).startswith("127.")
    }
    for route in _ip_json("-4", "route", "show", "default"):
        for address, ifname in addresses.items():
            if ifname == route.get("dev"):
                return address
    return next(iter(addresses), None)


# --- one node at a time on this machine ------------------------------------------------------------


def lock_machine(*, timeout_s: float) -> IO[str]:
    """Hold the machine-wide node lock until the returned file is closed (or this process dies):
    pytest-xdist workers and other checkouts' test runs wait here for each other."""
    LOCK_FILE.parent.mkdir(parents=True, exist_ok=True)
    lock = LOCK_FILE.open("a+")
    deadline, told = time.monotonic() + timeout_s, False
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() > deadline:
                lock.close()
                raise _base.DevClusterError(
                    f"another dev node held {LOCK_FILE} for {timeout_s:.0f}s ({_holder()})"
                ) from None
            if not told:
                print(f"waiting for the dev node lock {LOCK_FILE} ({_holder()})", file=sys.stderr, flush=True)
                told = True
            time.sleep(0.5)
    lock.seek(0)
    lock.truncate()
    lock.write(f"{os.getpid()} {' '.join(sys.argv)[:200]}\n")
    lock.flush()
    return lock


def _holder() -> str:
    return f"held by pid {_read(LOCK_FILE).strip() or '?'}"


# --- the network: everything stays on this machine -------------------------------------------------


def prepare_network(nft: Path) -> None:
    """The Pod network, made so that no packet of it can leave the machine:

    - the bridge gets the gateway address from us (with ``isGateway`` the CNI plugin would turn the
      machine's IP forwarding on); Pods get routes to the Pod subnet and the Service range only;
    - IP forwarding stays off machine-wide and on every interface but the bridge: kube-proxy's
      translation of Pod → Service → Pod sends the packet back out of the bridge, and the kernel
      calls that forwarding (bridge netfilter's exemption for it no longer applies);
    - packets that arrive from the bridge are routed by a table of their own that knows the bridge
      and nothing else (everything else is ``unreachable``; the machine's own addresses are found
      first, in the local table);
    - the Service range has an ``unreachable`` route: a Service address nothing translated never
      follows the default route, from the host or a Pod;
    - nftables rules drop anything forwarded between the bridge and another interface, and any
      packet of the Pod or Service range about to leave through another interface."""
    if _read(IP_FORWARD) != "0":
        raise NodeUnavailableError("IP forwarding is on (net.ipv4.ip_forward=1): Pod packets could leave")
    _ip("link", "add", BRIDGE, "type", "bridge")
    _ip("addr", "add", f"{GATEWAY}/{POD_CIDR.split('/')[1]}", "dev", BRIDGE)
    _ip("link", "set", BRIDGE, "up")
    _ip("route", "add", "unreachable", SERVICE_CIDR)
    _ip("route", "add", POD_CIDR, "dev", BRIDGE, "table", ROUTE_TABLE)
    _ip("route", "add", "unreachable", "default", "table", ROUTE_TABLE)
    _ip("rule", "add", "iif", BRIDGE, "lookup", ROUTE_TABLE, "priority", ROUTE_TABLE)
    rules = f"""
table inet {NFT_TABLE} {{
  chain forward {{
    type filter hook forward priority filter; policy accept;
    iifname "{BRIDGE}" oifname != "{BRIDGE}" drop
    oifname "{BRIDGE}" iifname != "{BRIDGE}" drop
  }}
  chain postrouting {{
    type filter hook postrouting priority srcnat + 10; policy accept;
    ip daddr {SERVICE_CIDR} drop
    ip saddr {POD_CIDR} oifname != "{BRIDGE}" drop
    ip daddr {POD_CIDR} oifname != "{BRIDGE}" drop
  }}
}}
"""
    _run([str(nft), "-f", "-"], input=rules)
    Path(f"/proc/sys/net/ipv4/conf/{BRIDGE}/forwarding").write_text("1")


@dataclasses.dataclass(frozen=True)
class Isolation:
    """What the network guarantee rests on, as read from the machine."""

    ip_forward: str
    pod_routes: list[str]
    service_routes: list[str]
    guard_rules: str


def isolation(nft: Path) -> Isolation:
    """The routes of the Pod and Service ranges, IP forwarding and our guard table, read now."""

    def routes(cidr: str) -> list[str]:
        found = _ip_json("-4", "route", "show", "table", "all", "to", "match", cidr)
        return sorted(f"{r.get('type', 'unicast')} {r.get('dst')} {r.get('dev', '-')}" for r in found)

    listed = [str(nft), "list", "table", "inet", NFT_TABLE]
    guard = subprocess.run(listed, capture_output=True, text=True, check=False)
    return Isolation(_read(IP_FORWARD), routes(POD_CIDR), routes(SERVICE_CIDR), guard.stdout)


# --- the sweep ---------------------------------------------------------------------------------------


def sweep(parent: Path, *, nft: Path | None) -> None:
    """Remove every trace of a node on this machine: only call it holding :func:`lock_machine` (then
    any node state is a dead run's or our own). Container processes and shims die first, then the
    mounts go (lazily detached: nothing is deleted through a mount), then cgroups, the network and
    the files outside the node directory; the node directories last."""
    directories = sorted(parent.glob(f"{DIR_PREFIX}*"))
    _kill(_cgroup_pids() + [pid for d in directories for pid in _pids_mentioning(str(d))])
    for directory in [*directories, CONTAINERD_RUN]:
        _unmount_under(directory)
    _remove_cgroups()
    _remove_network(nft)
    _remove_outside_files()
    for directory in directories:
        if left := _mounts_under(directory):
            raise _base.DevClusterError(f"mounts left under {directory}, not deleting it: {left[:3]}")
        shutil.rmtree(directory, ignore_errors=True)


def _kill(pids: list[int]) -> None:
    for pid in set(pids) - {os.getpid()}:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + _KOBJ_WAIT_S
    while (alive := [pid for pid in pids if _alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    if alive:
        raise _base.DevClusterError(f"processes of a dev node survived SIGKILL: {alive[:5]}")


def _alive(pid: int) -> bool:
    stat = _read(Path(f"/proc/{pid}/stat"))
    return bool(stat) and stat.rsplit(")", 1)[-1].split()[0] != "Z"


def _pids_mentioning(needle: str) -> list[int]:
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            if needle.encode() in cmdline.read_bytes():
                pids.append(int(cmdline.parent.name))
    return pids


def _pids_of(name: str) -> list[int]:
    pids = []
    for exe in Path("/proc").glob("[0-9]*/exe"):
        with contextlib.suppress(OSError):
            if Path(os.readlink(exe)).name == name:
                pids.append(int(exe.parent.name))
    return pids


def cgroup_dirs() -> Iterator[Path]:
    """Our cgroup parent in every mounted hierarchy (cgroup v1 has one per controller)."""
    if (CGROUPS / "cgroup.controllers").exists():  # cgroup v2 only
        yield CGROUPS / CGROUP_PARENT
        return
    for hierarchy in sorted(CGROUPS.iterdir()):
        if hierarchy.is_dir() and not hierarchy.is_symlink():
            yield hierarchy / CGROUP_PARENT


def make_cgroup_parent() -> None:
    """kubelet's ``cgroupRoot`` must exist in every hierarchy; a new cpuset starts empty."""
    for directory in cgroup_dirs():
        directory.mkdir(exist_ok=True)
        for name in ("cpuset.cpus", "cpuset.mems"):
            if (directory / name).exists() and not _read(directory / name).strip():
                (directory / name).write_text(_read(directory.parent / name))
    v2 = CGROUPS / "cgroup.controllers"
    if v2.exists():
        wanted = " ".join(
            f"+{c}" for c in _read(v2).split() if c in {"cpu", "cpuset", "memory", "pids", "io"}
        )
        (CGROUPS / "cgroup.subtree_control").write_text(wanted)
        (CGROUPS / CGROUP_PARENT / "cgroup.subtree_control").write_text(wanted)


def _cgroup_pids() -> list[int]:
    pids = []
    for top in cgroup_dirs():
        for procs in top.rglob("cgroup.procs") if top.is_dir() else ():
            pids += [int(line) for line in _read(procs).split()]
    return pids


def _remove_cgroups() -> None:
    deadline = time.monotonic() + _KOBJ_WAIT_S
    for top in cgroup_dirs():
        while top.is_dir():
            for directory, _, _ in sorted(os.walk(top, topdown=False), key=lambda w: -len(w[0])):
                with contextlib.suppress(OSError):  # still busy (a process exiting): next round
                    os.rmdir(directory)
            if top.is_dir():
                if time.monotonic() > deadline:
                    raise _base.DevClusterError(f"cannot remove cgroup {top}: still in use")
                time.sleep(0.05)


def _mounts_under(directory: Path) -> list[str]:
    prefix = str(directory).rstrip("/") + "/"
    points = []
    for line in _read(Path("/proc/self/mountinfo")).splitlines():
        point = line.split()[4].encode().decode("unicode_escape")  # \040 for a space, etc.
        if point.startswith(prefix) or point == prefix[:-1]:
            points.append(point)
    return points


def _unmount_under(directory: Path) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    for _ in range(10):  # mounts can be stacked on one point
        points = _mounts_under(directory)
        if not points:
            return
        for point in sorted(points, key=len, reverse=True):
            libc.umount2(point.encode(), _MNT_DETACH)
    raise _base.DevClusterError(f"cannot unmount under {directory}: {_mounts_under(directory)[:3]}")


def _remove_network(nft: Path | None) -> None:
    for link in _ip_json("link", "show", "master", BRIDGE) if _link_exists(BRIDGE) else []:
        _ip("link", "del", link["ifname"], check=False)
    if _link_exists(BRIDGE):
        _ip("link", "del", BRIDGE)
    while any(rule.get("table") == ROUTE_TABLE for rule in _ip_json("rule", "show")):
        _ip("rule", "del", "lookup", ROUTE_TABLE)
    _ip("route", "flush", "table", ROUTE_TABLE, check=False)
    if _ip_json("-4", "route", "show", "type", "unreachable", SERVICE_CIDR):
        _ip("route", "del", "unreachable", SERVICE_CIDR)
    if nft is None:
        return
    tables = json.loads(_run([str(nft), "-j", "list", "tables"]) or "{}").get("nftables", [])
    ours = {("inet", NFT_TABLE), ("ip", "kube-proxy"), ("ip6", "kube-proxy")}
    for table in (t["table"] for t in tables if "table" in t):
        if (table["family"], table["name"]) in ours:
            _run([str(nft), "delete", "table", table["family"], table["name"]])


def _link_exists(name: str) -> bool:
    return Path("/sys/class/net", name).exists()


def _remove_outside_files() -> None:
    if _CONTAINER_LOG_LINKS.is_dir():
        for link in _CONTAINER_LOG_LINKS.iterdir():
            with contextlib.suppress(OSError):
                if link.is_symlink() and DIR_PREFIX in os.readlink(link):
                    link.unlink()
    if _CNI_CACHE.is_dir():
        for cached in _CNI_CACHE.glob(f"{CNI_NETWORK}-*"):
            cached.unlink(missing_ok=True)
    for path in _OUTSIDE_FILES:
        path.unlink(missing_ok=True)
    if not _pids_of("containerd"):  # ours are dead by now; another containerd's state stays
        shutil.rmtree(CONTAINERD_RUN, ignore_errors=True)  # its mounts are gone (unmounted above)
    parents = {p.parent for p in _OUTSIDE_FILES}
    for directory in (
        *parents,
        Path("/var/lib/kubelet"),
        _CNI_CACHE,
        _CNI_CACHE.parent,
        _CONTAINER_LOG_LINKS,
    ):
        with contextlib.suppress(OSError):  # only if empty: someone else's files stay
            directory.rmdir()


# --- small helpers -----------------------------------------------------------------------------------


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _ip(*args: str, check: bool = True) -> None:
    result = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        raise _base.DevClusterError(f"ip {' '.join(args)} failed: {result.stderr.strip()}")


def _ip_json(*args: str) -> list[dict[str, Any]]:
    if shutil.which("ip") is None:
        return []
    result = subprocess.run(["ip", "-j", *args], capture_output=True, text=True, check=False)
    parsed: list[dict[str, Any]] = json.loads(result.stdout or "[]") if result.returncode == 0 else []
    return parsed


def _run(argv: list[str], *, input: str | None = None) -> str:
    result = subprocess.run(argv, input=input, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise _base.DevClusterError(
            f"{Path(argv[0]).name} {' '.join(argv[1:3])} failed: {result.stderr.strip()}"
        )
    return result.stdout
