"""Workloads on the real node, everything reported by the kubelet and the controllers themselves:
a Pod's logs, a crash loop, OOM kills, a Job, a Deployment rollout, a ServiceAccount token used
against the API server through the ``kubernetes`` Service, and one Pod reaching another's Service."""

from __future__ import annotations

import json
from typing import Any

from aianalysis_dev import devcluster
from tests.support import nodes
from tests.support.nodes import apply, container_status, get, items, pod, wait_for, watch_pod


def test_the_node_is_ready_with_our_kubelet_and_containerd(node_cluster: devcluster.NodeCluster) -> None:
    node = json.loads(node_cluster.kubectl("get", "node", node_cluster.node_name, "-o", "json").stdout)
    ready = {c["type"]: c["status"] for c in node["status"]["conditions"]}["Ready"]
    info = node["status"]["nodeInfo"]
    addresses = {a["type"]: a["address"] for a in node["status"]["addresses"]}
    assert (ready, info["kubeletVersion"], info["containerRuntimeVersion"]) == (
        "True",
        devcluster.K8S_VERSION,
        f"containerd://{devcluster.CONTAINERD_VERSION.removeprefix('v')}",
    )
    assert node_cluster.server == f"https://{addresses['InternalIP']}:{node_cluster.server.rsplit(':', 1)[1]}"


def test_a_pod_runs_and_its_logs_are_readable(
    node_cluster: devcluster.NodeCluster, busybox: str, node_namespace: str
) -> None:
    apply(
        node_cluster, node_namespace, pod("hello", "echo hello from $(hostname); echo bye >&2", image=busybox)
    )
    wait_for(
        lambda: get(node_cluster, "pod", "hello", node_namespace)["status"].get("phase") == "Succeeded",
        what="the Pod to succeed",
        describe=nodes.describer(node_cluster, node_namespace),
    )
    logs = node_cluster.kubectl("logs", "hello", "-n", node_namespace).stdout
    assert sorted(logs.splitlines()) == ["bye", "hello from hello"]  # stdout and stderr: two pipes, no order
    terminated = container_status(node_cluster, "hello", node_namespace)["state"]["terminated"]
    assert (terminated["reason"], terminated["exitCode"]) == ("Completed", 0)


def test_a_crash_loop_is_reported_by_the_kubelet(
    node_cluster: devcluster.NodeCluster, busybox: str, node_namespace: str
) -> None:
    """kubelet 1.36 shows ``CrashLoopBackOff`` only in the second or two before each restart; the
    rest of the back-off the container is ``terminated: Error`` (a busy kubelet may skip writing
    that state): the restarted container's ``lastState`` says ``Error`` and the exit code."""
    apply(
        node_cluster, node_namespace, pod("crasher", "echo trying; exit 3", image=busybox, restart="Always")
    )
    reasons: set[str] = set()

    def looped(version: dict[str, Any]) -> bool:
        status = (version.get("status", {}).get("containerStatuses") or [{}])[0]
        reasons.update(state.get("reason", "") for state in (status.get("state") or {}).values() if state)
        last = (status.get("lastState") or {}).get("terminated") or {}
        return (
            status.get("restartCount", 0) >= 1
            and "CrashLoopBackOff" in reasons
            and (last.get("reason"), last.get("exitCode")) == ("Error", 3)
        )

    watch_pod(node_cluster, node_namespace, "crasher", looped, timeout=120)
    events = items(node_cluster, "events", node_namespace, fields="involvedObject.name=crasher")
    assert any(e["reason"] == "BackOff" and e["source"].get("component") == "kubelet" for e in events)
    assert node_cluster.kubectl("logs", "crasher", "-n", node_namespace).stdout.strip() == "trying"


def test_an_oom_killed_main_process_exits_137(
    node_cluster: devcluster.NodeCluster, busybox: str, node_namespace: str
) -> None:
    limits = {"container": {"resources": {"limits": {"memory": "32Mi"}}}}
    hog = "exec dd if=/dev/zero of=/dev/null bs=200M count=1"  # PID 1 itself allocates 200 MiB
    apply(node_cluster, node_namespace, pod("hog", hog, image=busybox, **limits))
    terminated = wait_for(
        lambda: container_status(node_cluster, "hog", node_namespace).get("state", {}).get("terminated"),
        what="the OOM kill",
        describe=nodes.describer(node_cluster, node_namespace),
    )
    assert (terminated["reason"], terminated["exitCode"]) == ("OOMKilled", 137)


def test_an_oom_killed_child_leaves_oomkilled_with_the_main_process_exit_code(
    node_cluster: devcluster.NodeCluster, busybox: str, node_namespace: str
) -> None:
    """The kernel kills the child that allocated; the shell goes on and exits 0 — and the kubelet
    still reports OOMKilled (the container's cgroup saw an OOM kill), with exit code 0."""
    limits = {"container": {"resources": {"limits": {"memory": "32Mi"}}}}
    apply(
        node_cluster,
        node_namespace,
        pod("parent", "dd if=/dev/zero of=/dev/null bs=200M count=1; echo survived", image=busybox, **limits),
    )
    terminated = wait_for(
        lambda: container_status(node_cluster, "parent", node_namespace).get("state", {}).get("terminated"),
        what="the container to end",
        describe=nodes.describer(node_cluster, node_namespace),
    )
    assert (terminated["reason"], terminated["exitCode"]) == ("OOMKilled", 0)
    assert "survived" in node_cluster.kubectl("logs", "parent", "-n", node_namespace).stdout


def test_a_job_completes(node_cluster: devcluster.NodeCluster, busybox: str, node_namespace: str) -> None:
    template = pod("worker", "echo job done", image=busybox, restart="Never")
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "once"},
        "spec": {"backoffLimit": 0, "template": {"spec": template["spec"]}},
    }
    apply(node_cluster, node_namespace, job)
    wait_for(
        lambda: any(
            c["type"] == "Complete" and c["status"] == "True"
            for c in get(node_cluster, "job", "once", node_namespace).get("status", {}).get("conditions", [])
        ),
        what="the Job to complete",
        describe=nodes.describer(node_cluster, node_namespace),
    )
    (worker,) = items(node_cluster, "pods", node_namespace, selector="job-name=once")
    assert worker["status"]["phase"] == "Succeeded"
    assert node_cluster.kubectl("logs", "job/once", "-n", node_namespace).stdout.strip() == "job done"


def test_a_deployment_rollout_replaces_its_pods(
    node_cluster: devcluster.NodeCluster, busybox: str, node_namespace: str
) -> None:
    template = {
        "metadata": {"labels": {"app": "web"}},
        "spec": pod("web", "sleep 3600", image=busybox, restart="Always")["spec"],
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": template},
    }
    apply(node_cluster, node_namespace, deployment)
    node_cluster.kubectl("rollout", "status", "deployment/web", "-n", node_namespace, "--timeout=120s")
    first = {p["metadata"]["name"] for p in items(node_cluster, "pods", node_namespace, selector="app=web")}
    node_cluster.kubectl("set", "env", "deployment/web", "-n", node_namespace, "REVISION=2")
    node_cluster.kubectl("rollout", "status", "deployment/web", "-n", node_namespace, "--timeout=120s")
    sets = items(node_cluster, "replicasets", node_namespace, selector="app=web")
    assert sorted(s["spec"]["replicas"] for s in sets) == [0, 2]
    (current,) = [s["metadata"]["name"] for s in sets if s["spec"]["replicas"] == 2]

    def replaced() -> bool:
        pods = items(node_cluster, "pods", node_namespace, selector="app=web")
        owners = {p["metadata"]["ownerReferences"][0]["name"] for p in pods}
        return len(pods) == 2 and owners == {current} and not first & {p["metadata"]["name"] for p in pods}

    wait_for(
        replaced, what="the old Pods to be replaced", describe=nodes.describer(node_cluster, node_namespace)
    )


def test_a_pod_uses_its_serviceaccount_token_through_the_kubernetes_service(
    node_cluster: devcluster.NodeCluster, busybox: str, node_namespace: str
) -> None:
    """``apiprobe`` is a minimal in-cluster client: the Service's address from the environment, the
    projected ``ca.crt`` and token. The API server answers /version, and refuses to list Pods to the
    namespace's ``default`` ServiceAccount — which is who it saw."""
    script = f"apiprobe /version; echo rc=$?; apiprobe /api/v1/namespaces/{node_namespace}/pods; echo rc=$?"
    apply(node_cluster, node_namespace, pod("client", script, image=busybox))
    wait_for(
        lambda: get(node_cluster, "pod", "client", node_namespace)["status"].get("phase") == "Succeeded",
        what="the client Pod to finish",
        describe=nodes.describer(node_cluster, node_namespace),
    )
    spec = get(node_cluster, "pod", "client", node_namespace)["spec"]
    assert any(v["name"].startswith("kube-api-access-") and "projected" in v for v in spec["volumes"])
    logs = node_cluster.kubectl("logs", "client", "-n", node_namespace).stdout
    version, forbidden = logs.split("rc=", 1)
    assert version.startswith("200\n") and f'"gitVersion": "{devcluster.K8S_VERSION}"' in version
    assert forbidden.startswith("0\n403\n") and logs.rstrip().endswith("rc=1")
    assert f"system:serviceaccount:{node_namespace}:default" in forbidden


def test_a_pod_reaches_another_pods_service(
    node_cluster: devcluster.NodeCluster, busybox: str, node_namespace: str
) -> None:
    serve = "mkdir /www && echo served-by-$(hostname) > /www/index.html && exec httpd -f -p 8080 -h /www"
    server = pod("server", serve, image=busybox)
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "server"}, "ports": [{"port": 80, "targetPort": 8080}]},
    }
    apply(node_cluster, node_namespace, server, service, pod("client", "sleep 3600", image=busybox))
    cluster_ip = get(node_cluster, "service", "web", node_namespace)["spec"]["clusterIP"]
    node_cluster.kubectl(
        "wait", "--for=condition=Ready", "pod/client", "pod/server", "-n", node_namespace, "--timeout=90s"
    )

    def fetched() -> bool:
        request = f"printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 {cluster_ip} 80"
        answer = node_cluster.kubectl(
            "exec", "client", "-n", node_namespace, "--", "sh", "-c", request, check=False
        )
        return "served-by-server" in answer.stdout

    # kube-proxy writes the Service's rules once the endpoint is ready: wait for them, then it holds.
    wait_for(
        fetched,
        what=f"the Service {cluster_ip}:80 to answer",
        describe=nodes.describer(node_cluster, node_namespace),
    )
