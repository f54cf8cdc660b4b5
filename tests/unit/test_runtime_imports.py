"""The operator process loads the operator and nothing else.

The import contracts (pyproject.toml) see ``import`` statements; this checks what a fresh interpreter
really loads when it starts the way the image's entrypoint does (``aianalysis run``: the console
script, then the kopf handlers module), here where the dev tooling *is* installed and importable.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

#: Development-only top-level modules: the dev package, the test and benchmark code, the test and
#: lint tools, and httpx (the runtime talks through httpx2; httpx is only in the dev lock).
DEV_ONLY = ("aianalysis_dev", "tests", "bench", "pytest", "_pytest", "mypy", "ruff", "deptry", "importlinter")
DEV_ONLY_LIBRARIES = ("httpx", "matplotlib")

LOADED_BY_THE_ENTRYPOINT = """
import json, sys
from aianalysis import cli
parser = cli.build_parser()
parser.parse_args(["run"])           # what the image's ENTRYPOINT parses
from aianalysis.controller import handlers  # what `aianalysis run` imports before it starts kopf
print(json.dumps(sorted(sys.modules)))
"""


def loaded_modules(program: str) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=60
    )
    modules: list[str] = json.loads(result.stdout)
    return modules


def top_level(modules: list[str]) -> set[str]:
    return {name.split(".")[0] for name in modules}


@pytest.fixture(scope="module")
def entrypoint_modules() -> list[str]:
    return loaded_modules(LOADED_BY_THE_ENTRYPOINT)


def test_the_operator_entrypoint_loads_the_operator(entrypoint_modules: list[str]) -> None:
    assert {"aianalysis.cli", "aianalysis.controller.handlers", "kopf"} <= set(entrypoint_modules)


def test_the_operator_entrypoint_loads_no_dev_tooling(entrypoint_modules: list[str]) -> None:
    assert top_level(entrypoint_modules) & {*DEV_ONLY, *DEV_ONLY_LIBRARIES} == set()


def test_the_dev_package_is_importable_here_so_the_check_above_means_something() -> None:
    modules = loaded_modules(
        "import json, sys, aianalysis_dev.devcluster; print(json.dumps(sorted(sys.modules)))"
    )
    assert "aianalysis_dev" in top_level(modules) and "httpx" in top_level(modules)


def test_the_operator_entrypoint_loads_no_typed_kubernetes_api(entrypoint_modules: list[str]) -> None:
    """kube/ talks plain REST: the client's typed API classes and their ~250 pydantic model modules
    (~90 MiB of RSS, ``CoreV1Api`` alone ~70) stay unloaded; kopf itself names a few small models."""
    api = [m for m in entrypoint_modules if m.startswith("kubernetes.client.api.")]
    models = [m for m in entrypoint_modules if m.startswith("kubernetes.client.models.")]
    assert api == []
    assert len(models) <= 5, models


def test_the_operator_starts_where_the_kubernetes_client_is_not_installed() -> None:
    """As in the image: the runtime lock has no ``kubernetes`` (kube/ speaks REST over urllib3, and
    kopf imports the client only when it is there). Here it is installed, so it is made unimportable."""
    modules = loaded_modules("import sys\nsys.modules['kubernetes'] = None\n" + LOADED_BY_THE_ENTRYPOINT)
    assert "aianalysis.controller.handlers" in modules and "aianalysis.kube.rest" in modules
    assert [m for m in modules if m.startswith("kubernetes.")] == []
