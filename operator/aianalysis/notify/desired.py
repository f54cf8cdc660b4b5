"""What should fire, derived from the cluster's objects alone (pure: objects and ``now`` in, alerts
out). The notifier posts exactly this set at every pass and resolves whatever it posted before that
is no longer in it, so a restart derives the same label sets again and Alertmanager — which
deduplicates by labels — sees the same alerts, not new ones.

Labels route and stay few (``alertname`` per kind, ``namespace``, the object's name, ``severity``,
``environment``, ``team``, ``priority``, ``reason``: closed vocabularies and names, never free
text); annotations act (what was selected and why in a few bounded lines, the approve command, the
console link). Text an LLM or an alert wrote is untrusted: control and invisible characters are
dropped and each piece is cut short.

An analysis' alert ends when it was acted on — an execution of it exists (approved, by a person or
``autoExecute``), it was rejected (``status.rejection``), a newer analysis of the same target
superseded it — or when it is gone or older than ``max_age``. An execution's alert ends when a newer
execution on the same target exists, or when it is gone or older than ``max_age``.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, TypedDict

import pydantic

from aianalysis import resources

SOURCE_LABEL = "source"
SOURCE = "aianalysis-operator"
"""Every alert carries ``source="aianalysis-operator"``: how the notifier finds its own alerts in
Alertmanager (after a restart, those it must resolve)."""

ALERTNAMES: dict[str, str] = {
    "awaiting_approval": "AIAnalysisAwaitingApproval",
    "human_review": "AIAnalysisHumanReview",
    "recovery_exhausted": "AIAnalysisRecoveryExhausted",
    "recurring": "AIAnalysisRecurringIncident",
    "execution_failed": "WorkflowExecutionFailed",
    "execution_refused": "WorkflowExecutionRefused",
    "execution_blocked": "WorkflowExecutionBlocked",
    "ineffective": "WorkflowExecutionIneffective",
    "budget_exhausted": "AIAnalysisLLMBudgetExhausted",
}
"""One ``alertname`` per kind of notification (``AIANALYSIS_NOTIFY_KINDS`` names the kinds)."""

_REVIEW_KINDS = {"max_recovery_attempts": "recovery_exhausted", "recurring_after_remediation": "recurring"}
_SEVERITIES = {"critical": "critical", "high": "critical", "medium": "warning", "low": "info"}
_IDENTIFIER = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,62}$")
_LINE_CHARS, _LABEL_CHARS, _LIST_NAMES = 300, 63, 10


class AlertParam(TypedDict, total=False):
    """One alert as Alertmanager's ``POST /api/v2/alerts`` takes it."""

    labels: dict[str, str]
    annotations: dict[str, str]
    startsAt: str
    endsAt: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class Notification:
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    starts_at: datetime.datetime

    @property
    def key(self) -> tuple[tuple[str, str], ...]:
        """The identity Alertmanager deduplicates by: the label set."""
        return tuple(sorted(self.labels.items()))

    def wire(self, *, ends_at: datetime.datetime) -> AlertParam:
        return {
            "labels": dict(self.labels),
            "annotations": dict(self.annotations),
            "startsAt": resources.timestamp(self.starts_at),
            "endsAt": resources.timestamp(ends_at),
        }


@dataclasses.dataclass(frozen=True, kw_only=True)
class NotifyOptions:
    kinds: frozenset[str]
    console_url: str
    pending_seconds: float
    max_age_seconds: float
    cluster: str | None = None


def derive(
    analyses: Sequence[Mapping[str, Any]],
    executions: Sequence[Mapping[str, Any]],
    *,
    now: datetime.datetime,
    options: NotifyOptions,
) -> list[Notification]:
    """Every alert that should be firing now, once each (by label set)."""
    found = [
        *_analysis_alerts(analyses, executions, now=now, options=options),
        *_execution_alerts(executions, now=now, options=options),
        *_budget_alerts(analyses, now=now, options=options),
    ]
    unique = {alert.key: alert for alert in found if alert.labels["alertname"] in _names(options.kinds)}
    return list(unique.values())


def _names(kinds: Iterable[str]) -> set[str]:
    return {ALERTNAMES[kind] for kind in kinds if kind in ALERTNAMES}


# ---- analyses ----------------------------------------------------------------------------------


def _analysis_alerts(
    analyses: Sequence[Mapping[str, Any]],
    executions: Sequence[Mapping[str, Any]],
    *,
    now: datetime.datetime,
    options: NotifyOptions,
) -> Iterator[Notification]:
    executed = {_analysis_of(e) for e in executions}
    newest = _newest_by_target(analyses)
    for analysis in analyses:
        meta, raw = analysis.get("metadata") or {}, analysis.get("status") or {}
        if meta.get("deletionTimestamp") or raw.get("phase") not in resources.TERMINAL_PHASES:
            continue
        if raw.get("rejection") or {(meta.get("name"), meta.get("uid")), (meta.get("name"), None)} & executed:
            continue  # acted on: executed (or being), or rejected (the console's and `aianalysis reject`'s)
        try:
            status = resources.AIAnalysisStatus.parse_known(raw)
        except pydantic.ValidationError:
            continue  # fail closed: what cannot be read is not announced as waiting for anyone
        target = resources.remediation_target(analysis, status)
        if newest.get(_target_key(meta, target)) is not analysis:
            continue  # superseded: a newer analysis of the same target is the one to act on
        ended = resources.parse_timestamp(status.completed_at) or _created(analysis)
        if ended is None or (now - ended).total_seconds() > options.max_age_seconds:
            continue
        kind = _analysis_kind(status, ended=ended, now=now, options=options)
        if kind is not None:
            yield _analysis_alert(
                analysis, status, kind=kind, target=target, starts_at=ended, options=options
            )


def _analysis_kind(
    status: resources.AIAnalysisStatus,
    *,
    ended: datetime.datetime,
    now: datetime.datetime,
    options: NotifyOptions,
) -> str | None:
    if status.needs_human_review:
        return _REVIEW_KINDS.get(status.human_review_reason or "", "human_review")
    if status.phase == "Completed" and status.selected_workflow is not None:
        waited = (now - ended).total_seconds()
        return "awaiting_approval" if waited >= options.pending_seconds else None
    return None


def _analysis_alert(
    analysis: Mapping[str, Any],
    status: resources.AIAnalysisStatus,
    *,
    kind: str,
    target: resources.ResourceRef,
    starts_at: datetime.datetime,
    options: NotifyOptions,
) -> Notification:
    meta, spec = analysis["metadata"], analysis.get("spec") or {}
    reason = status.human_review_reason if kind != "awaiting_approval" else None
    labels = _labels(kind, meta["namespace"], spec, options=options, aianalysis=meta["name"], reason=reason)
    chosen = status.selected_workflow
    where = f"{target.kind}/{target.name}" + (f" in {target.namespace}" if target.namespace else "")
    if chosen is not None:
        what = f"{chosen.workflow_id} {chosen.version} (confidence {chosen.confidence:.2f}) for {where}"
    else:
        what = f"no workflow for {where}"
    headline = {
        "awaiting_approval": f"Selected {what}: awaiting approval",
        "human_review": f"Needs human review ({reason}): {what}",
        "recovery_exhausted": f"Recovery attempts exhausted: {what}",
        "recurring": f"The incident recurs after a remediation judged effective: {what}",
    }[kind]
    lines = [
        f"Root cause: {_plain(status.root_cause.summary)}" if status.root_cause else "",
        f"Why: {_plain(chosen.rationale)}" if chosen is not None else "",
        f"Review: {reason}" if reason else "",
        f"Incident: {_plain(str((spec.get('signal') or {}).get('type') or ''))}",
    ]
    annotations = {
        "summary": f"aianalysis/{meta['name']}: {_plain(headline)}",
        "description": "\n".join(line for line in lines if line),
        "console_url": _console(options, meta["namespace"], meta["name"]),
    }
    if chosen is not None:
        approve = (
            f"aianalysis approve {meta['name']} -n {meta['namespace']} --uid {meta['uid']} "
            f"--digest {_digest(meta['uid'], chosen, target)}"
        )
        if reason:
            approve += f" --override-review {reason}"
        annotations["approve_command"] = approve
    return Notification(labels=labels, annotations=annotations, starts_at=starts_at)


def _digest(uid: str, chosen: resources.SelectedWorkflow, target: resources.ResourceRef) -> str:
    """The selection digest an approval of this selection is bound to (as the executor computes it)."""
    ref = resources.WorkflowRef(
        workflow_id=chosen.workflow_id,
        version=chosen.version,
        container_image=chosen.container_image,
        spec_digest=chosen.spec_digest,
    )
    return resources.selection_digest(
        analysis_uid=uid, workflow=ref, parameters=dict(chosen.parameters or {}), target=target
    )


def _newest_by_target(analyses: Sequence[Mapping[str, Any]]) -> dict[tuple[str, ...], Mapping[str, Any]]:
    """The newest terminal analysis of each remediation target (the one a person acts on)."""
    newest: dict[tuple[str, ...], Mapping[str, Any]] = {}
    ordered = sorted(analyses, key=_age_order)
    for analysis in ordered:
        raw = analysis.get("status") or {}
        if raw.get("phase") not in resources.TERMINAL_PHASES:
            continue
        try:
            status = resources.AIAnalysisStatus.parse_known(raw)
        except pydantic.ValidationError:
            continue
        target = resources.remediation_target(analysis, status)
        newest[_target_key(analysis.get("metadata") or {}, target)] = analysis
    return newest


def _target_key(meta: Mapping[str, Any], target: resources.ResourceRef) -> tuple[str, ...]:
    return (str(meta.get("namespace")), target.kind, target.namespace or "", target.name)


def _analysis_of(execution: Mapping[str, Any]) -> tuple[str | None, str | None]:
    spec = execution.get("spec") or {}
    return spec.get("analysisRef"), spec.get("analysisUID")


# ---- executions --------------------------------------------------------------------------------


def _execution_alerts(
    executions: Sequence[Mapping[str, Any]], *, now: datetime.datetime, options: NotifyOptions
) -> Iterator[Notification]:
    latest: dict[tuple[str, ...], str] = {}
    for execution in sorted(executions, key=_age_order):
        latest[_execution_target(execution)] = execution["metadata"]["name"]
    for execution in executions:
        meta, raw = execution["metadata"], execution.get("status") or {}
        if meta.get("deletionTimestamp") or latest.get(_execution_target(execution)) != meta["name"]:
            continue  # gone, or superseded by a newer execution on the same target
        kind, reason = _execution_kind(raw)
        if kind is None:
            continue
        assessment = raw.get("assessment") or {}
        ended = resources.parse_timestamp(
            assessment.get("assessedAt") if kind == "ineffective" else raw.get("completedAt")
        ) or _created(execution)
        if ended is None or (now - ended).total_seconds() > options.max_age_seconds:
            continue
        yield _execution_alert(execution, kind=kind, reason=reason, starts_at=ended, options=options)


def _execution_kind(raw: Mapping[str, Any]) -> tuple[str | None, str | None]:
    failure = raw.get("failureDetails") or {}
    reason, phase = failure.get("reason"), raw.get("phase")
    if reason in resources.NOT_STARTED_REASONS:
        return "execution_blocked", reason
    if phase == "Refused":
        return "execution_refused", _identifier(reason)
    if phase == "Failed":
        return "execution_failed", reason if reason in resources.CANONICAL_REASON_CODES else "Other"
    if (raw.get("assessment") or {}).get("verdict") == "ineffective":
        return "ineffective", _identifier((raw.get("assessment") or {}).get("reason"))
    return None, None


def _execution_alert(
    execution: Mapping[str, Any],
    *,
    kind: str,
    reason: str | None,
    starts_at: datetime.datetime,
    options: NotifyOptions,
) -> Notification:
    meta, spec, raw = execution["metadata"], execution.get("spec") or {}, execution.get("status") or {}
    workflow = spec.get("workflowRef") or {}
    target = spec.get("targetResource") or {}
    analysis = str(spec.get("analysisRef") or "")
    labels = _labels(
        kind, meta["namespace"], {}, options=options, workflowexecution=meta["name"], reason=reason
    )
    what = (
        f"{workflow.get('workflowId')} {workflow.get('version')} on {target.get('kind')}/{target.get('name')}"
    )
    headline = {
        "execution_failed": f"Failed ({reason}): {what}",
        "execution_refused": f"Refused by the executor ({reason}): {what}",
        "execution_blocked": f"Blocked by a guard ({reason}); nothing ran: {what}",
        "ineffective": f"Ran, but the assessment found it ineffective: {what}",
    }[kind]
    failure = raw.get("failureDetails") or {}
    assessment = raw.get("assessment") or {}
    detail = failure.get("message") if kind != "ineffective" else assessment.get("message")
    lines = [_plain(str(detail)) if detail else "", f"Analysis: aianalysis/{analysis}" if analysis else ""]
    annotations = {
        "summary": f"workflowexecution/{meta['name']}: {_plain(headline)}",
        "description": "\n".join(line for line in lines if line),
    }
    if analysis:
        annotations["console_url"] = _console(options, meta["namespace"], analysis)
    return Notification(labels=labels, annotations=annotations, starts_at=starts_at)


def _execution_target(execution: Mapping[str, Any]) -> tuple[str, ...]:
    spec = execution.get("spec") or {}
    target = spec.get("targetResource") or {}
    if not target:  # no target recorded: the execution stands alone
        return ("", execution["metadata"]["namespace"], execution["metadata"]["name"])
    return (
        execution["metadata"]["namespace"],
        str(target.get("kind")),
        str(target.get("namespace") or ""),
        str(target.get("name")),
    )


# ---- the LLM budget ----------------------------------------------------------------------------


def _budget_alerts(
    analyses: Sequence[Mapping[str, Any]], *, now: datetime.datetime, options: NotifyOptions
) -> Iterator[Notification]:
    """One alert per namespace whose analyses wait for the LLM budget (``Pending``, ``BudgetExhausted``)."""
    waiting: dict[str, list[Mapping[str, Any]]] = {}
    for analysis in analyses:
        raw = analysis.get("status") or {}
        if raw.get("phase") == "Pending" and raw.get("reason") == "BudgetExhausted":
            waiting.setdefault(analysis["metadata"]["namespace"], []).append(analysis)
    for namespace, items in sorted(waiting.items()):
        names = sorted(a["metadata"]["name"] for a in items)
        since = min((c for c in map(_created, items) if c is not None), default=now)
        shown = ", ".join(names[:_LIST_NAMES]) + (
            f" and {len(names) - _LIST_NAMES} more" if len(names) > _LIST_NAMES else ""
        )
        yield Notification(
            labels=_labels("budget_exhausted", namespace, {}, options=options, severity="warning"),
            annotations={
                "summary": f"{len(names)} analyses in {namespace} wait for the LLM budget",
                "description": f"Waiting: {shown}. They start when the budget's window frees room "
                "(AIANALYSIS_LLM_BUDGET_*).",
            },
            starts_at=since,
        )


# ---- shared ------------------------------------------------------------------------------------


def _labels(
    kind: str,
    namespace: str,
    spec: Mapping[str, Any],
    *,
    options: NotifyOptions,
    severity: str | None = None,
    reason: str | None = None,
    **names: str,
) -> dict[str, str]:
    business = spec.get("businessContext") or {}
    signal = spec.get("signal") or {}
    labels = {
        "alertname": ALERTNAMES[kind],
        SOURCE_LABEL: SOURCE,
        "namespace": namespace,
        **names,
        "severity": severity or _SEVERITIES.get(str(signal.get("severity")), "warning"),
        "environment": _label(business.get("environment")),
        "team": _label((business.get("customLabels") or {}).get("team")),
        "priority": _label(business.get("priority")),
        "reason": reason or "",
        "cluster": options.cluster or "",
    }
    return {name: value for name, value in labels.items() if value}  # Alertmanager: empty = absent


def _label(value: object) -> str:
    return _plain(value, limit=_LABEL_CHARS) if isinstance(value, str) else ""


def _identifier(value: object) -> str:
    """A reason code as a label value: an identifier, else ``Other`` (never free text)."""
    return value if isinstance(value, str) and _IDENTIFIER.match(value) else "Other"


def _console(options: NotifyOptions, namespace: str, name: str) -> str:
    return f"{options.console_url.rstrip('/')}/ns/{namespace}/aia/{name}"


def _age_order(obj: Mapping[str, Any]) -> tuple[str, str]:
    """Oldest first; objects created in the same second by name (the same order at every pass)."""
    meta = obj.get("metadata") or {}
    return str(meta.get("creationTimestamp") or ""), str(meta.get("name") or "")


def _created(obj: Mapping[str, Any]) -> datetime.datetime | None:
    return resources.parse_timestamp((obj.get("metadata") or {}).get("creationTimestamp"))


def _plain(text: object, *, limit: int = _LINE_CHARS) -> str:
    """Untrusted text on one line: control and invisible format characters (bidi overrides,
    zero-width) dropped, whitespace collapsed, cut to ``limit`` characters."""
    kept = "".join(
        " " if ch.isspace() else ch
        for ch in str(text)
        if ch.isspace() or not unicodedata.category(ch).startswith("C")
    )
    line = " ".join(kept.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
