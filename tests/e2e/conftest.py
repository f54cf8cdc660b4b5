"""End-to-end fixtures: the operator as a real process (``python -m aianalysis run``) against the
session's kube-apiserver, plus helpers to wait on what a user would watch with kubectl."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from aianalysis_dev import reads
from tests.support import programs

ROOT = Path(__file__).resolve().parents[2]
TERMINAL = ("Completed", "Failed")


free_port = programs.free_port


class OperatorProcess:
    """One operator process; ``start`` again after ``stop``/``kill`` is a restart."""

    def __init__(
        self, *, kubeconfig: Path, log_dir: Path, env: dict[str, str], argv: list[str] | None = None
    ):
        self.kubeconfig = kubeconfig
        self.log_dir = log_dir
        self.metrics_port = free_port()
        self.health_port = free_port()
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("AIANALYSIS_", "ANTHROPIC_"))},
            "KUBECONFIG": str(kubeconfig),
            "AIANALYSIS_METRICS_PORT": str(self.metrics_port),
            "AIANALYSIS_HEALTH_PORT": str(self.health_port),
            "AIANALYSIS_PROVIDER_RETRY_DELAY_SECONDS": "1",
            **env,
        }
        self.argv = argv or [sys.executable, "-m", "aianalysis", "run"]
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def log_file(self) -> Path:
        return self.log_dir / f"operator-{self.starts}.log"

    def start(self) -> None:
        self.starts += 1
        sink = self.log_file.open("wb")
        self.proc = subprocess.Popen(
            self.argv, env=self.env, stdout=sink, stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True
        )
        sink.close()
        self.wait_healthy()

    def wait_healthy(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"operator exited with {self.proc.returncode}:\n{self.logs()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{self.health_port}/healthz", timeout=2).status_code == 200:
                    return
            time.sleep(0.2)
        raise AssertionError(f"operator not healthy after {timeout}s:\n{self.logs()}")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, sig)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    def logs(self) -> str:
        return "\n".join(
            p.read_text(errors="replace")[-6000:] for p in sorted(self.log_dir.glob("operator-*.log"))
        )

    def metrics(self) -> str:
        return httpx.get(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5).text


def starter(
    make: Callable[[list[OperatorProcess], dict[str, str]], OperatorProcess],
) -> Iterator[Callable[..., OperatorProcess]]:
    """A fixture's ``start(**env)``: ``make(started, env)`` builds the process (``started``: those so
    far), which is started in its own log directory; every one is stopped when the fixture ends
    (one that never got healthy too)."""
    started: list[OperatorProcess] = []

    def start(**env: str) -> OperatorProcess:
        proc = make(started, env)
        proc.log_dir.mkdir(parents=True, exist_ok=True)
        started.append(proc)
        proc.start()
        return proc

    yield start
    for proc in started:
        proc.stop()


@pytest.fixture
def start_operator(
    cluster: Any, crds: Any, namespace: str, tmp_path: Path
) -> Iterator[Callable[..., OperatorProcess]]:
    """Starts operators watching only this test's namespace (RemediationWorkflows are cluster-scoped
    and watched anyway), so analyses other tests left behind never reach this test's LLM server."""
    started: list[OperatorProcess] = []

    def start(**env: str) -> OperatorProcess:
        argv = [sys.executable, "-m", "aianalysis", "run", "--namespace", namespace]
        # The example incidents name their own namespaces and are applied into this test's one.
        env = {"AIANALYSIS_CROSS_NAMESPACE": f"{namespace}=*", **env}
        op = OperatorProcess(kubeconfig=cluster.kubeconfig, log_dir=tmp_path, env=env, argv=argv)
        op.start()
        started.append(op)
        return op

    yield start
    for op in started:
        op.stop()


@pytest.fixture(scope="session")
def example_catalog(cluster: Any, crds: Any) -> list[dict[str, Any]]:
    cluster.kubectl("apply", "-f", str(ROOT / "examples" / "catalog"))
    items: list[dict[str, Any]] = json.loads(cluster.kubectl("get", "rw", "-o", "json").stdout)["items"]
    return items


get = reads.get


def wait_for(
    predicate: Callable[[], Any],
    *,
    timeout: float = 120.0,
    interval: float = 0.5,
    what: str = "condition",
    logs: Callable[[], str] | None = None,
) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}" + (f"\n{logs()}" if logs else ""))


def analyses(cluster: Any, namespace: str) -> list[dict[str, Any]]:
    return reads.listed(cluster, "aianalyses", namespace)


def wait_terminal(
    cluster: Any, namespace: str, count: int, *, timeout: float = 180.0, logs: Callable[[], str] | None = None
) -> list[dict[str, Any]]:
    def done() -> list[dict[str, Any]] | None:
        items = [a for a in analyses(cluster, namespace) if (a.get("status") or {}).get("phase") in TERMINAL]
        return items if len(items) >= count else None

    result: list[dict[str, Any]] = wait_for(
        done, timeout=timeout, what=f"{count} terminal analyses", logs=logs
    )
    return result
