"""A command in a root filesystem as a container runtime would start it, without one: its own mount
and PID namespaces (nothing mounted outlives it; the command is PID 1 and gets SIGTERM as in a Pod),
the root read-only (the chart's ``readOnlyRootFilesystem``), ``/tmp`` a small tmpfs (the chart's
``emptyDir``), a numeric user, the image's environment only. Builds use it too: a base tree stays as
it was, whatever a step tries to write, and ``network=False`` proves a step downloads nothing.
Needs root (namespaces, mounts, chroot).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from aianalysis_dev import oci
from aianalysis_dev.images import _cache, _launcher


@dataclasses.dataclass(frozen=True, kw_only=True)
class Bind:
    """A file or directory of this machine seen at a path inside (created there under ``/tmp``;
    elsewhere the image must have the mount point)."""

    source: Path
    read_only: bool = True


@dataclasses.dataclass(frozen=True, kw_only=True)
class Container:
    rootfs: Path
    user: str = "0:0"
    workdir: str = "/"
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    binds: Mapping[str, Bind] = dataclasses.field(default_factory=dict)
    read_only: bool = True
    network: bool = True
    """False: a network namespace of its own (loopback only, and down)."""
    tmp_size: str = "64m"

    @classmethod
    def of_image(
        cls,
        image: oci.Image,
        rootfs: Path,
        *,
        env: Mapping[str, str] | None = None,
        binds: Mapping[str, Bind] | None = None,
        network: bool = True,
    ) -> Container:
        """How a runtime would run ``image`` unpacked in ``rootfs``: its user, working directory and
        environment (``env`` adds to the image's, as a Pod's env does)."""
        runtime = image.runtime
        return cls(
            rootfs=rootfs,
            user=runtime.get("User") or "0:0",
            workdir=runtime.get("WorkingDir") or "/",
            env={**image.env, **(env or {})},
            binds=binds or {},
            network=network,
        )

    def argv(self, command: Sequence[str]) -> list[str]:
        """The command line that runs ``command`` in this container (for ``subprocess.Popen``)."""
        if os.geteuid() != 0:
            raise _cache.ImageBuildError("running a container needs root (mount namespaces, chroot)")
        spec = {
            "root": str(self.rootfs.resolve()),
            "read_only": self.read_only,
            "tmp_size": self.tmp_size,
            "user": self.user if ":" in self.user else f"{self.user}:{self.user}",
            "workdir": self.workdir,
            "env": dict(self.env),
            "argv": list(command),
            "mounts": [[target, str(b.source.resolve()), b.read_only] for target, b in self.binds.items()],
        }
        namespaces = ["--mount", "--propagation", "private", "--pid", "--fork", "--kill-child"]
        if not self.network:
            namespaces.append("--net")
        return ["unshare", *namespaces, sys.executable, "-I", _launcher.__file__, json.dumps(spec)]

    def run(self, command: Sequence[str], *, timeout_s: float = 600.0, what: str = "") -> str:
        """Runs ``command`` to its end; its output, or :class:`ImageBuildError` with it."""
        done = subprocess.run(
            self.argv(command), capture_output=True, text=True, timeout=timeout_s, check=False
        )
        if done.returncode != 0:
            raise _cache.ImageBuildError(
                f"{what or command[0]} failed ({done.returncode}) in {self.rootfs}:\n"
                f"{done.stdout[-3000:]}{done.stderr[-3000:]}"
            )
        return done.stdout
