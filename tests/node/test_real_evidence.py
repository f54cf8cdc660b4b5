"""What the kubelet and the Job controller write, read by the parts that judge it: the assessment's
pod health, the executor's reason codes and the log reader, on real incidents
(``aianalysis_dev.incidents``). Each reading here was wrong against the simulated world's statuses
and is checked on the state a real node produces — no status is written by the test."""

from __future__ import annotations

import datetime
import json
from typing import Any

from aianalysis import kube
from aianalysis.assessment import podhealth
from aianalysis.executor import reasons
from aianalysis.kube import api_reader, readers
from aianalysis_dev import devcluster, incidents, reads
from tests.support import nodes


async def test_a_crash_loop_between_restarts_is_failing_and_its_gone_previous_run_is_no_log(
    node_cluster: devcluster.NodeCluster, busybox: str, node_namespace: str
) -> None:
    """Most of a real crash loop shows ``terminated: Error`` (``CrashLoopBackOff`` only just before
    each restart): the assessment counts it as failing now. Then the previous run's container is
    gone and the API server answers ``unable to retrieve container logs`` with status 200: the
    reader says the log is unavailable instead of passing that sentence on as the process' output,
    and the current run's log is the crash's own."""
    since = datetime.datetime.now(datetime.UTC)
    incident = incidents.crashloop_after_rollout(node_cluster, node_namespace, image=busybox)
    name = incident.workload["name"]

    def between_restarts() -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]] | None:
        pods = reads.listed(node_cluster, "pods", node_namespace, selector=f"app={name}")
        for pod in pods:
            for status in pod["status"].get("containerStatuses") or ():
                if status.get("restartCount", 0) >= 1 and "terminated" in (status.get("state") or {}):
                    return pods, pod, status
        return None

    pods, pod, status = nodes.wait_for(
        between_restarts, what="a crash-looping container between restarts", timeout=90
    )
    assert status["state"]["terminated"]["reason"] == "Error", status
    assert podhealth.failing_now(status) == "Error"
    health = podhealth.of_pods(pods, since=since)
    assert "Error" in health.waiting and health.score == 0.0, health

    with kube.api_client(str(node_cluster.kubeconfig)) as api:
        reader = api_reader.KubernetesReader(api)
        where = {
            "name": pod["metadata"]["name"],
            "namespace": node_namespace,
            "container": "main",
            "tail_lines": 20,
        }
        current = await reader.pod_logs(**where, previous=False)
        assert "fatal: bad release 1.1.0" in current, current
        try:
            before = await reader.pod_logs(**where, previous=True)
        except readers.Unavailable as gone:
            assert "the log of the previous run is gone" in str(gone), gone
        else:  # the kubelet still had the previous container: then it is the crash's output
            assert "fatal: bad release 1.1.0" in before and not api_reader.kubelet_notice(before), before


def test_a_job_stopped_at_its_deadline_fails_with_deadline_exceeded(
    node_cluster: devcluster.NodeCluster, busybox: str, node_namespace: str
) -> None:
    """The Job controller deletes the Pods still running at ``activeDeadlineSeconds``; the kubelet
    then reports their containers ``terminated: Error`` (exit 137 or 143) while they are deleted.
    That kill is the deadline's doing: the reason code is DeadlineExceeded, not the Pod's Error."""
    incident = incidents.job_past_deadline(node_cluster, node_namespace, image=busybox)
    name = incident.workload["name"]
    job = json.loads(node_cluster.kubectl("get", "job", name, "-n", node_namespace, "-o", "json").stdout)
    pods = reads.listed(node_cluster, "pods", node_namespace, selector=f"job-name={name}")
    events = reads.listed(node_cluster, "events", node_namespace)
    failure = reasons.failure_of(job=job, pods=pods, events=events)
    assert failure.reason == "DeadlineExceeded", (failure, pods)
