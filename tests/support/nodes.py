"""Helpers for the tests on the real node (``tests/node/``): busybox Pods, reading objects back,
waiting on what the kubelet and the controllers write, and what a node leaves on the machine."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import kubernetes

from aianalysis_dev import devcluster, reads


def pod(name: str, script: str, *, image: str, restart: str = "Never", **spec: Any) -> dict[str, Any]:
    """A Pod running ``sh -c script`` in ``image`` (imported into the node: never pulled)."""
    container: dict[str, Any] = {
        "name": "main",
        "image": image,
        "imagePullPolicy": "Never",
        "command": ["sh", "-c", script],
        **spec.pop("container", {}),
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "restartPolicy": restart,
            "terminationGracePeriodSeconds": 1,
            "containers": [container],
            **spec,
        },
    }


def apply(cluster: devcluster.Cluster, namespace: str, *objects: Mapping[str, Any]) -> None:
    body = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input=body)


def get(cluster: devcluster.Cluster, kind: str, name: str, namespace: str) -> dict[str, Any]:
    """The object (read in this process: the tests poll), which must exist."""
    found = reads.get(cluster, kind, name, namespace)
    assert found is not None, f"{kind} {namespace}/{name} not found"
    return found


items = reads.listed


def container_status(cluster: devcluster.Cluster, name: str, namespace: str) -> dict[str, Any]:
    statuses = get(cluster, "pod", name, namespace).get("status", {}).get("containerStatuses") or [{}]
    status: dict[str, Any] = statuses[0]
    return status


def watch_pod(
    cluster: devcluster.Cluster,
    namespace: str,
    name: str,
    until: Callable[[dict[str, Any]], bool],
    *,
    timeout: float,
) -> list[dict[str, Any]]:
    """Every version of the Pod the API server hands out (a watch: states the kubelet shows for a
    second are seen too) until ``until`` holds for one; all of them, in order."""
    seen: list[dict[str, Any]] = []
    with cluster.api_client() as api:
        core = kubernetes.client.CoreV1Api(api)
        stream = kubernetes.watch.Watch().stream(
            core.list_namespaced_pod,
            namespace,
            field_selector=f"metadata.name={name}",
            timeout_seconds=int(timeout),
        )
        for event in stream:
            seen.append(api.sanitize_for_serialization(event["object"]))
            if until(seen[-1]):
                return seen
    raise AssertionError(f"the Pod {namespace}/{name} never got there in {timeout:.0f}s; seen: {seen[-3:]}")


def wait_for(
    predicate: Callable[[], Any],
    *,
    what: str,
    timeout: float = 90.0,
    interval: float = 0.3,
    describe: Callable[[], str] | None = None,
) -> Any:
    """The predicate's first truthy value, polled until ``timeout``; on timeout the assertion says
    what was awaited and, with ``describe``, what the cluster showed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(interval)
    raise AssertionError(
        f"timed out after {timeout:.0f}s waiting for {what}" + (f"\n{describe()}" if describe else "")
    )


def describer(cluster: devcluster.Cluster, namespace: str) -> Callable[[], str]:
    def describe() -> str:
        shown = cluster.kubectl("describe", "pods", "-n", namespace, check=False)
        events = cluster.kubectl("get", "events", "-n", namespace, check=False)
        return f"{shown.stdout[-4000:]}\n{events.stdout[-2000:]}"

    return describe


def leftovers(parent: Path) -> list[str]:
    """What a node may leave on this machine, read independently of the code under test: its
    directories, processes naming them, mounts under them, the bridge, cgroups, nftables tables
    (only names here), /run/containerd, kubelet's log symlinks."""
    found = [f"dir {d}" for d in parent.glob("aianalysis-node-*")]
    mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    found += [f"mount {m.split()[4]}" for m in mounts if "/aianalysis-node-" in m.split()[4]]
    found += [f"mount {m.split()[4]}" for m in mounts if m.split()[4].startswith("/run/containerd")]
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if b"/aianalysis-node-" in cmdline.read_bytes() and int(cmdline.parent.name) != os.getpid():
                found.append(f"process {cmdline.parent.name}")
        except OSError:
            continue
    found += [f"link {name}" for name in ("aianode0",) if Path("/sys/class/net", name).exists()]
    found += [f"cgroup {c}" for c in Path("/sys/fs/cgroup").glob("*/aianalysis-node")]
    found += ["/run/containerd"] if Path("/run/containerd").exists() else []
    logs = Path("/var/log/containers")
    found += [f"log link {link}" for link in (logs.iterdir() if logs.is_dir() else []) if link.is_symlink()]
    return found
