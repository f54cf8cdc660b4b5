"""Child processes that must not outlive the Python process that started them.

Each child runs in its own process group (so a terminal's Ctrl-C reaches only Python, which then
tears down in order) and, when ``setpriv`` exists, with a parent-death signal (so even a SIGKILLed
pytest leaves no process behind). Live clusters are stopped at exit and on SIGINT/SIGTERM. The data
directory of an owner that died anyway is found by its free lock and swept by the next start.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import fcntl
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import IO, Any

Stopper = Callable[[], None]
_Handler = Callable[[int, FrameType | None], Any] | int | None


@dataclasses.dataclass
class _Registry:
    stoppers: list[Stopper] = dataclasses.field(default_factory=list)
    atexit_installed: bool = False
    signals_installed: bool = False


_registry = _Registry()
_LOCK_NAME = ".owner.lock"


def spawn(argv: Sequence[str], *, log: Path, env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Start ``argv`` in a new session with stdout+stderr appended to ``log`` (environment: ours,
    or exactly ``env``)."""
    with log.open("ab") as out:
        return subprocess.Popen(
            [*_pdeathsig_prefix(), *argv],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )


def _pdeathsig_prefix() -> list[str]:
    # The parent-death signal fires when the *thread* that forked exits: only safe from the main thread.
    setpriv = shutil.which("setpriv")
    if setpriv is None or threading.current_thread() is not threading.main_thread():
        return []
    return [setpriv, "--pdeathsig", "KILL", "--"]


def terminate(proc: subprocess.Popen[bytes], *, grace_s: float) -> None:
    """SIGTERM the process group, SIGKILL it after ``grace_s``. Safe to call again, also re-entrantly
    from a signal handler (every wait has a timeout, so Popen's wait lock cannot deadlock)."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        if proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=wait_s)


def register(stopper: Stopper) -> None:
    """Run ``stopper`` at interpreter exit and on SIGINT/SIGTERM, until ``unregister``ed."""
    _registry.stoppers.append(stopper)
    if not _registry.atexit_installed:
        atexit.register(stop_all)
        _registry.atexit_installed = True
    if not _registry.signals_installed and threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            _chain_handler(signum)
        _registry.signals_installed = True


def unregister(stopper: Stopper) -> None:
    with contextlib.suppress(ValueError):
        _registry.stoppers.remove(stopper)


def stop_all() -> None:
    for stopper in reversed(list(_registry.stoppers)):
        stopper()


def _chain_handler(signum: int) -> None:
    previous: _Handler = signal.getsignal(signum)
    if previous == signal.SIG_IGN:
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        stop_all()
        if callable(previous):
            previous(signum, frame)  # SIGINT: KeyboardInterrupt as usual, after the cleanup
        else:  # default action: die of the same signal, now that nothing is left behind
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

    signal.signal(signum, handler)


def claim(directory: Path) -> IO[str]:
    """Lock ``directory`` for as long as the returned file stays open; the kernel releases the lock
    when this process dies, however it dies."""
    lock = (directory / _LOCK_NAME).open("w")
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return lock


def sweep(parent: Path, *, prefix: str, min_age_s: float = 60.0) -> None:
    """Delete ``parent/prefix*`` directories whose owner died without cleaning up (SIGKILL, OOM), and
    kill any process still using one. ``min_age_s`` spares a directory whose owner is just starting."""
    for directory in parent.glob(f"{prefix}*"):
        lock_path = directory / _LOCK_NAME
        try:
            if time.time() - lock_path.stat().st_mtime < min_age_s:
                continue
            with lock_path.open("a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                for pid in pids_mentioning(directory):
                    os.kill(pid, signal.SIGKILL)
                shutil.rmtree(directory, ignore_errors=True)
        except OSError:  # no lock file, lock held by a live owner, or the process already gone
            continue


def pids_mentioning(path: Path) -> list[int]:
    """Processes whose command line contains ``path`` (our data dirs are in every child's flags)."""
    needle, pids = str(path).encode(), []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):  # exited while we looked
            if needle in cmdline.read_bytes():
                pids.append(int(cmdline.parent.name))
    return pids
