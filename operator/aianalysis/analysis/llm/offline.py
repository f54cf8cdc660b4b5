"""A deterministic, network-free stand-in for the LLM: it ranks the catalog for the signal and
submits the best-ranked workflow that is eligible for the incident's resource.

It investigates nothing, so its answers say so (warnings, rationale). It goes through the same
toolbox as the model (``search_workflow_catalog`` then ``get_workflow_details``), so the
validator's rule "only workflows a catalog tool showed in this conversation" holds for it too.

**Rank first.** Hits in search order, without the workflows that already failed on this incident
(recovery: the offline provider would fill the same parameters again, which is a known repeat)
and without those the details tool refuses or whose ``acts_on`` (``labels.component``) does not
admit the target's kind: the first remaining one is THE choice. Its parameters come from the
target (the incident's resource; the validator fills the system-filled ones) and the defaults.
When a required value is unknowable it is submitted anyway with that parameter omitted, so the
validator reports exactly what is missing and the pipeline lists it first in
``alternativeWorkflows`` (``parameters_incomplete``): a lower-ranked workflow is never chosen
because its parameters are easier to fill. ``correct()`` re-submits the same answer when only
parameters were rejected, and moves to the next eligible hit for any other rejection (the choice
was not eligible after all); when they are exhausted the last answer is submitted again.
"""

from __future__ import annotations

import dataclasses
import html
import json
from collections.abc import Callable
from typing import Any

import yaml

from aianalysis import catalog, resources
from aianalysis.analysis.llm import base

PROVIDER_NAME = "offline"
MODEL_NAME = "catalog-rank-v1"
SEARCH_TOOL = "search_workflow_catalog"
DETAILS_TOOL = "get_workflow_details"
RESOURCE_TOOL = "get_resource"
MAX_OWNERS = 3
SEARCH_TOP_K = 10
MAX_CONFIDENCE = 0.95
"""An unexamined catalog match never claims certainty."""
MAX_ALTERNATIVES = 3
PARAMETER_RULES = frozenset({"missing_parameter", "parameters"})
"""Rejections that re-submitting the same choice answers (a person completes the parameters)."""

_Infer = Callable[[resources.ResourceRef], str | None]


def _namespace(ref: resources.ResourceRef) -> str | None:
    return ref.namespace


def _name(ref: resources.ResourceRef) -> str:
    return ref.name


def _kind(ref: resources.ResourceRef) -> str:
    return ref.kind


#: Parameters the incident itself answers. The resource named in the spec is the object to act
#: on (upstream #751: never the symptom); kind-specific names apply only to that kind.
INFERABLE: dict[str, _Infer] = {
    "TARGET_NAMESPACE": _namespace,
    "NAMESPACE": _namespace,
    "TARGET_RESOURCE_KIND": _kind,
    "RESOURCE_KIND": _kind,
    "TARGET_RESOURCE_NAME": _name,
    "RESOURCE_NAME": _name,
}
KIND_NAME_PARAMETERS: dict[str, tuple[str, ...]] = {
    "Deployment": ("DEPLOYMENT_NAME", "DEPLOYMENT"),
    "StatefulSet": ("STATEFULSET_NAME", "STATEFULSET"),
    "DaemonSet": ("DAEMONSET_NAME", "DAEMONSET"),
    "Pod": ("POD_NAME", "POD"),
    "Node": ("NODE_NAME", "NODE"),
    "Service": ("SERVICE_NAME",),
    "PersistentVolumeClaim": ("PVC_NAME",),
}


@dataclasses.dataclass(frozen=True)
class Hit:
    workflow_id: str
    version: str | None
    confidence: float
    title: str = ""


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
    """A candidate with the parameters the incident fills and those nobody can."""

    hit: Hit
    parameters: dict[str, str]
    missing: tuple[str, ...]
    target: resources.ResourceRef | None = None
    """The object the workflow acts on (None = the incident's resource)."""

    @property
    def complete(self) -> bool:
        return not self.missing


class OfflineProvider:
    name = PROVIDER_NAME
    model = MODEL_NAME

    def open(
        self, *, system: str, prompt: str, toolbox: base.Tools, spec: resources.AIAnalysisSpec
    ) -> OfflineConversation:
        """The prompts are ignored: this provider reads the structured spec directly."""
        return OfflineConversation(toolbox=toolbox, spec=spec)

    async def aclose(self) -> None:
        """Nothing to release."""

    async def check_model(self) -> str | None:
        """There is no model to check."""
        return None


class OfflineConversation:
    def __init__(self, *, toolbox: base.Tools, spec: resources.AIAnalysisSpec) -> None:
        self._toolbox = toolbox
        self._spec = spec
        self._queue: list[Hit] | None = None
        self._chain: list[resources.ResourceRef] = [spec.resource]
        self._cursor = 0
        self._last: dict[str, Any] | None = None
        self._counter = base.UsageCounter()

    @property
    def usage(self) -> resources.LLMUsage:
        return self._counter.snapshot(provider=PROVIDER_NAME, model=MODEL_NAME)

    async def answer(self) -> base.Submission:
        if self._queue is None:
            self._queue = rank(await self._search(), recovery=self._spec.recovery)
            if self._queue:
                self._chain = await self._owner_chain()
        return await self._submit_next()

    async def correct(self, errors: list[str]) -> base.Submission:
        """Only the rule codes are read: a parameters-only rejection keeps the best-ranked choice
        (re-submitted as is); any other moves on to the next eligible candidate."""
        if self._last is not None and rules(errors) <= PARAMETER_RULES:
            return base.Submission(raw=self._last)
        return await self.answer()

    async def _submit_next(self) -> base.Submission:
        plan = await self._choose()
        if plan is not None:
            self._last = build_answer(plan, spec=self._spec, others=self._queue or [])
        elif self._last is None:
            self._last = build_empty_answer(self._spec)
        return base.Submission(raw=self._last)

    async def _choose(self) -> Plan | None:
        """The next hit, in rank order, whose details are available and that acts on the target."""
        queue = self._queue or []
        while self._cursor < len(queue):
            hit = queue[self._cursor]
            self._cursor += 1
            plan = await self._plan(hit)
            if plan is not None:
                return plan
        return None

    async def _search(self) -> list[Hit]:
        signal = self._spec.signal
        query = " ".join(part for part in (signal.type, signal.alert_name, signal.error_message) if part)
        arguments = {"signal_type": signal.type, "query": query, "top_k": SEARCH_TOP_K}
        result = await self._call(SEARCH_TOOL, arguments)
        return [] if result is None else parse_hits(result)

    async def _plan(self, hit: Hit) -> Plan | None:
        arguments: dict[str, Any] = {"workflow_id": hit.workflow_id}
        if hit.version:
            arguments["version"] = hit.version
        result = await self._call(DETAILS_TOOL, arguments)
        target = (
            None if result is None else next((r for r in self._chain if acts_on(result, resource=r)), None)
        )
        if target is None:
            return None
        plan = plan_parameters(hit, parse_parameters(result), resource=target)
        return dataclasses.replace(plan, target=target)

    async def _owner_chain(self) -> list[resources.ResourceRef]:
        """The incident's resource and its controllers (Pod → ReplicaSet → Deployment), read with
        ``get_resource`` when a cluster is attached; without one, just the resource."""
        chain = [self._spec.resource]
        while len(chain) <= MAX_OWNERS:
            current = chain[-1]
            obj = await self._call(
                RESOURCE_TOOL, {"kind": current.kind, "name": current.name, "namespace": current.namespace}
            )
            owner = controller_of(obj, namespace=current.namespace)
            if owner is None:
                break
            chain.append(owner)
        return chain

    async def _call(self, name: str, arguments: dict[str, Any]) -> Any:
        """The tool's answer (JSON, or for ``get_resource`` the fenced YAML parsed), or None when
        the tool failed or answered something else."""
        self._counter.tool_calls += 1
        outcome = await self._toolbox.call(name, arguments)
        if outcome.is_error:
            return None
        if name == RESOURCE_TOOL:
            return fenced_yaml(outcome.text)
        try:
            return json.loads(outcome.text)
        except ValueError:
            return None


def fenced_yaml(text: str) -> Any:
    """The YAML document inside the investigation tool's ``<untrusted-data>`` fence (the header
    line, the opening tag, the escaped body, the closing tag); None when it is not one."""
    lines = text.splitlines()
    opening = next((i for i, line in enumerate(lines) if line.startswith("<untrusted-data")), None)
    closing = next(
        (i for i in range(len(lines) - 1, -1, -1) if lines[i].startswith("</untrusted-data>")), None
    )
    if opening is None or closing is None or closing <= opening:
        return None
    try:
        return yaml.safe_load(html.unescape("\n".join(lines[opening + 1 : closing])))
    except yaml.YAMLError:
        return None


def controller_of(obj: Any, *, namespace: str | None) -> resources.ResourceRef | None:
    """The controlling owner of an object read from the cluster (else its first owner), if any."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    refs = meta.get("ownerReferences") if isinstance(meta, dict) else None
    if not isinstance(refs, list):
        return None
    owners = [r for r in refs if isinstance(r, dict)]
    owner = next((r for r in owners if r.get("controller")), owners[0] if owners else None)
    if owner is None or not isinstance(owner.get("kind"), str) or not isinstance(owner.get("name"), str):
        return None
    return resources.ResourceRef(kind=owner["kind"], name=owner["name"], namespace=namespace)


def rank(hits: list[Hit], *, recovery: resources.RecoverySpec | None) -> list[Hit]:
    """Search order, without workflows that already failed on this incident: deterministic
    parameters would repeat the failure, so only an untried workflow is a real alternative."""
    failed = {p.selected_workflow.workflow_id for p in recovery.previous_executions} if recovery else set()
    return [h for h in hits if h.workflow_id not in failed]


def rules(errors: list[str]) -> set[str]:
    """The rule codes of validation errors (``[code] message``)."""
    return {error[1 : error.index("]")] for error in errors if error.startswith("[") and "]" in error}


def acts_on(details: Any, *, resource: resources.ResourceRef) -> bool:
    """Whether the workflow's ``acts_on`` (its ``labels.component``) admits the target's kind."""
    components = details.get("acts_on") if isinstance(details, dict) else None
    if not isinstance(components, list):
        return True
    return catalog.component_admits([str(c) for c in components], kind=resource.kind, api_version=None)


def plan_parameters(hit: Hit, params: list[Param], *, resource: resources.ResourceRef) -> Plan:
    """Fill what the resource answers; defaults and system-filled parameters are left to the
    validator, which applies them."""
    values: dict[str, str] = {}
    missing: list[str] = []
    for param in params:
        value = infer(param, resource)
        if value is not None:
            values[param.name] = value
        elif param.required and param.default is None and not param.system:
            missing.append(param.name)
    return Plan(hit=hit, parameters=values, missing=tuple(missing))


def infer(param: Param, resource: resources.ResourceRef) -> str | None:
    """The value of ``param`` the incident's resource implies, if it fits the declared enum."""
    if param.type != "string":
        return None
    source = INFERABLE.get(param.name)
    if source is not None:
        value = source(resource)
    elif param.name in KIND_NAME_PARAMETERS.get(resource.kind, ()):
        value = resource.name
    else:
        return None
    if value is None or not param.enum:
        return value
    # Catalogs spell kinds differently ("deployment", "Deployment"): use the enum's spelling.
    return next((option for option in param.enum if option.lower() == value.lower()), None)


def build_answer(plan: Plan, *, spec: resources.AIAnalysisSpec, others: list[Hit]) -> dict[str, Any]:
    """A :class:`answer.SelectionAnswer`-shaped dict selecting ``plan``."""
    hit = plan.hit
    target = plan.target or spec.resource
    rationale = (
        f"Offline catalog-ranked choice: '{hit.title or hit.workflow_id}' is the best catalog match for "
        f"signal {spec.signal.type} eligible for {_describe(target)}; its parameters come from "
        "that resource and the defaults. No investigation was performed."
    )
    warnings = ["Offline provider: no root-cause investigation was performed; review before executing."]
    if plan.missing:
        rationale = (
            f"Offline catalog-ranked choice: '{hit.title or hit.workflow_id}' is the best catalog match for "
            f"signal {spec.signal.type}, but required parameters {', '.join(plan.missing)} cannot be "
            "inferred from the incident. No investigation was performed."
        )
        warnings.append(f"Cannot infer required parameters: {', '.join(plan.missing)}.")
    selected: dict[str, Any] = {
        "workflow_id": hit.workflow_id,
        "confidence": min(hit.confidence, MAX_CONFIDENCE),
        "rationale": rationale,
        "parameters": dict(plan.parameters),
    }
    if hit.version:
        selected["version"] = hit.version
    raw = _common(spec, target=target) | {
        "selected_workflow": selected,
        "alternative_workflows": _alternatives(others, chosen=hit),
        "warnings": warnings,
        "needs_human_review": False,
    }
    return raw | _recovery(spec, plan)


def build_empty_answer(spec: resources.AIAnalysisSpec) -> dict[str, Any]:
    """No catalog workflow was eligible: a person has to decide."""
    raw = _common(spec) | {
        "selected_workflow": None,
        "warnings": ["Offline provider: the catalog search returned no eligible workflow."],
        "needs_human_review": True,
        "human_review_reason": "no_eligible_workflow",
    }
    return raw | _recovery(spec, None)


def _common(spec: resources.AIAnalysisSpec, *, target: resources.ResourceRef | None = None) -> dict[str, Any]:
    signal = spec.signal
    evidence = signal.error_message or signal.description or signal.alert_name or "no details given"
    target = target or spec.resource
    affected = {"kind": target.kind, "name": target.name}
    if target.namespace:
        affected["namespace"] = target.namespace
    return {
        "analysis_summary": (
            f"Offline analysis of {signal.type} on {_describe(spec.resource)}: "
            "the catalog was ranked for the signal; nothing was investigated."
        ),
        "root_cause_assessment": (
            f"Not investigated (offline provider). Reported signal {signal.type}: {evidence}"
        ),
        "rca_severity": signal.severity,
        "affected_resource": affected,
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
    return Hit(
        workflow_id=item["workflow_id"],
        version=version if isinstance(version, str) else None,
        confidence=float(confidence) if isinstance(confidence, int | float) else 0.5,
        title=str(item.get("title") or ""),
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
