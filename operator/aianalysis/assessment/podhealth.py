"""Pure: the Pods of a target after an execution → how healthy they are *since* it ended.

Only what happened after the reference time counts: a container that restarted 40 times before the
fix and never since is healthy. A Pod created after the reference counts all its restarts; an older
Pod counts a restart only when its last termination finished after the reference (the restart count
alone cannot say when). Terminating Pods and Pods that ended (Succeeded/Failed, e.g. of a Job) are not
members of the workload any more and are left out.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from aianalysis import resources

CRASH_REASONS = frozenset(
    {
        "CrashLoopBackOff",
        "CreateContainerConfigError",
        "ImagePullBackOff",
        "ErrImagePull",
        "InvalidImageName",
        "RunContainerError",
        "CreateContainerError",
    }
)
"""Waiting reasons of a container that cannot run."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class PodHealth:
    pods: int
    ready: int
    restarts: int
    """Restarts after the reference time (a lower bound for Pods older than it)."""
    terminations: tuple[str, ...]
    """Reasons of container terminations after the reference time (``OOMKilled``, ``Error``...)."""
    waiting: tuple[str, ...]
    """Containers that cannot run now: waiting for a bad reason (``CrashLoopBackOff``...), or ended
    by a failure and waiting for their restart (``Error``, ``OOMKilled``: a real kubelet shows a
    crash loop so between restarts, ``CrashLoopBackOff`` only in the moment before each)."""
    pending: int

    @property
    def score(self) -> float:
        """1.0 all ready and nothing since; 0.0 none ready or crashing now; in between otherwise."""
        if self.pods == 0 or self.ready == 0 or self.waiting:
            return 0.0
        readiness = self.ready / self.pods
        if self.restarts or self.terminations:
            return round(min(readiness, 0.5), 2)
        return round(readiness, 2)

    def describe(self) -> str:
        parts = [f"{self.ready}/{self.pods} pods ready", f"{self.restarts} restarts since the execution"]
        if self.terminations:
            parts.append("terminated: " + ", ".join(sorted(set(self.terminations))))
        if self.waiting:
            parts.append("waiting: " + ", ".join(sorted(set(self.waiting))))
        if self.pending:
            parts.append(f"{self.pending} pending")
        return "; ".join(parts)


def of_pods(pods: Sequence[Mapping[str, Any]], *, since: datetime.datetime) -> PodHealth:
    members = [p for p in pods if _member(p)]
    ready = restarts = pending = 0
    terminations: list[str] = []
    waiting: list[str] = []
    for pod in members:
        status = pod.get("status") or {}
        created = resources.parse_timestamp((pod.get("metadata") or {}).get("creationTimestamp"))
        young = created is not None and created > since
        pending += status.get("phase") == "Pending"
        ready += _ready(status)
        for container in status.get("containerStatuses") or []:
            last = (container.get("lastState") or {}).get("terminated") or {}
            now_terminated = (container.get("state") or {}).get("terminated") or {}
            recent = [t for t in (last, now_terminated) if _after(t.get("finishedAt"), since)]
            count = int(container.get("restartCount") or 0)
            restarts += count if young else min(count, 1 if recent else 0)
            terminations.extend(str(t.get("reason") or "Terminated") for t in recent)
            if (reason := failing_now(container)) is not None:
                waiting.append(reason)
    return PodHealth(
        pods=len(members),
        ready=ready,
        restarts=restarts,
        terminations=tuple(terminations),
        waiting=tuple(waiting),
        pending=pending,
    )


def failing_now(container: Mapping[str, Any]) -> str | None:
    """Why a container of a running Pod cannot run now, or None: a bad waiting reason, or a current
    ``terminated`` state other than a clean exit (the kubelet restarts it after a back-off)."""
    state = container.get("state") or {}
    reason = (state.get("waiting") or {}).get("reason")
    if reason in CRASH_REASONS:
        return str(reason)
    ended = state.get("terminated")
    if isinstance(ended, Mapping) and (
        ended.get("reason") != "Completed" or ended.get("exitCode") not in (0, None)
    ):
        return str(ended.get("reason") or "Error")
    return None


def _member(pod: Mapping[str, Any]) -> bool:
    meta = pod.get("metadata") or {}
    return not meta.get("deletionTimestamp") and (pod.get("status") or {}).get("phase") not in (
        "Succeeded",
        "Failed",
    )


def _ready(status: Mapping[str, Any]) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []
    ) or (
        bool(status.get("containerStatuses"))
        and all(c.get("ready") for c in status.get("containerStatuses") or [])
    )


def _after(stamp: object, since: datetime.datetime) -> bool:
    parsed = resources.parse_timestamp(stamp)
    return parsed is not None and parsed > since
