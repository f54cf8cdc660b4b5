"""Pure: earlier executions on the same target, and the selections people rejected there → what the
next analysis of that target must know.

Fed back twice: as a prompt section (the LLM sees what was tried and how it went), and as policy
after validation — a workflow that was ineffective on this target recently is not auto-selected
again (human review, ``previously_ineffective``), and an incident that keeps coming back after fixes
that were judged effective goes to a person (``recurring_after_remediation``): fixing the symptom
again would only hide the cause. A workflow a person rejected on this target (a WorkflowRejection)
is treated as an ineffective one: proposed again only to a person, saying so (``previously_rejected``).
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from aianalysis import resources

MAX_ENTRIES = 10


@dataclasses.dataclass(frozen=True, kw_only=True)
class Entry:
    execution: str
    workflow_id: str
    version: str
    phase: str
    verdict: str | None
    reason: str | None
    ended: datetime.datetime | None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Rejected:
    """A person's "no" to a workflow on this target (a WorkflowRejection)."""

    record: str
    workflow_id: str
    version: str
    by: str
    reason: str
    at: datetime.datetime | None


@dataclasses.dataclass(frozen=True, kw_only=True)
class History:
    entries: tuple[Entry, ...] = ()
    rejections: tuple[Rejected, ...] = ()
    recurrence_threshold: int = 2

    @property
    def rejected(self) -> frozenset[str]:
        return frozenset(r.workflow_id for r in self.rejections)

    @property
    def ineffective(self) -> frozenset[str]:
        return frozenset(e.workflow_id for e in self.entries if e.verdict == "ineffective")

    @property
    def effective(self) -> tuple[Entry, ...]:
        return tuple(e for e in self.entries if e.verdict == "effective")

    @property
    def recurring(self) -> bool:
        return self.recurrence_threshold > 0 and len(self.effective) >= self.recurrence_threshold


def of_target(
    executions: Sequence[Mapping[str, Any]],
    *,
    kind: str,
    name: str,
    namespace: str,
    now: datetime.datetime,
    window_seconds: float,
    recurrence_threshold: int = 2,
    rejections: Sequence[Mapping[str, Any]] = (),
) -> History:
    """Executions that ran on ``kind/name`` in ``namespace`` and ended within the window, and the
    rejections of workflows on that target made within it, newest first."""
    out: list[Entry] = []
    for body in executions:
        meta, spec, status = (body.get(k) or {} for k in ("metadata", "spec", "status"))
        target = spec.get("targetResource") or {}
        where = target.get("namespace") or meta.get("namespace")
        if (target.get("kind"), target.get("name"), where) != (kind, name, namespace) or resources.never_ran(
            status
        ):
            continue
        ended = resources.parse_timestamp(status.get("completedAt"))
        if status.get("phase") not in ("Completed", "Failed") or ended is None:
            continue
        if (now - ended).total_seconds() > window_seconds:
            continue
        assessment = status.get("assessment") or {}
        ref = spec.get("workflowRef") or {}
        out.append(
            Entry(
                execution=str(meta.get("name")),
                workflow_id=str(ref.get("workflowId")),
                version=str(ref.get("version")),
                phase=str(status.get("phase")),
                verdict=assessment.get("verdict"),
                reason=assessment.get("reason"),
                ended=ended,
            )
        )
    out.sort(key=lambda e: e.ended or now, reverse=True)
    said_no = _rejected(rejections, target=(kind, name, namespace), now=now, window_seconds=window_seconds)
    return History(
        entries=tuple(out[:MAX_ENTRIES]), rejections=said_no, recurrence_threshold=recurrence_threshold
    )


def _rejected(
    rejections: Sequence[Mapping[str, Any]],
    *,
    target: tuple[str, str, str],
    now: datetime.datetime,
    window_seconds: float,
) -> tuple[Rejected, ...]:
    out: list[Rejected] = []
    for body in rejections:
        meta, spec = body.get("metadata") or {}, body.get("spec") or {}
        on = spec.get("targetResource") or {}
        if (on.get("kind"), on.get("name"), on.get("namespace") or meta.get("namespace")) != target:
            continue
        at = resources.parse_timestamp(meta.get("creationTimestamp"))
        if at is None or (now - at).total_seconds() > window_seconds:
            continue
        ref = spec.get("workflowRef") or {}
        out.append(
            Rejected(
                record=str(meta.get("name")),
                workflow_id=str(ref.get("workflowId")),
                version=str(ref.get("version")),
                by=str(spec.get("rejectedBy")),
                reason=" ".join(str(spec.get("reason") or "").split()),
                at=at,
            )
        )
    out.sort(key=lambda r: r.at or now, reverse=True)
    return tuple(out[:MAX_ENTRIES])


def describe(history: History, *, now: datetime.datetime) -> list[str]:
    """One line per earlier execution, for the prompt (newest first)."""
    lines = []
    for e in history.entries:
        ago = int((now - e.ended).total_seconds() // 60) if e.ended else 0
        outcome = e.verdict or ("failed" if e.phase == "Failed" else "not assessed yet")
        why = f" ({e.reason})" if e.reason else ""
        lines.append(
            f"- {e.workflow_id} {e.version}: {e.phase.lower()} {ago} min ago, "
            f"verdict {outcome}{why} [{e.execution}]"
        )
    for r in history.rejections:
        ago = int((now - r.at).total_seconds() // 60) if r.at else 0
        lines.append(
            f"- {r.workflow_id} {r.version}: rejected by a person ({r.by}) {ago} min ago, not run: "
            f"{r.reason} [{r.record}]"
        )
    return lines
