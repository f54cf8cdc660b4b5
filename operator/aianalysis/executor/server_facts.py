"""The server-side facts an execution is admitted on (the executor's reads of the cluster besides
its own objects): who the caller is (as the API server authenticated it), the approval admission
policy and its binding, and a Namespace's labels.

Blocking calls with explicit timeouts; the callers run them off the event loop. A failure to read
is a :class:`errors.ClusterError` (retryable) — never "no policy" or "no labels", which would turn a
flaky read into a decision.
"""

from __future__ import annotations

from typing import Any

from aianalysis import errors
from aianalysis.kube import calls, rest

TIMEOUT_SECONDS = 15.0
_ADMISSION = ("apis", "admissionregistration.k8s.io", "v1")


def whoami(api: rest.ApiClient) -> str:
    """The user name the API server authenticates this client as (a SelfSubjectReview)."""
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    review: Any = calls.blocking(
        "who am I (SelfSubjectReview)",
        rest.send_json,
        api,
        "POST",
        rest.path("apis", "authentication.k8s.io", "v1", "selfsubjectreviews"),
        body,
        timeout=TIMEOUT_SECONDS,
    )
    name = (((review or {}).get("status") or {}).get("userInfo") or {}).get("username")
    if not name:
        raise errors.ClusterRejectedError("the API server did not say who this client is", status=500)
    return str(name)


def approval_policy(api: rest.ApiClient, name: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The ValidatingAdmissionPolicy ``name`` and its binding of the same name, as the API server
    holds them (``managedFields`` included: when their spec last changed is part of the proof);
    None for one that does not exist. Whether they prove anything is ``executor.proof``'s call."""
    policy = _read(
        api, f"validatingadmissionpolicy {name}", (*_ADMISSION, "validatingadmissionpolicies", name)
    )
    binding = _read(
        api,
        f"validatingadmissionpolicybinding {name}",
        (*_ADMISSION, "validatingadmissionpolicybindings", name),
    )
    return policy, binding


def namespace_labels(api: rest.ApiClient, name: str) -> dict[str, str] | None:
    """The Namespace's labels (None when it does not exist)."""
    found = _read(api, f"namespace {name}", ("api", "v1", "namespaces", name))
    if found is None:
        return None
    return dict((found.get("metadata") or {}).get("labels") or {})


def auto_executed_before(api: rest.ApiClient, *, namespace: str, uid: str) -> bool:
    """Whether autoExecute already ran this very analysis (its ``AutoExecuted`` Event, matched by
    uid): a deleted execution is a person's decision, never re-created by the policy."""
    found: Any = calls.blocking(
        "listing autoExecute events",
        rest.get_json,
        api,
        rest.path("api", "v1", "namespaces", namespace, "events"),
        query={"fieldSelector": f"involvedObject.uid={uid},reason=AutoExecuted"},
        timeout=TIMEOUT_SECONDS,
    )
    return bool((found or {}).get("items"))


def _read(api: rest.ApiClient, what: str, segments: tuple[str, ...]) -> dict[str, Any] | None:
    """The object at ``segments``, or None when there is none; other failures are mapped by
    :mod:`aianalysis.kube.calls` (a refusal for good raises ``ClusterRejectedError``)."""
    found: Any = calls.blocking(
        f"reading {what}",
        rest.get_json,
        api,
        rest.path(*segments),
        timeout=TIMEOUT_SECONDS,
        none_on=calls.NOT_FOUND,
    )
    return found if isinstance(found, dict) else None
