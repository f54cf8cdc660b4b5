"""Loading RemediationWorkflow objects from YAML (the CLI, tests, and the demo's sample catalog).

Accepts what ``kubectl apply -f`` accepts for this kind: files with one or many documents, a
``kind: List`` of objects, and directories (searched recursively for ``*.yaml``/``*.yml``).
Documents of other kinds are skipped, so a directory may also hold incidents or CRDs.
Kubernaut-format workflows (``kubernaut.ai/v1alpha1``) are read too, converted as
``aianalysis catalog import`` converts them (``catalog.kubernaut``). Every workflow must pass
admission (``catalog.admission``), as in the operator; a workflow nothing can run (``NotExecutable``:
no container image) is skipped, as the operator keeps it out of the offered catalog. Every problem raises
``errors.CatalogError`` naming the file and document, because the person reading it has to open
that file and fix it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from aianalysis import errors, resources
from aianalysis.catalog import admission, kubernaut, model, store

KIND = "RemediationWorkflow"
_SUFFIXES = (".yaml", ".yml")


def load_paths(paths: Sequence[Path | str]) -> store.Catalog:
    """A catalog of every RemediationWorkflow in ``paths``; CatalogError when there is none.

    The same object name or the same workflowId + version twice is an error here (unlike the
    live catalog, which must tolerate it): in files it is always a copy-paste mistake.
    """
    if not paths:
        raise errors.CatalogError("no catalog path given")
    catalog = store.Catalog()
    names: dict[str, str] = {}
    versions: dict[tuple[str, str], str] = {}
    for file in _files([Path(path) for path in paths]):
        for where, workflow in _workflows(file):
            _claim(names, workflow.name, where, what=f"object name {workflow.name!r}")
            key = (workflow.workflow_id, workflow.version)
            _claim(versions, key, where, what=f"workflowId {key[0]!r} version {key[1]!r}")
            catalog.upsert(workflow.name, workflow.spec)
    if not len(catalog):
        raise errors.CatalogError(f"no {KIND} objects found in {', '.join(str(path) for path in paths)}")
    return catalog


def workflows_from_yaml(text: str, *, source: str) -> list[model.Workflow]:
    """Every RemediationWorkflow in a YAML stream; ``source`` names it in error messages."""
    return [workflow for _, workflow in _parse(text, source=source)]


def parse_object(obj: Mapping[str, Any], *, where: str) -> model.Workflow:
    """One RemediationWorkflow object (a YAML document or an API object) as a Workflow."""
    if obj.get("apiVersion") != resources.API_VERSION:
        raise errors.CatalogError(
            f"{where}: apiVersion must be {resources.API_VERSION!r}, got {obj.get('apiVersion')!r}"
        )
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    if not isinstance(name, str) or not name:
        raise errors.CatalogError(f"{where}: {KIND} without metadata.name")
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        raise errors.CatalogError(f"{where} ({KIND} {name!r}): spec must be a mapping")
    verdict = admission.review(spec)
    if verdict.reason == "InvalidSpec":
        raise errors.CatalogError(f"{where} ({KIND} {name!r}): invalid spec: {verdict.message}")
    if not verdict.accepted or verdict.spec is None:
        raise errors.CatalogError(f"{where} ({KIND} {name!r}): refused ({verdict.reason}): {verdict.message}")
    return model.Workflow(name=name, spec=verdict.spec)


def _files(paths: list[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_dir():
            yield from sorted(file for file in path.rglob("*") if file.suffix in _SUFFIXES and file.is_file())
        elif path.is_file():
            yield path
        else:
            raise errors.CatalogError(f"{path}: no such file or directory")


def _workflows(file: Path) -> Iterator[tuple[str, model.Workflow]]:
    try:
        content = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise errors.CatalogError(f"{file}: cannot read: {exc}") from exc
    yield from _parse(content, source=str(file))


def _parse(text: str, *, source: str) -> list[tuple[str, model.Workflow]]:
    """(where, workflow) for every RemediationWorkflow in a YAML stream."""
    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        raise errors.CatalogError(f"{source}: invalid YAML: {exc}") from exc
    found: list[tuple[str, model.Workflow]] = []
    for number, document in enumerate(documents, start=1):
        where = f"{source}: document {number}"
        found.extend((where, workflow) for workflow in _from_document(document, where=where))
    return found


def _from_document(document: object, *, where: str) -> list[model.Workflow]:
    if document is None:
        return []
    if not isinstance(document, Mapping):
        raise errors.CatalogError(
            f"{where}: expected a Kubernetes object (a mapping), got {type(document).__name__}"
        )
    if document.get("kind") == "List":
        items = document.get("items") or []
        if not isinstance(items, list):
            raise errors.CatalogError(f"{where}: items of a List must be a list")
        return [
            workflow
            for number, item in enumerate(items, start=1)
            for workflow in _from_document(item, where=f"{where} item {number}")
        ]
    if kubernaut.is_kubernaut(document):
        document = kubernaut.convert(document, where=where).obj
    elif document.get("kind") != KIND:
        return []
    spec = document.get("spec")
    if isinstance(spec, Mapping) and admission.review(spec).reason == "NotExecutable":
        return []
    return [parse_object(document, where=where)]


def _claim(seen: dict[Any, str], key: object, where: str, *, what: str) -> None:
    if key in seen:
        raise errors.CatalogError(f"{where}: {what} already defined at {seen[key]}")
    seen[key] = where
