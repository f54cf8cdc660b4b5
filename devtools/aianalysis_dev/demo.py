"""``aianalysis demo``: the whole product on a throw-away local control plane.

Starts etcd + kube-apiserver, installs the CRDs and the example catalog, runs the operator as a
separate process (exactly as ``aianalysis run``), applies the example incidents, fails one
WorkflowExecution to show recovery, prints the results and leaves nothing running.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

from aianalysis import errors, settings
from aianalysis_dev import devcluster, executions

NAMESPACE = "demo"
#: The example incident whose execution the demo fails, to show a recovery analysis.
DEMO_RECOVERY_INCIDENT = "orders-api-crashloop"
TERMINAL = ("Completed", "Failed")


def find_root(start: Path | None = None) -> Path:
    """The project checkout holding ``crds/`` and ``examples/`` (the demo ships their YAML)."""
    candidates = [start or Path.cwd(), Path(__file__).resolve().parents[2]]
    for base in candidates:
        for folder in (base, *base.parents):
            if (folder / "crds").is_dir() and (folder / "examples" / "catalog").is_dir():
                return folder
    raise errors.ConfigError(
        "run the demo from the aianalysis-operator checkout (crds/ and examples/ not found)"
    )


def run(
    *, root: Path | None = None, timeout_seconds: float = 300.0, out: Callable[[str], None] = print
) -> int:
    root = find_root(root)
    started = time.monotonic()

    def step(text: str) -> None:
        out(f"[{time.monotonic() - started:6.1f}s] {text}")

    step("starting a local control plane (etcd + kube-apiserver, no Docker)")
    with devcluster.DevCluster() as cluster:
        step(f"control plane ready at {cluster.server}")
        devcluster.apply_crds(cluster, root / "crds")
        step("CRDs installed and Established")
        cluster.kubectl("apply", "-f", str(root / "examples" / "catalog"))
        count = len(_items(cluster, "remediationworkflows"))
        step(f"example catalog installed: {count} RemediationWorkflows")
        cluster.kubectl("create", "namespace", NAMESPACE)
        with _operator(cluster, root) as log_file:
            step(f"operator running (provider: {_provider()}; log: {log_file})")
            cluster.kubectl("apply", "-n", NAMESPACE, "-f", str(root / "examples" / "incidents"))
            incidents = len(_items(cluster, "aianalyses", NAMESPACE))
            step(f"applied {incidents} example incidents; waiting for the analyses")
            analyses = _wait_terminal(cluster, incidents, timeout_seconds, step)
            failed_one = _fail_one_execution(cluster, analyses, step)
            if failed_one is not None:
                _wait_for(cluster, f"{failed_one}-recovery-1", timeout_seconds, step)
            out("")
            out(cluster.kubectl("get", "aianalyses", "-n", NAMESPACE, "-o", "wide").stdout)
            shown = f"{failed_one}-recovery-1" if failed_one else analyses[0]["metadata"]["name"]
            out(f"status of aianalysis/{shown}:")
            out(_yaml_status(cluster, shown))
        step("operator stopped")
    step("control plane stopped; nothing left running")
    return 0


def _provider() -> str:
    """The provider the operator process will pick (same settings, same environment)."""
    return settings.from_env().provider


@contextlib.contextmanager
def _operator(cluster: devcluster.DevCluster, root: Path) -> Iterator[Path]:
    log_file = Path(tempfile.mkdtemp(prefix="aianalysis-demo-")) / "operator.log"
    env = {
        **os.environ,
        "KUBECONFIG": str(cluster.kubeconfig),
        "AIANALYSIS_METRICS_PORT": "0",
        "AIANALYSIS_HEALTH_PORT": "0",
    }
    with log_file.open("w") as sink:
        proc = subprocess.Popen(  # the real entrypoint, as in the container
            [sys.executable, "-m", "aianalysis", "run"],
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            cwd=root,
            start_new_session=True,
        )
        try:
            yield log_file
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _items(cluster: devcluster.DevCluster, plural: str, namespace: str | None = None) -> list[dict[str, Any]]:
    args = ["get", plural, "-o", "json"] + (["-n", namespace] if namespace else [])
    items: list[dict[str, Any]] = json.loads(cluster.kubectl(*args).stdout)["items"]
    return items


def _wait_terminal(
    cluster: devcluster.DevCluster, expected: int, timeout: float, step: Callable[[str], None]
) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    reported = -1
    while True:
        items = _items(cluster, "aianalyses", NAMESPACE)
        done = [i for i in items if (i.get("status") or {}).get("phase") in TERMINAL]
        if len(done) != reported:
            reported = len(done)
            step(f"{len(done)}/{expected} analyses finished")
        if len(done) >= expected:
            return sorted(done, key=lambda i: i["metadata"]["name"])
        if time.monotonic() > deadline:
            raise errors.AIAnalysisError(f"only {len(done)}/{expected} analyses finished in {timeout:.0f}s")
        time.sleep(1.0)


def _wait_for(cluster: devcluster.DevCluster, name: str, timeout: float, step: Callable[[str], None]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cluster.kubectl("get", "aianalysis", name, "-n", NAMESPACE, "-o", "json", check=False)
        if got.returncode == 0 and (json.loads(got.stdout).get("status") or {}).get("phase") in TERMINAL:
            step(f"recovery analysis {name} finished")
            return
        time.sleep(1.0)
    raise errors.AIAnalysisError(f"recovery analysis {name} did not finish in {timeout:.0f}s")


def _fail_one_execution(
    cluster: devcluster.DevCluster, analyses: list[dict[str, Any]], step: Callable[[str], None]
) -> str | None:
    """Pretend the executor ran a selected workflow and its rollout missed its deadline."""
    selected_ones = [a for a in analyses if (a.get("status") or {}).get("selectedWorkflow")]
    preferred = [a for a in selected_ones if a["metadata"]["name"] == DEMO_RECOVERY_INCIDENT]
    chosen = next(iter(preferred or selected_ones), None)
    if chosen is None:
        step("no analysis selected a workflow; skipping the recovery demo")
        return None
    name = chosen["metadata"]["name"]
    selected = chosen["status"]["selectedWorkflow"]
    executions.fail_execution(
        cluster, NAMESPACE, analysis=chosen, name=f"{name}-exec-1", reason="DeadlineExceeded",
        message="rollout did not become Available within 300s", step_index=1, step_name="wait-rollout",
        execution_time="41s",
    )  # fmt: skip
    step(f"workflowexecution {name}-exec-1 ({selected['workflowId']}) marked Failed: DeadlineExceeded")
    return str(name)


def _yaml_status(cluster: devcluster.DevCluster, name: str) -> str:
    body = json.loads(cluster.kubectl("get", "aianalysis", name, "-n", NAMESPACE, "-o", "json").stdout)
    return str(yaml.safe_dump({"status": body.get("status")}, sort_keys=False, width=110))
