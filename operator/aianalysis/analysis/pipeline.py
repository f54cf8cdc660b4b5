"""The use case: an AIAnalysis spec → incident prompt → LLM tool loop → validation → a decision.

No kopf here and no status I/O: the caller (``controller.analysis_reconciler`` in the operator, ``cli`` for
``aianalysis analyze``) persists what :func:`analyze` returns.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
from collections.abc import Awaitable

import aianalysis.assessment.history
import aianalysis.catalog
import aianalysis.settings
from aianalysis import errors, prometheus, resources
from aianalysis.analysis import answer, llm, pricing, prompts, scope, status, tools, validation


async def analyze(
    spec: resources.AIAnalysisSpec,
    *,
    catalog: aianalysis.catalog.Catalog,
    provider: llm.Provider,
    reader: tools.ClusterReader | None,
    settings: aianalysis.settings.Settings,
    now: resources.Clock = resources.utcnow,
    history: Awaitable[aianalysis.assessment.history.History | None] | None = None,
    namespace: str | None = None,
    metrics: tools.MetricsReader | None = None,
    started: Awaitable[object] | None = None,
) -> status.Decision:
    """Run one conversation to a validated decision. Raises provider errors (the caller retries).

    The incident's scope (owner chain, Nodes, PVCs) is read once, before the conversation; the
    facts on each target the LLM names are read once per target. Both are read-only and tolerate
    failures (``tools.gather_scope``). The business context is the spec's, completed from the
    incident namespace's labels and annotations (``tools.with_business_context``; ``namespace`` is
    the AIAnalysis' own, used when the incident's resource has none, a Node say). Each object is
    read from the cluster once per analysis (``tools.ReadOnce``).

    The reads that do not depend on each other — business context, scope, the earlier executions
    (``history``: read by the caller) — run at once. ``started``: the first LLM request waits for
    it (the caller's record that a conversation starts); the reads do not."""
    reader = tools.ReadOnce(reader) if reader is not None else None
    spec = normalized(spec, settings=settings)
    (spec, context_warnings), where, history_read = await asyncio.gather(
        tools.with_business_context(
            reader, spec, prefixes=settings.catalog.business_label_prefixes, home=namespace
        ),
        tools.gather_scope(reader, spec.resource),
        history if history is not None else _none(),
    )
    facts = _Facts(reader, workload=where.workload)

    async def facts_of(
        affected: dict[str, object], returned: frozenset[scope.Key]
    ) -> aianalysis.catalog.TargetFacts | str:
        """For the catalog tools: the facts on the target the LLM names, if it may be the target."""
        target = where.target(affected)
        why = where.violation(target, returned=returned)
        if why is not None:
            return f"affected_resource {why}: the catalog stays filtered for the previous target"
        return await facts.of(target)

    toolbox = tools.ToolBox(
        spec=spec,
        catalog=catalog,
        reader=reader,
        max_chars=settings.investigation.tool_output_max_chars,
        facts=await facts.of(where.incident),
        metrics=metrics,
        limits=tool_limits(settings),
        target_facts=facts_of if reader is not None else None,
        cluster_scope=where.cluster_scoped,
    )
    past = prompts.history_section(
        aianalysis.assessment.history.describe(history_read, now=now()) if history_read else []
    )
    prompt = prompts.user_prompt(spec) + ("\n\n" + past if past else "")
    conversation = provider.open(system=prompts.SYSTEM_PROMPT, prompt=prompt, toolbox=toolbox, spec=spec)
    if started is not None:
        await started
    try:
        submission = await conversation.answer()
    except errors.ProviderError as exc:
        exc.billed = conversation.usage.requests > 0
        raise
    attempts: list[resources.ValidationAttempt] = []
    verdicts: list[validation.Verdict] = []
    checker = _Checker(
        spec=spec, catalog=catalog, toolbox=toolbox, where=where, facts=facts, reader=reader,
        privileged_roles=settings.safety.privileged_roles,
    )  # fmt: skip
    for number in range(1, settings.analysis.max_validation_attempts + 1):
        verdict = await checker.verdict(submission)
        verdicts.append(verdict)
        attempts.append(_attempt(number, submission, verdict, now()))
        if verdict.valid or number == settings.analysis.max_validation_attempts:
            break
        submission = await conversation.correct(verdict.errors)
    usage = conversation.usage.model_copy(
        update={
            "tool_errors": toolbox.errors,
            "cluster_reads": toolbox.cluster_reads,
            "cluster_read_failures": toolbox.cluster_read_failures,
        }
    )
    usage = pricing.priced(usage, pricing.price_table(settings))
    floor = settings.analysis.confidence_floor
    decided = decide(verdicts, attempts=attempts, usage=usage, spec=spec, confidence_floor=floor)
    decision = dataclasses.replace(decided, investigation=toolbox.ledger.audit())
    if context_warnings:
        decision = dataclasses.replace(decision, warnings=[*decision.warnings, *context_warnings])
    if toolbox.investigation_failed:
        decision = investigation_failed(decision)
    return with_history(decision, history_read)


async def _none() -> None:
    return None


def with_history(
    decision: status.Decision, history: aianalysis.assessment.history.History | None
) -> status.Decision:
    """Policy from earlier executions on the target: a workflow a person rejected there (whatever else
    the analysis says), or one that was ineffective there, is not auto-selected again, and an incident
    back after fixes judged effective goes to a person."""
    if history is None:
        return decision
    chosen = decision.selected
    if chosen is not None and chosen.workflow_id in history.rejected:
        # Before any other reason: a person said no to this very workflow here; whoever reviews it now
        # decides on that first (the earlier warnings stay).
        said = [
            f"{r.by} ({r.record}: {r.reason})"
            for r in history.rejections
            if r.workflow_id == chosen.workflow_id
        ]
        warning = (
            f"{chosen.workflow_id} was rejected on this target by {'; '.join(said)}: "
            "proposed again only to a person, who decides"
        )
        return dataclasses.replace(
            decision, review_reason="previously_rejected", warnings=[*decision.warnings, warning]
        )
    if decision.review_reason is not None:
        return decision
    if chosen is not None and chosen.workflow_id in history.ineffective:
        runs = [e.execution for e in history.entries if e.workflow_id == chosen.workflow_id]
        warning = (
            f"{chosen.workflow_id} was ineffective on this target recently ({', '.join(runs)}): "
            "a person decides whether to run it again"
        )
        return dataclasses.replace(
            decision, review_reason="previously_ineffective", warnings=[*decision.warnings, warning]
        )
    if history.recurring:
        runs = [e.execution for e in history.effective]
        warning = (
            f"the incident is back after {len(runs)} executions judged effective ({', '.join(runs)}): "
            "the fixes treat a symptom; a person looks for the cause"
        )
        return dataclasses.replace(
            decision, review_reason="recurring_after_remediation", warnings=[*decision.warnings, warning]
        )
    return decision


def normalized(
    spec: resources.AIAnalysisSpec, *, settings: aianalysis.settings.Settings
) -> resources.AIAnalysisSpec:
    """The spec with its signal type normalized (``catalog.signals``: alert names → signal types)."""
    table = {
        **aianalysis.catalog.signals.DEFAULT_SIGNAL_TYPES,
        **aianalysis.catalog.signals.parse_pairs(settings.catalog.signal_types),
    }
    signal = spec.signal
    wanted = aianalysis.catalog.signals.normalize(signal.type, alert_name=signal.alert_name, table=table)
    if wanted == signal.type:
        return spec
    return spec.model_copy(update={"signal": signal.model_copy(update={"type": wanted})})


def tool_limits(settings: aianalysis.settings.Settings) -> tools.Limits:
    """What the investigation tools may return and read, from settings."""
    return tools.Limits(
        budget_tokens=settings.investigation.tool_output_budget_tokens,
        max_audit_records=settings.investigation.tool_audit_max_records,
        namespaces=settings.investigation.namespaces,
        custom_groups=settings.investigation.custom_groups,
        max_series=settings.prometheus.max_series,
        prometheus_label_proxy_param=settings.prometheus.label_proxy_param,
    )


def metrics_reader(settings: aianalysis.settings.Settings) -> tools.MetricsReader | None:
    """The process' Prometheus client (shared by the tools and the assessment), or None when no
    Prometheus is configured (the Prometheus tools are then not offered)."""
    return prometheus.from_settings(settings)


def investigation_failed(decision: status.Decision) -> status.Decision:
    """Every cluster read failed: the root cause was not investigated, so a person reviews it, for
    that reason (the selection, if valid, is kept as a proposal)."""
    warning = (
        f"every cluster read failed ({decision.llm.cluster_read_failures} of {decision.llm.cluster_reads}): "
        "the root cause is not backed by an investigation"
    )
    return dataclasses.replace(
        decision, review_reason="investigation_failed", warnings=[*decision.warnings, warning]
    )


class _Facts:
    """Facts detected on each target, read once per target per analysis."""

    def __init__(self, reader: tools.ClusterReader | None, *, workload: scope.ObjectRef | None) -> None:
        self._reader = reader
        self._workload = workload
        self._known: dict[scope.Key, aianalysis.catalog.TargetFacts] = {}

    async def of(self, target: scope.ObjectRef) -> aianalysis.catalog.TargetFacts:
        if target.key not in self._known:
            self._known[target.key] = await tools.detect_facts(self._reader, target, workload=self._workload)
        return self._known[target.key]

    async def known(
        self, target: scope.ObjectRef, *, where: scope.Scope, returned: set[scope.Key]
    ) -> dict[scope.Key, aianalysis.catalog.TargetFacts]:
        """Facts for the validator; an out-of-scope target is not read at all (it is rejected)."""
        if where.violation(target, returned=returned) is not None:
            return {}
        return {target.key: await self.of(target)}


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Checker:
    """Validates each answer of one conversation (§4) with what the analysis read."""

    spec: resources.AIAnalysisSpec
    catalog: aianalysis.catalog.Catalog
    toolbox: tools.ToolBox
    where: scope.Scope
    facts: _Facts
    reader: tools.ClusterReader | None
    privileged_roles: tuple[str, ...] = ()

    async def verdict(self, submission: llm.Submission) -> validation.Verdict:
        """The verdict on ``submission``. An answer that names no target for a workflow that does not
        act on the incident's resource gets the target inferred (``scope`` module rules) and is
        validated again with it."""
        affected = _affected(submission.raw)
        verdict = await self._validate(submission, target=self.where.target(affected))
        workflow = verdict.workflow
        if (
            workflow is None
            or "component_mismatch" not in verdict.rules_failed
            or scope.names_object(affected)
        ):
            return verdict
        inferred = await tools.infer_target(
            self.reader, self.where, components=workflow.spec.labels.component
        )
        return await self._validate(
            submission, target=inferred.target or self.where.incident, inferred=inferred
        )

    async def _validate(
        self, submission: llm.Submission, *, target: scope.ObjectRef, inferred: scope.Inference | None = None
    ) -> validation.Verdict:
        returned = self.toolbox.returned
        read = {*returned, target.key} if inferred is not None else returned  # the inference read it
        facts = await self.facts.known(target, where=self.where, returned=read)
        # Off the event loop: catalog patterns run here (bounded in time, but not free).
        return await asyncio.to_thread(
            validation.validate,
            raw=submission.raw,
            truncated=submission.truncated,
            catalog=self.catalog,
            seen=self.toolbox.seen,
            business=self.spec.business_context,
            recovery=self.spec.recovery,
            prose=submission.prose,
            scope=self.where,
            returned=returned,
            facts=facts,
            malformed=submission.malformed,
            inferred=inferred,
            privileged_roles=self.privileged_roles,
        )


def _affected(raw: object) -> dict[str, object] | None:
    """The answer's ``affected_resource`` as submitted (the validator parses it strictly)."""
    affected = raw.get("affected_resource") if isinstance(raw, dict) else None
    return affected if isinstance(affected, dict) else None


async def analyze_without_cluster(
    spec: resources.AIAnalysisSpec,
    *,
    catalog: aianalysis.catalog.Catalog,
    settings: aianalysis.settings.Settings,
) -> resources.AIAnalysisStatus:
    """One analysis with its own provider and no cluster attached (``aianalysis analyze``): the
    status the operator would write for it."""
    provider = llm.make_provider(settings)
    try:
        decision = await analyze(spec, catalog=catalog, provider=provider, reader=None, settings=settings)
    finally:
        await provider.aclose()
    now = resources.utcnow()
    started = resources.AIAnalysisStatus(
        phase="Investigating", attempt=1, started_at=resources.timestamp(now)
    )
    return status.completed(previous=started, decision=decision, now=now, generation=None)


def _attempt(
    number: int, submission: llm.Submission, verdict: validation.Verdict, at: datetime.datetime
) -> resources.ValidationAttempt:
    workflow_id = None
    if isinstance(submission.raw, dict):
        chosen = submission.raw.get("selected_workflow")
        if isinstance(chosen, dict) and isinstance(chosen.get("workflow_id"), str):
            workflow_id = chosen["workflow_id"][:253]
    return resources.ValidationAttempt(
        attempt=number,
        workflow_id=workflow_id,
        valid=verdict.valid,
        errors=[e[:1024] for e in verdict.errors],
        at=resources.timestamp(at),
    )


def decide(
    verdicts: list[validation.Verdict],
    *,
    attempts: list[resources.ValidationAttempt],
    usage: resources.LLMUsage,
    spec: resources.AIAnalysisSpec,
    confidence_floor: float,
) -> status.Decision:
    """Pure: the last verdict decides; a selection reaches status only when it passed every check."""
    final = verdicts[-1]
    ans = final.answer or _last_parsed(verdicts)
    warnings = list(final.warnings)
    alternatives = _alternatives(ans)
    selected: resources.SelectedWorkflow | None = None
    review: resources.HumanReviewReason | None
    if final.valid and final.workflow is not None and ans is not None and ans.selected_workflow is not None:
        selected = resources.SelectedWorkflow(
            workflow_id=final.workflow.spec.workflow_id,
            version=final.workflow.spec.version,
            container_image=final.workflow.spec.execution.container_image,
            confidence=ans.selected_workflow.confidence,
            rationale=ans.selected_workflow.rationale,
            parameters=dict(final.parameters),
            spec_digest=final.workflow.digest,
        )
        review = _review_for_valid(ans, selected, confidence_floor)
    elif final.valid and ans is not None:
        review = ans.human_review_reason or "inconclusive"
    else:
        review = _review_for_invalid(final)
        # The rejected candidate is shown only when it failed on its values alone: one the policy,
        # the catalog or the target rules refused (injected text can name any id) never reaches status.
        candidate = _candidate(ans) if set(final.rules_failed) <= _VALUE_RULES else None
        if candidate is not None:
            alternatives = [candidate, *[a for a in alternatives if a.workflow_id != candidate.workflow_id]]
        warnings.append(
            f"no valid selection after {len(verdicts)} attempt(s): " + "; ".join(final.errors)[:900]
        )
    return status.Decision(
        selected=selected,
        review_reason=review,
        root_cause=_root_cause(ans, spec, target=final.target),
        alternatives=alternatives,
        warnings=warnings,
        attempts=attempts,
        recovery=_recovery(ans, spec) if final.valid else _recovery(None, spec),
        llm=usage,
        failed_rules=[rule for v in verdicts for rule in sorted(set(v.rules_failed))],
    )


def _last_parsed(verdicts: list[validation.Verdict]) -> answer.SelectionAnswer | None:
    return next((v.answer for v in reversed(verdicts) if v.answer is not None), None)


def _review_for_valid(
    ans: answer.SelectionAnswer, selected: resources.SelectedWorkflow, floor: float
) -> resources.HumanReviewReason | None:
    if ans.needs_human_review:
        return ans.human_review_reason or "inconclusive"
    if selected.confidence < floor:
        return "low_confidence"
    return None


def _review_for_invalid(final: validation.Verdict) -> resources.HumanReviewReason:
    rules = set(final.rules_failed)
    if rules and rules <= {"missing_parameter", "parameters"} and "missing_parameter" in rules:
        return "parameters_incomplete"
    return "validation_failed"


_VALUE_RULES = frozenset({"missing_parameter", "parameters", "repeated_failure"})


def _candidate(ans: answer.SelectionAnswer | None) -> resources.AlternativeWorkflow | None:
    if ans is None or ans.selected_workflow is None:
        return None
    chosen = ans.selected_workflow
    return resources.AlternativeWorkflow(
        workflow_id=chosen.workflow_id[:253],
        version=chosen.version,
        confidence=chosen.confidence,
        rationale=chosen.rationale,
    )


def _alternatives(ans: answer.SelectionAnswer | None) -> list[resources.AlternativeWorkflow]:
    """The LLM's alternatives; the validator already dropped those the catalog does not hold."""
    if ans is None:
        return []
    return [
        resources.AlternativeWorkflow(
            workflow_id=alt.workflow_id,
            version=alt.version,
            confidence=alt.confidence,
            rationale=alt.rationale,
        )
        for alt in ans.alternative_workflows
    ]


def _root_cause(
    ans: answer.SelectionAnswer | None, spec: resources.AIAnalysisSpec, *, target: scope.ObjectRef | None
) -> resources.RootCause | None:
    """``affectedResource`` is the validated target; a target that failed the scope check never
    reaches status (an instruction injected into an alert must not), the incident's resource does."""
    if ans is None:
        return None
    affected = (
        resources.AffectedResource(
            kind=target.kind, name=target.name, namespace=target.namespace, api_version=target.api_version
        )
        if target is not None
        else resources.AffectedResource(
            kind=spec.resource.kind, name=spec.resource.name, namespace=spec.resource.namespace
        )
    )
    return resources.RootCause(
        summary=ans.root_cause_assessment,
        severity=ans.rca_severity,
        signal_type=ans.signal_type or spec.signal.type,
        contributing_factors=list(ans.contributing_factors),
        affected_resource=affected,
    )


def _recovery(
    ans: answer.SelectionAnswer | None, spec: resources.AIAnalysisSpec
) -> resources.RecoveryStatus | None:
    if spec.recovery is None:
        return None
    if ans is None or ans.recovery_analysis is None or ans.recovery_strategy is None:
        return resources.RecoveryStatus(attempt_number=spec.recovery.attempt_number)
    return resources.RecoveryStatus.model_validate(
        {
            "attemptNumber": spec.recovery.attempt_number,
            "recoveryAnalysis": ans.recovery_analysis.model_dump(),
            "recoveryStrategy": ans.recovery_strategy.model_dump(),
        }
    )
