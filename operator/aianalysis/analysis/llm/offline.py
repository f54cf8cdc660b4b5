"""A deterministic, network-free stand-in for the LLM: it investigates the incident through the
same read-only tools, runs the analyzers on what it saw, and submits the best eligible catalog
workflow for the refined signal.

**Evidence first.** With a cluster attached, :mod:`evidence` reads the incident's surroundings
(owner chain, Pods, rollout revisions, events, Nodes, HPA/PDB, referenced ConfigMaps and PVCs)
and :mod:`analyzers` turns that into findings: a refined signal, an action type, the object to
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
import re
from collections.abc import Sequence
from typing import Any

from aianalysis import catalog, resources
from aianalysis.analysis import conversation, tools
from aianalysis.analysis.llm import analyzers, evidence

PROVIDER_NAME = "offline"
MODEL_NAME = "offline-analyzers-v2"
SEARCH_TOOL = "search_workflow_catalog"
DETAILS_TOOL = "get_workflow_details"
ACTION_TYPES_TOOL = "list_action_types"
SEARCH_TOP_K = 10
MAX_CONFIDENCE = 0.95
_POLICY = re.compile(r"\(environment=[^)]*\)")
UNEXAMINED = 0.8
"""Scale of the catalog score when nothing was investigated (stays below the default 0.7 floor
unless the match is near perfect)."""
MAX_ALTERNATIVES = 3
FIT_CANDIDATES = 4
"""How many of the finding's hits are compared by the evidence values their parameters take."""
FIT_MARGIN = 0.8
"""Only hits matching nearly as well as the first (this share of its score) are compared."""
PARAMETER_RULES = frozenset({"missing_parameter", "parameters"})
SCOPE_RULE = "target_out_of_scope"
"""Rejections that re-submitting the same choice answers (a person completes the parameters)."""

KIND_NAME_PARAMETERS: dict[str, tuple[str, ...]] = {
    "Deployment": ("DEPLOYMENT_NAME", "DEPLOYMENT"),
    "StatefulSet": ("STATEFULSET_NAME", "STATEFULSET"),
    "DaemonSet": ("DAEMONSET_NAME", "DAEMONSET"),
    "Pod": ("POD_NAME", "POD"),
    "Node": ("NODE_NAME", "NODE"),
    "Service": ("SERVICE_NAME",),
    "PersistentVolumeClaim": ("PVC_NAME",),
    "HorizontalPodAutoscaler": ("HPA_NAME",),
    "PodDisruptionBudget": ("PDB_NAME",),
}
_NAME_PARAMETERS = frozenset(name for names in KIND_NAME_PARAMETERS.values() for name in names)
_TARGET_PARAMETERS: dict[str, str] = {
    "TARGET_NAMESPACE": "namespace",
    "NAMESPACE": "namespace",
    "TARGET_RESOURCE_NAMESPACE": "namespace",
    "TARGET_RESOURCE_KIND": "kind",
    "RESOURCE_KIND": "kind",
    "TARGET_KIND": "kind",
    "TARGET_RESOURCE_NAME": "name",
    "RESOURCE_NAME": "name",
    "TARGET_NAME": "name",
}


@dataclasses.dataclass(frozen=True)
class Hit:
    workflow_id: str
    version: str | None
    confidence: float
    title: str = ""
    action_type: str | None = None


@dataclasses.dataclass(frozen=True)
class Param:
    name: str
    type: str = "string"
    required: bool = False
    default: str | None = None
    enum: tuple[str, ...] = ()
    system: bool = False
    """Filled by the system from the remediation target (the details tool's ``filled_by``)."""


@dataclasses.dataclass(frozen=True)
class Plan:
    """A candidate with the parameters the evidence fills and those nobody can."""

    hit: Hit
    parameters: dict[str, str]
    missing: tuple[str, ...]
    target: resources.ResourceRef | None = None
    """The object the workflow acts on (None = the incident's resource)."""


class OfflineProvider:
    name = PROVIDER_NAME
    model = MODEL_NAME

    def __init__(self, *, rules: Sequence[analyzers.Rule] | None = None) -> None:
        self._rules = tuple(analyzers.RULES if rules is None else rules)

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
        rules: Sequence[analyzers.Rule] = analyzers.RULES,
    ) -> None:
        self._toolbox = toolbox
        self._spec = spec
        self._rules = rules
        self._queue: list[Hit] | None = None
        self._chain: list[resources.ResourceRef] = [spec.resource]
        self._evidence: analyzers.Evidence | None = None
        self._findings: list[analyzers.Finding] = []
        self._cursor = 0
        self._last: dict[str, Any] | None = None
        self._counter = conversation.UsageCounter()
        self._note = ""
        self._top: str | None = None
        self._plan_made: Plan | None = None
        self._excluded: set[tuple[str, str]] = set()
        """Targets the validator found out of the incident's scope."""
        """The workflow the search ranked first: the one the evidence backs."""
        """What the search tool said when it found nothing (the business-context policy)."""

    @property
    def usage(self) -> resources.LLMUsage:
        return self._counter.snapshot(provider=PROVIDER_NAME, model=MODEL_NAME)

    @property
    def finding(self) -> analyzers.Finding | None:
        return self._findings[0] if self._findings else None

    async def answer(self) -> conversation.Submission:
        if self._queue is None:
            await self._investigate()
            finding = self.finding
            if finding is not None and finding.decline:
                self._queue = []
                self._last = build_declined(self._spec, finding, others=self._findings[1:])
                return conversation.Submission(raw=self._last)
            hits = await self._by_fit(await self._search(finding), finding)
            self._top = hits[0].workflow_id if hits else None
            self._queue = rank(hits, recovery=self._spec.recovery, supported=_supported(finding))
        return await self._submit_next()

    async def correct(self, errors: list[str]) -> conversation.Submission:
        """Only the rule codes are read: a parameters-only rejection keeps the best-ranked choice
        (re-submitted as is); any other moves on to the next eligible candidate."""
        if self._last is not None and rules(errors) <= PARAMETER_RULES:
            return conversation.Submission(raw=self._last)
        if SCOPE_RULE in rules(errors) and self._plan_made is not None:
            # The same workflow on the next object it may act on (a Node nothing in the
            # namespace names → the workload), with the same evidence values.
            rejected = self._plan_made.target or self._spec.resource
            self._excluded.add((rejected.kind, rejected.name))
            plan = await self._plan(self._plan_made.hit)
            if plan is not None:
                return await self._submit(plan)
        if self._queue == [] and self._last is not None:
            return conversation.Submission(raw=self._last)
        return await self.answer()

    async def _investigate(self) -> None:
        names = [str(d.get("name")) for d in self._toolbox.definitions()]
        investigation = evidence.Investigation(self._tool, tool_names=names, spec=self._spec)
        self._evidence = await investigation.gather()
        self._chain = _chain_with(investigation.chain, self._evidence)
        self._findings = analyzers.analyze(self._evidence, self._rules) if self._evidence.cluster else []

    async def _submit_next(self) -> conversation.Submission:
        plan = await self._choose()
        if plan is not None:
            return await self._submit(plan)
        if self._last is None:
            self._last = build_empty_answer(self._spec, finding=self.finding, note=self._note)
        return conversation.Submission(raw=self._last)

    async def _submit(self, plan: Plan) -> conversation.Submission:
        self._plan_made = plan
        self._last = build_answer(
            plan,
            spec=self._spec,
            others=self._queue or [],
            findings=self._findings,
            evidence=self._evidence,
            backed=plan.hit.workflow_id == self._top,
        )
        return conversation.Submission(raw=self._last)

    async def _choose(self) -> Plan | None:
        queue = self._queue or []
        while self._cursor < len(queue):
            hit = queue[self._cursor]
            self._cursor += 1
            plan = await self._plan(hit)
            if plan is not None:
                return plan
        return None

    async def _search(self, finding: analyzers.Finding | None) -> list[Hit]:
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
        hits = await self._hits({"signal_type": finding.signal_type, "query": query})
        if hits or finding.signal_type == signal.type or not finding.alert_remedies:
            return hits
        return await self._hits({"signal_type": signal.type, "query": query})

    async def _by_fit(self, hits: list[Hit], finding: analyzers.Finding | None) -> list[Hit]:
        """Among the first hits of the finding's action type that match nearly as well as the
        first, the workflow that takes the most of
        the values the evidence established (a ConfigMap's name, a taint key) comes first: it
        is the one written for this case — when the first takes none of them. Search order
        otherwise (a stable sort)."""
        if finding is None or not finding.values or not finding.action_type or len(hits) < 2:
            return hits
        fits: dict[str, int] = {}
        for hit in hits[:FIT_CANDIDATES]:
            if (
                hit.action_type not in (None, finding.action_type)
                or hit.confidence < hits[0].confidence * FIT_MARGIN
            ):
                continue
            details = await self._json(DETAILS_TOOL, {"workflow_id": hit.workflow_id} | _version(hit))
            names = {p.name for p in parse_parameters(details)}
            fits[hit.workflow_id] = len(names & set(finding.values))
        if fits.get(hits[0].workflow_id, 0) > 0:
            return hits  # the first takes evidence values already: the search's choice stands
        return sorted(hits, key=lambda h: -fits.get(h.workflow_id, 0))

    async def _action_types(self) -> set[str]:
        result = await self._json(ACTION_TYPES_TOOL, {})
        rows = result.get("action_types") if isinstance(result, dict) else None
        return {str(r.get("action_type")) for r in rows or () if isinstance(r, dict)}

    async def _hits(self, arguments: dict[str, Any]) -> list[Hit]:
        result = await self._json(SEARCH_TOOL, arguments | {"top_k": SEARCH_TOP_K})
        if isinstance(result, dict) and isinstance(result.get("note"), str):
            self._note = result["note"]
        return [] if result is None else parse_hits(result)

    async def _plan(self, hit: Hit) -> Plan | None:
        arguments: dict[str, Any] = {"workflow_id": hit.workflow_id}
        if hit.version:
            arguments["version"] = hit.version
        details = await self._json(DETAILS_TOOL, arguments)
        if details is None:
            return None
        finding = self.finding
        candidates = [finding.target] if finding is not None and finding.target is not None else []
        candidates += self._chain
        target = next(
            (
                r
                for r in candidates
                if (r.kind, r.name) not in self._excluded and acts_on(details, resource=r)
            ),
            None,
        )
        if target is None:
            return None
        values = dict(finding.values) if finding is not None else {}
        plan = plan_parameters(hit, parse_parameters(details), resource=target, values=values)
        if isinstance(details, dict) and isinstance(details.get("action_type"), str):
            plan = dataclasses.replace(plan, hit=dataclasses.replace(hit, action_type=details["action_type"]))
        return dataclasses.replace(plan, target=target)

    async def _tool(self, name: str, arguments: dict[str, Any]) -> conversation.ToolOutcome:
        self._counter.tool_calls += 1
        return await self._toolbox.call(name, arguments)

    async def _json(self, name: str, arguments: dict[str, Any]) -> Any:
        """A catalog tool's answer, as the values its JSON text shows (None: it refused)."""
        outcome = await self._tool(name, arguments)
        return outcome.data.payload if isinstance(outcome.data, tools.CatalogResult) else None


def _version(hit: Hit) -> dict[str, str]:
    return {"version": hit.version} if hit.version else {}


def _chain_with(chain: list[resources.ResourceRef], found: analyzers.Evidence) -> list[resources.ResourceRef]:
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


def rank(
    hits: list[Hit], *, recovery: resources.RecoverySpec | None, supported: frozenset[str] | None = None
) -> list[Hit]:
    """Search order, without workflows that already failed on this incident: deterministic
    parameters would repeat the failure, so only an untried workflow is a real alternative —
    except one that failed with a parameter this answer would not pass (a value neither the
    target nor the evidence supports, e.g. an explicit override): retried without it, it is a
    different attempt. ``supported``: the parameters the evidence fills (None: no finding, so
    nothing tells a guessed value from a supported one and no failed workflow is retried)."""
    if recovery is None:
        return list(hits)
    failed = {p.selected_workflow.workflow_id for p in recovery.previous_executions}
    if supported is None:
        return [h for h in hits if h.workflow_id not in failed]
    guessed = {
        p.selected_workflow.workflow_id
        for p in recovery.previous_executions
        if set(p.selected_workflow.parameters) - supported - set(_TARGET_PARAMETERS) - _NAME_PARAMETERS
    }
    return [h for h in hits if h.workflow_id not in failed or h.workflow_id in guessed]


def _supported(finding: analyzers.Finding | None) -> frozenset[str] | None:
    """Parameter names the evidence supplies values for (None without a finding)."""
    return frozenset(finding.values) if finding is not None else None


def rules(errors: list[str]) -> set[str]:
    """The rule codes of validation errors (``[code] message``)."""
    return {error[1 : error.index("]")] for error in errors if error.startswith("[") and "]" in error}


def acts_on(details: Any, *, resource: resources.ResourceRef) -> bool:
    """Whether the workflow's ``acts_on`` (its ``labels.component``) admits the target's kind."""
    components = details.get("acts_on") if isinstance(details, dict) else None
    if not isinstance(components, list):
        return True
    return catalog.component_admits([str(c) for c in components], kind=resource.kind, api_version=None)


def plan_parameters(
    hit: Hit, params: list[Param], *, resource: resources.ResourceRef, values: dict[str, str] | None = None
) -> Plan:
    """Fill what the target and the evidence answer; defaults and system-filled parameters are
    left to the validator, which applies them."""
    filled: dict[str, str] = {}
    missing: list[str] = []
    for param in params:
        value = infer(param, resource, values or {})
        if value is not None:
            filled[param.name] = value
        elif param.required and param.default is None and not param.system:
            missing.append(param.name)
    return Plan(hit=hit, parameters=filled, missing=tuple(missing))


def infer(param: Param, resource: resources.ResourceRef, values: dict[str, str]) -> str | None:
    """The value of ``param`` the target or the evidence supports, if it fits the declared enum."""
    if param.name in values:
        value: str | None = values[param.name]
        if param.type in ("integer", "number") and not str(value).lstrip("-").isdigit():
            return None
    elif param.type != "string":
        return None
    elif param.name in _TARGET_PARAMETERS:
        value = _field(resource, _TARGET_PARAMETERS[param.name])
    elif param.name in KIND_NAME_PARAMETERS.get(resource.kind, ()):
        value = resource.name
    else:
        return None
    if value is None or not param.enum:
        return value
    # Catalogs spell kinds differently ("deployment", "Deployment"): use the enum's spelling.
    return next((option for option in param.enum if option.lower() == str(value).lower()), None)


def _field(resource: resources.ResourceRef, name: str) -> str | None:
    return {"kind": resource.kind, "name": resource.name, "namespace": resource.namespace}.get(name)


def confidence(hit: Hit, finding: analyzers.Finding | None, *, backed: bool = True) -> float:
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
    plan: Plan,
    *,
    spec: resources.AIAnalysisSpec,
    others: list[Hit],
    findings: Sequence[analyzers.Finding] = (),
    evidence: analyzers.Evidence | None = None,
    backed: bool = True,
) -> dict[str, Any]:
    """A :class:`answer.SelectionAnswer`-shaped dict selecting ``plan`` (``backed``: the finding's
    search ranked it first)."""
    hit = plan.hit
    target = plan.target or spec.resource
    finding = findings[0] if findings else None
    name = hit.title or hit.workflow_id
    warnings: list[str] = []
    if finding is not None:
        rationale = (
            f"{finding.explanation} Evidence: {'; '.join(finding.facts)}. Chosen '{name}' for "
            f"{_describe(target)} (analyzer {finding.rule}; action type {finding.action_type or 'n/a'})."
        )
    elif evidence is not None and evidence.cluster:
        rationale = (
            f"'{name}' is the best catalog match for signal {spec.signal.type} eligible for "
            f"{_describe(target)}. "
            "The cluster was read but no analyzer recognised the failure, so the choice rests on the alert."
        )
        warnings.append("Offline provider: no analyzer matched the evidence; review before executing.")
    else:
        rationale = (
            f"'{name}' is the best catalog match for signal {spec.signal.type} eligible for "
            f"{_describe(target)}; "
            "no cluster could be read, so nothing was investigated."
        )
        warnings.append(
            "Offline provider: no root-cause investigation was possible; review before executing."
        )
    if plan.missing:
        rationale += f" Required parameters {', '.join(plan.missing)} are not supported by the evidence."
        warnings.append(f"Cannot infer required parameters: {', '.join(plan.missing)}.")
    selected: dict[str, Any] = {
        "workflow_id": hit.workflow_id,
        "confidence": confidence(hit, finding, backed=backed),
        "rationale": rationale,
        "parameters": dict(plan.parameters),
    }
    if hit.version:
        selected["version"] = hit.version
    raw = _common(spec, target=target, findings=findings) | {
        "selected_workflow": selected,
        "alternative_workflows": _alternatives(others, chosen=hit),
        "warnings": warnings,
        "needs_human_review": False,
    }
    return raw | _recovery(spec, plan)


def build_declined(
    spec: resources.AIAnalysisSpec, finding: analyzers.Finding, *, others: Sequence[analyzers.Finding]
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
    spec: resources.AIAnalysisSpec, *, finding: analyzers.Finding | None = None, note: str = ""
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
    findings: Sequence[analyzers.Finding] = (),
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
                f"Offline analysis of {signal.type} on {_describe(spec.resource)}: {finding.explanation}"
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
            f"Offline analysis of {signal.type} on {_describe(spec.resource)}: no analyzer recognised the "
            "failure; the catalog was ranked for the signal."
        ),
        "root_cause_assessment": (
            f"Not established (offline provider). Reported signal {signal.type}: {evidence_text}"
        ),
    }


def _alternatives(hits: list[Hit], *, chosen: Hit) -> list[dict[str, Any]]:
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


def _recovery(spec: resources.AIAnalysisSpec, plan: Plan | None) -> dict[str, Any]:
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
        "recovery_strategy": _strategy(previous, plan),
    }


def _strategy(previous: list[resources.PreviousExecution], plan: Plan | None) -> dict[str, Any]:
    if plan is None:
        return {
            "approach": "human_review",
            "differs_from_previous": True,
            "why_different": "No eligible workflow is left in the catalog; a person has to decide.",
        }
    same = [p for p in previous if p.selected_workflow.workflow_id == plan.hit.workflow_id]
    if not same:
        return {
            "approach": "alternative_workflow",
            "differs_from_previous": True,
            "why_different": f"{plan.hit.workflow_id} has not been tried on this incident.",
        }
    repeated = any(p.selected_workflow.parameters == plan.parameters for p in same)
    return {
        "approach": "same_workflow_new_parameters",
        "differs_from_previous": not repeated,
        "why_different": (
            f"Every other eligible workflow is exhausted; {plan.hit.workflow_id} already failed here"
            + (" with the same parameters." if repeated else " and is retried with different parameters.")
        ),
    }


def _describe(ref: resources.ResourceRef) -> str:
    return f"{ref.kind} {ref.namespace}/{ref.name}" if ref.namespace else f"{ref.kind} {ref.name}"


# ---------------------------------------------------------------------------------------------
# Reading the catalog tools' JSON answers


def parse_hits(data: Any) -> list[Hit]:
    """Hits from the search tool's answer: a list, or an object holding the list."""
    items = data
    if isinstance(data, dict):
        items = next(
            (data[key] for key in ("workflows", "results", "hits") if isinstance(data.get(key), list)), []
        )
    if not isinstance(items, list):
        return []
    return [hit for hit in (_hit(item) for item in items) if hit is not None]


def _hit(item: Any) -> Hit | None:
    if not isinstance(item, dict) or not isinstance(item.get("workflow_id"), str):
        return None
    confidence = item.get("confidence", 0.5)
    version = item.get("version")
    action = item.get("action_type")
    return Hit(
        workflow_id=item["workflow_id"],
        version=version if isinstance(version, str) else None,
        confidence=float(confidence) if isinstance(confidence, int | float) else 0.5,
        title=str(item.get("title") or ""),
        action_type=action if isinstance(action, str) else None,
    )


def parse_parameters(data: Any) -> list[Param]:
    """Declared parameters from the details tool's answer."""
    if not isinstance(data, dict):
        return []
    params = data.get("parameters")
    if params is None and isinstance(data.get("spec"), dict):
        params = data["spec"].get("parameters")
    if not isinstance(params, list):
        return []
    return [param for param in (_param(item) for item in params) if param is not None]


def _param(item: Any) -> Param | None:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        return None
    default = item.get("default")
    enum = item.get("enum") or ()
    return Param(
        name=item["name"],
        type=str(item.get("type") or "string"),
        required=bool(item.get("required", False)),
        default=None if default is None else str(default),
        enum=tuple(str(option) for option in enum) if isinstance(enum, list) else (),
        system=bool(item.get("filled_by")),
    )
