"""Real programs the tests run on loopback: a free port for them, and their binaries from the
versioned cache that the ``hack/build-*.sh`` scripts fill (the Makefile passes the cache
directories in ``AIANALYSIS_*_BIN``; a test run outside make builds or reuses them itself)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from aianalysis_dev import devcluster

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """A loopback port free now and outside the range outgoing connections take theirs from."""
    (port,) = devcluster.free_ports(1)
    return port


def cached_binary(name: str, *, env: str, script: str) -> Path:
    """``$env/name``, else the directory ``hack/script`` prints (it builds or unpacks on a miss)."""
    cache = os.environ.get(env)
    if not cache:
        built = subprocess.run(
            [str(ROOT / "hack" / script)], check=True, capture_output=True, text=True, timeout=1800
        )
        cache = built.stdout.strip()
    return Path(cache) / name


class Program:
    """A real program on a loopback port, in its own process group: started with ``argv`` and
    ready when ``ready_path`` answers 200; ``stop`` ends the whole group; ``logs`` is its output."""

    name = "program"
    ready_path = "/-/ready"

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.log_file = workdir / f"{self.name}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def launch(self, argv: list[str], timeout: float) -> None:
        with self.log_file.open("wb") as sink:
            self.proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
        self.wait(
            lambda: httpx.get(f"{self.url}{self.ready_path}", timeout=2).status_code == 200, timeout, "ready"
        )

    def wait(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"{self.name} exited {self.proc.returncode}:\n{self.logs()}")
            with contextlib.suppress(httpx.HTTPError):
                if condition():
                    return
            time.sleep(0.2)
        raise AssertionError(f"{self.name} not {what} after {timeout}s:\n{self.logs()}")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def logs(self) -> str:
        return self.log_file.read_text(errors="replace")[-6000:] if self.log_file.exists() else ""
