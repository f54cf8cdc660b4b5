"""The blast-radius guards end to end, each blocking with its reason: one execution per target
(``TargetBusy``), the consecutive-failure backoff and its doubling (``FailureBackoff``), and the two
cluster-wide caps (``ConcurrencyLimit``, ``HourlyLimit``). Real kube-apiserver +
kube-controller-manager (Jobs and their Pods are made by the Job controller), the executor as a
process running as the chart's ServiceAccount, ``aianalysis approve`` as a person runs it; the
Pods' states are written through ``/status`` as a kubelet would. Small settings (caps of 1 and 2,
a threshold of 1); nothing sleeps: every step waits for a state a user would see.

The module has its own control plane: the caps count executions cluster-wide, so every test
deletes its executions when it ends (no test sees another's history).
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from aianalysis_dev import devcluster
from tests.e2e import test_executor as executor_e2e
from tests.e2e.conftest import OperatorProcess, get, starter, wait_for
from tests.e2e.test_executor import (
    INSTALL_NAMESPACE,
    OOM,
    RUNNING,
    analysed,
    approve,
    ended,
    kubelet_reports,
    the_pod,
)

jobs_cluster = executor_e2e.jobs_cluster
executor_kubeconfig = executor_e2e.executor_kubeconfig

SUCCEEDED = {
    "terminated": {
        "reason": "Completed",
        "exitCode": 0,
        "startedAt": "2026-11-20T10:00:05Z",
        "finishedAt": "2026-11-20T10:00:09Z",
    }
}


@pytest.fixture
def namespaces(jobs_cluster: devcluster.DevCluster) -> Iterator[Callable[[], str]]:
    """Fresh namespaces; their executions are deleted at the end (the caps count cluster-wide)."""
    made: list[str] = []

    def make() -> str:
        name = f"gd-{secrets.token_hex(4)}"
        jobs_cluster.kubectl("create", "namespace", name)
        executor_e2e.serving(jobs_cluster, name)
        made.append(name)
        return name

    make.made = made  # type: ignore[attr-defined]  # the executor serves exactly these
    yield make
    for name in made:
        jobs_cluster.kubectl("delete", "workflowexecutions", "--all", "-n", name, "--wait=true")


@pytest.fixture
def start_executor(
    executor_kubeconfig: Path, tmp_path: Path, namespaces: Callable[[], str]
) -> Iterator[Callable[..., OperatorProcess]]:
    """The executor for the namespaces made so far (``--namespace`` each, as the chart passes
    ``executor.namespaces``), as the chart's ServiceAccount; the guards' settings through the
    environment. Starting again = a restart (e.g. after ``helm upgrade`` changed a setting)."""

    def make(started: list[OperatorProcess], env: dict[str, str]) -> OperatorProcess:
        for running in started:
            running.kill()  # replaced, as a rollout replaces a pod (no graceful wait needed)
        served = [f"--namespace={ns}" for ns in namespaces.made]  # type: ignore[attr-defined]
        return OperatorProcess(
            kubeconfig=executor_kubeconfig,
            log_dir=tmp_path / f"executor-{len(started)}",
            env={"AIANALYSIS_EXECUTOR_START_LOCK_NAMESPACE": INSTALL_NAMESPACE, **env},  # as the chart sets
            argv=[sys.executable, "-m", "aianalysis", "executor", *served],
        )

    yield from starter(make)


def blocked(cluster: devcluster.DevCluster, ns: str, name: str, logs: Callable[[], str]) -> dict[str, Any]:
    """The guard's verdict on execution ``name``: its failureDetails once it ended Failed."""
    done: dict[str, Any] = wait_for(lambda: ended(cluster, ns, name), what=f"{name} to end", logs=logs)
    st = done["status"]
    assert st["phase"] == "Failed" and get(cluster, "jobs", name, ns) is None, st  # nothing ran
    details: dict[str, Any] = st["failureDetails"]
    return details


def runs(
    cluster: devcluster.DevCluster, ns: str, name: str, logs: Callable[[], str], *, report: bool = True
) -> str:
    """Execution ``name`` got its Job and the Job's Pod (reported Running, as a kubelet would, unless
    ``report`` is False); the Pod."""
    pod = the_pod(cluster, ns, name, logs)
    if report:
        kubelet_reports(cluster, ns, pod["metadata"]["name"], phase="Running", state=RUNNING)
        wait_for(
            lambda: ((get(cluster, "wfe", name, ns) or {}).get("status") or {}).get("phase") == "Running",
            what=f"{name} Running",
            logs=logs,
        )
    return str(pod["metadata"]["name"])


def finishes(
    cluster: devcluster.DevCluster, ns: str, name: str, pod: str, logs: Callable[[], str], *, ok: bool
) -> None:
    kubelet_reports(cluster, ns, pod, phase="Succeeded" if ok else "Failed", state=SUCCEEDED if ok else OOM)
    done = wait_for(lambda: ended(cluster, ns, name), what=f"{name} to end", logs=logs)
    assert done["status"]["phase"] == ("Completed" if ok else "Failed"), done["status"]


def approved(cluster: devcluster.DevCluster, ns: str, analysis: str, *extra: str) -> None:
    done = approve(cluster, ns, analysis, *extra)
    assert done.returncode == 0, done.stderr


def test_one_execution_per_target_and_the_cluster_wide_caps_block_with_their_reasons(
    jobs_cluster: devcluster.DevCluster,
    namespaces: Callable[[], str],
    start_executor: Callable[..., OperatorProcess],
) -> None:
    """Caps of 1 running and 2 started per hour. A second execution on a busy target waits for
    none (TargetBusy); one on another target meets the concurrency cap; once the first ended, a
    second runs, and a third meets the hourly cap. Each blocked one: no Job, a Warning Event with
    the guard's reason, a metric."""
    cluster = jobs_cluster
    first, second, third = namespaces(), namespaces(), namespaces()
    executor = start_executor(AIANALYSIS_EXECUTOR_MAX_CONCURRENT="1", AIANALYSIS_EXECUTOR_MAX_PER_HOUR="2")
    wf = executor_e2e.workflow(cluster)
    analysed(cluster, first, wf, name="api-a")
    analysed(cluster, first, wf, name="api-b")  # another incident, the same target (deployment/api)
    analysed(cluster, second, wf, name="api-c")  # another target: deployment/api in another namespace
    analysed(cluster, third, wf, name="api-d")

    approved(cluster, first, "api-a")
    pod = runs(cluster, first, "api-a-exec-1", executor.logs)

    approved(cluster, first, "api-b")
    busy = blocked(cluster, first, "api-b-exec-1", executor.logs)
    assert busy["reason"] == "TargetBusy", busy
    assert f"deployment/api in {first} is being remediated by api-a-exec-1" in busy["message"]

    approved(cluster, second, "api-c")
    capped = blocked(cluster, second, "api-c-exec-1", executor.logs)
    assert capped == {
        **capped,
        "reason": "ConcurrencyLimit",
        "message": "1 executions are running cluster-wide (limit 1)",
    }

    finishes(cluster, first, "api-a-exec-1", pod, executor.logs, ok=True)
    approved(cluster, second, "api-c", "--again")  # nothing runs now: this one may
    finishes(cluster, second, "api-c-exec-2", runs(cluster, second, "api-c-exec-2", executor.logs),
             executor.logs, ok=True)  # fmt: skip

    approved(cluster, third, "api-d")
    hourly = blocked(cluster, third, "api-d-exec-1", executor.logs)
    assert hourly["reason"] == "HourlyLimit", hourly
    assert hourly["message"] == "2 executions started cluster-wide in the last hour (limit 2)"

    for ns, name, reason in [
        (first, "api-b-exec-1", "TargetBusy"),
        (second, "api-c-exec-1", "ConcurrencyLimit"),
        (third, "api-d-exec-1", "HourlyLimit"),
    ]:
        assert reason in executor_e2e_events(cluster, ns, name)
    metrics = executor.metrics()
    for reason in ("TargetBusy", "ConcurrencyLimit", "HourlyLimit"):
        assert f'aianalysis_execution_guard_blocks_total{{reason="{reason}"}} 1.0' in metrics
    table = cluster.kubectl("get", "wfe", "-n", third).stdout
    assert "api-d-exec-1" in table and "Failed" in table and "HourlyLimit" in table
    # every start went through the replicas' start lock, with the chart's permissions for it
    lease = get(cluster, "lease", "aianalysis-executor-start", INSTALL_NAMESPACE)
    assert lease is not None and not lease["spec"].get("holderIdentity"), lease
    assert "forbidden" not in executor.logs().lower(), executor.logs()


def test_consecutive_failures_back_off_and_the_backoff_doubles(
    jobs_cluster: devcluster.DevCluster,
    namespaces: Callable[[], str],
    start_executor: Callable[..., OperatorProcess],
) -> None:
    """Threshold 1, first backoff 600 s, no cooldown (the same workflow is retried at once). After
    one failure the next try is held 600 s; a person raises the threshold to let one more run (a
    restart with the new setting), it fails too, and with the threshold back at 1 the hold is 1200 s."""
    cluster = jobs_cluster
    policy = {
        "AIANALYSIS_EXECUTOR_COOLDOWN_SECONDS": "0",
        "AIANALYSIS_EXECUTOR_FAILURE_BACKOFF_SECONDS": "600",
    }
    ns = namespaces()
    executor = start_executor(AIANALYSIS_EXECUTOR_FAILURE_THRESHOLD="1", **policy)
    wf = executor_e2e.workflow(cluster)
    analysed(cluster, ns, wf, name="api")

    approved(cluster, ns, "api")
    finishes(
        cluster,
        ns,
        "api-exec-1",
        runs(cluster, ns, "api-exec-1", executor.logs, report=False),
        executor.logs,
        ok=False,
    )
    approved(cluster, ns, "api", "--again")
    held = blocked(cluster, ns, "api-exec-2", executor.logs)
    assert held["reason"] == "FailureBackoff", held
    assert (
        f"the last 1 executions on deployment/api in {ns} failed or were ineffective (api-exec-1)"
        in (held["message"])
    )
    assert "(backoff 600s after 1 failures, doubling)" in held["message"]

    executor = start_executor(AIANALYSIS_EXECUTOR_FAILURE_THRESHOLD="2", **policy)
    approved(cluster, ns, "api", "--again")
    finishes(
        cluster,
        ns,
        "api-exec-3",
        runs(cluster, ns, "api-exec-3", executor.logs, report=False),
        executor.logs,
        ok=False,
    )

    executor = start_executor(AIANALYSIS_EXECUTOR_FAILURE_THRESHOLD="1", **policy)
    approved(cluster, ns, "api", "--again")
    doubled = blocked(cluster, ns, "api-exec-4", executor.logs)
    assert doubled["reason"] == "FailureBackoff", doubled
    assert "the last 2 executions" in doubled["message"] and "(api-exec-3, api-exec-1)" in doubled["message"]
    assert "(backoff 1200s after 1 failures, doubling)" in doubled["message"]
    assert "FailureBackoff" in executor_e2e_events(cluster, ns, "api-exec-4")


def executor_e2e_events(cluster: devcluster.DevCluster, ns: str, name: str) -> list[str]:
    """The reasons of the Events posted on ``name`` (Events are posted right after the status)."""
    found: list[str] = wait_for(
        lambda: [
            e["reason"]
            for e in executor_e2e.items(cluster, "events", ns)
            if e["involvedObject"]["name"] == name
        ],
        what=f"the Events of {name}",
    )
    return found
