"""What ships (1 of 2): the operator's container image, built two ways from the Dockerfile.

No Docker engine exists here. The Dockerfile is followed by its own commands instead, both ways
starting from the wheels its builder stage's pip commands make (``aianalysis_dev.images``):

* **the Dockerfile's path**: its runtime stage's pip commands install them into a virtualenv here;
* **the OCI image** a node imports (``images.operator_image()``): the same commands install them into
  ``/opt/venv`` of a Debian root filesystem, written as an OCI image-layout tar whose config carries
  the Dockerfile's ENTRYPOINT, USER, WORKDIR, ENV and EXPOSE. It is unpacked and run as a runtime
  would: its user, its environment, a read-only root filesystem with a tmpfs on /tmp (the chart's
  ``readOnlyRootFilesystem`` and ``emptyDir``), its own PID namespace (SIGTERM reaches PID 1).

Both must hold exactly the locked distributions and start the same entrypoint, which analyses an
incident against the session's kube-apiserver and stops cleanly on SIGTERM. (Building the OCI image
needs root: debootstrap, chroot, mount namespaces.)
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import packaging.markers
import pytest
import yaml

import aianalysis
from aianalysis import settings
from aianalysis_dev import devcluster, dockerfile, images, in_a_pod, oci
from tests.e2e.conftest import OperatorProcess, wait_terminal

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "aianalysis-operator"
#: A cold build (wheels, debootstrap, the image) takes minutes on a busy 2-core machine; warm, seconds.
IMAGE_BUILD_TIMEOUT = pytest.mark.timeout(900)
#: What runs in the image on import: the operator's processes and their handlers.
ENTRY_MODULES = (
    "aianalysis.cli", "aianalysis.controller.handlers", "aianalysis.executor.handlers",
    "aianalysis.intake.server", "aianalysis.mcp.server",
)  # fmt: skip


def run(argv: list[str], *, cwd: Path | None = None) -> str:
    result = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise AssertionError(
            f"{' '.join(argv)} failed ({result.returncode}):\n{result.stdout}{result.stderr}"
        )
    return result.stdout


@pytest.fixture(scope="module")
def stages() -> list[dockerfile.Stage]:
    return dockerfile.read(ROOT / "Dockerfile")


# ---- the Dockerfile, read ----------------------------------------------------------------------


def test_image_runs_as_a_fixed_non_root_user_on_python_311_slim_pinned_by_digest(
    stages: list[dockerfile.Stage],
) -> None:
    builder, runtime = stages
    assert builder.name == "builder" and builder.base == runtime.base
    assert re.fullmatch(r"python:3\.11\.\d+-slim@sha256:[0-9a-f]{64}", builder.base), "a tag alone floats"
    user = runtime.args("USER")[-1]
    assert re.fullmatch(r"\d+:\d+", user), "a numeric uid lets the kubelet verify runAsNonRoot"
    assert user == "65532:65532"
    chart_pod = yaml.safe_load((CHART / "values.yaml").read_text())["podSecurityContext"]
    assert user == f"{chart_pod['runAsUser']}:{chart_pod['runAsGroup']}", "the chart runs the image's user"
    # the runtime stage gets wheels only: no sources copied in, no package manager installs a compiler
    assert runtime.args("COPY") == []
    assert not any(re.search(r"apt-get|apk |gcc|build-essential", run) for run in runtime.args("RUN"))
    assert any("--mount=type=bind,from=builder,source=/wheels" in run for run in runtime.args("RUN"))


def test_image_installs_only_what_the_lock_names(stages: list[dockerfile.Stage]) -> None:
    """Every pip command that may reach the package index checks hashes against the lock; the others
    install from the builder's wheels only, without resolving dependencies."""
    builder, runtime = stages
    for argv in dockerfile.pip_commands(builder) + dockerfile.pip_commands(runtime):
        if "--no-index" in argv:
            assert "--no-deps" in argv, argv
        elif argv[3] in ("install", "wheel") and "." not in argv:
            assert "--require-hashes" in argv and "--no-deps" in argv, argv
            assert argv[argv.index("-r") + 1].startswith("requirements/"), argv
        else:  # the project itself: from the copied sources, with the locked build backend
            assert argv[3:] == ["wheel", "--no-build-isolation", "--no-deps", "--wheel-dir", "/wheels", "."]
    assert {"requirements/operator.txt", "requirements/image-build.txt"} <= set(
        dockerfile.copied_paths(builder)
    )


def test_image_ports_and_entrypoint_match_the_operator_and_the_chart(stages: list[dockerfile.Stage]) -> None:
    config = stages[-1].config()
    assert list(config.entrypoint) == ["aianalysis", "run"]
    exposed = {int(port) for port in config.exposed_ports}
    defaults = settings.Settings()
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert exposed == {defaults.observability.metrics_port, defaults.observability.health_port}
    assert exposed == {values["metrics"]["port"], values["health"]["port"]}


# ---- the two builds -----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class Installed:
    """One way of installing the operator: where its entrypoint is looked up, and how a command runs
    there (``python``, ``aianalysis`` from the installation's PATH)."""

    kind: str
    venv: str
    """The virtualenv the installation runs, as its own processes see it."""
    container: images.Container | None = None
    cwd: Path | None = None

    def argv(self, command: list[str], *, binds: Mapping[str, images.Bind] | None = None) -> list[str]:
        if self.container is None:
            return [str(Path(self.venv) / "bin" / command[0]), *command[1:]]
        container = dataclasses.replace(self.container, binds={**self.container.binds, **(binds or {})})
        return container.argv(command)

    def run(self, *command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        argv = self.argv(list(command))
        result = subprocess.run(argv, cwd=self.cwd, env=env, capture_output=True, text=True, check=False)
        assert not check or result.returncode == 0, f"{command} failed:\n{result.stdout}{result.stderr}"
        return result


@pytest.fixture(scope="module")
def builder_wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The builder stage's output (``/wheels``): the locked dependencies and the operator's wheel."""
    found = tmp_path_factory.mktemp("wheels")
    for wheel in images.builder_wheels():
        (found / wheel.name).symlink_to(wheel)
    return found


@pytest.fixture(scope="module")
def dockerfile_install(
    stages: list[dockerfile.Stage], builder_wheels: Path, tmp_path_factory: pytest.TempPathFactory
) -> Installed:
    """The runtime stage's pip commands into a fresh virtualenv, its bind mounts mapped to the
    builder's wheels and the build context."""
    builder, runtime = stages
    tmp = tmp_path_factory.mktemp("image")
    venv = tmp / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    paths = {
        target: builder_wheels if stage == builder.name else ROOT / source
        for target, (stage, source) in dockerfile.bind_mounts(runtime).items()
    }
    for command in dockerfile.pip_commands(runtime):
        run(dockerfile.localize(command, pip=dockerfile.host_pip(venv / "bin" / "python"), paths=paths))
    (tmp / "elsewhere").mkdir()  # run from outside the source tree
    return Installed(kind="dockerfile", venv=str(venv), cwd=tmp / "elsewhere")


@pytest.fixture(scope="module")
def operator_image() -> images.Built:
    return images.operator_image()


@pytest.fixture(scope="module")
def unpacked(
    operator_image: images.Built, tmp_path_factory: pytest.TempPathFactory
) -> tuple[oci.Image, Path]:
    rootfs = tmp_path_factory.mktemp("rootfs")
    return oci.unpack(operator_image.path, rootfs), rootfs


@pytest.fixture(scope="module")
def oci_install(unpacked: tuple[oci.Image, Path]) -> Installed:
    image, rootfs = unpacked
    return Installed(kind="oci", venv="/opt/venv", container=images.Container.of_image(image, rootfs))


@pytest.fixture(scope="module", params=["dockerfile", "oci"])
def installed(request: pytest.FixtureRequest) -> Installed:
    """Each way in turn: the assertions below hold for both."""
    fixture: Installed = request.getfixturevalue(f"{request.param}_install")
    return fixture


def locked(requirements: Path) -> dict[str, str]:
    """name -> version of the lock's entries whose environment markers hold here."""
    pins = re.findall(r"^([A-Za-z0-9._-]+)==([^ ;\\]+)(?: ; ([^\\]*))?", requirements.read_text(), flags=re.M)
    return {
        canonical(name): version
        for name, version, marker in pins
        if not marker or packaging.markers.Marker(marker.strip()).evaluate()
    }


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


DISTRIBUTIONS = (
    "import importlib.metadata as m, json, sys; "
    "print(json.dumps(sorted({(d.metadata['Name'], d.version) for d in m.distributions()})))"
)


def distributions(installed: Installed) -> dict[str, str]:
    listed = json.loads(installed.run("python", "-c", DISTRIBUTIONS).stdout)
    return {canonical(name): version for name, version in listed}


@IMAGE_BUILD_TIMEOUT
def test_image_holds_the_locked_distributions_and_no_dev_tooling(installed: Installed) -> None:
    found = distributions(installed)
    expected = locked(ROOT / "requirements" / "operator.txt")
    expected["aianalysis-operator"] = aianalysis.__version__
    assert found == expected  # no pip, setuptools or wheel either: the virtualenv holds the operator only
    listing = installed.run(
        "python", "-c",
        "import importlib.util, pathlib, aianalysis; "
        "print(importlib.util.find_spec('aianalysis_dev') is None); "
        "print(*sorted(p.relative_to(pathlib.Path(aianalysis.__file__).parent).as_posix() "
        "for p in pathlib.Path(aianalysis.__file__).parent.rglob('*.py')), sep=chr(10))",
    ).stdout.split()  # fmt: skip
    assert listing[0] == "True", "the development package must not be in the image"
    modules = listing[1:]
    assert "controller/handlers.py" in modules and "cli.py" in modules
    assert not [m for m in modules if re.match(r"(devcluster|demo)\b", m)], modules
    assert not {"pytest", "mypy", "ruff", "import-linter", "deptry", "httpx", "matplotlib"} & found.keys()
    # The operator talks to the API server itself (kube/rest.py): the typed client is a dev tool.
    assert "kubernetes" not in found


@IMAGE_BUILD_TIMEOUT
def test_both_ways_install_the_same_distributions(
    dockerfile_install: Installed, oci_install: Installed
) -> None:
    assert distributions(oci_install) == distributions(dockerfile_install)


@IMAGE_BUILD_TIMEOUT
def test_image_config_is_the_dockerfiles(
    stages: list[dockerfile.Stage], operator_image: images.Built, unpacked: tuple[oci.Image, Path]
) -> None:
    image, rootfs = unpacked
    wanted = stages[-1].config()
    config = image.runtime
    assert (image.name, image.digest) == (operator_image.name, operator_image.digest)
    assert image.name == f"aianalysis.local/aianalysis-operator:{aianalysis.__version__}"
    assert config["Entrypoint"] == list(wanted.entrypoint) and "Cmd" not in config
    assert config["User"] == wanted.user == "65532:65532"
    assert config["WorkingDir"] == wanted.working_dir
    assert wanted.env.items() <= image.env.items()
    assert set(config["ExposedPorts"]) == {f"{port}/tcp" for port in wanted.exposed_ports}
    # the user exists in the image (as the Dockerfile's useradd makes it), without a home or a shell
    uid, gid = wanted.user.split(":")
    passwd = {
        line.split(":")[2]: line.split(":") for line in (rootfs / "etc/passwd").read_text().splitlines()
    }
    assert passwd[uid][3] == gid and passwd[uid][5:] == ["/nonexistent", "/usr/sbin/nologin"]
    assert f":{gid}:" in (rootfs / "etc/group").read_text()


@IMAGE_BUILD_TIMEOUT
def test_image_runs_its_entrypoint_as_its_user_on_a_read_only_root(oci_install: Installed) -> None:
    entrypoint = oci_install.run("sh", "-c", "command -v aianalysis; id -u; id -g; pwd").stdout.split()
    assert entrypoint == ["/opt/venv/bin/aianalysis", "65532", "65532", "/tmp"]
    assert oci_install.run("aianalysis", "--version").stdout.strip() == f"aianalysis {aianalysis.__version__}"
    imports = oci_install.run("python", "-c", f"import {', '.join(ENTRY_MODULES)}; print('ok')")
    assert imports.stdout.strip() == "ok" and imports.stderr == ""
    denied = oci_install.run("sh", "-c", "touch /opt/venv/x", check=False)
    assert denied.returncode != 0 and "Read-only file system" in denied.stderr
    assert oci_install.run("sh", "-c", "touch /tmp/x && echo written").stdout.strip() == "written"


@IMAGE_BUILD_TIMEOUT
def test_image_build_is_cached_by_its_inputs(operator_image: images.Built) -> None:
    started = time.monotonic()
    again = images.operator_image()
    assert (again.path, again.digest) == (operator_image.path, operator_image.digest)
    assert time.monotonic() - started < 60, "an unchanged image is reused, not rebuilt"


@IMAGE_BUILD_TIMEOUT
def test_demo_in_the_image_says_it_needs_the_dev_package(installed: Installed) -> None:
    result = installed.run("aianalysis", "demo", check=False)
    assert result.returncode == 2
    assert "needs the development tooling (the aianalysis-dev package" in result.stderr
    assert "Traceback" not in result.stderr


@IMAGE_BUILD_TIMEOUT
def test_entrypoint_from_the_installed_wheel_analyses_an_incident_and_stops_on_sigterm(
    stages: list[dockerfile.Stage],
    installed: Installed,
    cluster: devcluster.Cluster,
    crds: Any,
    namespace: str,
    tmp_path: Path,
) -> None:
    where = installed.run("python", "-c", "import aianalysis; print(aianalysis.__file__)").stdout
    assert where.startswith(f"{installed.venv}/lib"), "the venv must run the wheel, not the source tree"

    cluster.kubectl(
        "apply", "--server-side", "--force-conflicts", "--field-manager=packaging-test",
        "-f", str(ROOT / "examples" / "catalog"),
    )  # fmt: skip
    runtime = stages[-1].config()
    # as the chart runs it with watchNamespaces: other tests' analyses are not this one's business
    entrypoint = [*runtime.entrypoint, f"--namespace={namespace}"]
    assert entrypoint[0] == "aianalysis"  # the console script: aianalysis.cli:main, as the launcher calls it
    # As in a Pod: the service account's token, CA and namespace (the image has no kubeconfig loader).
    mount = in_a_pod.mount(cluster, tmp_path / "serviceaccount", namespace=namespace)
    operator = OperatorProcess(
        kubeconfig=cluster.kubeconfig,
        log_dir=tmp_path,
        env={**runtime.env, **in_a_pod.environment(cluster), "AIANALYSIS_PROVIDER": "offline"},
        argv=in_a_pod.argv(Path(installed.venv) / "bin" / "python", mount, *entrypoint[1:]),
    )
    operator.env.pop("PYTHONPATH", None)
    operator.env.pop("KUBECONFIG", None)
    if installed.container is not None:  # a container sees only its own env and files
        env = {k: v for k, v in operator.env.items() if k.startswith(("AIANALYSIS_", "KUBERNETES_"))}
        container = dataclasses.replace(
            installed.container,
            env={**installed.container.env, **env},
            binds={"/tmp/serviceaccount": images.Bind(source=mount)},
        )
        operator.argv = container.argv(
            ["python", "-c", in_a_pod.LAUNCHER, "/tmp/serviceaccount", *entrypoint[1:]]
        )
    operator.start()  # waits for GET /healthz == 200
    try:
        cluster.kubectl(
            "apply", "-n", namespace, "-f", str(ROOT / "examples" / "incidents" / "node-notready.yaml")
        )
        [done] = wait_terminal(cluster, namespace, 1, timeout=90, logs=operator.logs)
        assert done["status"]["phase"] == "Completed"
        assert done["status"]["selectedWorkflow"]["workflowId"] == "node-restart-kubelet"

        assert operator.proc is not None
        started = time.monotonic()
        # what the kubelet sends to the container's PID 1 (the image's: the operator in its namespace)
        os.killpg(operator.proc.pid, signal.SIGTERM)
        assert operator.proc.wait(timeout=20) == 0, operator.logs()
        assert time.monotonic() - started < 15, "a stop must fit the Pod's terminationGracePeriodSeconds"
    finally:
        operator.stop()
    assert "Traceback" not in operator.logs()
