"""Pure: whether a WorkflowExecution provably went through the approval policy as it ships.

An approval (``spec.approval``) is only as good as the API server's check of it when the execution
was created. One written while no policy was in force — an install older than the policy, a policy
removed, renamed or weakened for a while — carries an approval nobody checked, and nothing in the
object says so. What its creator cannot forge are the facts the API server writes: the execution's
``creationTimestamp`` and ``generation``; the policy's and its binding's creation, ``generation``
and the times in their ``managedFields``. So an approval is trusted only when

1. the policy and its binding hold the shipped content: the parts that decide what is admitted
   (``terms``: failure policy, what it matches, its variables and validations; the binding's
   policy, actions, parameters and match), with the API server's defaults filled in, have the
   digest :data:`SHIPPED` — never a check by name;
2. the execution was created after both came to hold it (``changed_at``: their last spec change)
   plus a margin: a new policy takes effect when each API server's watch delivers it, and
   timestamps have a one-second resolution;
3. its spec never changed since its creation (``generation`` 1; the CRD makes it immutable, this
   does not rely on that).

``changed_at``: the creation when ``generation`` is 1; else the latest time of a ``managedFields``
entry that owns part of the spec (an entry's time moves whenever its manager changes a field it
owns, and a client cannot set it). When none owns the spec (the entries were reset), nothing
proves when it last changed: the policy is then not in force for the executor.

The shipped policy is ``crds/kubernaut.io_workflowexecutions_approval.yaml``; a unit test keeps
:data:`SHIPPED` its digest.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from aianalysis import resources

SHIPPED = "sha256:28c1d752c0ab1d42f9adc1dbd0d36686e484c2a94d456e28214d24415fba4faa"
"""The digest of the shipped policy's and binding's ``terms`` (kept by a unit test)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class InForce:
    """The shipped policy is in force: approvals of executions created after ``since`` were checked."""

    since: datetime.datetime
    """The policy's or its binding's last change, whichever is later, plus the margin."""


def in_force(
    policy: Mapping[str, Any] | None,
    binding: Mapping[str, Any] | None,
    *,
    name: str,
    margin_seconds: float,
) -> InForce | str:
    """Since when the shipped policy has certainly been checking approvals, or why it is not."""
    if policy is None:
        return f"ValidatingAdmissionPolicy {name} is not installed (apply crds/ of this version)"
    if binding is None:
        return f"ValidatingAdmissionPolicyBinding {name} is not installed (apply crds/ of this version)"
    found = digest(policy.get("spec") or {}, binding.get("spec") or {})
    if found != SHIPPED:
        return (
            f"ValidatingAdmissionPolicy {name} or its binding is not the shipped policy (content {found}, "
            f"shipped {SHIPPED}); apply crds/ of this version again"
        )
    changes = [changed_at(policy), changed_at(binding)]
    if None in changes:
        return (
            f"nothing shows when ValidatingAdmissionPolicy {name} or its binding last changed (its "
            "managedFields were reset); apply crds/ of this version again"
        )
    latest = max(c for c in changes if c is not None)
    return InForce(since=latest + datetime.timedelta(seconds=margin_seconds))


def unproven(execution: Mapping[str, Any], state: InForce) -> str | None:
    """Why nothing proves the execution's approval was checked by the shipped policy (None: it was)."""
    meta = execution.get("metadata") or {}
    if meta.get("generation") != 1:
        return f"its spec changed after it was created (generation {meta.get('generation')})"
    created = resources.parse_timestamp(meta.get("creationTimestamp"))
    if created is None:
        return "it has no creation time"
    if created <= state.since:
        at, since = resources.timestamp(created), resources.timestamp(state.since)
        return (
            f"it was created at {at}, before the approval policy was certainly in force with the shipped "
            f"content ({since}, its last change plus a margin): nothing proves the API server checked its "
            "approval; approve again"
        )
    return None


def changed_at(obj: Mapping[str, Any]) -> datetime.datetime | None:
    """When ``obj``'s spec last changed, from what the API server wrote (see the module doc)."""
    meta = obj.get("metadata") or {}
    if meta.get("generation") == 1:
        return resources.parse_timestamp(meta.get("creationTimestamp"))
    times = [
        resources.parse_timestamp(entry.get("time"))
        for entry in meta.get("managedFields") or ()
        if not entry.get("subresource") and "f:spec" in (entry.get("fieldsV1") or {})
    ]
    known = [t for t in times if t is not None]
    return max(known) if known else None


def digest(policy_spec: Mapping[str, Any], binding_spec: Mapping[str, Any]) -> str:
    text = json.dumps(terms(policy_spec, binding_spec), sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def terms(policy_spec: Mapping[str, Any], binding_spec: Mapping[str, Any]) -> dict[str, Any]:
    """What decides which executions a policy and its binding admit, defaults filled as the API
    server fills them (messages, reasons and audit annotations change no decision)."""
    return {
        "failurePolicy": policy_spec.get("failurePolicy") or "Fail",
        "paramKind": policy_spec.get("paramKind"),
        "matchConstraints": _match(policy_spec.get("matchConstraints")),
        "matchConditions": [
            [c.get("name"), c.get("expression")] for c in policy_spec.get("matchConditions") or ()
        ],
        "variables": [[v.get("name"), v.get("expression")] for v in policy_spec.get("variables") or ()],
        "validations": [v.get("expression") for v in policy_spec.get("validations") or ()],
        "binding": {
            "policyName": binding_spec.get("policyName"),
            "validationActions": sorted(binding_spec.get("validationActions") or ()),
            "paramRef": binding_spec.get("paramRef"),
            "matchResources": _match(binding_spec.get("matchResources"))
            if binding_spec.get("matchResources")
            else None,
        },
    }


def _match(match: Mapping[str, Any] | None) -> dict[str, Any]:
    given = match or {}
    return {
        "resourceRules": [_rule(r) for r in given.get("resourceRules") or ()],
        "excludeResourceRules": [_rule(r) for r in given.get("excludeResourceRules") or ()],
        "namespaceSelector": given.get("namespaceSelector") or {},
        "objectSelector": given.get("objectSelector") or {},
        "matchPolicy": given.get("matchPolicy") or "Equivalent",
    }


def _rule(rule: Mapping[str, Any]) -> dict[str, Any]:
    def listed(key: str) -> list[str]:
        value: Sequence[str] = rule.get(key) or ()
        return sorted(value)

    return {
        "apiGroups": listed("apiGroups"),
        "apiVersions": listed("apiVersions"),
        "operations": listed("operations"),
        "resources": listed("resources"),
        "resourceNames": listed("resourceNames"),
        "scope": rule.get("scope") or "*",
    }
