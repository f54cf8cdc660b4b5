"""The operator image's base: Debian with Python 3 (what ``python:3.11-slim`` is, built here by
debootstrap), trimmed, its standard library compiled reproducibly. Cached as a tree: the image build
chroots into it (read-only) and writes it as a layer.

Its cache key is the recipe (this module, and the Debian helpers that make and trim the tree) and the
versions apt would install of the packages it names, so an ``apt-get update`` that brings a new
Python rebuilds it.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from aianalysis_dev.images import _cache, _debian, _sandbox

PACKAGES = ("python3-minimal", "python3-venv", "ca-certificates", "netbase", "tzdata")
"""Python with its whole standard library, ``venv`` and the pip wheel it bundles; the rest is what
``python:3.11-slim`` adds to Debian (CA certificates, /etc/services, time zones)."""
VENV = PurePosixPath("/opt/venv")
"""An empty directory of the base: the application layer's virtualenv goes there."""
PATH = f"{VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
ENV = {"PATH": PATH, "LANG": "C.UTF-8"}
"""The environment the base gives every image built on it (as ``python:*-slim`` sets PATH and LANG)."""
PYTHON = "/usr/bin/python3"
STDLIB = "/usr/lib/python3.11"


@dataclasses.dataclass(frozen=True, kw_only=True)
class Base:
    key: str
    rootfs: Path
    history: str

    def pip(self) -> list[str]:
        """The pip the base bundles, run from its wheel by a Python of the image (pip itself is never
        installed in the image's virtualenv)."""
        [wheel] = (self.rootfs / "usr/share/python-wheels").glob("pip-*.whl")
        return [f"{VENV}/bin/python", f"/{wheel.relative_to(self.rootfs)}/pip"]


def python_base(*, log: Callable[[str], None]) -> Base:
    versions = _debian.candidate_versions(["debootstrap", *PACKAGES])
    key = (
        _cache.Key("python-base")
        .text("suite", _debian.SUITE)
        .text("versions", json.dumps(versions, sort_keys=True))
        .path("recipe", Path(__file__))
        # of the Debian helpers, what shapes the tree (not how versions are looked up, say)
        .text("debootstrap", inspect.getsource(_debian.debootstrap))
        .text("trim", inspect.getsource(_debian.trim))
        .hexdigest()
    )
    tools = _cache.root() / f"debootstrap-{versions['debootstrap']}"
    entry = _cache.entry("python-base", key, lambda out: _build(out, tools=tools, log=log))
    return Base(
        key=key,
        rootfs=entry / "rootfs",
        history=f"debootstrap --variant=minbase --include={','.join(PACKAGES)} {_debian.SUITE}; trimmed",
    )


def _build(out: Path, *, tools: Path, log: Callable[[str], None]) -> None:
    rootfs = out / "rootfs"
    with _cache.timed("debootstrap", log):
        _debian.debootstrap(rootfs, include=PACKAGES, tools=tools, log=out / "debootstrap.log")
    _debian.trim(rootfs)
    (rootfs / VENV.relative_to("/")).mkdir(parents=True)
    # Byte code with the source's hash instead of its mtime: the same bytes on every build, and valid
    # with the layer's fixed mtimes. Never checked against the source: an image does not change.
    compile_all = [PYTHON, "-m", "compileall", "-q", "-j0", "--invalidation-mode", "unchecked-hash", STDLIB]
    _sandbox.Container(rootfs=rootfs, read_only=False, network=False).run(compile_all, what="compileall")
