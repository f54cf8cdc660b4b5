"""``aianalysis catalog import --from kubernaut -f PATH... -o DIR``: Kubernaut-format workflows into
our format, one file per workflow (``DIR/<name>.yaml``), with a report per source file of what was
dropped and why (``catalog.kubernaut`` documents the mapping).

Nothing that can be kept is lost:

- Each document stands alone: one that cannot be converted, or that admission refuses, is reported
  with its reason and the file's other documents still import. Only an unreadable file or invalid
  YAML fails a whole file.
- Versions of one workflow coexist: Kubernaut names objects by workflow, so two versions from
  different files share ``metadata.name``. The first keeps the name; each other version is written
  as ``<name>-<version>`` with the same ``workflowId``.
- Identical copies are written once (noted). The same workflow and version with another engine
  (a Job and a Tekton variant) becomes its own workflow, ``<name>-<engine>``; the same version with
  other content and the same engine cannot be told apart and is reported as a conflict.
- A bare workflow schema (the spec alone, as Kubernaut keeps them beside a workflow's source:
  ``version``, ``description.what`` and ``execution`` at the top level, no ``kind``) is imported
  under the name of its file (``restart-workflow-schema.yaml`` → ``restart``; a file named just
  ``workflow-schema.yaml`` → its folder's name).
- A workflow nothing can run (no bundle) is written; admission keeps it out of the offered catalog
  with reason ``NotExecutable`` (``catalog.admission``); one whose bundle has no digest too, with
  reason ``ImageNotPinned``, until its ``containerImage`` is pinned.

Nothing is overwritten unless ``overwrite`` is set.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from aianalysis import errors
from aianalysis.catalog import admission, kubernaut

_SUFFIXES = (".yaml", ".yml")
_HEADER = "# Imported from {source} by: aianalysis catalog import --from kubernaut\n"
_NOT_NAME = re.compile(r"[^a-z0-9-]+")


@dataclasses.dataclass(frozen=True)
class FileReport:
    source: Path
    written: list[Path] = dataclasses.field(default_factory=list)
    dropped: list[str] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    refused: list[str] = dataclasses.field(default_factory=list)
    """One line per document that could not be imported, with the reason."""
    error: str | None = None
    """Why the whole file could not be read (then nothing else is set)."""

    @property
    def failed(self) -> bool:
        return self.error is not None or (bool(self.refused) and not self.written)


@dataclasses.dataclass
class _Pending:
    source: Path
    where: str
    conversion: kubernaut.Conversion

    @property
    def name(self) -> str:
        return str(self.conversion.obj["metadata"]["name"])

    @property
    def spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = self.conversion.obj["spec"]
        return spec

    def rename(self, name: str, *, workflow_id: str | None = None, why: str) -> None:
        self.conversion.obj["metadata"]["name"] = name
        if workflow_id is not None:
            self.spec["workflowId"] = workflow_id
        self.conversion.notes.append(f"metadata.name: {name} ({why})")


def import_kubernaut(
    paths: Sequence[Path],
    *,
    out: Path,
    risk_level: str = kubernaut.DEFAULT_RISK_LEVEL,
    overwrite: bool = False,
) -> list[FileReport]:
    """Convert every Kubernaut RemediationWorkflow under ``paths`` into ``out``; one report per file."""
    out.mkdir(parents=True, exist_ok=True)
    sources = list(_files(paths))
    pending: list[_Pending] = []
    refused: dict[Path, list[str]] = {source: [] for source in sources}
    failed: dict[Path, str] = {}
    for source in sources:
        try:
            found, refusals = _convert_file(source, risk_level=risk_level)
        except errors.CatalogError as exc:
            failed[source] = str(exc)
            continue
        pending.extend(found)
        refused[source].extend(refusals)
    copies: dict[Path, list[str]] = {}
    kept = _assign_names(pending, refused, copies)
    written: dict[Path, list[_Pending]] = {}
    for item in kept:
        target = out / f"{item.name}.yaml"
        if target.exists() and not overwrite:
            refused[item.source].append(f"{item.where}: {target} exists (use --overwrite to replace it)")
            continue
        text = yaml.safe_dump(item.conversion.obj, sort_keys=False, allow_unicode=True, width=100)
        target.write_text(_HEADER.format(source=item.source) + text, encoding="utf-8")
        written.setdefault(item.source, []).append(item)
    return [
        _report(source, written.get(source, []), refused[source], failed.get(source), copies.get(source, []))
        for source in sources
    ]


def _assign_names(
    pending: Sequence[_Pending], refused: dict[Path, list[str]], copies: dict[Path, list[str]]
) -> list[_Pending]:
    """The conversions to write, each under a distinct object name (see the module rules)."""
    kept: list[_Pending] = []
    by_name: dict[str, _Pending] = {}
    by_version: dict[tuple[str, str], list[_Pending]] = {}
    for item in pending:
        key = (str(item.spec.get("workflowId")), str(item.spec.get("version")))
        same = by_version.setdefault(key, [])
        twin = next((other for other in same if other.spec == item.spec), None)
        if twin is not None:
            twin.conversion.notes.append(f"identical copy in {item.where} not written again")
            copies.setdefault(item.source, []).append(
                f"{item.where}: identical to {twin.where}, written once as {twin.name}.yaml"
            )
            continue
        engine = str((item.spec.get("execution") or {}).get("engine") or "job")
        if same:
            if any(str((o.spec.get("execution") or {}).get("engine") or "job") == engine for o in same):
                refused[item.source].append(
                    f"{item.where}: workflow {key[0]} version {key[1]} is also defined, with other content, "
                    f"in {same[0].where}; give one of them another version"
                )
                continue
            variant = _name(f"{key[0]}-{engine}")
            item.rename(variant, workflow_id=variant, why=f"the {engine} variant of {key[0]} {key[1]}")
        elif item.name in by_name:
            item.rename(_name(f"{item.name}-{key[1]}"), why=f"version {key[1]} of {key[0]}")
        same.append(item)
        by_name[item.name] = item
        kept.append(item)
    return kept


def _schema_name(source: Path) -> str:
    stem = source.stem.removesuffix("workflow-schema").rstrip("-_.")
    return stem or source.parent.name


def _name(text: str) -> str:
    return _NOT_NAME.sub("-", text.lower()).strip("-")[:253]


def _report(
    source: Path, items: list[_Pending], refused: list[str], error: str | None, copies: list[str]
) -> FileReport:
    if error is not None:
        return FileReport(source=source, error=error)
    return FileReport(
        source=source,
        written=[Path(item.name + ".yaml") for item in items],
        dropped=[d for item in items for d in _named(item.conversion, item.conversion.dropped)],
        notes=[*copies, *(n for item in items for n in _named(item.conversion, item.conversion.notes))],
        refused=refused,
    )


def render(reports: Sequence[FileReport]) -> str:
    """The per-file report for people."""
    lines = []
    for report in reports:
        if report.error is not None:
            lines.append(f"{report.source}: FAILED: {report.error}")
            continue
        if report.failed:
            lines.append(f"{report.source}: FAILED: nothing imported")
        else:
            nothing = "an identical copy only" if report.notes else "no Kubernaut RemediationWorkflow found"
            written = ", ".join(str(p) for p in report.written) or nothing
            lines.append(f"{report.source}: imported -> {written}")
        lines.extend(f"  refused {line}" for line in report.refused)
        lines.extend(f"  dropped {line}" for line in report.dropped)
        lines.extend(f"  note    {line}" for line in report.notes)
    imported = sum(len(r.written) for r in reports)
    failed = sum(r.failed for r in reports)
    not_imported = sum(len(r.refused) for r in reports)
    lines.append(
        f"{imported} workflow(s) imported from {sum(bool(r.written) for r in reports)} file(s); "
        f"{not_imported} workflow(s) not imported; {failed} file(s) failed"
    )
    return "\n".join(lines)


def _convert_file(source: Path, *, risk_level: str) -> tuple[list[_Pending], list[str]]:
    try:
        documents = list(yaml.safe_load_all(source.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError) as exc:
        raise errors.CatalogError(f"{source}: cannot read: {exc}") from exc
    except yaml.YAMLError as exc:
        raise errors.CatalogError(f"{source}: invalid YAML: {exc}") from exc
    found: list[_Pending] = []
    refused: list[str] = []
    for number, document in enumerate(documents, start=1):
        try:
            items = list(_objects(document, where=f"{source}: document {number}"))
        except errors.CatalogError as exc:
            refused.append(str(exc))
            continue
        for item_where, raw in items:
            bare = kubernaut.is_bare_spec(raw)
            item = kubernaut.wrap(raw, name=_name(_schema_name(source))) if bare else raw
            if not kubernaut.is_kubernaut(item):
                continue
            try:
                conversion = kubernaut.convert(item, where=item_where, risk_level=risk_level)
            except errors.CatalogError as exc:
                refused.append(str(exc))
                continue
            verdict = admission.review(conversion.obj["spec"])
            if not verdict.accepted and verdict.reason not in ("NotExecutable", "ImageNotPinned"):
                refused.append(
                    f"{item_where}: the converted workflow is refused ({verdict.reason}): {verdict.message}"
                )
                continue
            found.append(_Pending(source=source, where=item_where, conversion=conversion))
    return found, refused


def _objects(document: object, *, where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    if not isinstance(document, dict):
        if document is not None:
            raise errors.CatalogError(f"{where}: expected a Kubernetes object (a mapping)")
        return
    if document.get("kind") == "List":
        for number, item in enumerate(document.get("items") or [], start=1):
            yield from _objects(item, where=f"{where} item {number}")
        return
    yield where, document


def _named(conversion: kubernaut.Conversion, lines: list[str]) -> list[str]:
    name = conversion.obj["metadata"]["name"]
    return [f"{name}: {line}" for line in lines]


def _files(paths: Sequence[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_dir():
            yield from sorted(f for f in path.rglob("*") if f.suffix in _SUFFIXES and f.is_file())
        else:
            yield path  # a missing file is reported by _convert_file as that file's failure
