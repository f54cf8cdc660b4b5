"""Pure: what Kubernetes reports about a workflow's Job → one canonical reason code.

The codes are the structured contract between a WorkflowExecution's ``failureDetails.reason`` and
the recovery prompt, so they come from real object state, never from free text we invent:

=======================  ===================================================================
code                     evidence (objects as the API server returns them, camelCase JSON)
=======================  ===================================================================
OOMKilled                container ``state.terminated.reason`` (exit code 137)
Forbidden / Unauthorized a failed container whose termination message reports an API refusal
                         (403 / 401: the workflow's own ServiceAccount lacks a permission)
Error                    container ``terminated.reason: Error`` (+ exit code); also any other
                         reason, named in the message (``ContainerCannotRun``, ...)
ImagePullBackOff,        container ``state.waiting.reason``; ImagePullBackOff and
ErrImagePull,            InvalidImageName end the execution at once (the kubelet would only
InvalidImageName         retry); ErrImagePull counts when the Job ends while pulling
Evicted                  Pod ``status.reason: Evicted``
NodeNotReady,            the Pod's node condition ``Ready`` False / Unknown, a ``NodeNotReady``
NodeUnreachable          Event, Pod ``status.reason: NodeLost``, or a taint-manager eviction
InsufficientCPU,         Pod condition ``PodScheduled=False`` (or a ``FailedScheduling`` Event):
InsufficientMemory,      "Insufficient cpu" / "Insufficient memory" in the scheduler's message,
Unschedulable,           "unschedulable" (cordoned nodes) → Unschedulable, anything else →
FailedScheduling         FailedScheduling
FailedMount,             Warning Events on the Pod
FailedAttachVolume,
NetworkNotReady
DeadlineExceeded         Job condition ``Failed``/``FailureTarget`` reason ``DeadlineExceeded``
                         with nothing more specific on the Pod (the kill of a Pod the Job
                         controller stops at the deadline is not its own failure)
BackoffLimitExceeded     Job condition reason ``BackoffLimitExceeded`` after retries
                         (``backoffLimit`` > 0), or when no Pod is left to explain it
=======================  ===================================================================

Pod evidence wins over the Job's own reason: a Job past its deadline because its image never
pulled failed with ``ImagePullBackOff``, which is what recovery must hear.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any

from aianalysis.analysis import redact

_Obj = Mapping[str, Any]

IMMEDIATE_WAITING = ("ImagePullBackOff", "InvalidImageName")
"""Waiting reasons that end an execution before its Job does: the kubelet would only retry."""
IMAGE_WAITING = ("ImagePullBackOff", "ErrImagePull", "InvalidImageName")
POD_EVENT_REASONS = ("FailedMount", "FailedAttachVolume", "NetworkNotReady", "NodeNotReady")
_FORBIDDEN = re.compile(r"\bforbidden\b|\b403\b", re.I)
_UNAUTHORIZED = re.compile(r"\bunauthori[sz]ed\b|\b401\b", re.I)
_MAX_MESSAGE = 1024


@dataclasses.dataclass(frozen=True, kw_only=True)
class Failure:
    """One failed execution, as ``failureDetails`` reports it."""

    reason: str
    message: str
    exit_code: int | None = None
    failed_at: str | None = None


def job_finished(job: _Obj) -> str | None:
    """``Complete`` or ``Failed`` once the Job controller decided, else None. ``SuccessCriteriaMet`` and
    ``FailureTarget`` count: the Job controller sets them first and ``Complete``/``Failed`` only
    after every Pod has terminated (which, without a kubelet, may take long)."""
    for condition in _conditions(job):
        if condition.get("status") != "True":
            continue
        if condition.get("type") in ("Complete", "SuccessCriteriaMet"):
            return "Complete"
        if condition.get("type") in ("Failed", "FailureTarget"):
            return "Failed"
    return None


def early_failure(pods: Sequence[_Obj]) -> Failure | None:
    """A failure visible before the Job gives up (an image that will never be pulled)."""
    for pod in pods:
        for status in _container_statuses(pod):
            waiting = (status.get("state") or {}).get("waiting") or {}
            if waiting.get("reason") in IMMEDIATE_WAITING:
                return Failure(
                    reason=waiting["reason"],
                    message=_message(waiting["reason"], waiting.get("message"), status.get("image")),
                )
    return None


def failure_of(
    *, job: _Obj, pods: Sequence[_Obj], events: Sequence[_Obj] = (), nodes: Mapping[str, _Obj] | None = None
) -> Failure:
    """The reason code of a Job that failed (``job_finished(job) == "Failed"``). ``events`` are the
    Events about the Job and its Pods; ``nodes`` the Nodes its Pods ran on, by name."""
    job_reason, job_message = _job_failure(job)
    if job_reason == "DeadlineExceeded":
        pods = [_without_the_deadline_kill(pod) for pod in pods]
    for rule in (_terminated, _evicted, _node, _waiting, _scheduling, _pod_events):
        found = rule(pods, events, nodes or {})
        if found is not None:
            return _retried(found, job=job, job_reason=job_reason)
    if job_reason == "DeadlineExceeded":
        return Failure(reason="DeadlineExceeded", message=_message("DeadlineExceeded", job_message))
    if job_reason == "BackoffLimitExceeded":
        return Failure(reason="BackoffLimitExceeded", message=_message(job_reason, job_message))
    return Failure(reason="Error", message=_message(job_reason or "JobFailed", job_message))


# ---- rules, most specific first ------------------------------------------------------------------


def _terminated(pods: Sequence[_Obj], events: Sequence[_Obj], nodes: Mapping[str, _Obj]) -> Failure | None:
    for pod in pods:
        for status in _container_statuses(pod):
            state = status.get("state") or {}
            done = state.get("terminated") or (status.get("lastState") or {}).get("terminated")
            if not done or (done.get("exitCode") == 0 and done.get("reason") in (None, "Completed")):
                continue
            return _from_terminated(done, container=status.get("name"))
    return None


def _from_terminated(done: _Obj, *, container: str | None) -> Failure:
    reason, text, code = done.get("reason") or "Error", done.get("message") or "", done.get("exitCode")
    where = f"container {container} " if container else ""
    if reason == "OOMKilled":
        return Failure(
            reason="OOMKilled",
            message=_message("OOMKilled", f"{where}exceeded its memory limit", text),
            exit_code=code,
            failed_at=done.get("finishedAt"),
        )
    refused = (
        "Forbidden" if _FORBIDDEN.search(text) else "Unauthorized" if _UNAUTHORIZED.search(text) else None
    )
    exit_text = f"{where}exited with code {code}" if code is not None else f"{where}terminated"
    original = "" if reason in ("Error", refused) else f"(reason {reason}) "
    return Failure(
        reason=refused or "Error",
        message=_message(refused or "Error", f"{original}{exit_text}", text),
        exit_code=code,
        failed_at=done.get("finishedAt"),
    )


def _evicted(pods: Sequence[_Obj], events: Sequence[_Obj], nodes: Mapping[str, _Obj]) -> Failure | None:
    for pod in pods:
        status = pod.get("status") or {}
        if status.get("reason") == "Evicted":
            return Failure(reason="Evicted", message=_message("Evicted", status.get("message")))
    return None


def _node(pods: Sequence[_Obj], events: Sequence[_Obj], nodes: Mapping[str, _Obj]) -> Failure | None:
    for pod in pods:
        status = pod.get("status") or {}
        if status.get("reason") == "NodeLost":
            return Failure(reason="NodeUnreachable", message=_message("NodeLost", status.get("message")))
        for condition in status.get("conditions") or []:
            if condition.get("type") == "DisruptionTarget" and condition.get("status") == "True":
                text = condition.get("message") or ""
                if "unreachable" in text:
                    return Failure(reason="NodeUnreachable", message=_message("NodeUnreachable", text))
                if "not-ready" in text:
                    return Failure(reason="NodeNotReady", message=_message("NodeNotReady", text))
        node = nodes.get((pod.get("spec") or {}).get("nodeName") or "")
        ready = next((c for c in _conditions(node or {}) if c.get("type") == "Ready"), None)
        if ready is not None and ready.get("status") in ("False", "Unknown"):
            code = "NodeUnreachable" if ready.get("status") == "Unknown" else "NodeNotReady"
            name = node["metadata"]["name"] if node else "?"
            return Failure(reason=code, message=_message(code, f"node {name}", ready.get("message")))
    return None


def _waiting(pods: Sequence[_Obj], events: Sequence[_Obj], nodes: Mapping[str, _Obj]) -> Failure | None:
    for pod in pods:
        for status in _container_statuses(pod):
            waiting = (status.get("state") or {}).get("waiting") or {}
            if waiting.get("reason") in IMAGE_WAITING:
                return Failure(
                    reason=waiting["reason"],
                    message=_message(waiting["reason"], waiting.get("message"), status.get("image")),
                )
    return None


def _scheduling(pods: Sequence[_Obj], events: Sequence[_Obj], nodes: Mapping[str, _Obj]) -> Failure | None:
    for pod in pods:
        for condition in _conditions(pod):
            if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
                return scheduling_failure(condition.get("message") or condition.get("reason") or "")
    for event in events:
        if event.get("reason") == "FailedScheduling":
            return scheduling_failure(event.get("message") or "")
    return None


def scheduling_failure(message: str) -> Failure:
    """The scheduler's message ("0/3 nodes are available: 2 Insufficient cpu, ...") → its code."""
    lowered = message.lower()
    if "insufficient cpu" in lowered:
        code = "InsufficientCPU"
    elif "insufficient memory" in lowered:
        code = "InsufficientMemory"
    elif "unschedulable" in lowered:
        code = "Unschedulable"
    else:
        code = "FailedScheduling"
    return Failure(reason=code, message=_message("FailedScheduling", message))


def _pod_events(pods: Sequence[_Obj], events: Sequence[_Obj], nodes: Mapping[str, _Obj]) -> Failure | None:
    pod_names = {(pod.get("metadata") or {}).get("name") for pod in pods}
    for reason in POD_EVENT_REASONS:  # in order of specificity
        for event in reversed(list(events)):
            involved = event.get("involvedObject") or event.get("regarding") or {}
            if event.get("reason") == reason and (not pod_names or involved.get("name") in pod_names):
                return Failure(
                    reason=reason, message=_message(reason, event.get("message") or event.get("note"))
                )
    return None


# ---- helpers ---------------------------------------------------------------------------------------

KILL_EXIT_CODES = (137, 143)
"""SIGKILL and SIGTERM: how a container ends that was stopped, not one that failed."""


def _without_the_deadline_kill(pod: _Obj) -> _Obj:
    """The Pod without the end the Job controller gave it at the deadline: it deletes the Pods
    still running, and the kubelet reports their containers ``terminated: Error`` with exit code
    143 or 137 while the Pod is being deleted — the deadline's doing, not a failure of their own
    (an earlier one, in ``lastState``, stays)."""
    if not (pod.get("metadata") or {}).get("deletionTimestamp"):
        return pod

    def unkilled(status: _Obj) -> _Obj:
        ended = (status.get("state") or {}).get("terminated") or {}
        killed = ended.get("reason") in (None, "Error") and ended.get("exitCode") in KILL_EXIT_CODES
        return {**status, "state": {}} if killed else status

    status = pod.get("status") or {}
    kept = {
        key: [unkilled(s) for s in status.get(key) or []]
        for key in ("initContainerStatuses", "containerStatuses")
    }
    return {**pod, "status": {**status, **kept}}


def _retried(found: Failure, *, job: _Obj, job_reason: str | None) -> Failure:
    """Several generic failures (``backoffLimit`` > 0) are the Job's BackoffLimitExceeded."""
    retries = ((job.get("spec") or {}).get("backoffLimit") or 0) > 0
    if found.reason == "Error" and job_reason == "BackoffLimitExceeded" and retries:
        return dataclasses.replace(found, reason="BackoffLimitExceeded")
    return found


def _job_failure(job: _Obj) -> tuple[str | None, str | None]:
    for condition in _conditions(job):
        if condition.get("type") in ("Failed", "FailureTarget") and condition.get("status") == "True":
            return condition.get("reason"), condition.get("message")
    return None, None


def _conditions(obj: _Obj) -> list[_Obj]:
    return list((obj.get("status") or {}).get("conditions") or [])


def _container_statuses(pod: _Obj) -> list[_Obj]:
    status = pod.get("status") or {}
    return [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]


def _message(reason: str, *parts: str | None) -> str:
    """The message as status, Events and the recovery prompt get it: a Job's termination message
    is whatever the workflow printed (``FallbackToLogsOnError``: its logs), so secrets are redacted
    like every other text read from the cluster."""
    text = redact.redact_text(": ".join(p.strip() for p in parts if p and p.strip()))
    return (f"{reason}: {text}" if text else reason)[:_MAX_MESSAGE]
