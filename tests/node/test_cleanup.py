"""A node is gone from the machine after Ctrl-C, and a node whose Python was killed outright (its
shims and containers outlive it) is swept by the next start. These tests start nodes of their own,
in other processes, before the package's ``node_cluster`` (see ``conftest.py``); what the sweep
leaves, the package fixture's teardown checks once more after the last test."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import nodes

PARENT = Path(tempfile.gettempdir())
RUN_A_POD = """
import faulthandler, signal, sys, time
from aianalysis_dev import devcluster

faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)  # where it hangs, if it does
# Ctrl-C as in a person's terminal: a suite started in the background by a non-interactive shell
# (`make test &`) hands its children SIGINT ignored, and Python then keeps it ignored.
signal.signal(signal.SIGINT, signal.default_int_handler)

cluster = devcluster.NodeCluster().start()
run = ["run", "sleeper", "--image=aianalysis.local/pause:1", "--image-pull-policy=Never", "--restart=Never"]
deadline = time.monotonic() + 60  # the namespace's ServiceAccount comes a moment after the start
while cluster.kubectl(*run, check=False).returncode != 0 and time.monotonic() < deadline:
    time.sleep(0.2)
cluster.kubectl("wait", "--for=condition=Ready", "pod/sleeper", "--timeout=90s")
print("READY", cluster.data_dir, flush=True)
while True:  # short sleeps: a SIGINT landing just before one long sleep would wait for its end
    time.sleep(1)
"""


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[str]]]:
    """The node processes a test starts; one still running when the test ends (it failed or timed
    out) is killed, or it would hold the machine's one node for the tests after it."""
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # its cleanup, then KeyboardInterrupt
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def start_a_node_with_a_pod(
    started: list[subprocess.Popen[str]], stderr: Path
) -> tuple[subprocess.Popen[str], Path]:
    with stderr.open("w") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-c", RUN_A_POD], stdout=subprocess.PIPE, stderr=sink, text=True
        )
    started.append(proc)
    assert proc.stdout is not None
    line = proc.stdout.readline()  # the script prints one line once the Pod runs, or dies
    if not line.startswith("READY "):
        proc.kill()
        raise AssertionError(
            f"the node did not start (exit {proc.wait()}): {line!r}\n{stderr.read_text()[-4000:]}"
        )
    return proc, Path(line.split()[1])


def exit_code(proc: subprocess.Popen[str], stderr: Path, *, timeout: float) -> int:
    """Its exit code; past ``timeout`` the assertion shows where every thread of it stands."""
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)  # faulthandler: every thread's stack to its stderr
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=2)  # nothing to wait for but the dump being written
        raise AssertionError(
            f"still running {timeout:.0f}s after Ctrl-C:\n{stderr.read_text()[-6000:]}"
        ) from None


def container_pids() -> list[int]:
    pids = []
    for procs in Path("/sys/fs/cgroup/memory/aianalysis-node").rglob("cgroup.procs"):
        pids += [int(pid) for pid in procs.read_text().split()]
    return pids


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_ctrl_c_stops_the_node_and_leaves_nothing(
    started: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    proc, _ = start_a_node_with_a_pod(started, tmp_path / "stderr")
    running = container_pids()
    assert running, "the Pod's processes should be in the node's cgroups"
    proc.send_signal(signal.SIGINT)
    assert exit_code(proc, tmp_path / "stderr", timeout=60) != 0  # KeyboardInterrupt, after the cleanup
    assert nodes.leftovers(PARENT) == []
    assert not [pid for pid in running if alive(pid)]


def test_a_killed_run_is_swept_by_the_next_start(
    request: pytest.FixtureRequest, started: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    """The next start is the package's ``node_cluster``, asked for only once the run is killed."""
    proc, directory = start_a_node_with_a_pod(started, tmp_path / "stderr")
    running = container_pids()
    proc.kill()  # no cleanup at all: the daemons die with it (parent-death signal), shims and Pods not
    proc.wait(timeout=30)
    left = nodes.leftovers(PARENT)
    assert {f"dir {directory}", "link aianode0", "/run/containerd"} <= set(left)
    assert [pid for pid in running if alive(pid)] == running  # the Pod outlived its node
    request.getfixturevalue("node_cluster")
    assert not directory.exists()
    assert not [pid for pid in running if alive(pid)]
