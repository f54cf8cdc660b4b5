"""Access: the API server denies the workload's calls (RBAC)."""

from __future__ import annotations

import re

from aianalysis.analysis.offline import evidence, rule

_RBAC_DENIED = re.compile(
    r"(is forbidden|forbidden:).{0,200}cannot (get|list|watch|create|update|patch|delete)\b"
    r"|cannot (get|list|watch|create|update|patch|delete) resource",
    re.IGNORECASE,
)
_DENIED_WORD = re.compile(r"\b(forbidden|permission denied|access denied|not authorized)\b", re.IGNORECASE)
_DENIED_ACCOUNT = re.compile(r"system:serviceaccount:([a-z0-9][-a-z0-9.]*):([a-z0-9][-a-z0-9.]*)")


def crash_on_rbac_denial(seen: evidence.Evidence) -> rule.Match | None:
    """The API server denies the workload's calls: its log or a Warning event says it is forbidden to
    get, list, watch or change a resource — or the process only says "forbidden" while a Pod is
    unhealthy and no RoleBinding of the namespace binds its ServiceAccount.

    Needs: the crashing (or unready) container's log, the events, the workload's ServiceAccount and,
    with a listing tool, the namespace's RoleBindings (ClusterRoleBindings are not read). Selects
    RestoreRoleBinding on the workload with SERVICE_ACCOUNT_NAME: a binding its ServiceAccount needs
    is missing. Which Role to bind is a privilege grant the evidence does not name."""
    texts = [*seen.logs, *(e.message for e in seen.events if e.type == "Warning")]
    said = next((t for t in texts if _RBAC_DENIED.search(t)), None)
    unbound = seen.account_bound is False and seen.service_account is not None
    if said is None and unbound and any(not p.healthy for p in seen.pods):
        # The process only says "forbidden", but its ServiceAccount is bound to nothing here.
        said = next((t for t in seen.logs if _DENIED_WORD.search(t)), None)
    if said is None or not (seen.pods or seen.workload):
        return None
    account = seen.service_account
    named = _DENIED_ACCOUNT.search(said)
    if named and named.group(1) == seen.incident.namespace:
        account = account or named.group(2)
    facts = [f"the API server denies the workload's calls: {rule.shorten(said)}"]
    crashing = rule.crashing(seen)
    if crashing:
        facts.append(f"container {crashing[0][1].name} crash-loops ({crashing[0][1].restarts} restarts)")
    values: dict[str, str] = {}
    if account:
        facts.append(f"the Pods run as ServiceAccount {account}")
        values["SERVICE_ACCOUNT_NAME"] = account
    if unbound:
        facts.append(f"no RoleBinding of the namespace binds ServiceAccount {seen.service_account}")
    return rule.Match(
        facts=tuple(facts),
        target=seen.workload,
        values=values,
        detail={"account": account or "its ServiceAccount"},
    )


RBAC_DENIED = rule.Rule(
    name="rbac-denied",
    signal_type="Forbidden",
    action_type="RestoreRoleBinding",
    query="Forbidden RBAC denied restore RoleBinding ServiceAccount permission",
    explanation=(
        "The API server denies the calls of {workload} ({account}): a binding its ServiceAccount "
        "needs is missing; restoring the RoleBinding gives back the access it had."
    ),
    match=crash_on_rbac_denial,
)
