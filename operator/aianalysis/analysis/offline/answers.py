"""The offline provider's answers: a :class:`answer.SelectionAnswer`-shaped dict for a chosen
plan, for a declined finding, and for a catalog with nothing eligible — with the root cause, the
confidence the evidence supports, and, for a recovery, the strategy from the execution records.

Pure: the finding, the plan and the spec in, the answer's fields out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from aianalysis import resources
from aianalysis.analysis.offline import evidence, plan, rule

MAX_CONFIDENCE = 0.95
UNEXAMINED = 0.8
"""Scale of the catalog score when nothing was investigated (stays below the default 0.7 floor
unless the match is near perfect)."""
MAX_ALTERNATIVES = 3
_POLICY = re.compile(r"\(environment=[^)]*\)")


def confidence(hit: plan.Hit, finding: rule.Finding | None, *, backed: bool = True) -> float:
    """From the evidence: half for having a finding, up to a third more for the facts behind it,
    the rest for how well the workflow matches it (its action type, else the catalog score).

    A finding without an action type backs nothing. The finding backs the workflow its search
    ranked first (or one of its action type); any other (a recovery's alternative after that one
    failed) is rated like an unexamined catalog match."""
    same_action = bool(finding and finding.action_type and hit.action_type == finding.action_type)
    # A finding that names no action (a Job failed, a volume fills up) tells the workflows apart
    # no better than the catalog does: the choice rests on the search.
    if finding is None or finding.action_type is None or not (backed or same_action):
        return round(min(hit.confidence * UNEXAMINED, MAX_CONFIDENCE), 3)
    match = 1.0 if same_action else hit.confidence
    return round(min(0.5 + 0.3 * finding.strength + 0.15 * match, MAX_CONFIDENCE), 3)


def build_answer(
    chosen: plan.Plan,
    *,
    spec: resources.AIAnalysisSpec,
    others: list[plan.Hit],
    findings: Sequence[rule.Finding] = (),
    seen: evidence.Evidence | None = None,
    backed: bool = True,
) -> dict[str, Any]:
    """A :class:`answer.SelectionAnswer`-shaped dict selecting ``chosen`` (``backed``: the finding's
    search ranked it first; ``seen``: what the investigation saw, None without one)."""
    hit = chosen.hit
    target = chosen.target or spec.resource
    finding = findings[0] if findings else None
    name = hit.title or hit.workflow_id
    warnings: list[str] = []
    if finding is not None:
        rationale = (
            f"{finding.explanation} Evidence: {'; '.join(finding.facts)}. Chosen '{name}' for "
            f"{rule.ref_text(target)} (analyzer {finding.rule}; action type {finding.action_type or 'n/a'})."
        )
    elif seen is not None and seen.cluster:
        rationale = (
            f"'{name}' is the best catalog match for signal {spec.signal.type} eligible for "
            f"{rule.ref_text(target)}. "
            "The cluster was read but no analyzer recognised the failure, so the choice rests on the alert."
        )
        warnings.append("Offline provider: no analyzer matched the evidence; review before executing.")
    else:
        rationale = (
            f"'{name}' is the best catalog match for signal {spec.signal.type} eligible for "
            f"{rule.ref_text(target)}; "
            "no cluster could be read, so nothing was investigated."
        )
        warnings.append(
            "Offline provider: no root-cause investigation was possible; review before executing."
        )
    if chosen.missing:
        rationale += f" Required parameters {', '.join(chosen.missing)} are not supported by the evidence."
        warnings.append(f"Cannot infer required parameters: {', '.join(chosen.missing)}.")
    selected: dict[str, Any] = {
        "workflow_id": hit.workflow_id,
        "confidence": confidence(hit, finding, backed=backed),
        "rationale": rationale,
        "parameters": dict(chosen.parameters),
    }
    if hit.version:
        selected["version"] = hit.version
    raw = _common(spec, target=target, findings=findings) | {
        "selected_workflow": selected,
        "alternative_workflows": _alternatives(others, chosen=hit),
        "warnings": warnings,
        "needs_human_review": False,
    }
    return raw | _recovery(spec, chosen)


def build_declined(
    spec: resources.AIAnalysisSpec, finding: rule.Finding, *, others: Sequence[rule.Finding]
) -> dict[str, Any]:
    """The evidence says no workflow should run (a red herring): a person decides, and why."""
    raw = _common(spec, target=finding.target, findings=[finding, *others]) | {
        "selected_workflow": None,
        "warnings": [f"Declined: {finding.decline}. {finding.explanation}"],
        "needs_human_review": True,
        "human_review_reason": "inconclusive",
    }
    return raw | _recovery(spec, None)


def build_empty_answer(
    spec: resources.AIAnalysisSpec, *, finding: rule.Finding | None = None, note: str = ""
) -> dict[str, Any]:
    """No catalog workflow was eligible: a person has to decide; the root cause says why (the
    finding, and what the search tool said about the incident's business context)."""
    warning = "Offline provider: the catalog search returned no eligible workflow."
    if finding is not None:
        warning = (
            f"No eligible workflow fits the finding ({finding.rule}: action type "
            f"{finding.action_type or 'n/a'}, "
            f"signal {finding.signal_type}). {finding.explanation}"
        )
    common = _common(spec, target=finding.target if finding else None, findings=[finding] if finding else [])
    context = _POLICY.search(note)
    why = (
        f"No catalog workflow that fits is eligible under this incident's business context "
        f"{context.group(0)}."
        if context
        else "No catalog workflow is eligible for this incident."
    )
    common["root_cause_assessment"] = f"{why} {common['root_cause_assessment']}"
    raw = common | {
        "selected_workflow": None,
        "warnings": [warning],
        "needs_human_review": True,
        "human_review_reason": "no_eligible_workflow",
    }
    return raw | _recovery(spec, None)


def _common(
    spec: resources.AIAnalysisSpec,
    *,
    target: resources.ResourceRef | None = None,
    findings: Sequence[rule.Finding] = (),
) -> dict[str, Any]:
    signal = spec.signal
    target = target or spec.resource
    affected = {"kind": target.kind, "name": target.name}
    if target.namespace:
        affected["namespace"] = target.namespace
    common: dict[str, Any] = {"rca_severity": signal.severity, "affected_resource": affected}
    if findings:
        finding = findings[0]
        common |= {
            "analysis_summary": (
                f"Offline analysis of {signal.type} on {rule.ref_text(spec.resource)}: {finding.explanation}"
            ),
            "root_cause_assessment": f"{finding.explanation} ({'; '.join(finding.facts)})",
            "contributing_factors": [*finding.facts, *(f.explanation for f in findings[1:3])],
        }
        if finding.signal_type != signal.type and not finding.decline:
            common["signal_type"] = finding.signal_type
        return common
    evidence_text = signal.error_message or signal.description or signal.alert_name or "no details given"
    return common | {
        "analysis_summary": (
            f"Offline analysis of {signal.type} on {rule.ref_text(spec.resource)}: no analyzer recognised "
            "the failure; the catalog was ranked for the signal."
        ),
        "root_cause_assessment": (
            f"Not established (offline provider). Reported signal {signal.type}: {evidence_text}"
        ),
    }


def _alternatives(hits: list[plan.Hit], *, chosen: plan.Hit) -> list[dict[str, Any]]:
    rest = [hit for hit in hits if hit.workflow_id != chosen.workflow_id][:MAX_ALTERNATIVES]
    out: list[dict[str, Any]] = []
    for hit in rest:
        item: dict[str, Any] = {
            "workflow_id": hit.workflow_id,
            "confidence": min(hit.confidence, MAX_CONFIDENCE),
        }
        if hit.version:
            item["version"] = hit.version
        out.append(item)
    return out


def _recovery(spec: resources.AIAnalysisSpec, chosen: plan.Plan | None) -> dict[str, Any]:
    """The recovery fields, from the execution records (the offline provider cannot analyse)."""
    if spec.recovery is None:
        return {}
    previous = spec.recovery.previous_executions
    history = "; ".join(
        f"attempt {i} ran {p.selected_workflow.workflow_id} {p.selected_workflow.version} and failed with "
        f"{p.failure.reason}" + (f" ({p.failure.message})" if p.failure.message else "")
        for i, p in enumerate(previous, start=1)
    )
    assessment = {
        "failure_understood": False,
        "failure_reason_analysis": (
            f"Taken from the execution records, not analysed (offline provider): {history}."
        ),
        "state_changed": False,
        "current_signal_type": spec.signal.type,
    }
    return {
        "recovery_analysis": {"previous_attempt_assessment": assessment},
        "recovery_strategy": _strategy(previous, chosen),
    }


def _strategy(previous: list[resources.PreviousExecution], chosen: plan.Plan | None) -> dict[str, Any]:
    if chosen is None:
        return {
            "approach": "human_review",
            "differs_from_previous": True,
            "why_different": "No eligible workflow is left in the catalog; a person has to decide.",
        }
    same = [p for p in previous if p.selected_workflow.workflow_id == chosen.hit.workflow_id]
    if not same:
        return {
            "approach": "alternative_workflow",
            "differs_from_previous": True,
            "why_different": f"{chosen.hit.workflow_id} has not been tried on this incident.",
        }
    repeated = any(p.selected_workflow.parameters == chosen.parameters for p in same)
    return {
        "approach": "same_workflow_new_parameters",
        "differs_from_previous": not repeated,
        "why_different": (
            f"Every other eligible workflow is exhausted; {chosen.hit.workflow_id} already failed here"
            + (" with the same parameters." if repeated else " and is retried with different parameters.")
        ),
    }
