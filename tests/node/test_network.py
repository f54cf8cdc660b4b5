"""No packet of the node leaves this machine. Read from the machine itself (``/proc``, ``ip``, ``nft``)
and asked of the kernel with ``ip route get`` — which decides a route without sending anything —
then tried from a Pod and from the host, where every attempt must fail on the machine at once."""

from __future__ import annotations

import errno
import json
import socket
import subprocess
from pathlib import Path

import pytest

from aianalysis_dev import devcluster
from tests.support import nodes
from tests.support.nodes import apply, container_status, get, pod, wait_for

BRIDGE = "aianode0"
POD_SOURCE = "10.244.0.200"  # an address of the Pod range, as a packet from a Pod would carry
OUTSIDE = "198.51.100.1"  # TEST-NET-2: documentation only, never routed anywhere
FREE_SERVICE_ADDRESS = "10.96.0.250"  # in the Service range, no Service has it


def route_get(*args: str) -> str:
    """The kernel's routing decision (``ip route get``), or its refusal: no packet is sent."""
    result = subprocess.run(["ip", "-j", "route", "get", *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        return result.stderr.strip()
    (route,) = json.loads(result.stdout)
    return f"{route.get('type', 'unicast')} dev {route.get('dev')}"


def test_forwarding_routes_and_rules_keep_the_pod_and_service_ranges_local(
    node_cluster: devcluster.NodeCluster,
) -> None:
    assert Path("/proc/sys/net/ipv4/ip_forward").read_text().strip() == "0"
    conf = Path("/proc/sys/net/ipv4/conf")
    forwarding = {p.parent.name for p in conf.glob("*/forwarding") if p.read_text().strip() != "0"}
    assert forwarding == {BRIDGE}  # only the bridge, and only back onto itself (below)
    from_a_pod = ["from", POD_SOURCE, "iif", BRIDGE]
    host = node_cluster.server.split("//")[1].rsplit(":", 1)[0]
    decisions = {
        "pod to pod": route_get("10.244.0.77", *from_a_pod),
        "pod to the API server's address": route_get(host, *from_a_pod),
        "pod to outside": route_get(OUTSIDE, *from_a_pod),
        "pod to an untranslated Service address": route_get(FREE_SERVICE_ADDRESS, *from_a_pod),
        "host to a Service address": route_get(FREE_SERVICE_ADDRESS),
        "host to the kubernetes Service": route_get("10.96.0.1"),
    }
    assert decisions == {
        "pod to pod": f"unicast dev {BRIDGE}",
        "pod to the API server's address": "local dev lo",
        "pod to outside": "RTNETLINK answers: No route to host",
        "pod to an untranslated Service address": "RTNETLINK answers: No route to host",
        "host to a Service address": "RTNETLINK answers: No route to host",
        "host to the kubernetes Service": "RTNETLINK answers: No route to host",
    }
    nft = node_cluster.node_binaries.nft
    guard = subprocess.run(
        [str(nft), "list", "table", "inet", "aianalysis-node"], capture_output=True, text=True, check=False
    )
    rules = {line.strip() for line in guard.stdout.splitlines()}
    assert {
        f'iifname "{BRIDGE}" oifname != "{BRIDGE}" drop',
        f'oifname "{BRIDGE}" iifname != "{BRIDGE}" drop',
        "ip daddr 10.96.0.0/24 drop",
        f'ip saddr 10.244.0.0/24 oifname != "{BRIDGE}" drop',
    } <= rules


def test_a_pods_connect_outside_the_machine_fails_inside_the_pod(
    node_cluster: devcluster.NodeCluster, busybox: str, node_namespace: str
) -> None:
    script = (
        f"ip route; grep nameserver /etc/resolv.conf; nc -w 2 {OUTSIDE} 80; echo rc=$?; "
        f"nc -w 2 {FREE_SERVICE_ADDRESS} 80; echo rc=$?"
    )
    apply(node_cluster, node_namespace, pod("prober", f"({script}) 2>&1", image=busybox))
    wait_for(
        lambda: get(node_cluster, "pod", "prober", node_namespace)["status"].get("phase") == "Succeeded",
        what="the prober to finish",
        describe=nodes.describer(node_cluster, node_namespace),
    )
    lines = [
        " ".join(line.split())
        for line in node_cluster.kubectl("logs", "prober", "-n", node_namespace).stdout.splitlines()
    ]
    pod_ip = get(node_cluster, "pod", "prober", node_namespace)["status"]["podIP"]
    assert lines[:2] == [
        "10.96.0.0/24 via 10.244.0.1 dev eth0",
        f"10.244.0.0/24 dev eth0 scope link src {pod_ip}",
    ]  # no default route
    assert lines[2] == "nameserver 10.96.0.10"  # a Service address no DNS server has: fails on the machine
    assert lines[3:] == [
        f"nc: can't connect to remote host ({OUTSIDE}): Network is unreachable",
        "rc=1",
        f"nc: can't connect to remote host ({FREE_SERVICE_ADDRESS}): No route to host",  # the host's answer
        "rc=1",
    ]
    assert Path("/proc/sys/net/ipv4/ip_forward").read_text().strip() == "0"


@pytest.mark.parametrize("address", [FREE_SERVICE_ADDRESS, "10.96.0.1"])
def test_the_host_cannot_dial_a_service_address(node_cluster: devcluster.NodeCluster, address: str) -> None:
    """Not even the ``kubernetes`` Service that kube-proxy translates for Pods: the route lookup
    fails before any packet exists."""
    with pytest.raises(OSError) as refused:
        socket.create_connection((address, 443), timeout=5).close()
    assert refused.value.errno == errno.EHOSTUNREACH


def test_an_image_pull_only_reaches_a_closed_loopback_port(
    node_cluster: devcluster.NodeCluster, node_namespace: str
) -> None:
    missing = pod(
        "puller", "true", image="registry.invalid/nothing:1", container={"imagePullPolicy": "Always"}
    )
    apply(node_cluster, node_namespace, missing)
    waiting = wait_for(
        lambda: (
            (container_status(node_cluster, "puller", node_namespace).get("state") or {})
            .get("waiting", {})
            .get("message")
        ),
        what="the pull to fail",
        describe=nodes.describer(node_cluster, node_namespace),
    )
    assert "http://127.0.0.1:9/v2/nothing/manifests/1" in waiting
    assert "connect: connection refused" in waiting
