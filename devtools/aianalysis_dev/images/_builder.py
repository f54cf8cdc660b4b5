"""The Dockerfile's builder stage on this machine: its pip commands, as written, against a throwaway
virtualenv standing in for the builder image's Python. Its outputs are the wheels both ways of
installing the operator use (the Dockerfile's runtime stage in a virtualenv here, the OCI image).

Two cache entries: the locked dependency wheels and the build backend (keyed by the lock files and
the commands), and the project's wheel (keyed by the sources the stage copies).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from aianalysis_dev import dockerfile
from aianalysis_dev.images import _cache

WHEELS = "/wheels"
"""The builder stage's wheel directory (its ``--wheel-dir``)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Wheels:
    key: str
    dependencies: Path
    project: Path

    def files(self) -> list[Path]:
        return sorted([*self.dependencies.glob("*.whl"), *self.project.glob("*.whl")])


def wheels(*, context: Path, log: Callable[[str], None]) -> Wheels:
    builder = dockerfile.read(context / "Dockerfile")[0]
    commands = dockerfile.pip_commands(builder)
    project_commands = [argv for argv in commands if "." in argv]
    dependency_commands = [argv for argv in commands if "." not in argv]
    copied = [context / p for p in dockerfile.copied_paths(builder)]
    locks = [p for p in copied if p.parent.name == "requirements"]
    dependency_key = (
        _cache.Key("wheels")
        .text("python", sys.version)
        .text("commands", json.dumps(dependency_commands))
        .text("env", json.dumps(builder.env(), sort_keys=True))
        .paths("locks", locks)
        .path("recipe", Path(__file__))
        .hexdigest()
    )

    def build_dependencies(out: Path) -> None:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(out / "venv")], check=True)
        with _cache.timed("dependency wheels", log):
            _run_stage(
                builder, dependency_commands, context=context, venv=out / "venv", wheels=out / "wheels"
            )

    dependencies = _cache.entry("wheels", dependency_key, build_dependencies)
    project_key = (
        _cache.Key("project")
        .text("dependencies", dependency_key)
        .text("commands", json.dumps(project_commands))
    )
    for path in copied:
        project_key.path(path.name, path, ignore=_ignored)
    project = _cache.entry(
        "project",
        project_key.hexdigest(),
        lambda out: _run_stage(
            builder, project_commands, context=context, venv=dependencies / "venv", wheels=out / "wheels"
        ),
    )
    return Wheels(
        key=project_key.hexdigest(), dependencies=dependencies / "wheels", project=project / "wheels"
    )


def _ignored(path: Path) -> bool:
    """What .dockerignore keeps out of the build context under the copied directories."""
    return (
        "__pycache__" in path.parts
        or path.suffix == ".pyc"
        or any(p.endswith(".egg-info") for p in path.parts)
    )


def _run_stage(
    builder: dockerfile.Stage, commands: list[list[str]], *, context: Path, venv: Path, wheels: Path
) -> None:
    wheels.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **builder.env()}
    env.pop("PYTHONPATH", None)
    with tempfile.TemporaryDirectory(prefix="aianalysis-builder-") as work:
        dockerfile.copy_context(builder, context=context, workdir=Path(work))
        for argv in commands:
            local = dockerfile.localize(
                argv, pip=dockerfile.host_pip(venv / "bin" / "python"), paths={WHEELS: wheels}
            )
            done = subprocess.run(local, cwd=work, env=env, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                output = f"{done.stdout[-3000:]}{done.stderr[-3000:]}"
                raise _cache.ImageBuildError(f"{' '.join(local)} failed ({done.returncode}):\n{output}")
