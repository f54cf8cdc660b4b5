"""Creating WorkflowExecutions: ``aianalysis approve`` (a person) and ``autoExecute`` (the policy).
The Kubernetes calls go through :mod:`aianalysis.kube`; the decisions themselves are in the pure
``approval`` module."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping
from typing import Any

from aianalysis import kube, resources
from aianalysis.executor import approval
from aianalysis.kube import objects


@dataclasses.dataclass(frozen=True, kw_only=True)
class Submitted:
    created: str | None
    """Name of the execution created; None when refused (see ``message``)."""
    message: str


async def approve(
    api: kube.ApiClient, *, namespace: str, name: str, override_review: bool, again: bool, approver: str
) -> Submitted:
    analysis = await objects.get(api, namespace, resources.AIANALYSIS_PLURAL, name)
    if analysis is None:
        return Submitted(created=None, message=f"aianalysis/{name} not found in namespace {namespace}")
    executions = await objects.list_objects(
        api, plural=resources.WORKFLOWEXECUTION_PLURAL, namespace=namespace
    )
    decided = approval.approve(
        analysis, executions=executions, override_review=override_review, again=again, approver=approver
    )
    if isinstance(decided, approval.Refuse):
        return Submitted(created=None, message=decided.message)
    if not await create(api, decided.body):
        return Submitted(created=None, message=f"workflowexecution/{decided.name} exists already")
    return Submitted(created=decided.name, message=f"workflowexecution/{decided.name} created")


async def auto_execute(
    api: kube.ApiClient, analysis: Mapping[str, Any], *, policy: approval.AutoPolicy, now: datetime.datetime
) -> str | None:
    """The execution the policy created for ``analysis``; None when it declined or one exists."""
    decided = approval.auto_execute(analysis, policy=policy, now=now)
    if isinstance(decided, approval.Refuse) or not await create(api, decided.body):
        return None
    return decided.name


async def create(api: kube.ApiClient, body: dict[str, Any]) -> bool:
    """False when an execution of that name exists (the name is the idempotency key)."""
    return await objects.create(api, body, plural=resources.WORKFLOWEXECUTION_PLURAL) is not None
