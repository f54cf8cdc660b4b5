"""The in-memory catalog: RemediationWorkflow objects keyed by Kubernetes name, thread-safe.

The operator's watch handlers call ``upsert``/``remove`` while analyses search it (from several
threads in the CLI's evaluation and the operator's executor), so every method takes one lock. The
search index is updated incrementally on each change (microseconds), so a search never waits for
a rebuild; a search holds the lock for its ~1 ms.

Several objects may share a workflowId with different versions. Two objects claiming the SAME
workflowId and version is an authoring mistake; the object whose name sorts first wins, so the
outcome depends only on which objects exist (never on event order), and ``conflicts()`` says so.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable
from typing import Any

import pydantic

from aianalysis import resources
from aianalysis.catalog import actions, index, model, policy, semver, target

LATEST = "latest"

_Key = tuple[str, str]


class Catalog:
    def __init__(self, workflows: Iterable[model.Workflow] = ()) -> None:
        self._lock = threading.Lock()
        self._objects: dict[str, model.Workflow] = {}
        self._claims: dict[_Key, set[str]] = {}
        self._ids: dict[str, dict[str, model.Workflow]] = {}
        self._index = index.Index()
        self._slots: dict[_Key, int] = {}
        for workflow in workflows:
            self.upsert(workflow.name, workflow.spec)

    def upsert(self, name: str, spec: resources.RemediationWorkflowSpec) -> None:
        """Add or replace the object called ``name``. Re-delivering an unchanged object is free."""
        with self._lock:
            previous = self._objects.get(name)
            if previous is not None and previous.spec == spec:
                return
            if previous is not None:
                self._forget(previous)
            workflow = model.Workflow(name=sys.intern(name), spec=_compact(spec))
            self._objects[name] = workflow
            self._claims.setdefault(_key(workflow), set()).add(name)
            self._elect(_key(workflow))

    def remove(self, name: str) -> bool:
        """Forget the object called ``name``; False when there was none (deletes may repeat)."""
        with self._lock:
            workflow = self._objects.pop(name, None)
            if workflow is None:
                return False
            self._forget(workflow)
            return True

    def __len__(self) -> int:
        """Number of distinct (workflowId, version) entries."""
        with self._lock:
            return sum(len(versions) for versions in self._ids.values())

    def get(self, workflow_id: str, version: str | None = None) -> model.Workflow | None:
        """The workflow with that id and exact version; ``None``/``"latest"`` = highest semver."""
        with self._lock:
            versions = self._ids.get(workflow_id)
            if not versions:
                return None
            if version is None or version == LATEST:
                version = semver.highest(list(versions))
            return versions.get(version) if version is not None else None

    def versions(self, workflow_id: str) -> list[str]:
        """Versions of a workflowId, lowest to highest semver (empty when unknown)."""
        with self._lock:
            return sorted(self._ids.get(workflow_id, {}), key=semver.key)

    def all(self) -> list[model.Workflow]:
        """Every entry, by workflowId then ascending version."""
        with self._lock:
            return [
                versions[version]
                for workflow_id, versions in sorted(self._ids.items())
                for version in sorted(versions, key=semver.key)
            ]

    def conflicts(self) -> list[str]:
        """One message per (workflowId, version) claimed by more than one object."""
        with self._lock:
            return [
                f"{workflow_id} {version} is defined by objects {', '.join(sorted(names))}; "
                f"using {min(names)}"
                for (workflow_id, version), names in sorted(self._claims.items())
                if len(names) > 1
            ]

    def search(
        self,
        query: model.SearchQuery,
        *,
        business: resources.BusinessContext,
        facts: target.TargetFacts | None = None,
    ) -> list[model.SearchHit]:
        """Eligible workflows for the incident's ``business`` context and the target's detected
        ``facts`` (None = unknown: workflows with detectedLabels are not eligible), best first (see
        ``aianalysis.catalog.index`` for filtering and the meaning of confidence)."""
        with self._lock:
            return self._index.search(query, business=business, facts=facts)

    def action_types(
        self, *, business: resources.BusinessContext, facts: target.TargetFacts | None = None
    ) -> list[tuple[str, str, int]]:
        """(action type, one-line meaning, eligible workflowIds) for every action type with an
        eligible workflow, by action type; ``""`` counts the eligible workflows without one."""
        with self._lock:
            counts = self._index.action_types(business=business, facts=facts)
            everything = [w for versions in self._ids.values() for w in versions.values()]
        return [
            (action, actions.meaning(action, everything) if action else "", count)
            for action, count in sorted(counts.items())
        ]

    def eligible(
        self,
        workflow_id: str,
        version: str | None = None,
        *,
        business: resources.BusinessContext,
        facts: target.TargetFacts | None = None,
    ) -> model.Workflow | None:
        """Like ``get``, but only an eligible workflow; ``None``/``"latest"`` = the highest
        ELIGIBLE version (a newer ineligible one never hides it)."""
        if version is not None and version != LATEST:
            found = self.get(workflow_id, version)
            eligible = found is not None and not policy.ineligibility(found.spec, business, facts=facts)
            return found if eligible else None
        for candidate in reversed(self.versions(workflow_id)):
            found = self.get(workflow_id, candidate)
            if found is not None and not policy.ineligibility(found.spec, business, facts=facts):
                return found
        return None

    # ---- bookkeeping (lock held) ------------------------------------------------------------

    def _forget(self, workflow: model.Workflow) -> None:
        key = _key(workflow)
        names = self._claims.get(key, set())
        names.discard(workflow.name)
        if not names:
            self._claims.pop(key, None)
        self._elect(key)

    def _elect(self, key: _Key) -> None:
        """Point (workflowId, version) at its winning object, or drop it, and re-index it."""
        workflow_id, version = key
        names = self._claims.get(key)
        versions = self._ids.get(workflow_id, {})
        winner = self._objects[min(names)] if names else None
        if versions.get(version) is winner:
            return
        slot = self._slots.pop(key, None)
        if slot is not None:
            self._index.discard(slot)
        if winner is not None:
            self._ids.setdefault(workflow_id, versions)[version] = winner
            self._slots[key] = self._index.add(winner)
            return
        versions.pop(version, None)
        if not versions:
            self._ids.pop(workflow_id, None)


#: One shared ``__pydantic_fields_set__`` per distinct set of field names (see ``_compact``).
_FIELD_SETS: dict[frozenset[str], set[str]] = {}


def _compact(spec: resources.RemediationWorkflowSpec) -> resources.RemediationWorkflowSpec:
    """Share the per-model ``__pydantic_fields_set__`` sets between equal ones, in place: each
    model of a spec (the spec, its labels, execution, parameters ...) carries its own set of the
    field names it was given, ~560 bytes each and 43% of a spec's memory (at 10,000 workflows:
    ~16 MiB), and they take a handful of distinct values. Safe because the models are frozen
    (pydantic only mutates the set in ``__setattr__``; ``model_copy`` copies it first) and nothing
    reads it but ``exclude_unset``, which the shared set answers the same way."""
    _share_field_sets(spec)
    return spec


def _share_field_sets(value: Any) -> None:
    if isinstance(value, pydantic.BaseModel):
        names = value.__pydantic_fields_set__
        shared = _FIELD_SETS.setdefault(frozenset(names), names)
        object.__setattr__(value, "__pydantic_fields_set__", shared)
        for child in value.__dict__.values():
            _share_field_sets(child)
    elif isinstance(value, list | tuple):
        for child in value:
            _share_field_sets(child)
    elif isinstance(value, dict):
        for child in value.values():
            _share_field_sets(child)


def _key(workflow: model.Workflow) -> _Key:
    return (workflow.workflow_id, workflow.version)
