"""Business-context policy (docs/architecture.md §6 rule 4): which workflows an incident may use.

Business context is a fact about the incident, never the LLM's choice. The search tool applies
this policy before ranking, whatever the LLM passes, and the validator applies it again to the
final answer. Both call the functions here so the two can never disagree.

Rules:
- ``labels.environment`` / ``labels.priority`` / ``labels.businessCategory``: an absent or empty
  list admits any incident; otherwise it must contain the incident's value. Comparison ignores
  case and surrounding spaces (``Production`` = ``production``).
- An incident WITHOUT a value (say, no environment) is not admitted by a workflow that restricts
  that label. Safe default: a workflow scoped to ``[staging]`` was declared safe only for staging;
  nothing shows the unknown environment is staging, and the expensive mistake (running a
  staging-only remediation in production) is the one we must not make. Unrestricted workflows
  remain available, so an incident with sparse context still gets candidates.
- ``RISK_ORDER[riskLevel] <= RISK_ORDER[riskTolerance]`` (low < medium < high).
- ``customLabels``: each label the workflow declares must be in the incident's
  ``businessContext.customLabels`` with exactly the same value; ``*`` admits any value but the
  label must be there. The incident's ``risk_tolerance`` custom label is its risk tolerance unless
  it states that label itself (``custom_labels``): Kubernaut's workflows match risk tolerance as a
  custom label, and an incident has one risk tolerance — its namespace's, its spec's or the
  conservative default (low) — so a workflow written for low-tolerance teams is offered to an
  incident treated as low-tolerance, and one written for high-tolerance teams is not.
- ``detectedLabels``: every requirement must hold for the facts detected on the target
  (``target.detected_labels_admit``); without facts (no cluster) a requirement is unmet.
- ``lifecycle: Disabled`` is never eligible; ``Deprecated`` is, with a warning (``deprecation``).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import re
from collections.abc import Mapping, Sequence

from aianalysis import resources
from aianalysis.catalog import target


@dataclasses.dataclass(frozen=True)
class Narrowing:
    """The business context that filters a search, after the caller's values were applied."""

    business: resources.BusinessContext
    conflicts: tuple[str, ...] = ()
    """Caller values contradicting the incident; when non-empty nothing is eligible."""


def norm(value: str) -> str:
    """The form label values are compared in."""
    return value.strip().casefold()


def admits(allowed: Sequence[str] | None, value: str | None) -> bool:
    """Whether a label list admits an incident value (see the module rules)."""
    if not allowed:
        return True
    if value is None:
        return False
    wanted = norm(value)
    return any(norm(candidate) == wanted for candidate in allowed)


def risk_allowed(risk_level: str, risk_tolerance: str) -> bool:
    return resources.RISK_ORDER[risk_level] <= resources.RISK_ORDER[risk_tolerance]


def restrictions(
    spec: resources.RemediationWorkflowSpec, business: resources.BusinessContext
) -> list[tuple[str, list[str] | None, str | None]]:
    """(wire label name, the workflow's allowed values, the incident's value) per business label."""
    labels = spec.labels
    return [
        ("environment", labels.environment, business.environment),
        ("priority", labels.priority, business.priority),
        ("businessCategory", labels.business_category, business.business_category),
    ]


def ineligibility(
    spec: resources.RemediationWorkflowSpec,
    business: resources.BusinessContext,
    *,
    facts: target.TargetFacts | None = None,
) -> list[str]:
    """Human-readable reasons the workflow may NOT be used for this incident; empty = eligible.
    ``facts`` are those detected on the remediation target (None = unknown)."""
    reasons = [
        _label_reason(label, allowed, value)
        for label, allowed, value in restrictions(spec, business)
        if not admits(allowed, value)
    ]
    if not risk_allowed(spec.risk_level, business.risk_tolerance):
        reasons.append(
            f"riskLevel {spec.risk_level} exceeds the incident's risk tolerance {business.risk_tolerance}"
        )
    return reasons + conditional_ineligibility(spec, business, facts=facts)


def conditional_ineligibility(
    spec: resources.RemediationWorkflowSpec,
    business: resources.BusinessContext,
    *,
    facts: target.TargetFacts | None = None,
) -> list[str]:
    """The reasons that cannot be precomputed as label bitsets: lifecycle, customLabels and
    detectedLabels (the search index checks these per candidate)."""
    reasons = ["lifecycle is Disabled"] if spec.lifecycle == "Disabled" else []
    carried = custom_labels(business)
    for key, wanted in sorted((spec.custom_labels or {}).items()):
        value = carried.get(key)
        if value is None:
            reasons.append(f"customLabels.{key} is required but the incident has no {key} label")
        elif wanted not in (target.WILDCARD, value):
            reasons.append(f"customLabels.{key} {value!r} is not {wanted!r}")
    return reasons + target.unmet_detected_labels(spec.detected_labels, facts)


RISK_TOLERANCE_LABEL = "risk_tolerance"


def custom_labels(business: resources.BusinessContext) -> dict[str, str]:
    """The incident's custom labels as workflows' ``customLabels`` are matched against: its own, and
    ``risk_tolerance`` = its risk tolerance when it does not state that label (module rules)."""
    return {RISK_TOLERANCE_LABEL: business.risk_tolerance, **(business.custom_labels or {})}


def is_conditional(spec: resources.RemediationWorkflowSpec) -> bool:
    """Whether eligibility depends on more than the label bitsets (see ``conditional_ineligibility``)."""
    required = spec.detected_labels
    return bool(spec.custom_labels) or (required is not None and any(v is not None for _, v in required))


PRIVILEGED_ROLES: tuple[str, ...] = ("cluster-admin", "system:masters", "admin", "edit", "system:*")
"""Roles no remediation may bind, whatever a catalog entry allows (names or globs, compared without
case): ``cluster-admin`` and the ``system:masters`` group hand over the cluster, ``admin`` and ``edit``
a namespace (``edit`` reads its Secrets and runs Pods as any of its ServiceAccounts), ``system:*`` are
the control plane's own. ``AIANALYSIS_PRIVILEGED_ROLES`` adds more (by default this operator's own
roles: binding its approver role would let a remediation approve the next one)."""

_ROLE_SEPARATORS = re.compile(r"[\s,;]+")


def privileged_binding(values: Mapping[str, str], *, also: Sequence[str] = ()) -> list[str]:
    """Why these (canonical) parameter values bind a role no remediation may bind; empty = none.
    Any parameter named like a role (``*ROLE*``) counts, so a catalog entry cannot rename its way out;
    a value names its roles alone, in a JSON array, separated by commas or spaces, or as a path
    (``ClusterRole/admin``). ``also``: more names or globs (settings)."""
    denied = [pattern.strip().casefold() for pattern in (*PRIVILEGED_ROLES, *also) if pattern.strip()]
    found: list[str] = []
    for name, value in sorted(values.items()):
        if "ROLE" not in name.upper():
            continue
        for role in _role_names(value):
            if any(fnmatch.fnmatchcase(role.casefold(), pattern) for pattern in denied):
                found.append(f"parameter {name} names {role!r}: binding {role} is never a remediation")
    return found


def _role_names(value: str) -> list[str]:
    try:
        items = json.loads(value) if value.lstrip().startswith("[") else None
    except ValueError:
        items = None
    words = [str(item) for item in items] if isinstance(items, list) else _ROLE_SEPARATORS.split(value)
    return [word.strip().rpartition("/")[2] for word in words if word.strip()]


def deprecation(spec: resources.RemediationWorkflowSpec) -> str | None:
    """The warning shown with a Deprecated workflow (None when it is not)."""
    if spec.lifecycle != "Deprecated":
        return None
    return f"workflow {spec.workflow_id} {spec.version} is Deprecated: prefer a non-deprecated alternative"


def narrow(
    business: resources.BusinessContext,
    *,
    environment: str | None = None,
    priority: str | None = None,
    business_category: str | None = None,
    risk_tolerance: str | None = None,
) -> Narrowing:
    """Apply the caller's (LLM's) business values to the incident's; they can only narrow.

    - A value equal to the incident's changes nothing; a different one is a conflict (the
      intersection of one fact with another value is empty), reported so the tool can say why
      nothing matched.
    - A value where the incident has none changes nothing either: only workflows that do not
      restrict that label are eligible, and they admit any value.
    - Risk tolerance becomes the lower of the two. The custom labels stay the incident's
      (``custom_labels`` is taken before narrowing): a lower tolerance asked for by the search
      filters by ``riskLevel``, it does not make the incident a low-tolerance one.
    """
    asked = {"environment": environment, "priority": priority, "businessCategory": business_category}
    fixed = {
        "environment": business.environment,
        "priority": business.priority,
        "businessCategory": business.business_category,
    }
    conflicts = tuple(
        f"{label} is {fixed[label]!r} for this incident (set by the incident, not the search); "
        f"filter {label}={value!r} cannot change it, so nothing matches"
        for label, value in asked.items()
        if value is not None
        and value.strip()
        and fixed[label] is not None
        and norm(value) != norm(fixed[label] or "")
    )
    tolerance: str = business.risk_tolerance
    if risk_tolerance is not None:
        if risk_tolerance not in resources.RISK_ORDER:
            raise ValueError(f"unknown risk tolerance {risk_tolerance!r}")
        tolerance = min(tolerance, risk_tolerance, key=resources.RISK_ORDER.__getitem__)
    narrowed = business.model_copy(
        update={"risk_tolerance": tolerance, "custom_labels": custom_labels(business)}
    )
    return Narrowing(business=narrowed, conflicts=conflicts)


def _label_reason(label: str, allowed: Sequence[str] | None, value: str | None) -> str:
    listed = ", ".join(allowed or ())
    if value is None:
        return f"{label} is restricted to [{listed}] but the incident has no {label}"
    return f"{label} {value!r} is not in [{listed}]"
