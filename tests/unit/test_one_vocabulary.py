"""The package keeps one vocabulary (issue 32): a module is imported under its own name, a public name
means one thing, and no module outgrows what a reader holds in mind. The figures are counted from the
source with ``ast``; each exception is listed here with its reason, and a list that no longer matches
the code fails too, so the lists shrink as the exceptions go."""

from __future__ import annotations

import ast
import collections
import pathlib
import re

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "operator" / "aianalysis"
MAX_RENAMES = 5
MAX_SHARED_NAMES = 10
MAX_LINES = 800

#: (module, alias) of the first-party imports still renamed: none.
RENAMES_ALLOWED: dict[tuple[str, str], str] = {}

#: Public names (classes, functions, type aliases) defined in more than one module, and why.
SHARED_NAMES_ALLOWED = {
    # Each process (the operator, the executor) registers its own kopf lifecycle: the same role, once
    # per process, is what kopf expects — a handlers module per process.
    "login": "kopf's on.login, one per process",
    "startup": "kopf's on.startup, one per process",
    "cleanup": "kopf's on.cleanup, one per process",
    "run": "the process' main loop (aianalysis run / aianalysis executor), one per process",
}

#: Modules over MAX_LINES lines: none.
LONG_MODULES_ALLOWED: set[str] = set()


def modules() -> dict[str, ast.Module]:
    return {str(p.relative_to(PACKAGE)): ast.parse(p.read_text()) for p in sorted(PACKAGE.rglob("*.py"))}


def renames(tree: ast.Module) -> set[str]:
    """Aliases of first-party imports that differ from the imported name (``import a.b as b`` is none)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            ours = node.level > 0 or (node.module or "").split(".")[0] == "aianalysis"
        elif isinstance(node, ast.Import):
            ours = any(a.name.split(".")[0] == "aianalysis" for a in node.names)
        else:
            continue
        out |= {a.asname for a in node.names if ours and a.asname and a.asname != a.name.split(".")[-1]}
    return out


def public_names(tree: ast.Module) -> set[str]:
    """Top-level classes, functions and type aliases (CapWords assignments); constants are module values."""
    names = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name) and re.match(r"[A-Z][a-z]", t.id)}
    return {n for n in names if not n.startswith("_")}


def test_first_party_modules_are_imported_under_their_own_names() -> None:
    found = {(path, alias) for path, tree in modules().items() for alias in renames(tree)}
    assert found == set(RENAMES_ALLOWED), "rename the module (or the local) instead of aliasing it"
    assert len(RENAMES_ALLOWED) <= MAX_RENAMES


def test_a_public_name_is_defined_in_one_module() -> None:
    homes = collections.defaultdict(set)
    for path, tree in modules().items():
        for name in public_names(tree):
            homes[name].add(path)
    shared = {name: sorted(paths) for name, paths in homes.items() if len(paths) > 1}
    assert set(shared) == set(SHARED_NAMES_ALLOWED), shared
    assert len(SHARED_NAMES_ALLOWED) <= MAX_SHARED_NAMES


def test_no_module_is_longer_than_a_reader_holds() -> None:
    lengths = {str(p.relative_to(PACKAGE)): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    assert {path for path, n in lengths.items() if n > MAX_LINES} == LONG_MODULES_ALLOWED


def test_the_counting_sees_what_it_counts() -> None:
    sample = ast.parse(
        "from aianalysis import settings as settings_mod\nimport aianalysis.catalog\n"
        "from aianalysis.kube import calls\nfrom os import path as p\n"
        "class Seen: ...\nAlias = int\nCONSTANT = 1\ndef _private(): ...\nasync def shown(): ...\n"
    )
    assert renames(sample) == {"settings_mod"}
    assert public_names(sample) == {"Seen", "Alias", "shown"}
