"""``list_action_types``, ``search_workflow_catalog`` and ``get_workflow_details``
(the business context applied whatever the LLM passes). Discovery goes action types → workflows → details.

- The incident's business context, and the facts detected on the remediation target
  (``facts``, for workflows' ``detectedLabels``), are applied by the catalog on every call,
  whatever the LLM passes; the LLM's business arguments can only narrow them.
- Details show the structured guidance (whenToUse, whenNotToUse, preconditions) and mark the
  parameters the system fills from the remediation target: the LLM does not fill those.
- A Deprecated workflow is offered with a warning; a Disabled one never is.
- Search answers the minimal schema ``{workflow_id, version, description, confidence}``; details
  give the parameter schema and never the risk level (risk is filtered before the LLM, not
  reasoned about by it) nor the container image (execution internals).
- Details of an unknown workflow and of one the policy excludes get the same refusal, so the LLM
  cannot probe for workflows hidden from this incident.
- Whatever either tool shows is recorded in ``seen``: validation accepts only those workflows
  (upstream #2442: the allow-list was the whole catalog instead of what the LLM was shown).
"""

from __future__ import annotations

import json
from typing import Any

from aianalysis import catalog, resources
from aianalysis.analysis.tools import _args, _output, _results
from aianalysis.catalog import policy

MAX_DESCRIPTION_CHARS = 600


class CatalogTools:
    def __init__(
        self,
        *,
        catalog: catalog.Catalog,
        business: resources.BusinessContext,
        seen: dict[str, set[str]],
        max_chars: int,
        facts: catalog.TargetFacts | None = None,
    ) -> None:
        self._catalog = catalog
        self._business = business
        self._seen = seen
        self._max_chars = max_chars
        self.facts = facts
        """Facts detected on the remediation target (None = unknown); may be replaced when the
        target is known better (e.g. after the cluster was read)."""

    def action_types(self, args: _args.ActionTypesArgs) -> _results.ToolResult:
        del args  # no arguments: the incident decides
        rows = self._catalog.action_types(business=self._business, facts=self.facts)
        listed = [
            {"action_type": action, "meaning": meaning, "workflows": count}
            for action, meaning, count in rows
            if action
        ]
        payload: dict[str, Any] = {"action_types": listed}
        unclassified = sum(count for action, _, count in rows if not action)
        if unclassified:
            payload["workflows_without_action_type"] = unclassified
        payload["next"] = (
            "search_workflow_catalog with the action_type your RCA calls for and a query, then "
            "get_workflow_details"
            if rows
            else "no workflow is eligible for this incident; submit with human_review_reason "
            '"no_eligible_workflow"'
        )
        return _answer(payload, max_chars=self._max_chars)

    def search(self, args: _args.SearchArgs) -> _results.ToolResult:
        query = catalog.SearchQuery(
            text=args.query,
            signal_type=args.signal_type,
            action_type=args.action_type,
            severity=args.severity,
            component=args.component,
            environment=args.environment,
            priority=args.priority,
            business_category=args.business_category,
            risk_tolerance=args.risk_tolerance,
            top_k=args.top_k,
        )
        hits = self._catalog.search(query, business=self._business, facts=self.facts)
        text, payload = self._fit(
            [_hit(hit) for hit in hits], note=self._empty_note(args) if not hits else None
        )
        for hit in payload["workflows"]:
            self._seen.setdefault(hit["workflow_id"], set()).add(hit["version"])
        return _results.ToolResult(text, data=_results.CatalogResult(payload=payload))

    def details(self, args: _args.DetailsArgs) -> _results.ToolResult | None:
        """The workflow as JSON, or None when it is unknown OR not eligible (same answer). Without
        a version (or ``latest``) it is the highest version eligible for this incident."""
        workflow = self._catalog.eligible(
            args.workflow_id, args.version, business=self._business, facts=self.facts
        )
        if workflow is None:
            return None
        spec = workflow.spec
        self._seen.setdefault(spec.workflow_id, set()).add(spec.version)
        payload: dict[str, Any] = {
            "workflow_id": spec.workflow_id,
            "version": spec.version,
            "title": spec.title,
            "description": spec.description,
        }
        if spec.action_type:
            payload["action_type"] = spec.action_type
        if spec.labels.signal_types:
            payload["signal_types"] = spec.labels.signal_types
        if spec.labels.component:
            payload["acts_on"] = spec.labels.component
        guidance = _guidance(spec.guidance)
        if guidance:
            payload["guidance"] = guidance
        payload["parameters"] = [_parameter(p) for p in spec.parameters]
        if spec.estimated_duration:
            payload["estimated_duration"] = spec.estimated_duration
        warning = policy.deprecation(spec)
        if warning:
            payload["warning"] = warning
        return _answer(payload, max_chars=self._max_chars)

    def _fit(self, hits: list[dict[str, Any]], *, note: str | None) -> tuple[str, dict[str, Any]]:
        """The JSON answer with as many hits as fit in ``max_chars`` (never a cut JSON document)."""
        shown = list(hits)
        while True:
            payload: dict[str, Any] = {"workflows": shown, "total_results": len(shown)}
            if len(shown) < len(hits):
                payload["note"] = (
                    f"{len(hits) - len(shown)} lower-ranked result(s) were left out to fit the output "
                    "limit; use a more specific query or a smaller top_k."
                )
            elif note:
                payload["note"] = note
            text = _json(payload)
            if len(text) <= self._max_chars or not shown:
                return text, payload
            shown.pop()

    def _empty_note(self, args: _args.SearchArgs) -> str:
        narrowing = policy.narrow(
            self._business,
            environment=args.environment,
            priority=args.priority,
            business_category=args.business_category,
            risk_tolerance=args.risk_tolerance,
        )
        if narrowing.conflicts:
            return "; ".join(narrowing.conflicts) + ". Leave the business filters out."
        b = self._business
        context = (
            f"environment={b.environment or 'unset'}, priority={b.priority or 'unset'}, "
            f"business_category={b.business_category or 'unset'}, risk_tolerance={b.risk_tolerance}"
        )
        return (
            "No eligible workflow matches. Results are always limited to workflows eligible for this "
            f"incident ({context}); the system applies that and it cannot be widened. "
            "You may try another query or signal type; if nothing fits, submit with "
            'human_review_reason "no_eligible_workflow".'
        )


def refusal(args: _args.DetailsArgs) -> str:
    """The one answer for unknown and excluded workflows alike (built from the request only)."""
    version = f" version {args.version!r}" if args.version else ""
    return (
        f"workflow {args.workflow_id!r}{version} is not available to this analysis (unknown, or not "
        "eligible for this incident). Only workflows returned by search_workflow_catalog can be used."
    )


def _hit(hit: catalog.SearchHit) -> dict[str, Any]:
    description = hit.description
    if len(description) > MAX_DESCRIPTION_CHARS:
        description = description[: MAX_DESCRIPTION_CHARS - 3] + "..."
    out: dict[str, Any] = {
        "workflow_id": hit.workflow_id,
        "version": hit.version,
        "description": description,
        "confidence": round(hit.confidence, 3),
    }
    if hit.action_type:
        out["action_type"] = hit.action_type
    if hit.deprecated:
        out["warning"] = "Deprecated: prefer a non-deprecated alternative"
    return out


def _guidance(guidance: resources.WorkflowGuidance | None) -> dict[str, str]:
    if guidance is None:
        return {}
    found = {
        "when_to_use": guidance.when_to_use,
        "when_not_to_use": guidance.when_not_to_use,
        "preconditions": guidance.preconditions,
    }
    return {key: value for key, value in found.items() if value}


def _parameter(parameter: resources.WorkflowParameter) -> dict[str, Any]:
    out: dict[str, Any] = {"name": parameter.name, "type": parameter.type, "required": parameter.required}
    source = catalog.target_field(parameter)
    if source is not None:
        out["filled_by"] = f"system: target {source}"
    for field in ("description", "enum", "pattern", "default", "depends_on"):
        value = getattr(parameter, field)
        if value is not None:
            out[field] = value
    for field in ("minimum", "maximum"):
        value = getattr(parameter, field)
        if value is not None:
            out[field] = int(value) if float(value).is_integer() else value
    return out


def _answer(payload: dict[str, Any], *, max_chars: int) -> _results.ToolResult:
    """The payload as the tool's text (capped) and as its values."""
    return _results.ToolResult(
        _output.cap(_json(payload), max_chars=max_chars), data=_results.CatalogResult(payload=payload)
    )


def _json(payload: dict[str, Any]) -> str:
    """Compact JSON (no spaces after separators): re-read on every later turn."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
