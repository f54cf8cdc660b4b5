"""The offline provider's conversation: it investigates the incident through the same read-only
tools an LLM gets, runs the rules on what it saw, and submits the best eligible catalog workflow
for the refined signal.

**Evidence first.** With a cluster attached, :mod:`investigation` reads the incident's
surroundings (owner chain, Pods, rollout revisions, events, Nodes, HPA/PDB, referenced ConfigMaps
and PVCs) and the :mod:`rules` turn that into findings: a refined signal, an action type, the object to
act on and the parameter values the evidence supports. A finding that contradicts the alert (a
red herring) or that no workflow can fix ends in human review, with the reason in the answer.

**Then the catalog.** It searches with the finding's action type when the catalog has it, else
with its refined signal type and words (and, without a finding, with the alert's). Hits are
taken in search order, without the workflows that already failed on this incident and without
those whose ``acts_on`` does not admit the target; the first remaining one is THE choice. Its
parameters come from the target, the finding's values and the defaults — never guessed: a
required value nothing supports is left out so the validator reports it and a person completes
it (``parameters_incomplete``). ``correct()`` re-submits the same answer when only parameters
were rejected, and moves to the next eligible hit for any other rejection.

**Confidence** is derived from the evidence: how many independent facts back the finding and
how well the workflow matches it. Without evidence it is the catalog match score, scaled down
(an unexamined match is never confident).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from aianalysis import resources
from aianalysis.analysis import conversation, tools
from aianalysis.analysis.offline import answers, evidence, investigation, plan, rule, rules

PROVIDER_NAME = "offline"
MODEL_NAME = "offline-analyzers-v2"
SEARCH_TOOL = "search_workflow_catalog"
DETAILS_TOOL = "get_workflow_details"
ACTION_TYPES_TOOL = "list_action_types"
SEARCH_TOP_K = 10
FIT_CANDIDATES = 4
"""How many of the finding's hits are compared by the evidence values their parameters take."""
FIT_MARGIN = 0.8
"""Only hits matching nearly as well as the first (this share of its score) are compared."""
PARAMETER_RULES = frozenset({"missing_parameter", "parameters"})
"""Rejections that re-submitting the same choice answers (a person completes the parameters)."""
SCOPE_RULE = "target_out_of_scope"


class OfflineProvider:
    name = PROVIDER_NAME
    model = MODEL_NAME

    def __init__(self, *, rules: Sequence[rule.Rule] = rules.RULES) -> None:
        """``rules``: the rules in priority order (the default is :data:`rules.RULES`)."""
        self._rules = tuple(rules)

    def open(
        self, *, system: str, prompt: str, toolbox: conversation.Tools, spec: resources.AIAnalysisSpec
    ) -> OfflineConversation:
        """The prompts are ignored: this provider reads the structured spec and the cluster."""
        return OfflineConversation(toolbox=toolbox, spec=spec, rules=self._rules)

    async def aclose(self) -> None:
        """Nothing to release."""

    async def check_model(self) -> str | None:
        """There is no model to check."""
        return None


class OfflineConversation:
    def __init__(
        self,
        *,
        toolbox: conversation.Tools,
        spec: resources.AIAnalysisSpec,
        rules: Sequence[rule.Rule] = rules.RULES,
    ) -> None:
        self._toolbox = toolbox
        self._spec = spec
        self._rules = rules
        self._queue: list[plan.Hit] | None = None
        self._chain: list[resources.ResourceRef] = [spec.resource]
        self._seen: evidence.Evidence | None = None
        self._findings: list[rule.Finding] = []
        self._cursor = 0
        self._last: dict[str, Any] | None = None
        self._counter = conversation.UsageCounter()
        self._note = ""
        """What the search tool said when it found nothing (the business-context policy)."""
        self._top: str | None = None
        """The workflow the search ranked first: the one the evidence backs."""
        self._plan_made: plan.Plan | None = None
        self._excluded: set[tuple[str, str]] = set()
        """Targets the validator found out of the incident's scope."""

    @property
    def usage(self) -> resources.LLMUsage:
        return self._counter.snapshot(provider=PROVIDER_NAME, model=MODEL_NAME)

    @property
    def finding(self) -> rule.Finding | None:
        return self._findings[0] if self._findings else None

    async def answer(self) -> conversation.Submission:
        if self._queue is None:
            await self._investigate()
            finding = self.finding
            if finding is not None and finding.decline:
                self._queue = []
                self._last = answers.build_declined(self._spec, finding, others=self._findings[1:])
                return conversation.Submission(raw=self._last)
            hits = await self._by_fit(await self._search(finding), finding)
            self._top = hits[0].workflow_id if hits else None
            self._queue = plan.rank(hits, recovery=self._spec.recovery, supported=_supported(finding))
        return await self._submit_next()

    async def correct(self, errors: list[str]) -> conversation.Submission:
        """Only the rule codes are read: a parameters-only rejection keeps the best-ranked choice
        (re-submitted as is); any other moves on to the next eligible candidate."""
        if self._last is not None and rejected_rules(errors) <= PARAMETER_RULES:
            return conversation.Submission(raw=self._last)
        if SCOPE_RULE in rejected_rules(errors) and self._plan_made is not None:
            # The same workflow on the next object it may act on (a Node nothing in the
            # namespace names → the workload), with the same evidence values.
            rejected = self._plan_made.target or self._spec.resource
            self._excluded.add((rejected.kind, rejected.name))
            chosen = await self._plan(self._plan_made.hit)
            if chosen is not None:
                return await self._submit(chosen)
        if self._queue == [] and self._last is not None:
            return conversation.Submission(raw=self._last)
        return await self.answer()

    async def _investigate(self) -> None:
        names = [str(d.get("name")) for d in self._toolbox.definitions()]
        reading = investigation.Investigation(self._tool, tool_names=names, spec=self._spec)
        self._seen = await reading.gather()
        self._chain = _chain_with(reading.chain, self._seen)
        self._findings = rules.findings(self._seen, self._rules) if self._seen.cluster else []

    async def _submit_next(self) -> conversation.Submission:
        chosen = await self._choose()
        if chosen is not None:
            return await self._submit(chosen)
        if self._last is None:
            self._last = answers.build_empty_answer(self._spec, finding=self.finding, note=self._note)
        return conversation.Submission(raw=self._last)

    async def _submit(self, chosen: plan.Plan) -> conversation.Submission:
        self._plan_made = chosen
        self._last = answers.build_answer(
            chosen,
            spec=self._spec,
            others=self._queue or [],
            findings=self._findings,
            seen=self._seen,
            backed=chosen.hit.workflow_id == self._top,
        )
        return conversation.Submission(raw=self._last)

    async def _choose(self) -> plan.Plan | None:
        queue = self._queue or []
        while self._cursor < len(queue):
            hit = queue[self._cursor]
            self._cursor += 1
            chosen = await self._plan(hit)
            if chosen is not None:
                return chosen
        return None

    async def _search(self, finding: rule.Finding | None) -> list[plan.Hit]:
        signal = self._spec.signal
        alert = " ".join(part for part in (signal.type, signal.alert_name, signal.error_message) if part)
        if finding is None:
            return await self._hits({"signal_type": signal.type, "query": alert})
        # The business category's words favour a workflow written for it (a guarded payments variant).
        query = " ".join(filter(None, (finding.query, self._spec.business_context.business_category)))
        if finding.action_type and finding.action_type in await self._action_types():
            hits = await self._hits({"action_type": finding.action_type, "query": query})
            if hits:
                return hits
        if finding.action_only:
            return []
        hits = await self._hits({"signal_type": finding.signal_type, "query": query})
        if hits or finding.signal_type == signal.type or not finding.alert_remedies:
            return hits
        return await self._hits({"signal_type": signal.type, "query": query})

    async def _by_fit(self, hits: list[plan.Hit], finding: rule.Finding | None) -> list[plan.Hit]:
        """Among the first hits of the finding's action type that match nearly as well as the
        first, the workflow that takes the most of the values the evidence established (a
        ConfigMap's name, a taint key) comes first: it is the one written for this case — when
        the first takes none of them. Search order otherwise (a stable sort)."""
        if finding is None or not finding.values or not finding.action_type or len(hits) < 2:
            return hits
        fits: dict[str, int] = {}
        for hit in hits[:FIT_CANDIDATES]:
            if (
                hit.action_type not in (None, finding.action_type)
                or hit.confidence < hits[0].confidence * FIT_MARGIN
            ):
                continue
            details = await self._json(DETAILS_TOOL, plan.details_arguments(hit))
            names = {p.name for p in plan.parse_parameters(details)}
            fits[hit.workflow_id] = len(names & set(finding.values))
        if fits.get(hits[0].workflow_id, 0) > 0:
            return hits  # the first takes evidence values already: the search's choice stands
        return sorted(hits, key=lambda h: -fits.get(h.workflow_id, 0))

    async def _action_types(self) -> set[str]:
        result = await self._json(ACTION_TYPES_TOOL, {})
        rows = result.get("action_types") if isinstance(result, dict) else None
        return {str(r.get("action_type")) for r in rows or () if isinstance(r, dict)}

    async def _hits(self, arguments: dict[str, Any]) -> list[plan.Hit]:
        result = await self._json(SEARCH_TOOL, arguments | {"top_k": SEARCH_TOP_K})
        if isinstance(result, dict) and isinstance(result.get("note"), str):
            self._note = result["note"]
        return [] if result is None else plan.parse_hits(result)

    async def _plan(self, hit: plan.Hit) -> plan.Plan | None:
        details = await self._json(DETAILS_TOOL, plan.details_arguments(hit))
        if details is None:
            return None
        finding = self.finding
        candidates = [finding.target] if finding is not None and finding.target is not None else []
        candidates += self._chain
        target = next(
            (
                r
                for r in candidates
                if (r.kind, r.name) not in self._excluded and plan.acts_on(details, resource=r)
            ),
            None,
        )
        if target is None:
            return None
        values = dict(finding.values) if finding is not None else {}
        chosen = plan.plan_parameters(hit, plan.parse_parameters(details), resource=target, values=values)
        if isinstance(details, dict) and isinstance(details.get("action_type"), str):
            chosen = dataclasses.replace(
                chosen, hit=dataclasses.replace(hit, action_type=details["action_type"])
            )
        return dataclasses.replace(chosen, target=target)

    async def _tool(self, name: str, arguments: dict[str, Any]) -> conversation.ToolOutcome:
        self._counter.tool_calls += 1
        return await self._toolbox.call(name, arguments)

    async def _json(self, name: str, arguments: dict[str, Any]) -> Any:
        """A catalog tool's answer, as the values its JSON text shows (None: it refused)."""
        outcome = await self._tool(name, arguments)
        return outcome.data.payload if isinstance(outcome.data, tools.CatalogResult) else None


def _chain_with(chain: list[resources.ResourceRef], found: evidence.Evidence) -> list[resources.ResourceRef]:
    """The owner chain, plus the workload when it was found another way (an HPA's scale target)
    and the PVCs its Pods mount: the objects a workflow may act on, nearest first."""
    out = list(chain)
    extra = [found.workload] if found.workload is not None else []
    extra += [
        resources.ResourceRef(kind="PersistentVolumeClaim", name=name, namespace=found.incident.namespace)
        for name in found.claims
    ]
    for ref in extra:
        if all((r.kind, r.name) != (ref.kind, ref.name) for r in out):
            out.append(ref)
    return out


def _supported(finding: rule.Finding | None) -> frozenset[str] | None:
    """Parameter names the evidence supplies values for (None without a finding)."""
    return frozenset(finding.values) if finding is not None else None


def rejected_rules(errors: list[str]) -> set[str]:
    """The rule codes of validation errors (``[code] message``)."""
    return {error[1 : error.index("]")] for error in errors if error.startswith("[") and "]" in error}
