"""Whether an execution provably went through the approval policy as it ships (pure): the policy's
content, not its name; the times the API server wrote, not what the creator wrote."""

from __future__ import annotations

import copy
import datetime
from typing import Any

import pytest

from aianalysis import resources
from aianalysis.executor import proof
from tests.support import approval_policy

NAME = "workflowexecution-approval.kubernaut.io"
CREATED = "2026-11-20T10:00:00Z"


def shipped() -> tuple[dict[str, Any], dict[str, Any]]:
    policy, binding = (
        copy.deepcopy(d) for d in sorted(approval_policy.shipped(), key=lambda d: len(d["kind"]))
    )
    for doc in (policy, binding):
        doc["metadata"].update(generation=1, creationTimestamp=CREATED)
    return policy, binding


def at(text: str) -> datetime.datetime:
    moment = resources.parse_timestamp(text)
    assert moment is not None
    return moment


def state(policy: dict[str, Any], binding: dict[str, Any], margin: float = 10.0) -> proof.InForce | str:
    return proof.in_force(policy, binding, name=NAME, margin_seconds=margin)


def test_the_shipped_file_is_what_the_executor_trusts() -> None:
    """Change the policy in crds/ and this names the new digest for ``proof.SHIPPED``."""
    policy, binding = shipped()
    assert proof.digest(policy["spec"], binding["spec"]) == proof.SHIPPED


def test_the_api_servers_defaults_change_nothing() -> None:
    policy, binding = shipped()
    constraints = policy["spec"]["matchConstraints"]
    constraints.update(matchPolicy="Equivalent", namespaceSelector={}, objectSelector={})
    constraints["resourceRules"][0]["scope"] = "*"
    for validation in policy["spec"]["validations"]:
        validation["message"] = "reworded"  # messages decide nothing
    assert state(policy, binding) == proof.InForce(since=at(CREATED) + datetime.timedelta(seconds=10))


def weaker(change: str) -> tuple[dict[str, Any], dict[str, Any]]:
    policy, binding = shipped()
    spec, bspec = policy["spec"], binding["spec"]
    if change == "validations":
        spec["validations"] = [{"expression": "true"}]
    elif change == "one validation fewer":
        spec["validations"] = spec["validations"][:-1]
    elif change == "failurePolicy":
        spec["failurePolicy"] = "Ignore"
    elif change == "matchConditions":
        spec["matchConditions"] = [{"name": "some", "expression": "request.userInfo.username != 'mallory'"}]
    elif change == "namespaceSelector":
        spec["matchConstraints"]["namespaceSelector"] = {"matchLabels": {"checked": "yes"}}
    elif change == "operations":
        spec["matchConstraints"]["resourceRules"][0]["operations"] = ["UPDATE"]
    elif change == "variables":
        spec["variables"][0]["expression"] = "request.namespace"
    elif change == "warn only":
        bspec["validationActions"] = ["Warn"]
    elif change == "binding narrowed":
        bspec["matchResources"] = {"namespaceSelector": {"matchLabels": {"checked": "yes"}}}
    elif change == "another policy bound":
        bspec["policyName"] = "something-else"
    return policy, binding


@pytest.mark.parametrize(
    "change",
    [
        "validations", "one validation fewer", "failurePolicy", "matchConditions", "namespaceSelector",
        "operations", "variables", "warn only", "binding narrowed", "another policy bound",
    ],
)  # fmt: skip
def test_a_same_named_policy_with_other_content_proves_nothing(change: str) -> None:
    why = state(*weaker(change))
    assert isinstance(why, str) and "not the shipped policy" in why and proof.SHIPPED in why


def test_a_missing_policy_or_binding_proves_nothing() -> None:
    policy, binding = shipped()
    assert "ValidatingAdmissionPolicy " in str(state(None, binding))  # type: ignore[arg-type]
    assert "ValidatingAdmissionPolicyBinding " in str(state(policy, None))  # type: ignore[arg-type]


def entry(time: str, fields: dict[str, Any], subresource: str | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {"manager": "m", "operation": "Update", "time": time, "fieldsV1": fields}
    if subresource:
        found["subresource"] = subresource
    return found


def test_it_is_in_force_from_the_last_change_of_its_spec_or_its_binding() -> None:
    policy, binding = shipped()
    policy["metadata"]["generation"] = 3
    policy["metadata"]["managedFields"] = [
        entry(CREATED, {"f:metadata": {}, "f:spec": {"f:failurePolicy": {}}}),
        entry("2026-11-20T11:00:00Z", {"f:spec": {"f:validations": {}}}),  # the last spec change
        entry("2026-11-20T12:00:00Z", {"f:metadata": {"f:labels": {}}}),  # a label: decides nothing
        entry("2026-11-20T13:00:00Z", {"f:status": {}}, subresource="status"),
    ]
    assert state(policy, binding, margin=5) == proof.InForce(since=at("2026-11-20T11:00:05Z"))
    binding["metadata"].update(generation=2, managedFields=[entry("2026-11-20T11:30:00Z", {"f:spec": {}})])
    assert state(policy, binding, margin=5) == proof.InForce(since=at("2026-11-20T11:30:05Z"))


def test_a_changed_policy_whose_managed_fields_were_reset_proves_nothing() -> None:
    policy, binding = shipped()
    policy["metadata"].update(generation=4, managedFields=[entry(CREATED, {"f:metadata": {"f:labels": {}}})])
    why = state(policy, binding)
    assert isinstance(why, str) and "managedFields were reset" in why


def execution(created: str, generation: int = 1) -> dict[str, Any]:
    return {"metadata": {"name": "x-exec-1", "creationTimestamp": created, "generation": generation}}


def test_only_an_execution_created_after_the_margin_and_never_changed_is_trusted() -> None:
    in_force = proof.InForce(since=at("2026-11-20T10:00:10Z"))
    assert proof.unproven(execution("2026-11-20T10:00:11Z"), in_force) is None
    for created in ("2026-11-20T10:00:10Z", "2026-11-20T09:59:00Z"):
        why = proof.unproven(execution(created), in_force)
        assert why is not None and "before the approval policy was certainly in force" in why
    changed = proof.unproven(execution("2026-11-20T10:00:11Z", generation=2), in_force)
    assert changed is not None and "changed after it was created" in changed
    assert proof.unproven({"metadata": {"generation": 1}}, in_force) == "it has no creation time"
