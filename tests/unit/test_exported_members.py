"""Each package's face is honest (the idea of httpx's ``test_exported_members``): ``__all__`` lists
exactly the package's public names, and each of them is used outside the package — by another
package of the product, a test, the benchmarks or the dev tooling."""

from __future__ import annotations

import importlib
import pathlib
import re
import types

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = [
    "aianalysis.analysis.llm",
    "aianalysis.analysis.offline",
    "aianalysis.analysis.prompts",
    "aianalysis.analysis.tools",
    "aianalysis.analysis.validation",
    "aianalysis.catalog",
    "aianalysis.evaluation",
    "aianalysis.intake",
    "aianalysis.kit",
    "aianalysis.kube",
    "aianalysis.resources",
]


def faced(package: types.ModuleType) -> list[str]:
    """``__all__`` without the submodules some packages also list."""
    return sorted(n for n in package.__all__ if not isinstance(getattr(package, n), types.ModuleType))


def _imported_from_typing(member: str, value: object) -> bool:
    """``Any`` or ``Callable`` imported for annotations, not a type alias the package defines."""
    home = getattr(value, "__module__", "aianalysis")
    return home in ("typing", "collections.abc") and hasattr(importlib.import_module(home), member)


@pytest.mark.parametrize("name", PACKAGES)
def test_all_is_every_public_name_of_the_package(name: str) -> None:
    package = importlib.import_module(name)
    public = sorted(
        member
        for member, value in vars(package).items()
        if not member.startswith("_")
        and member != "annotations"  # from __future__
        and not isinstance(value, types.ModuleType)
        and not _imported_from_typing(member, value)
    )
    assert faced(package) == public


@pytest.mark.parametrize("name", PACKAGES)
def test_every_exported_name_is_used_outside_its_package(name: str) -> None:
    package = importlib.import_module(name)
    home = pathlib.Path(package.__file__ or "").parent
    elsewhere = [
        path
        for top in ("operator", "tests", "bench", "devtools")
        for path in (ROOT / top).rglob("*.py")
        if home not in path.parents and ".venv" not in path.parts
    ]
    text = "\n".join(path.read_text() for path in elsewhere)
    unused = [
        member
        for member in faced(package)
        if not re.search(rf"\b\w+\.{member}\b|import[^\n]*\b{member}\b", text)
    ]
    assert unused == []
