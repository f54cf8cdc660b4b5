"""The operator image, as the Dockerfile describes it, without Docker.

The Dockerfile is the recipe: its builder stage's pip commands make the wheels (``_builder``), its
runtime stage's pip commands install them — with their ``--no-index --no-deps --require-hashes``
flags, in a chroot of the base with no network — into a virtualenv at ``/opt/venv``; its ``useradd``
line gives the user, and its ``USER``, ``WORKDIR``, ``ENV``, ``EXPOSE`` and ``ENTRYPOINT`` the image
config. What differs is the base (``_pybase``: Debian's Python 3.11 instead of ``python:3.11-slim``'s)
and where the virtualenv lives (the slim image installs into its system site-packages).
"""

from __future__ import annotations

import os
import shlex
import shutil
import tomllib
from collections.abc import Callable
from pathlib import Path

from aianalysis_dev import dockerfile, oci
from aianalysis_dev.images import _builder, _cache, _pybase, _sandbox
from aianalysis_dev.images._built import Built

REPOSITORY = "aianalysis.local/aianalysis-operator"
BUILD = "/tmp/build"  # noqa: S108 — inside the build container: its private tmpfs


def operator_image(*, context: Path, log: Callable[[str], None]) -> Built:
    builder, runtime = dockerfile.read(context / "Dockerfile")
    base = _pybase.python_base(log=log)
    wheels = _builder.wheels(context=context, log=log)
    version = tomllib.loads((context / "pyproject.toml").read_text())["project"]["version"]
    name = f"{REPOSITORY}:{version}"
    key = (
        _cache.Key("operator")
        .text("name", name)
        .text("base", base.key)
        .text("wheels", wheels.key)
        .path("Dockerfile", context / "Dockerfile")
        .paths("recipe", [Path(__file__), Path(oci.__file__), Path(dockerfile.__file__)])
        .hexdigest()
    )

    def build(out: Path) -> None:
        with _cache.timed("operator image", log):
            _build(
                out, base=base, wheels=wheels, context=context, runtime=runtime, builder=builder, name=name
            )

    return Built.load(_cache.entry("operator", key, build))


def _build(
    out: Path,
    *,
    base: _pybase.Base,
    wheels: _builder.Wheels,
    context: Path,
    runtime: dockerfile.Stage,
    builder: dockerfile.Stage,
    name: str,
) -> None:
    app = out / "app"
    venv = app / _pybase.VENV.relative_to("/")
    venv.mkdir(parents=True)
    found = out / "wheels"  # one --find-links directory, as the builder's /wheels
    found.mkdir()
    for wheel in wheels.files():
        _link_or_copy(wheel, found / wheel.name)
    binds = {str(_pybase.VENV): _sandbox.Bind(source=venv, read_only=False)}
    paths: dict[str, str] = {}
    for target, (stage, source) in dockerfile.bind_mounts(runtime).items():
        if stage == builder.name and source != _builder.WHEELS:
            raise _cache.ImageBuildError(f"the builder stage makes only {_builder.WHEELS}, not {source}")
        host = found if stage == builder.name else context / source
        paths[target] = f"{BUILD}{target}"
        binds[paths[target]] = _sandbox.Bind(source=host)
    env = {**_pybase.ENV, **runtime.env(), "HOME": BUILD}
    container = _sandbox.Container(rootfs=base.rootfs, binds=binds, env=env, network=False)
    container.run([_pybase.PYTHON, "-m", "venv", "--without-pip", str(_pybase.VENV)], what="venv")
    for argv in dockerfile.pip_commands(runtime):
        command = dockerfile.localize(argv, pip=base.pip(), paths=paths)
        container.run([*command, "--no-compile"], what=" ".join(argv))
    python = f"{_pybase.VENV}/bin/python"
    compile_all = [python, "-m", "compileall", "-q", "-j0", "--invalidation-mode", "unchecked-hash"]
    container.run([*compile_all, f"{_pybase.VENV}/lib"], what="compileall")
    _add_user(runtime, base=base.rootfs, app=app)
    base_layer = oci.tree_layer(base.rootfs, out / "base.tar")
    layer = oci.tree_layer(app, out / "app.tar")
    config = runtime.config()
    digest = oci.write_image(
        out / "image.tar",
        name=name,
        layers=[base_layer, layer],
        config=oci.Config(
            entrypoint=config.entrypoint,
            cmd=config.cmd,
            user=config.user,
            working_dir=config.working_dir,
            env={**_pybase.ENV, **config.env},
            exposed_ports=config.exposed_ports,
        ),
        history=[base.history, f"the Dockerfile's runtime stage: pip install into {_pybase.VENV}; useradd"],
    )
    for scratch in (found, app, base_layer.path, layer.path):  # all in image.tar now
        _cache.remove_tree(scratch)
    Built(path=out / "image.tar", name=name, digest=digest, size=base_layer.size + layer.size).save(out)


def _add_user(runtime: dockerfile.Stage, *, base: Path, app: Path) -> None:
    """The Dockerfile's ``groupadd``/``useradd`` as lines of /etc/group and /etc/passwd."""
    words = next((shlex.split(run) for run in runtime.args("RUN") if "useradd" in run), None)
    if words is None:
        raise _cache.ImageBuildError("the Dockerfile's runtime stage creates no user (useradd)")
    useradd = _options(words[words.index("useradd") + 1 :])
    groupadd = _options(words[words.index("groupadd") + 1 :]) if "groupadd" in words else {}
    user = useradd["name"]
    gid = useradd.get("--gid") or groupadd.get("--gid")
    etc = app / "etc"
    etc.mkdir()
    shutil.copy2(base / "etc/group", etc / "group")
    shutil.copy2(base / "etc/passwd", etc / "passwd")
    with (etc / "group").open("a") as group:
        group.write(f"{groupadd.get('name', user)}:x:{gid}:\n")
    with (etc / "passwd").open("a") as passwd:
        passwd.write(f"{user}:x:{useradd['--uid']}:{gid}::{useradd['--home-dir']}:{useradd['--shell']}\n")


def _options(words: list[str]) -> dict[str, str]:
    """``--opt value`` pairs and the first positional word (``name``) of one command, up to ``&&``."""
    out: dict[str, str] = {}
    flags_without_value = {"--system", "--no-create-home", "-r", "-M"}
    index = 0
    while index < len(words) and words[index] != "&&":
        word = words[index]
        if word.startswith("-") and word not in flags_without_value:
            out[word], index = words[index + 1], index + 2
            continue
        if not word.startswith("-"):
            out.setdefault("name", word)
        index += 1
    return out


def _link_or_copy(source: Path, dest: Path) -> None:
    try:
        os.link(source, dest)
    except OSError:
        shutil.copy2(source, dest)
