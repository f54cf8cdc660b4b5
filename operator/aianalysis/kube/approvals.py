"""The server-side facts an execution is admitted on: who the caller is (as the API server
authenticated it), whether the approval admission policy is in force, and a Namespace's labels.

Blocking calls with explicit timeouts; the callers run them off the event loop. A failure to read
is a :class:`errors.ClusterError` (retryable) — never "no policy" or "no labels", which would turn a
flaky read into a decision.
"""

from __future__ import annotations

from typing import Any

import urllib3
from kubernetes import client as k8s

from aianalysis import errors

TIMEOUT_SECONDS = 15.0


def whoami(api: k8s.ApiClient) -> str:
    """The user name the API server authenticates this client as (a SelfSubjectReview)."""
    body = k8s.V1SelfSubjectReview(api_version="authentication.k8s.io/v1", kind="SelfSubjectReview")
    review: Any = _call(
        "who am I (SelfSubjectReview)",
        k8s.AuthenticationV1Api(api).create_self_subject_review,
        body,
        _request_timeout=TIMEOUT_SECONDS,
    )
    user = review.status.user_info if review.status is not None else None
    name = user.username if user is not None else None
    if not name:
        raise errors.ClusterRejectedError("the API server did not say who this client is", status=500)
    return str(name)


def approval_policy_in_force(api: k8s.ApiClient, name: str) -> str | None:
    """None when the ValidatingAdmissionPolicy ``name`` and its binding of the same name exist and
    deny (so every approval on a WorkflowExecution was checked by the API server); else why not."""
    admission = k8s.AdmissionregistrationV1Api(api)
    policy: Any = _read("validatingadmissionpolicy", admission.read_validating_admission_policy, name)
    if policy is None:
        return f"ValidatingAdmissionPolicy {name} is not installed"
    if (policy.spec.failure_policy or "Fail") != "Fail":
        return f"ValidatingAdmissionPolicy {name} does not fail closed ({policy.spec.failure_policy})"
    binding: Any = _read(
        "validatingadmissionpolicybinding", admission.read_validating_admission_policy_binding, name
    )
    if binding is None:
        return f"ValidatingAdmissionPolicyBinding {name} is not installed"
    if binding.spec.policy_name != name or "Deny" not in (binding.spec.validation_actions or []):
        return f"ValidatingAdmissionPolicyBinding {name} does not deny with policy {name}"
    return None


def namespace_labels(api: k8s.ApiClient, name: str) -> dict[str, str] | None:
    """The Namespace's labels (None when it does not exist)."""
    found: Any = _read("namespace", k8s.CoreV1Api(api).read_namespace, name)
    if found is None:
        return None
    return dict(found.metadata.labels or {})


def _read(what: str, method: Any, name: str) -> Any:
    try:
        return _call(f"reading {what} {name}", method, name, _request_timeout=TIMEOUT_SECONDS)
    except errors.ClusterRejectedError as exc:
        if exc.status == 404:
            return None
        raise


def _call(what: str, method: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return method(*args, **kwargs)
    except k8s.ApiException as exc:
        if exc.status in (400, 403, 404, 422):
            raise errors.ClusterRejectedError(
                f"{what}: {exc.status} {exc.reason}", status=exc.status
            ) from exc
        raise errors.ClusterError(f"{what}: {exc.status} {exc.reason}", status=exc.status) from exc
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise errors.ClusterError(f"{what}: the API server is unreachable ({type(exc).__name__})") from exc


def auto_executed_before(api: k8s.ApiClient, *, namespace: str, uid: str) -> bool:
    """Whether autoExecute already ran this very analysis (its ``AutoExecuted`` Event, matched by
    uid): a deleted execution is a person's decision, never re-created by the policy."""
    found: Any = _call(
        "listing autoExecute events",
        k8s.CoreV1Api(api).list_namespaced_event,
        namespace,
        field_selector=f"involvedObject.uid={uid},reason=AutoExecuted",
        _request_timeout=TIMEOUT_SECONDS,
    )
    return bool(found.items)
