"""Creating WorkflowExecutions: ``aianalysis approve`` (a person) and ``autoExecute`` (the policy).
Blocking Kubernetes calls; the decisions themselves are in the pure ``approval`` module."""

from __future__ import annotations

import dataclasses
import datetime
import json
from collections.abc import Mapping
from typing import Any

from kubernetes import client as k8s

from aianalysis import errors, resources
from aianalysis.executor import approval
from aianalysis.kube import approvals as kube_approvals


@dataclasses.dataclass(frozen=True, kw_only=True)
class Submitted:
    created: str | None
    """Name of the execution created; None when refused (see ``message``)."""
    message: str


def approve(
    api: k8s.ApiClient, *, namespace: str, name: str, override_review: bool, again: bool
) -> Submitted:
    """The approver is whoever the API server authenticates this client as (and, at creation, its
    admission policy checks that user holds the ``approve`` verb)."""
    custom = k8s.CustomObjectsApi(api)
    approver = kube_approvals.whoami(api)
    try:
        analysis: dict[str, Any] = custom.get_namespaced_custom_object(  # type: ignore[assignment]  # a JSON object
            resources.GROUP, resources.VERSION, namespace, resources.AIANALYSIS_PLURAL, name
        )
    except k8s.ApiException as exc:
        if exc.status == 404:
            return Submitted(created=None, message=f"aianalysis/{name} not found in namespace {namespace}")
        raise errors.ClusterError(f"reading aianalysis/{name} failed: {exc.status} {exc.reason}") from exc
    listed: dict[str, Any] = custom.list_namespaced_custom_object(  # type: ignore[assignment]  # a JSON object
        resources.GROUP, resources.VERSION, namespace, resources.WORKFLOWEXECUTION_PLURAL
    )
    decided = approval.approve(
        analysis, executions=listed["items"], override_review=override_review, again=again, approver=approver
    )
    if isinstance(decided, approval.Refuse):
        return Submitted(created=None, message=decided.message)
    try:
        fresh = create(api, decided.body)
    except errors.ClusterRejectedError as exc:
        return Submitted(created=None, message=f"the API server refused the approval: {exc}")
    if not fresh:
        return Submitted(created=None, message=f"workflowexecution/{decided.name} exists already")
    return Submitted(created=decided.name, message=f"workflowexecution/{decided.name} created")


def auto_execute(
    api: k8s.ApiClient,
    analysis: Mapping[str, Any],
    *,
    policy: approval.AutoPolicy,
    facts: approval.AutoFacts,
    now: datetime.datetime,
    approver: str,
) -> str | None:
    """The execution the policy created for ``analysis``; None when it declined or one exists."""
    decided = approval.auto_execute(analysis, policy=policy, facts=facts, now=now, approver=approver)
    if isinstance(decided, approval.Refuse):
        return None
    meta = analysis["metadata"]
    if kube_approvals.auto_executed_before(api, namespace=meta["namespace"], uid=meta["uid"]):
        return None  # once per analysis: an execution deleted since is not re-created
    if not create(api, decided.body):
        return None
    return decided.name


def create(api: k8s.ApiClient, body: dict[str, Any]) -> bool:
    """False when an execution of that name exists (the name is the idempotency key)."""
    try:
        k8s.CustomObjectsApi(api).create_namespaced_custom_object(
            resources.GROUP,
            resources.VERSION,
            body["metadata"]["namespace"],
            resources.WORKFLOWEXECUTION_PLURAL,
            body,
        )
    except k8s.ApiException as exc:
        if exc.status == 409:
            return False
        if exc.status in (400, 403, 422):  # the admission policy (or the schema) said no: final
            raise errors.ClusterRejectedError(
                f"creating workflowexecution: {exc.status} {_message(exc)}", status=exc.status
            ) from exc
        raise errors.ClusterError(f"creating workflowexecution failed: {exc.status} {exc.reason}") from exc
    return True


def _message(exc: k8s.ApiException) -> str:
    try:
        return str(json.loads(exc.body or "{}").get("message") or exc.reason)[:500]
    except ValueError:
        return str(exc.reason)
