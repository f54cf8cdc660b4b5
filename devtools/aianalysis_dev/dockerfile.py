"""The repository's Dockerfile, read the way docker reads it (the subset it uses), so that what is
built without Docker follows the same instructions: the builder stage's ``COPY`` and pip commands,
the runtime stage's pip commands, ``ENV``, ``USER``, ``WORKDIR``, ``EXPOSE`` and ``ENTRYPOINT``.
``tests/integration/test_packaging.py`` and :mod:`aianalysis_dev.images` both use it; a change to the
Dockerfile reaches both, and the two ways of building cannot drift apart.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

from aianalysis_dev import oci


@dataclasses.dataclass
class Stage:
    base: str
    name: str | None
    steps: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (INSTRUCTION, arguments)

    def args(self, instruction: str) -> list[str]:
        return [rest for op, rest in self.steps if op == instruction]

    def env(self) -> dict[str, str]:
        return {k: v for line in self.args("ENV") for k, v in (kv.split("=", 1) for kv in shlex.split(line))}

    def config(self) -> oci.Config:
        """The image config this stage's last ``USER``/``WORKDIR``/``EXPOSE``/``ENTRYPOINT``/``CMD`` and
        its ``ENV`` give (without what the base image sets: a builder adds those)."""

        def last(instruction: str) -> str:
            found = self.args(instruction)
            return found[-1] if found else ""

        return oci.Config(
            entrypoint=json.loads(last("ENTRYPOINT") or "[]"),
            cmd=json.loads(last("CMD") or "[]"),
            user=last("USER"),
            working_dir=last("WORKDIR"),
            env=self.env(),
            exposed_ports=[port for line in self.args("EXPOSE") for port in line.split()],
        )


def stages(text: str) -> list[Stage]:
    logical = re.sub(
        r"\\\n", " ", "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#"))
    )
    global_args: dict[str, str] = {}
    found: list[Stage] = []
    for line in filter(None, (ln.strip() for ln in logical.splitlines())):
        op, _, rest = line.partition(" ")
        op, rest = op.upper(), rest.strip()
        if op == "ARG" and not found:
            key, _, default = rest.partition("=")
            global_args[key] = default
        elif op == "FROM":
            words = rest.split()
            base = re.sub(r"\$\{(\w+)\}", lambda m: global_args[m.group(1)], words[0])
            found.append(Stage(base=base, name=words[2] if len(words) == 3 else None))
        else:
            found[-1].steps.append((op, rest))
    return found


def read(path: Path) -> list[Stage]:
    return stages(path.read_text())


def pip_commands(stage: Stage) -> list[list[str]]:
    """The stage's ``python -m pip ...`` RUN commands as argv, BuildKit ``--mount`` flags removed."""
    commands = []
    for run in stage.args("RUN"):
        argv = [word for word in shlex.split(run) if not word.startswith("--mount=")]
        if argv[:3] == ["python", "-m", "pip"]:
            commands.append(argv)
    return commands


def bind_mounts(stage: Stage) -> dict[str, tuple[str | None, str]]:
    """Every ``RUN --mount=type=bind`` of the stage: target → (the stage it comes from, or None for
    the build context; source path)."""
    mounts: dict[str, tuple[str | None, str]] = {}
    for run in stage.args("RUN"):
        for word in shlex.split(run):
            if word.startswith("--mount="):
                fields = dict(item.split("=", 1) for item in word.removeprefix("--mount=").split(","))
                if fields.get("type") == "bind":
                    mounts[fields["target"]] = (fields.get("from"), fields["source"])
    return mounts


def localize(argv: list[str], *, pip: list[str], paths: Mapping[str, Path | str]) -> list[str]:
    """A Dockerfile ``python -m pip ...`` command run by ``pip`` (the argv that starts pip here), image
    paths mapped to the given ones."""
    out = list(pip)
    for word in argv[3:]:
        local = word
        for image_path, path in paths.items():
            if local == image_path or local.endswith(f"={image_path}"):
                local = local.removesuffix(image_path) + str(path)
        out.append(local)
    return out


def host_pip(python: Path) -> list[str]:
    """This interpreter's pip, acting on the environment of ``python`` (a virtualenv made without
    pip, which is quicker)."""
    return [sys.executable, "-m", "pip", "--python", str(python)]


def copy_context(stage: Stage, *, context: Path, workdir: Path) -> None:
    """The stage's ``COPY`` lines from the build context (minus what .dockerignore drops). As in
    docker, a directory's contents land in the destination."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for line in stage.args("COPY"):
        *sources, dest = shlex.split(line)
        target = workdir / dest
        for source in sources:
            src = context / source
            if src.is_dir():
                shutil.copytree(src, target, ignore=ignore, dirs_exist_ok=True)
            else:
                target.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, target / src.name)


def copied_paths(stage: Stage) -> list[str]:
    """The build-context paths the stage's ``COPY`` lines name."""
    return [source for line in stage.args("COPY") for source in shlex.split(line)[:-1]]
