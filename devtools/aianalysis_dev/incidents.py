"""Real incidents on a real node, each made the way it happens in production — a rollout, a limit,
a taint, a deadline — never by writing a status: the kubelet, the scheduler and the controllers
report the failure, and the alert is the one a kube-prometheus rule would fire on that state.

Each maker applies its workloads to ``namespace`` of any cluster with a node (``NodeCluster``, or
kind through ``ExistingCluster``), waits (with a deadline) until the failure is real, and returns a
:class:`NodeIncident`: the alert, the objects it names, what is expected of the analysis, and what
to undo afterwards (a taint on the shared node). Nothing is pulled: the images are the node's
(``aianalysis_dev.oci``), with ``imagePullPolicy: Never`` unless a pull is the incident.

Used by ``tests/node/test_incidents.py`` (alert → intake → operator → selection) and as the first
half of anything that goes on to approve and execute the selection.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from aianalysis_dev import reads

MEMORY_LIMIT = "32Mi"
"""The limit of the OOM incidents' containers (a hog allocates 64 MiB at once)."""
HOG = "dd if=/dev/zero of=/dev/null bs=64M count=1"
"""Allocates 64 MiB in one buffer: over ``MEMORY_LIMIT``, the kernel kills it."""
TAINT_KEY = "aianalysis.dev/maintenance"
CRASH_RESTARTS = 2
"""Restarts before a crash loop counts as one (kube-prometheus waits 15 minutes; the state is the same)."""


class Kubectl(Protocol):
    """What a maker needs of a cluster: its kubectl, and its kubeconfig for in-process reads
    (``devcluster.Cluster`` has both)."""

    @property
    def kubeconfig(self) -> Path: ...

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, user: str | None = None
    ) -> Any: ...


@dataclasses.dataclass(frozen=True, kw_only=True)
class NodeIncident:
    """One real failure and the alert it raises."""

    kind: str
    """What happened (``crashloop-after-rollout``, ``oomkilled``, ...)."""
    namespace: str
    alert: dict[str, Any]
    """The Alertmanager alert (v4 webhook format) a kube-prometheus rule fires on this state."""
    workload: dict[str, str]
    """The object a remediation acts on (``kind``, ``name``, ``namespace``)."""
    expect: tuple[str, ...] = ()
    """Workflow ids (example catalog) a correct analysis selects; empty: it declines."""
    undo: tuple[tuple[str, ...], ...] = ()
    """kubectl commands that take the incident's changes outside the namespace back (a taint)."""

    def payload(self) -> dict[str, Any]:
        """The webhook body Alertmanager would post to the intake for this alert alone."""
        labels = self.alert["labels"]
        return {
            "version": "4",
            "groupKey": f'{{}}:{{alertname="{labels["alertname"]}"}}',
            "status": "firing",
            "receiver": "aianalysis",
            "groupLabels": {"alertname": labels["alertname"]},
            "commonLabels": dict(labels),
            "commonAnnotations": dict(self.alert["annotations"]),
            "externalURL": "http://alertmanager.local",
            "alerts": [self.alert],
        }

    def clean_up(self, cluster: Kubectl) -> None:
        for command in self.undo:
            cluster.kubectl(*command, check=False)


# --- the incidents -------------------------------------------------------------------------------


def crashloop_after_rollout(cluster: Kubectl, namespace: str, *, image: str) -> NodeIncident:
    """A healthy two-replica Deployment gets a release whose process exits at once: the new
    ReplicaSet's Pod crash-loops while the old revision's Pods stay Ready (the rollout stalls on
    ``maxUnavailable: 0``). The injection is the one Kubernaut's crashloop demo uses: a patched
    command."""
    name = "worker"
    apply(
        cluster,
        namespace,
        deployment(name, "echo worker 1.0.0 ready; exec sleep 3600", image=image, replicas=2),
    )
    rollout(cluster, namespace, name)
    bad = ["sh", "-c", "echo fatal: bad release 1.1.0 -- aborting && exit 1"]
    patch = [{"op": "replace", "path": "/spec/template/spec/containers/0/command", "value": bad}]
    cluster.kubectl("patch", "deployment", name, "-n", namespace, "--type=json", "-p", json.dumps(patch))
    pod, container = wait_for_container(
        cluster, namespace, name, lambda s: s.get("restartCount", 0) >= CRASH_RESTARTS, what="a crash loop"
    )
    return NodeIncident(
        kind="crashloop-after-rollout",
        namespace=namespace,
        alert=pod_alert("KubePodCrashLooping", pod, container, reason="CrashLoopBackOff"),
        workload=_ref("Deployment", name, namespace),
        expect=("rollback-deployment",),
    )


def oom_killed(cluster: Kubectl, namespace: str, *, image: str, child: bool = False) -> NodeIncident:
    """A container that allocates over its memory limit. ``child=False``: the main process (PID 1)
    allocates — the kernel kills it, exit code 137; ``child=True``: a child allocates and is
    killed, the main process goes on and exits 0 — the kubelet still says OOMKilled, exit code 0."""
    name = "resizer"
    script = f"echo resizing; {HOG}; echo resize worker done" if child else f"echo resizing; exec {HOG}"
    limits = {"resources": {"limits": {"memory": MEMORY_LIMIT}, "requests": {"memory": MEMORY_LIMIT}}}
    apply(cluster, namespace, deployment(name, script, image=image, container=limits))
    pod, container = wait_for_container(
        cluster, namespace, name,
        lambda s: s.get("restartCount", 0) >= 1 and _last(s).get("reason") == "OOMKilled",
        what="an OOM kill",
    )  # fmt: skip
    return NodeIncident(
        kind="oomkilled-child" if child else "oomkilled",
        namespace=namespace,
        alert=pod_alert("KubeContainerOOMKilled", pod, container, reason="OOMKilled"),
        workload=_ref("Deployment", name, namespace),
        expect=("oomkill-increase-memory",),
    )


def image_pull_failure(cluster: Kubectl, namespace: str, *, image: str) -> NodeIncident:
    """A healthy Deployment is rolled to an image tag the node does not have: the kubelet pulls it,
    the pull fails (here every pull goes to a closed port), and the new Pod waits in
    ``ErrImagePull``/``ImagePullBackOff`` while the old one keeps serving."""
    name = "catalog"
    apply(
        cluster, namespace,
        deployment(name, "echo catalog ready; exec sleep 3600", image=image, pull="IfNotPresent"),
    )  # fmt: skip
    rollout(cluster, namespace, name)
    missing = image.rsplit(":", 1)[0] + ":2.0.0-missing"
    cluster.kubectl("set", "image", f"deployment/{name}", f"main={missing}", "-n", namespace)
    pod, container = wait_for_container(
        cluster, namespace, name,
        lambda s: _waiting(s) in ("ErrImagePull", "ImagePullBackOff") and s.get("image") == missing,
        what="a failed pull",
    )  # fmt: skip
    return NodeIncident(
        kind="image-pull-failure",
        namespace=namespace,
        alert=pod_alert("KubeContainerWaiting", pod, container, reason=_waiting(container) or "ErrImagePull"),
        workload=_ref("Deployment", name, namespace),
        expect=("image-rollback-tag",),
    )


def readiness_failing(cluster: Kubectl, namespace: str, *, image: str) -> NodeIncident:
    """A web server whose readiness endpoint answers after 3 s while the probe waits 1 s: the
    kubelet reports ``Readiness probe failed: ... Client.Timeout exceeded``; the Pod runs, never
    Ready."""
    name = "web"
    serve = (
        "mkdir -p /www/cgi-bin && echo ok > /www/index.html && "
        "printf '#!/bin/sh\\nsleep 3\\necho Content-Type: text/plain\\necho\\necho ready\\n' "
        "> /www/cgi-bin/ready && chmod +x /www/cgi-bin/ready && exec httpd -f -v -p 8080 -h /www"
    )
    probe = {
        "readinessProbe": {
            "httpGet": {"path": "/cgi-bin/ready", "port": 8080},
            "timeoutSeconds": 1, "periodSeconds": 2, "failureThreshold": 2,
        },
        "ports": [{"containerPort": 8080, "name": "http"}],
    }  # fmt: skip
    apply(cluster, namespace, deployment(name, serve, image=image, container=probe))
    _events(cluster, namespace, "Unhealthy", what="failed readiness probes", count=3)
    pod, _ = wait_for_container(
        cluster, namespace, name, lambda s: "running" in (s.get("state") or {}) and not s.get("ready"),
        what="a running, unready container",
    )  # fmt: skip
    return NodeIncident(
        kind="readiness-probe-failing",
        namespace=namespace,
        alert=pod_alert("KubePodNotReady", pod, None),
        workload=_ref("Deployment", name, namespace),
        expect=("probe-relax-thresholds",),
    )


def pending_on_taint(cluster: Kubectl, namespace: str, *, image: str, node: str) -> NodeIncident:
    """The node gets a ``NoSchedule`` taint (maintenance) the workload does not tolerate: the
    scheduler leaves its new Pod Pending. The taint is removed by :meth:`NodeIncident.clean_up`."""
    name = "ledger"
    undo = (("taint", "node", node, f"{TAINT_KEY}-"),)
    cluster.kubectl("taint", "node", node, f"{TAINT_KEY}={namespace}:NoSchedule", "--overwrite")
    try:
        apply(cluster, namespace, deployment(name, "exec sleep 3600", image=image))
        pod = _unschedulable(cluster, namespace, name, "untolerated taint")
    except BaseException:
        cluster.kubectl(*undo[0], check=False)
        raise
    return NodeIncident(
        kind="pending-taint",
        namespace=namespace,
        alert=pod_alert("KubePodNotReady", pod, None),
        workload=_ref("Deployment", name, namespace),
        expect=(),
        undo=undo,
    )


def pending_on_resources(
    cluster: Kubectl, namespace: str, *, image: str, resource: str = "cpu"
) -> NodeIncident:
    """A Deployment that requests more ``cpu`` or ``memory`` than the node has: the scheduler's
    ``Insufficient cpu`` (or ``memory``) leaves it Pending."""
    name = "analytics"
    asks = {"cpu": "64", "memory": "512Gi"}[resource]
    container = {"resources": {"requests": {resource: asks}}}
    apply(cluster, namespace, deployment(name, "exec sleep 3600", image=image, container=container))
    pod = _unschedulable(cluster, namespace, name, f"Insufficient {resource}")
    return NodeIncident(
        kind=f"pending-insufficient-{resource}",
        namespace=namespace,
        alert=pod_alert("KubePodNotReady", pod, None),
        workload=_ref("Deployment", name, namespace),
        expect=("lower-resource-requests",),
    )


def job_past_deadline(cluster: Kubectl, namespace: str, *, image: str) -> NodeIncident:
    """A Job whose work takes longer than its ``activeDeadlineSeconds``: the Job controller kills
    its Pod and marks it ``Failed`` (``DeadlineExceeded``)."""
    name = "nightly-report"
    template = pod_spec("echo building report; exec sleep 3600", image=image, restart="Never")
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"activeDeadlineSeconds": 30, "backoffLimit": 0, "template": {"spec": template}},
    }
    apply(cluster, namespace, job)
    until(
        lambda: _condition(reads.get(cluster, "job", name, namespace) or {}, "Failed"),
        what=f"Job {namespace}/{name} to fail",
        timeout=120,
    )
    return NodeIncident(
        kind="job-deadline-exceeded",
        namespace=namespace,
        alert=firing_alert(
            "KubeJobFailed",
            {"namespace": namespace, "job_name": name, "severity": "warning"},
            summary="Job failed to complete.",
            description=f"Job {namespace}/{name} failed to complete. Removing failed job after "
            "investigation should clear this alert.",
        ),
        workload=_ref("Job", name, namespace),
        expect=("job-rerun-longer-deadline",),
    )


def missing_reference(
    cluster: Kubectl, namespace: str, *, image: str, kind: str = "ConfigMap"
) -> NodeIncident:
    """A Deployment reads a key of a ConfigMap (or Secret) nobody created: the kubelet cannot
    build the container's environment (``CreateContainerConfigError``)."""
    name = "billing"
    source = "configMapKeyRef" if kind == "ConfigMap" else "secretKeyRef"
    env = {
        "env": [{"name": "BILLING_MODE", "valueFrom": {source: {"name": f"{name}-settings", "key": "mode"}}}]
    }
    apply(cluster, namespace, deployment(name, "exec sleep 3600", image=image, container=env))
    pod, container = wait_for_container(
        cluster, namespace, name, lambda s: _waiting(s) == "CreateContainerConfigError",
        what="a container that cannot be configured",
    )  # fmt: skip
    return NodeIncident(
        kind=f"missing-{kind.lower()}",
        namespace=namespace,
        alert=pod_alert("KubeContainerWaiting", pod, container, reason="CreateContainerConfigError"),
        workload=_ref("Deployment", name, namespace),
        expect=(),
    )


# --- alerts --------------------------------------------------------------------------------------


def pod_alert(
    name: str, pod: Mapping[str, Any], container: Mapping[str, Any] | None, *, reason: str | None = None
) -> dict[str, Any]:
    """The alert kube-prometheus' rule ``name`` fires for one Pod (and container): the labels its
    expression keeps (kube-state-metrics' ``namespace``, ``pod``, ``container``, ``reason``)."""
    meta = pod["metadata"]
    labels = {"namespace": meta["namespace"], "pod": meta["name"], "severity": "warning"}
    where = f"Pod {meta['namespace']}/{meta['name']}"
    if container is not None:
        labels["container"] = container["name"]
        where += f" ({container['name']})"
    if reason:
        labels["reason"] = reason
    summaries = {
        "KubePodCrashLooping": (
            "Pod is crash looping.",
            f'{where} is in waiting state (reason: "{reason}").',
        ),
        "KubeContainerWaiting": (
            "Pod container waiting longer than 1 hour",
            f'{where} has been in waiting state (reason: "{reason}") for longer than 1 hour.',
        ),
        "KubePodNotReady": (
            "Pod has been in a non-ready state for more than 15 minutes.",
            f"{where} has been in a non-ready state for longer than 15 minutes.",
        ),
        "KubeContainerOOMKilled": (
            "Container was OOM killed.",
            f"{where} was terminated with reason OOMKilled.",
        ),
    }
    summary, description = summaries[name]
    return firing_alert(name, labels, summary=summary, description=description)


def firing_alert(name: str, labels: Mapping[str, str], *, summary: str, description: str) -> dict[str, Any]:
    """A firing Alertmanager alert (v4 webhook format) named ``name`` with ``labels``."""
    full = {"alertname": name, **labels}
    fingerprint = hashlib.sha256(json.dumps(full, sort_keys=True).encode()).hexdigest()[:16]
    return {
        "status": "firing",
        "labels": full,
        "annotations": {"summary": summary, "description": description},
        "startsAt": _now(),
        "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": "http://prometheus.local/graph",
        "fingerprint": fingerprint,
    }


# --- objects -------------------------------------------------------------------------------------


def pod_spec(
    script: str,
    *,
    image: str,
    restart: str = "Always",
    pull: str = "Never",
    container: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A Pod spec running ``sh -c script`` in ``image``; SIGTERM ends it within a second. A
    long-running one (``restart`` Always) is Ready a second after it started and while it runs,
    as a server with a readiness probe is: a process that crashes at once never is, so a rollout
    of it stalls (the old Pods stay) as it does in production."""
    probe = {"readinessProbe": {"exec": {"command": ["true"]}, "initialDelaySeconds": 1, "periodSeconds": 2}}
    return {
        "restartPolicy": restart,
        "terminationGracePeriodSeconds": 1,
        "containers": [
            {
                "name": "main",
                "image": image,
                "imagePullPolicy": pull,
                "command": ["sh", "-c", script],
                **(probe if restart == "Always" else {}),
                **(container or {}),
            }
        ],
    }


def deployment(
    name: str,
    script: str,
    *,
    image: str,
    replicas: int = 1,
    pull: str = "Never",
    container: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A Deployment of ``replicas`` Pods running ``script`` (rolling updates: one new Pod at a time,
    none of the old ones down before it is Ready)."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "strategy": {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": pod_spec(script, image=image, pull=pull, container=container),
            },
        },
    }


def apply(cluster: Kubectl, namespace: str, *objects: Mapping[str, Any]) -> None:
    body = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input=body)


def rollout(cluster: Kubectl, namespace: str, name: str, *, timeout: int = 120) -> None:
    """Wait for the Deployment's rollout to finish (its Pods Ready)."""
    cluster.kubectl("rollout", "status", f"deployment/{name}", "-n", namespace, f"--timeout={timeout}s")


def wait_for_container(
    cluster: Kubectl,
    namespace: str,
    app: str,
    ready: Callable[[Mapping[str, Any]], bool],
    *,
    what: str,
    timeout: float = 150,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The first Pod of ``app`` (and its container status) for which ``ready(status)`` holds."""

    def found() -> tuple[dict[str, Any], dict[str, Any]] | None:
        for pod in _pods(cluster, namespace, app):
            for status in (pod.get("status") or {}).get("containerStatuses") or ():
                if ready(status):
                    return pod, status
        return None

    result: tuple[dict[str, Any], dict[str, Any]] = until(
        found,
        what=f"{what} in {namespace}/{app}",
        timeout=timeout,
        describe=lambda: _describe(cluster, namespace),
    )
    return result


# --- helpers -------------------------------------------------------------------------------------


def _unschedulable(cluster: Kubectl, namespace: str, app: str, says: str) -> dict[str, Any]:
    def found() -> dict[str, Any] | None:
        for pod in _pods(cluster, namespace, app):
            for condition in (pod.get("status") or {}).get("conditions") or ():
                if condition.get("type") == "PodScheduled" and says in str(condition.get("message")):
                    return pod
        return None

    pod: dict[str, Any] = until(
        found, what=f"the scheduler to say {says!r} about {namespace}/{app}", timeout=60,
        describe=lambda: _describe(cluster, namespace),
    )  # fmt: skip
    return pod


def _events(cluster: Kubectl, namespace: str, reason: str, *, what: str, count: int) -> None:
    def enough() -> bool:
        listed = reads.listed(cluster, "events", namespace)
        seen = sum(
            int(e.get("count") or (e.get("series") or {}).get("count") or 1)
            for e in listed
            if e.get("reason") == reason
        )
        return seen >= count

    until(enough, what=what, timeout=90, describe=lambda: _describe(cluster, namespace))


def _pods(cluster: Kubectl, namespace: str, app: str) -> list[dict[str, Any]]:
    pods = reads.listed(cluster, "pods", namespace, selector=f"app={app}")
    return sorted(pods, key=lambda p: str(p["metadata"].get("creationTimestamp")), reverse=True)


def _condition(obj: Mapping[str, Any], kind: str) -> bool:
    return any(
        c.get("type") == kind and c.get("status") == "True"
        for c in (obj.get("status") or {}).get("conditions") or ()
    )


def _waiting(status: Mapping[str, Any]) -> str | None:
    reason = ((status.get("state") or {}).get("waiting") or {}).get("reason")
    return str(reason) if reason else None


def _last(status: Mapping[str, Any]) -> Mapping[str, Any]:
    terminated: Mapping[str, Any] = (status.get("lastState") or {}).get("terminated") or {}
    return terminated


def _ref(kind: str, name: str, namespace: str) -> dict[str, str]:
    return {"kind": kind, "name": name, "namespace": namespace}


def _describe(cluster: Kubectl, namespace: str) -> str:
    pods = cluster.kubectl("get", "pods", "-n", namespace, "-o", "wide", check=False).stdout
    events = cluster.kubectl("get", "events", "-n", namespace, check=False).stdout
    return f"{pods}\n{events[-3000:]}"


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def until(
    predicate: Callable[[], Any], *, what: str, timeout: float, describe: Callable[[], str] | None = None
) -> Any:
    """The predicate's first truthy value, polled until ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.5)
    raise TimeoutError(
        f"timed out after {timeout:.0f}s waiting for {what}" + (f"\n{describe()}" if describe else "")
    )
