"""What the console shows, read as the person with their credentials: the incidents of a namespace,
and one incident whole (evidence, investigation audit, selection and alternatives, review reason,
rejection, executions with reason codes and verdicts, cost, a timeline)."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping, Sequence
from typing import Any

import pydantic

from aianalysis import errors, kube, resources
from aianalysis.executor import approval
from aianalysis.kube import calls, objects, rest


@dataclasses.dataclass(frozen=True, kw_only=True)
class Moment:
    """One line of an incident's timeline."""

    at: str
    what: str
    detail: str = ""


@dataclasses.dataclass(frozen=True, kw_only=True)
class IncidentView:
    """One AIAnalysis as the console shows it."""

    body: Mapping[str, Any]
    status: resources.AIAnalysisStatus | None
    """None: a status this version cannot read (shown raw, nothing to decide on)."""
    proposal: approval.Proposal | approval.Refuse
    executions: list[Mapping[str, Any]]
    rejections: list[Mapping[str, Any]]
    timeline: list[Moment]
    cost: str | None
    unread: list[str] = dataclasses.field(default_factory=list)
    """What the person may not read (RBAC), said on the page rather than hidden."""

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])

    @property
    def decided(self) -> str | None:
        """Why there is nothing left to decide (None: the person may approve or reject)."""
        if isinstance(self.proposal, approval.Refuse):
            return self.proposal.message
        if self.rejections:
            spec = self.rejections[0].get("spec") or {}
            return f"rejected by {spec.get('rejectedBy')}"
        counted = [e for e in self.executions if (e.get("spec") or {}).get("approval")]
        if counted:
            return f"approved: {', '.join(e['metadata']['name'] for e in counted)}"
        return None


async def incidents(api: kube.ApiClient, *, namespace: str) -> list[IncidentView]:
    """The namespace's analyses, newest first, each with its executions and rejections."""
    analyses, executions, rejections, unread = await _lists(api, namespace)
    out = [_incident(a, executions, rejections, events=[], unread=unread) for a in analyses]
    return sorted(out, key=lambda i: str(i.body["metadata"].get("creationTimestamp")), reverse=True)


async def incident(api: kube.ApiClient, *, namespace: str, name: str) -> IncidentView | None:
    body = await objects.get(api, namespace, resources.AIANALYSIS_PLURAL, name)
    if body is None:
        return None
    _, executions, rejections, unread = await _lists(api, namespace, analyses=False)
    return _incident(body, executions, rejections, events=await _events(api, body), unread=unread)


Listed = list[dict[str, Any]]


async def _lists(
    api: kube.ApiClient, namespace: str, *, analyses: bool = True
) -> tuple[Listed, Listed, Listed, list[str]]:
    """The analyses (when asked), executions and rejections of the namespace, and what the person
    may not list (the analyses' refusal is not hidden: it is raised)."""
    found: list[Listed] = [
        await objects.list_objects(api, plural=resources.AIANALYSIS_PLURAL, namespace=namespace)
        if analyses
        else []
    ]
    unread = []
    for plural in (resources.WORKFLOWEXECUTION_PLURAL, resources.WORKFLOWREJECTION_PLURAL):
        try:
            found.append(await objects.list_objects(api, plural=plural, namespace=namespace))
        except errors.ClusterRejectedError as exc:
            found.append([])
            unread.append(f"{plural}: {exc}")
    return found[0], found[1], found[2], unread


async def _events(api: kube.ApiClient, body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The Events on the analysis (an empty list when the person may not read Events)."""
    meta = body["metadata"]
    url = rest.path("api", "v1", "namespaces", meta["namespace"], "events")
    try:
        found: Any = await calls.call(
            "listing events",
            rest.get_json,
            api,
            url,
            query={"fieldSelector": f"involvedObject.uid={meta['uid']}"},
        )
    except errors.ClusterRejectedError:
        return []
    return list(found.get("items") or [])


def _incident(
    body: Mapping[str, Any],
    executions: Sequence[Mapping[str, Any]],
    rejections: Sequence[Mapping[str, Any]],
    *,
    events: Sequence[Mapping[str, Any]],
    unread: list[str],
) -> IncidentView:
    uid = body["metadata"]["uid"]
    try:
        status: resources.AIAnalysisStatus | None = resources.AIAnalysisStatus.parse_known(
            body.get("status") or {}
        )
    except pydantic.ValidationError:
        status = None
    mine = [e for e in executions if (e.get("spec") or {}).get("analysisUID") == uid]
    said_no = approval.rejections_of(uid, rejections)
    return IncidentView(
        body=body,
        status=status,
        proposal=approval.proposal_of(body),
        executions=sorted(mine, key=lambda e: str(e["metadata"].get("creationTimestamp"))),
        rejections=said_no,
        timeline=_timeline(body, status, mine, said_no, events),
        cost=_cost(body),
        unread=unread,
    )


def _cost(body: Mapping[str, Any]) -> str | None:
    """``status.llm.cost`` when the operator records it (the CRD admits only amount, currency and the
    price table's date, all three)."""
    cost = ((body.get("status") or {}).get("llm") or {}).get("cost")
    if cost is None:
        return None
    return f"{cost['amount']} {cost['currency']} (prices of {cost['priceTableDate']})"


def _timeline(
    body: Mapping[str, Any],
    status: resources.AIAnalysisStatus | None,
    executions: Sequence[Mapping[str, Any]],
    rejections: Sequence[Mapping[str, Any]],
    events: Sequence[Mapping[str, Any]],
) -> list[Moment]:
    meta = body["metadata"]
    signal = (body.get("spec") or {}).get("signal") or {}
    moments = [
        Moment(
            at=str(meta.get("creationTimestamp")), what="incident recorded", detail=str(signal.get("type"))
        )
    ]
    if signal.get("firingTime"):
        moments.append(
            Moment(
                at=str(signal["firingTime"]), what="alert firing", detail=str(signal.get("alertName") or "")
            )
        )
    if status is not None and status.started_at:
        moments.append(Moment(at=status.started_at, what="analysis started"))
    if status is not None and status.completed_at:
        chosen = status.selected_workflow
        picked = f"selected {chosen.workflow_id} {chosen.version}" if chosen else "no workflow selected"
        review = f"; needs human review ({status.human_review_reason})" if status.needs_human_review else ""
        moments.append(
            Moment(at=status.completed_at, what=f"analysis {status.phase.lower()}", detail=picked + review)
        )
    for r in rejections:
        spec = r.get("spec") or {}
        moments.append(
            Moment(
                at=str(r["metadata"].get("creationTimestamp")),
                what=f"rejected by {spec.get('rejectedBy')}",
                detail=str(spec.get("reason")),
            )
        )
    for e in executions:
        name, spec, st = e["metadata"]["name"], e.get("spec") or {}, e.get("status") or {}
        by = (spec.get("approval") or {}).get("approvedBy")
        moments.append(
            Moment(at=str(e["metadata"].get("creationTimestamp")), what=f"{name} approved", detail=f"by {by}")
        )
        if st.get("startedAt"):
            moments.append(Moment(at=str(st["startedAt"]), what=f"{name} started"))
        if st.get("completedAt"):
            reason = (st.get("failureDetails") or {}).get("reason") or ""
            moments.append(
                Moment(
                    at=str(st["completedAt"]), what=f"{name} {str(st.get('phase')).lower()}", detail=reason
                )
            )
        verdict = st.get("assessment") or {}
        if verdict.get("assessedAt"):
            moments.append(
                Moment(
                    at=str(verdict["assessedAt"]),
                    what=f"{name} assessed {verdict.get('verdict')}",
                    detail=str(verdict.get("reason") or ""),
                )
            )
    for ev in events:
        at = ev.get("lastTimestamp") or ev.get("eventTime") or ev.get("firstTimestamp")
        if at:
            moments.append(
                Moment(at=str(at), what=f"event {ev.get('reason')}", detail=str(ev.get("message") or ""))
            )
    return sorted(moments, key=lambda m: _when(m.at))


def _when(text: str) -> datetime.datetime:
    return resources.parse_timestamp(text) or datetime.datetime.min.replace(tzinfo=datetime.UTC)
