"""The RemediationWorkflow catalog: storage, business-context policy, search and loading.

- ``Catalog`` — thread-safe in-memory catalog keyed by Kubernetes object name (``store``).
- ``policy`` — the incident's business context decides eligibility, never the LLM.
- ``index`` — the search index; its docstring defines what a hit's ``confidence`` means.
- ``load_paths`` — YAML files/directories → Catalog (``loader``).
- ``target`` — what a workflow may act on: target parameters, component scope, detected labels.
"""

from __future__ import annotations

from aianalysis.catalog import (
    actions,
    admission,
    business,
    index,
    kubernaut,
    loader,
    model,
    policy,
    semver,
    signals,
    store,
    target,
)
from aianalysis.catalog.loader import load_paths, parse_object, workflows_from_yaml
from aianalysis.catalog.model import SearchHit, SearchQuery, Workflow, spec_digest
from aianalysis.catalog.store import LATEST, Catalog
from aianalysis.catalog.target import (
    TargetFacts,
    component_admits,
    detected_labels_admit,
    target_field,
    unmet_detected_labels,
)

__all__ = [
    "LATEST",
    "Catalog",
    "SearchHit",
    "SearchQuery",
    "TargetFacts",
    "Workflow",
    "actions",
    "admission",
    "business",
    "component_admits",
    "detected_labels_admit",
    "index",
    "kubernaut",
    "load_paths",
    "loader",
    "model",
    "parse_object",
    "policy",
    "semver",
    "signals",
    "spec_digest",
    "store",
    "target",
    "target_field",
    "unmet_detected_labels",
    "workflows_from_yaml",
]
