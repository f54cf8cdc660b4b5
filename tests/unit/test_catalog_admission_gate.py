"""catalog_admission.AdmissionGate: the catalog holds exactly the accepted objects, and every object's
verdict is reported as objects come, change and go (the cluster side is tested against a real API
server in tests/integration/test_catalog_admission.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aianalysis import catalog
from aianalysis.catalog import admission
from aianalysis.catalog import gate as catalog_admission


class Recorder:
    def __init__(self) -> None:
        self.verdicts: dict[str, str] = {}
        self.observed: list[str] = []

    def observe(self, obj: Mapping[str, Any]) -> None:
        self.observed.append(obj["metadata"]["name"])

    def forget(self, name: str) -> None:
        self.verdicts.pop(name, None)

    def report(self, name: str, verdict: admission.Ruling) -> None:
        self.verdicts[name] = verdict.reason


def obj(
    name: str, *, created: str, title: str = "Raise memory", version: str = "1.0.0", **spec: Any
) -> dict[str, Any]:
    body = {
        "workflowId": "raise-memory",
        "version": version,
        "title": title,
        "description": "Raises the memory limit.",
        "labels": {"signalTypes": ["OOMKilled"]},
        "riskLevel": "low",
        "execution": {"containerImage": "registry.example/wf@sha256:" + "0" * 64},
        **spec,
    }
    return {"metadata": {"name": name, "creationTimestamp": created}, "spec": body}


def gate() -> tuple[catalog_admission.AdmissionGate, catalog.Catalog, Recorder]:
    found, recorder = catalog.Catalog(), Recorder()
    return catalog_admission.AdmissionGate(catalog=found, reporter=recorder), found, recorder


def test_a_conflict_refuses_the_newcomer_until_the_holder_goes() -> None:
    the_gate, found, recorder = gate()
    the_gate.admit(obj("b-old", created="2026-01-01T00:00:00Z", title="Original"))
    the_gate.admit(obj("a-new", created="2026-01-02T00:00:00Z", title="Changed"))
    assert recorder.verdicts == {"b-old": "Accepted", "a-new": "ConflictingDefinition"}
    assert found.get("raise-memory").spec.title == "Original"  # type: ignore[union-attr]

    the_gate.remove("b-old")

    assert recorder.verdicts == {"a-new": "Accepted"}
    assert found.get("raise-memory").spec.title == "Changed"  # type: ignore[union-attr]


def test_moving_to_a_new_version_releases_the_old_claim() -> None:
    the_gate, found, recorder = gate()
    the_gate.admit(obj("old", created="2026-01-01T00:00:00Z", title="Original"))
    the_gate.admit(obj("new", created="2026-01-02T00:00:00Z", title="Changed"))
    the_gate.admit(obj("new", created="2026-01-02T00:00:00Z", title="Changed", version="1.1.0"))
    assert recorder.verdicts == {"old": "Accepted", "new": "Accepted"}
    assert found.versions("raise-memory") == ["1.0.0", "1.1.0"]


def test_an_object_that_turns_invalid_leaves_the_catalog() -> None:
    the_gate, found, recorder = gate()
    the_gate.admit(obj("wf", created="2026-01-01T00:00:00Z"))
    assert found.get("raise-memory") is not None
    broken = obj(
        "wf", created="2026-01-01T00:00:00Z", parameters=[{"name": "P", "type": "string", "pattern": "("}]
    )
    the_gate.admit(broken)
    assert recorder.verdicts == {"wf": "InvalidPattern"}
    assert found.get("raise-memory") is None
    the_gate.admit(obj("wf", created="2026-01-01T00:00:00Z"))
    assert recorder.verdicts == {"wf": "Accepted"} and found.get("raise-memory") is not None
