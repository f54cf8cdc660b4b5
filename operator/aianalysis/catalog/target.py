"""What a workflow may act on: target parameters, component scope and detected-label requirements.

Pure functions shared by search (eligibility) and the validator (``component_mismatch``,
system-filled parameters), so the two can never disagree.

- ``target_field``: which field of the remediation target fills a parameter. ``fromTarget``
  decides when set (``none`` opts out); otherwise the naming convention below, which covers
  Kubernaut's ``TARGET_RESOURCE_*`` and the names the offline provider always recognised.
- ``component_admits``: ``labels.component`` entries are lower-case kinds (``deployment``),
  GVK strings (``apps/v1/Deployment``, ``v1/Pod``) or ``*``; absent/empty admits every kind.
- ``detected_labels_admit``: every requirement a workflow declares must hold for the target's
  detected facts; an unknown fact (None) never satisfies a requirement (fail closed).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Literal

from aianalysis import resources

TargetField = Literal["kind", "name", "namespace", "apiVersion"]
WILDCARD = "*"

#: Parameter names filled from the target unless the workflow says otherwise (``fromTarget``).
CONVENTION: dict[str, TargetField] = {
    "TARGET_RESOURCE_KIND": "kind",
    "TARGET_RESOURCE_NAME": "name",
    "TARGET_RESOURCE_NAMESPACE": "namespace",
    "TARGET_RESOURCE_API_VERSION": "apiVersion",
    "TARGET_KIND": "kind",
    "TARGET_NAME": "name",
    "TARGET_NAMESPACE": "namespace",
    "TARGET_API_VERSION": "apiVersion",
    "RESOURCE_KIND": "kind",
    "RESOURCE_NAME": "name",
    "NAMESPACE": "namespace",
}


@dataclasses.dataclass(frozen=True, kw_only=True)
class TargetFacts:
    """Facts detected on the remediation target (None = unknown, e.g. no cluster to look at)."""

    helm_managed: bool | None = None
    gitops_managed: bool | None = None
    gitops_tool: str | None = None
    """``argocd`` or ``flux`` when GitOps-managed."""
    hpa_enabled: bool | None = None
    pdb_protected: bool | None = None
    stateful: bool | None = None
    network_isolated: bool | None = None
    service_mesh: str | None = None
    """``istio``, ``linkerd``, … when the target is in a mesh."""


def target_field(param: resources.WorkflowParameter) -> TargetField | None:
    """The target field the system fills ``param`` from, or None when the LLM fills it."""
    if param.from_target == "none":
        return None
    if param.from_target is not None:
        return param.from_target
    return CONVENTION.get(param.name.upper())


def component_admits(components: Sequence[str] | None, *, kind: str, api_version: str | None) -> bool:
    """Whether ``labels.component`` admits a target of ``kind`` (``api_version`` None = unknown,
    so only the kind of a GVK entry is compared)."""
    if not components:
        return True
    return any(_component_matches(entry.strip(), kind=kind, api_version=api_version) for entry in components)


def detected_labels_admit(required: resources.DetectedLabels | None, facts: TargetFacts | None) -> bool:
    return not unmet_detected_labels(required, facts)


def unmet_detected_labels(required: resources.DetectedLabels | None, facts: TargetFacts | None) -> list[str]:
    """One readable reason per requirement the facts do not satisfy (empty = admitted)."""
    if required is None:
        return []
    known = facts or TargetFacts()
    reasons = []
    for name, wanted in required:
        if wanted is None:
            continue
        wire = resources.DetectedLabels.model_fields[name].alias or name
        actual = getattr(known, name)
        if not _fact_satisfies(wanted, actual):
            shown = "unknown" if actual is None else repr(actual)
            reasons.append(f"detectedLabels.{wire} requires {wanted!r} but the target's is {shown}")
    return reasons


def _fact_satisfies(wanted: bool | str, actual: bool | str | None) -> bool:
    if actual is None:
        return False
    if isinstance(wanted, bool):
        return actual is wanted
    if not isinstance(actual, str) or not actual:
        return False
    return wanted == WILDCARD or wanted.strip().casefold() == actual.strip().casefold()


def _component_matches(entry: str, *, kind: str, api_version: str | None) -> bool:
    if entry == WILDCARD:
        return True
    group_version, _, entry_kind = entry.rpartition("/")
    if entry_kind.casefold() != kind.casefold():
        return False
    return not group_version or api_version is None or group_version == api_version
