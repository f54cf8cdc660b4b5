"""The documentation site's reference pages, generated from the code at every build, and the MkDocs
hooks that add them (``mkdocs.yml``: ``hooks``). Nothing here is kept by hand: the CRD reference
comes from ``crds/``, the configuration from ``settings.reference()`` (and the chart's templates for
the value that sets each variable), the metrics from ``aianalysis.metrics``, the tools from the tool
table, the offline rules from ``analysis.offline.documented()``.

The pages exist only in the build (``File.generated``), so no copy under ``docs/`` can go stale;
``tests/unit/test_docs_reference.py`` checks that each one covers everything the code has.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.nav import Navigation, Section

from aianalysis import metrics, settings
from aianalysis.analysis import offline
from aianalysis.analysis.tools import _args, _specs

ROOT = Path(__file__).resolve().parents[2]
CRDS = ROOT / "crds"
CHART_TEMPLATES = ROOT / "helm" / "aianalysis-operator" / "templates"
MORE = "More"
"""The nav section that collects the pages ``mkdocs.yml`` does not list (a new page still shows)."""


def _cell(text: str) -> str:
    """``text`` as one Markdown table cell (one line, no column breaks)."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _table(header: tuple[str, ...], rows: Iterable[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(str(cell)) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


# --- CRDs -------------------------------------------------------------------------------------------


def crd_fields(schema: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Mapping[str, Any], bool]]:
    """``(path, schema, required)`` of every field under ``schema``, depth first, in schema order;
    a list's items are ``path[]``, a map's values ``path.*``."""
    required = set(schema.get("required", ()))
    for name, sub in schema.get("properties", {}).items():
        path = f"{prefix}.{name}" if prefix else name
        yield path, sub, name in required
        yield from _nested(sub, path)


def _nested(schema: Mapping[str, Any], path: str) -> Iterator[tuple[str, Mapping[str, Any], bool]]:
    yield from crd_fields(schema, path)
    if isinstance(items := schema.get("items"), Mapping):
        if items.get("properties"):
            yield from crd_fields(items, f"{path}[]")
        else:
            yield from _nested(items, f"{path}[]")
    if isinstance(values := schema.get("additionalProperties"), Mapping) and values.get("properties"):
        yield from crd_fields(values, f"{path}.*")


def _type(schema: Mapping[str, Any]) -> str:
    kind = str(schema.get("type", "any"))
    if kind == "array" and isinstance(items := schema.get("items"), Mapping):
        return f"array of {_type(items)}"
    if kind == "object" and isinstance(values := schema.get("additionalProperties"), Mapping):
        return f"map of {_type(values)}"
    if schema.get("format"):
        return f"{kind} ({schema['format']})"
    return kind


def _constraints(schema: Mapping[str, Any]) -> str:
    said = []
    if "enum" in schema:
        said.append("one of " + ", ".join(f"`{value}`" for value in schema["enum"]))
    bounds = (
        ("minimum", "≥"), ("maximum", "≤"), ("minLength", "length ≥"), ("maxLength", "length ≤"),
        ("maxItems", "items ≤"), ("pattern", "pattern"),
    )  # fmt: skip
    for key, words in bounds:
        if key in schema:
            said.append(f"{words} `{schema[key]}`")
    if "default" in schema:
        said.append(f"default `{schema['default']}`")
    return "; ".join(said)


def crds() -> list[Mapping[str, Any]]:
    """The CustomResourceDefinitions of ``crds/`` (which also holds the approval admission policy)."""
    docs = (doc for path in sorted(CRDS.glob("*.yaml")) for doc in yaml.safe_load_all(path.read_text()))
    return [doc for doc in docs if doc and doc.get("kind") == "CustomResourceDefinition"]


def crd_page() -> str:
    out = [
        "# CRD reference\n",
        "Generated from `crds/*.yaml` at every build: each field's path, type, description and "
        "constraints (`required` = the API server rejects an object without it).\n",
    ]
    for crd in crds():
        names = crd["spec"]["names"]
        for version in crd["spec"]["versions"]:
            schema = version["schema"]["openAPIV3Schema"]
            out.append(f"\n## {names['kind']} ({crd['spec']['group']}/{version['name']})\n")
            short = ", ".join(names.get("shortNames", ()))
            out.append(
                f"`kubectl get {names['plural']}`" + (f" (short: `{short}`)" if short else "")
                + f"; scope: {crd['spec']['scope']}.\n\n"
            )  # fmt: skip
            rows = [
                (
                    f"`{path}`",
                    _type(sub),
                    "yes" if required else "",
                    sub.get("description", ""),
                    _constraints(sub),
                )
                for path, sub, required in crd_fields(schema)
                if path not in ("apiVersion", "kind", "metadata")
            ]
            out.append(_table(("field", "type", "required", "description", "constraints"), rows))
    return "".join(out)


# --- configuration ----------------------------------------------------------------------------------

_ACTION = re.compile(r"^\s*\{\{-?\s*(with|if|range|define|end)\b\s*(?:\.Values\.([\w.]+))?")
_ENV = re.compile(r"^\s*-\s+name:\s+(AIANALYSIS_\w+)\s*$")
_VALUES = re.compile(r"\.Values\.([\w.]+)")
_SCOPED = re.compile(r"\{\{[^}]*?(?<![\w.$])\.([a-z]\w*)?(?![\w.]*[A-Z])")
_DICT = re.compile(r'"(AIANALYSIS_\w+)"\s+\.Values\.([\w.]+)')


def chart_values() -> dict[str, str]:
    """Each variable the chart's templates set from a value → that value's path (``executor.backoffLimit``).

    Read from the templates' text: a variable set from ``.Values.x``, or from ``.y`` inside
    ``with .Values.x``; one the chart computes (a file path, the release's namespace) has none."""
    found: dict[str, str] = {}
    for template in sorted(CHART_TEMPLATES.glob("*.*")):
        lines = template.read_text().splitlines()
        found.update(_DICT.findall("\n".join(lines)))
        scopes: list[str | None] = []  # the open blocks: the value a `with` made `.`, else None
        for line, after in zip(lines, [*lines[1:], ""], strict=True):
            if action := _ACTION.match(line):
                if action.group(1) == "end":
                    scopes = scopes[:-1]
                else:
                    scopes.append(action.group(2) if action.group(1) == "with" else None)
            elif (env := _ENV.match(line)) and "value:" in after:
                if value := _VALUES.search(after):
                    found.setdefault(env.group(1), value.group(1))
                elif (scoped := _SCOPED.search(after)) and (within := [s for s in scopes if s]):
                    found.setdefault(env.group(1), ".".join(filter(None, (within[-1], scoped.group(1)))))
    return found


def configuration_page() -> str:
    chart = chart_values()
    out = [
        "# Configuration reference\n",
        "Generated from the settings models at every build. The operator reads environment variables "
        "(the chart sets them from its values: the *chart value* column); a bad value stops it at "
        "start with a message naming the variable. *also* lists other variables read when the first "
        "is unset (the platforms' own names). Secrets are never logged.\n",
    ]
    group = None
    for entry in settings.reference():
        if entry.group != group:
            group = entry.group
            out.append(f"\n## `{group}`\n\n{entry.group_doc}\n\n")
            out.append("| variable | type | default | description | chart value |\n|---|---|---|---|---|\n")
        what = (
            entry.kind + "".join(f"; {rule}" for rule in entry.rules) + ("; secret" if entry.secret else "")
        )
        also = f" (also {', '.join(f'`{name}`' for name in entry.also)})" if entry.also else ""
        default = f"`{entry.default}`" if entry.default else "unset"
        value = next((chart[name] for name in (entry.env, *entry.also) if name in chart), "")
        out.append(
            "| " + " | ".join(_cell(cell) for cell in (
                f"`{entry.env}`{also}", what, default, entry.doc, f"`{value}`" if value else "",
            )) + " |\n"
        )  # fmt: skip
    return "".join(out)


# --- metrics ----------------------------------------------------------------------------------------


def declared_metrics() -> list[tuple[str, str, tuple[str, ...], str]]:
    """``(name, type, labels, help)`` of every metric ``aianalysis.metrics`` declares, in order."""
    found = []
    for value in vars(metrics).values():
        if hasattr(value, "_labelnames") and hasattr(value, "_documentation"):
            # A prometheus_client metric: it has no public accessor for what it was declared with.
            kind = str(value._type)
            name = str(value._name) + ("_info" if kind == "info" else "")
            found.append((name, kind, tuple(map(str, value._labelnames)), str(value._documentation)))
    return found


def metrics_page() -> str:
    rows = [
        (
            f"`{name}{'_total' if kind == 'counter' else ''}`",
            kind,
            ", ".join(f"`{label}`" for label in labels),
            help_,
        )
        for name, kind, labels, help_ in declared_metrics()
    ]
    return (
        "# Metrics reference\n\n"
        "Generated from `operator/aianalysis/metrics.py` at every build: every series the operator "
        "exports on `/metrics` besides the standard `process_*` and `python_info`. A histogram "
        "exports `_bucket`, `_sum` and `_count`.\n\n" + _table(("name", "type", "labels", "help"), rows)
    )


# --- tools and offline rules ------------------------------------------------------------------------


def tools_page() -> str:
    needs = {"catalog": "the catalog", "cluster": "the cluster (read-only)",
             "prometheus": "Prometheus (offered only when one is configured)"}  # fmt: skip
    out = [
        "# Tool reference\n\n"
        "Generated from the tool table (`analysis/tools/_specs.py`) at every build: each tool the LLM "
        "is offered, what it reads, its description exactly as the LLM reads it, and its arguments.\n"
    ]
    for spec in _specs.SPECS:
        schema = _args.input_schema(spec.args)
        required = set(schema.get("required", ()))
        out.append(f"\n## `{spec.name}`\n\nReads {needs[spec.needs]}.\n\n{spec.description}\n\n")
        rows = [
            (
                f"`{name}`",
                _type(sub),
                "yes" if name in required else "",
                sub.get("description", ""),
                _constraints(sub),
            )
            for name, sub in schema.get("properties", {}).items()
        ]
        out.append(
            _table(("argument", "type", "required", "description", "constraints"), rows)
            if rows
            else "No arguments.\n"
        )
    return "".join(out)


def rules_page() -> str:
    out = [
        "# Offline rules reference\n\n"
        "Generated from `analysis.offline.documented()` at every build: the offline provider's rules in "
        "priority order (the first that matches the evidence is the analysis' finding), each with its "
        "docstring.\n"
    ]
    for number, (name, doc) in enumerate(offline.documented(), start=1):
        out.append(f"\n## {number}. `{name}`\n\n{doc.strip()}\n")
    return "".join(out)


PAGES: Mapping[str, Callable[[], str]] = {
    "reference/crds.md": crd_page,
    "reference/configuration.md": configuration_page,
    "reference/metrics.md": metrics_page,
    "reference/tools.md": tools_page,
    "reference/offline-rules.md": rules_page,
}
"""Each generated page's path under ``docs/`` → what writes it."""


# --- MkDocs hooks -----------------------------------------------------------------------------------


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the generated pages (in memory only: nothing is written under ``docs/``)."""
    for path, page in PAGES.items():
        files.append(File.generated(config, path, content=page()))
    return files


def on_nav(nav: Navigation, config: MkDocsConfig, files: Files) -> Navigation:
    """Pages that ``mkdocs.yml``'s nav does not list go to a last section, so a page added on a
    branch shows at once (and ``--strict`` has nothing to say); list it in the nav when it settles."""
    listed = {page.file.src_uri for page in nav.pages}
    extra = [
        file.page
        for file in files.documentation_pages()
        if file.src_uri not in listed and file.page is not None
    ]
    if extra:
        section = Section(MORE, list(extra))
        for page in extra:
            page.parent = section
        nav.items.append(section)
        nav.pages.extend(extra)
    return nav
