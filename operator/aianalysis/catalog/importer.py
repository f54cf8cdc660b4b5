"""``aianalysis catalog import --from kubernaut -f PATH... -o DIR``: Kubernaut-format workflows into
our format, one file per workflow (``DIR/<name>.yaml``), with a report per source file of what was
dropped and why (``catalog.kubernaut`` documents the mapping).

A source file is imported whole or not at all: any document that cannot be converted, or that
admission would refuse, fails the file with a clear error naming it, and the other files still
import. Nothing is overwritten unless ``overwrite`` is set.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from aianalysis import errors
from aianalysis.catalog import admission, kubernaut

_SUFFIXES = (".yaml", ".yml")
_HEADER = "# Imported from {source} by: aianalysis catalog import --from kubernaut\n"


@dataclasses.dataclass(frozen=True)
class FileReport:
    source: Path
    written: list[Path] = dataclasses.field(default_factory=list)
    dropped: list[str] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    error: str | None = None


def import_kubernaut(
    paths: Sequence[Path],
    *,
    out: Path,
    risk_level: str = kubernaut.DEFAULT_RISK_LEVEL,
    overwrite: bool = False,
) -> list[FileReport]:
    """Convert every Kubernaut RemediationWorkflow under ``paths`` into ``out``; one report per file."""
    out.mkdir(parents=True, exist_ok=True)
    reports = []
    claimed: dict[str, Path] = {}
    for source in _files(paths):
        try:
            converted = _convert_file(source, risk_level=risk_level)
            targets = [out / f"{c.obj['metadata']['name']}.yaml" for c in converted]
            for target in targets:
                if target.name in claimed:
                    raise errors.CatalogError(
                        f"{source}: {target.stem} is also defined in {claimed[target.name]}"
                    )
                if target.exists() and not overwrite:
                    raise errors.CatalogError(f"{source}: {target} exists (use --overwrite to replace it)")
        except errors.CatalogError as exc:
            reports.append(FileReport(source=source, error=str(exc)))
            continue
        for conversion, target in zip(converted, targets, strict=True):
            text = yaml.safe_dump(conversion.obj, sort_keys=False, allow_unicode=True, width=100)
            target.write_text(_HEADER.format(source=source) + text, encoding="utf-8")
            claimed[target.name] = source
        reports.append(
            FileReport(
                source=source,
                written=targets,
                dropped=[d for c in converted for d in _named(c, c.dropped)],
                notes=[n for c in converted for n in _named(c, c.notes)],
            )
        )
    return reports


def render(reports: Sequence[FileReport]) -> str:
    """The per-file report for people."""
    lines = []
    for report in reports:
        if report.error is not None:
            lines.append(f"{report.source}: FAILED: {report.error}")
            continue
        written = ", ".join(str(path) for path in report.written) or "no Kubernaut RemediationWorkflow found"
        lines.append(f"{report.source}: imported -> {written}")
        lines.extend(f"  dropped {line}" for line in report.dropped)
        lines.extend(f"  note    {line}" for line in report.notes)
    imported = sum(len(r.written) for r in reports)
    failed = sum(r.error is not None for r in reports)
    lines.append(
        f"{imported} workflow(s) imported from {len(reports) - failed} file(s); {failed} file(s) failed"
    )
    return "\n".join(lines)


def _convert_file(source: Path, *, risk_level: str) -> list[kubernaut.Conversion]:
    try:
        documents = list(yaml.safe_load_all(source.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError) as exc:
        raise errors.CatalogError(f"{source}: cannot read: {exc}") from exc
    except yaml.YAMLError as exc:
        raise errors.CatalogError(f"{source}: invalid YAML: {exc}") from exc
    found = []
    for number, document in enumerate(documents, start=1):
        for item_where, item in _objects(document, where=f"{source}: document {number}"):
            if not kubernaut.is_kubernaut(item):
                continue
            conversion = kubernaut.convert(item, where=item_where, risk_level=risk_level)
            verdict = admission.review(conversion.obj["spec"])
            if not verdict.accepted:
                raise errors.CatalogError(
                    f"{item_where}: the converted workflow is refused ({verdict.reason}): {verdict.message}"
                )
            found.append(conversion)
    return found


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
