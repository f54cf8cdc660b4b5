"""Creating WorkflowExecutions: ``aianalysis approve`` (a person) and ``autoExecute`` (the policy).
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
from aianalysis.kube import objects


@dataclasses.dataclass(frozen=True, kw_only=True)
class Submitted:
    created: str | None
    """Name of the execution created; None when refused (see ``message``)."""
    message: str


async def approve(
    api: kube.ApiClient, *, namespace: str, name: str, override_review: bool, again: bool
) -> Submitted:
    """The approver is whoever the API server authenticates this client as (and, at creation, its
    admission policy checks that user holds the ``approve`` verb)."""
    approver = await asyncio.to_thread(server_facts.whoami, api)
    analysis = await objects.get(api, namespace, resources.AIANALYSIS_PLURAL, name)
    if analysis is None:
        return Submitted(created=None, message=f"aianalysis/{name} not found in namespace {namespace}")
    executions = await objects.list_objects(
        api, plural=resources.WORKFLOWEXECUTION_PLURAL, namespace=namespace
    )
    decided = approval.approve_manually(
        analysis, executions=executions, override_review=override_review, again=again, approver=approver
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
