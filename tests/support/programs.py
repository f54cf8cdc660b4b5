"""Real programs the tests run on loopback: a free port for them, and their binaries from the
versioned cache that the ``hack/build-*.sh`` scripts fill (the Makefile passes the cache
directories in ``AIANALYSIS_*_BIN``; a test run outside make builds or reuses them itself)."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cached_binary(name: str, *, env: str, script: str) -> Path:
    """``$env/name``, else the directory ``hack/script`` prints (it builds or unpacks on a miss)."""
    cache = os.environ.get(env)
    if not cache:
        built = subprocess.run(
            [str(ROOT / "hack" / script)], check=True, capture_output=True, text=True, timeout=1800
        )
        cache = built.stdout.strip()
    return Path(cache) / name
