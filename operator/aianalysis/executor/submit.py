"""Creating WorkflowExecutions: ``aianalysis approve`` (a person) and ``autoExecute`` (the policy);
creating WorkflowRejections: ``aianalysis reject`` (a person). The console calls the same functions.
The Kubernetes calls go through :mod:`aianalysis.kube`; the decisions themselves are in the pure
``approval`` module."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
from collections.abc import Mapping
from typing import Any

from aianalysis import errors, kube, resources
from aianalysis.executor import approval, server_facts
from aianalysis.kube import calls, objects


@dataclasses.dataclass(frozen=True, kw_only=True)
class Submitted:
    created: str | None
    """Name of the execution created; None when refused (see ``message``)."""
    message: str


async def proposal(api: kube.ApiClient, *, namespace: str, name: str) -> approval.Proposal | approval.Refuse:
    """The analysis' selection as a person reviews it (``aianalysis show``, the console)."""
    analysis = await objects.get(api, namespace, resources.AIANALYSIS_PLURAL, name)
    if analysis is None:
        return approval.Refuse(message=f"aianalysis/{name} not found in namespace {namespace}")
    return approval.proposal_of(analysis)


async def approve(
    api: kube.ApiClient,
    *,
    namespace: str,
    name: str,
    bound: approval.Binding,
    override_review: str | None,
    again: bool,
) -> Submitted:
    """Approve the selection the person reviewed (``bound``: its analysis' uid and selection digest),
    read again here: whatever changed since they saw it is refused, never approved. The approver is
    whoever the API server authenticates this client as (and, at creation, its admission policy checks
    that user holds the ``approve`` verb)."""
    approver = await asyncio.to_thread(server_facts.whoami, api)
    analysis = await objects.get(api, namespace, resources.AIANALYSIS_PLURAL, name)
    if analysis is None:
        return Submitted(created=None, message=f"aianalysis/{name} not found in namespace {namespace}")
    executions, rejections = await asyncio.gather(
        objects.list_objects(api, plural=resources.WORKFLOWEXECUTION_PLURAL, namespace=namespace),
        _rejections_if_readable(api, namespace=namespace),
    )
    decided = approval.approve_manually(
        analysis,
        executions=executions,
        rejections=rejections,
        bound=bound,
        override_review=override_review,
        again=again,
        approver=approver,
    )
    if isinstance(decided, approval.Refuse):
        return Submitted(created=None, message=decided.message)
    try:
        fresh = await _create(api, decided.body)
    except errors.ClusterRejectedError as exc:  # the admission policy (or the schema) said no
        return Submitted(created=None, message=f"the API server refused the approval: {exc}")
    if not fresh:
        return Submitted(created=None, message=f"workflowexecution/{decided.name} exists already")
    return Submitted(created=decided.name, message=f"workflowexecution/{decided.name} created")


async def _rejections_if_readable(api: kube.ApiClient, *, namespace: str) -> list[dict[str, Any]]:
    """The namespace's WorkflowRejections, or none when this user may not list them (or the kind is not
    installed). Refusing an approval after a rejection spares the approver a mistake; it is not what
    stops a non-approver — the admission policy is, at creation, and it says so."""
    try:
        return await objects.list_objects(api, plural=resources.WORKFLOWREJECTION_PLURAL, namespace=namespace)
    except errors.ClusterRejectedError as exc:
        if exc.status not in (calls.FORBIDDEN, calls.NOT_FOUND):
            raise
        return []


async def reject(
    api: kube.ApiClient, *, namespace: str, name: str, bound: approval.Binding, reason: str
) -> Submitted:
    """Reject the selection the person reviewed (``bound``), read again here, with their reason: a
    WorkflowRejection in their name (the API server's admission policy checks it is theirs and that
    they may approve). Nothing runs; the operator records it on the analysis."""
    rejecter = await asyncio.to_thread(server_facts.whoami, api)
    analysis = await objects.get(api, namespace, resources.AIANALYSIS_PLURAL, name)
    if analysis is None:
        return Submitted(created=None, message=f"aianalysis/{name} not found in namespace {namespace}")
    executions, rejections = await asyncio.gather(
        objects.list_objects(api, plural=resources.WORKFLOWEXECUTION_PLURAL, namespace=namespace),
        objects.list_objects(api, plural=resources.WORKFLOWREJECTION_PLURAL, namespace=namespace),
    )
    decided = approval.reject_manually(
        analysis, executions=executions, rejections=rejections, bound=bound, reason=reason, rejecter=rejecter
    )
    if isinstance(decided, approval.Refuse):
        return Submitted(created=None, message=decided.message)
    try:
        fresh = await objects.create(api, decided.body, plural=resources.WORKFLOWREJECTION_PLURAL)
    except errors.ClusterRejectedError as exc:  # the admission policy (or RBAC, or the schema) said no
        return Submitted(created=None, message=f"the API server refused the rejection: {exc}")
    if fresh is None:
        return Submitted(created=None, message=f"workflowrejection/{decided.name} exists already")
    return Submitted(
        created=decided.name, message=f"workflowrejection/{decided.name} created: aianalysis/{name} rejected"
    )


async def auto_execute(
    api: kube.ApiClient,
    analysis: Mapping[str, Any],
    *,
    policy: approval.AutoPolicy,
    facts: approval.AutoFacts,
    now: datetime.datetime,
    approver: str,
) -> str | None:
    """The execution the policy created for ``analysis``; None when it declined (or decided before).

    The decision is recorded in the analysis' status first, at the resourceVersion it was made on
    (a concurrent change makes the write fail and the next event decide again): if anything fails
    after it, the policy has decided and runs nothing more — fail closed, a person can still approve.
    """
    meta = analysis["metadata"]
    namespace, name = meta["namespace"], meta["name"]
    executions = await objects.list_objects(
        api, plural=resources.WORKFLOWEXECUTION_PLURAL, namespace=namespace
    )
    decided = approval.approve_automatically(
        analysis, executions=executions, policy=policy, facts=facts, now=now, approver=approver
    )
    if isinstance(decided, approval.Refuse):
        return None
    record = resources.AutoExecutionRecord(execution=decided.name, decided_at=resources.timestamp(now))
    written = await objects.write_status_at(
        api, analysis, plural=resources.AIANALYSIS_PLURAL, fields={"autoExecution": record.wire()}
    )
    if written is not objects.Written.OK:
        return None  # changed since it was read (its next event decides again) or gone
    body = decided.body
    for _ in range(_NAME_RACES):
        if await _create(api, body):
            return str(body["metadata"]["name"])
        # The name was taken since the list: by a person's approval (it wins) or by a squat (skipped).
        executions = await objects.list_objects(
            api, plural=resources.WORKFLOWEXECUTION_PLURAL, namespace=namespace
        )
        if any(approval.approved_for(e, analysis) for e in approval.executions_of(name, executions)):
            return None
        body = {**body, "metadata": {**body["metadata"], "name": approval.free_name(name, executions)}}
    raise errors.ClusterError(
        f"autoExecute of aianalysis/{name}: the execution's name was taken {_NAME_RACES} times in a row; "
        "it is not created (approve it by hand)"
    )


_NAME_RACES = 3
"""Creates tried when the chosen name is taken between the list and the create."""


async def _create(api: kube.ApiClient, body: dict[str, Any]) -> bool:
    """False when an execution of that name exists (the name is the idempotency key); a refusal by
    the API server's admission (or the schema) raises ``errors.ClusterRejectedError``."""
    return await objects.create(api, body, plural=resources.WORKFLOWEXECUTION_PLURAL) is not None
