"""The image cache: ``~/.cache/aianalysis-operator/images/<kind>-<key>/``, one entry per hash of what
went into it, built once (under a lock: parallel test workers and engineers share the cache) and
published by a rename, so an entry that exists is complete."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

KEY_LENGTH = 20
KEEP_PER_KIND = 2
"""Entries of one kind kept besides the one just used (other worktrees build other sources)."""
_DONE = ".complete"


class ImageBuildError(Exception):
    """A step of an image build failed; the message says which and shows its output."""


def root() -> Path:
    if explicit := os.environ.get("AIANALYSIS_IMAGE_CACHE"):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "aianalysis-operator" / "images"


class Key:
    """A sha256 over labelled inputs: texts, and files or directory trees by their content."""

    def __init__(self, kind: str) -> None:
        self._hash = hashlib.sha256(kind.encode())

    def text(self, label: str, value: str) -> Key:
        self._field(label, value.encode())
        return self

    def path(self, label: str, path: Path, *, ignore: Callable[[Path], bool] = lambda _p: False) -> Key:
        """A file's content, or every file under a directory (relative name and content, sorted)."""
        if path.is_file():
            self._field(label, _file_digest(path))
            return self
        for file in sorted(p for p in path.rglob("*") if p.is_file() and not ignore(p)):
            self._field(f"{label}/{file.relative_to(path).as_posix()}", _file_digest(file))
        return self

    def paths(self, label: str, paths: Iterable[Path]) -> Key:
        for path in paths:
            self.path(f"{label}:{path.name}", path)
        return self

    def hexdigest(self) -> str:
        return self._hash.hexdigest()[:KEY_LENGTH]

    def _field(self, label: str, value: bytes) -> None:
        for part in (label.encode(), value):
            self._hash.update(len(part).to_bytes(8, "big"))
            self._hash.update(part)


def _file_digest(path: Path) -> bytes:
    with path.open("rb") as file:
        return hashlib.file_digest(file, "sha256").digest()


def entry(kind: str, key: str, build: Callable[[Path], None]) -> Path:
    """The cache entry ``kind-key``: reused when it exists, else made by ``build(directory)`` and
    published whole. Older entries of the kind beyond :data:`KEEP_PER_KIND` are removed."""
    directory = root()
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / f"{kind}-{key}"
    with _locked(directory / f".{kind}-{key}.lock"):
        if (final / _DONE).exists():
            os.utime(final)  # recently used: pruning keeps it
            return final
        partial = directory / f".{kind}-{key}.partial"
        remove_tree(partial)
        partial.mkdir()
        build(partial)
        (partial / _DONE).write_text(key + "\n")
        remove_tree(final)
        partial.rename(final)
    _prune(directory, kind=kind, keep=final)
    return final


def remove_tree(path: Path) -> None:
    """``rm -rf`` that refuses a tree with something mounted inside: a bind mount left behind by a
    crash would otherwise take the mounted files (the host's /dev, a source tree) with it."""
    if not path.exists() and not path.is_symlink():
        return
    resolved = str(path.resolve())
    mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    if busy := [m for m in mounts if m == resolved or m.startswith(resolved + "/")]:
        raise ImageBuildError(f"{path} has mounts inside ({', '.join(busy)}); unmount them first")
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def _prune(directory: Path, *, kind: str, keep: Path) -> None:
    others = sorted(
        (p for p in directory.glob(f"{kind}-*") if p != keep and (p / _DONE).exists()),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    for old in others[KEEP_PER_KIND:]:
        with contextlib.suppress(BlockingIOError), _locked(directory / f".{old.name}.lock", wait=False):
            remove_tree(old)  # (its lock file stays: someone may be waiting on it)


@contextlib.contextmanager
def _locked(path: Path, *, wait: bool = True) -> Iterator[None]:
    with path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def timed(step: str, log: Callable[[str], None]) -> contextlib.AbstractContextManager[None]:
    """Logs how long ``step`` took."""

    @contextlib.contextmanager
    def timer() -> Iterator[None]:
        started = time.monotonic()
        yield
        log(f"{step}: {time.monotonic() - started:.1f}s")

    return timer()
