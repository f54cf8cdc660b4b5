"""What happens between "this selection may run" and the Job: the blast-radius guards, the dry-run
switch, and the baseline of the effectiveness assessment (the target's fingerprint *before* the run,
written to ``status.assessment.before`` — which also marks the execution as started for the guards).

One call (:func:`before_job`) from the runner; the decisions are ``guards``' (pure), made under
``startlock`` (a Lease) so that several executor replicas cannot overshoot the cluster-wide caps.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import uuid
from typing import Any

import aianalysis.settings
from aianalysis import errors, resources
from aianalysis.assessment import fingerprint, targets
from aianalysis.executor import guards, server_facts, startlock
from aianalysis.kube import objects, readers

PROCESS = uuid.uuid4().hex[:8]
"""Makes this process' name in the start lock unique even where two share a pod or host name."""


@dataclasses.dataclass(frozen=True)
class Blocked:
    block: guards.Block


@dataclasses.dataclass(frozen=True)
class DryRun:
    pass


@dataclasses.dataclass(frozen=True)
class Go:
    body: dict[str, Any]
    """The execution as it is after the baseline was written (its version is current)."""


@dataclasses.dataclass(frozen=True)
class Again:
    """The execution changed meanwhile: the next pass decides again from a fresh read."""


Step = Blocked | DryRun | Go | Again


def policy(settings: aianalysis.settings.Settings) -> guards.Policy:
    s = settings
    return guards.Policy(
        cooldown_seconds=s.guards.cooldown_seconds,
        failure_threshold=s.guards.failure_threshold,
        failure_backoff_seconds=s.guards.failure_backoff_seconds,
        failure_backoff_max_seconds=s.guards.failure_backoff_max_seconds,
        managed_label=s.guards.managed_label,
        require_managed_label=s.guards.require_managed_label,
        max_concurrent=s.guards.max_concurrent,
        max_per_hour=s.guards.max_per_hour,
    )


async def before_job(
    api: Any,
    body: dict[str, Any],
    spec: resources.WorkflowExecutionSpec,
    *,
    settings: aianalysis.settings.Settings,
    now: datetime.datetime,
) -> Step:
    """Guards first (a dry run is still held to them: it shows what would have run), then either the
    dry run or the baseline — under the start lock, so that no other executor replica counts the
    executions between this one's count and its baseline write."""
    async with start_lock(api, settings):  # across replicas: count and mark started as one step
        return await _decide(api, body, spec, settings=settings, now=now)


def start_lock(
    api: Any, settings: aianalysis.settings.Settings
) -> contextlib.AbstractAsyncContextManager[None]:
    """The Lease executor replicas share when ``settings.guards.start_lock_namespace`` is set (the chart
    sets it), else nothing more than the runner's lock within this process."""
    if not settings.guards.start_lock_namespace:
        return startlock.nothing()
    lock = startlock.StartLock(
        api=api,
        namespace=settings.guards.start_lock_namespace,
        identity=f"{settings.leadership.identity or 'aianalysis-executor'}-{PROCESS}",
    )
    return lock.held()


async def _decide(
    api: Any,
    body: dict[str, Any],
    spec: resources.WorkflowExecutionSpec,
    *,
    settings: aianalysis.settings.Settings,
    now: datetime.datetime,
) -> Step:
    namespace = body["metadata"]["namespace"]
    target = spec.target_resource
    kind, name = (target.kind, target.name) if target else ("", "")
    where = (target.namespace if target else None) or namespace
    others = await _executions(api, namespace)
    target_labels = await _labels(api, kind=kind, name=name, namespace=where) if target else None
    block = guards.check(
        body,
        others=others,
        namespace_labels=await _namespace_labels(api, where),
        target_labels=target_labels,
        policy=policy(settings),
        now=now,
    )
    if block is not None:
        return Blocked(block)
    if settings.safety.dry_run:
        return DryRun()
    found = None
    if target is not None:
        try:
            found = await targets.current(api, kind=kind, name=name, namespace=where)
        except readers.Unavailable:
            found = None
    before = resources.AssessmentBaseline(
        at=resources.timestamp(now),
        spec_hash=fingerprint.fingerprint(found) if found is not None else None,
        target_found=found is not None,
    )
    fresh = await _write_baseline(api, body, before)
    return Again() if fresh is None else Go(fresh)


async def _executions(api: Any, namespace: str) -> list[dict[str, Any]]:
    """Cluster-wide when the executor may list everywhere, else its own namespace's."""
    try:
        return await targets.executions(api, namespace=None)
    except errors.ClusterError as exc:
        if exc.status != 403:
            raise
        return await targets.executions(api, namespace=namespace)


async def _labels(api: Any, *, kind: str, name: str, namespace: str) -> dict[str, str] | None:
    """The target's labels (None when it does not exist or cannot be read)."""
    try:
        found = await targets.current(api, kind=kind, name=name, namespace=namespace)
    except readers.Unavailable:
        return None
    return None if found is None else dict((found.get("metadata") or {}).get("labels") or {})


async def _namespace_labels(api: Any, namespace: str) -> dict[str, str]:
    """The labels of a namespace (empty when it is gone or not ours to read: the guard then sees
    no opt-in)."""
    try:
        found = await asyncio.to_thread(server_facts.namespace_labels, api, namespace)
    except errors.ClusterRejectedError as exc:
        if exc.status != 403:
            raise
        return {}
    return found or {}


async def _write_baseline(
    api: Any, body: dict[str, Any], before: resources.AssessmentBaseline
) -> dict[str, Any] | None:
    """``status.assessment.before``, if the execution is still the version read; the new body."""
    ref = objects.Ref.of(body)
    written, _ = await objects.write_status(
        api,
        namespace=ref.namespace,
        plural=resources.WORKFLOWEXECUTION_PLURAL,
        name=ref.name,
        uid=ref.uid,
        fields={"assessment": {"before": before.wire()}},
        current=body.get("status") or None,
        resource_version=body["metadata"].get("resourceVersion"),
    )
    if written is not objects.Written.OK:
        return None
    return await objects.get(api, ref.namespace, resources.WORKFLOWEXECUTION_PLURAL, ref.name)
