"""The one way the product posts Kubernetes Events: ``post`` names the object an Event is about
(its apiVersion, kind, name, namespace and uid, from its body as read) and says what happened.
An Event is best effort: a failure to post is logged and dropped, never fails the work it reports."""

from __future__ import annotations

import datetime
import logging
from collections.abc import Mapping
from typing import Any

from kubernetes import client as k8s

from aianalysis import errors
from aianalysis.kube import errors as kube_errors

log = logging.getLogger(__name__)

COMPONENT = "aianalysis-operator"
MAX_MESSAGE = 1024
#: Events about cluster-scoped objects are namespaced; kubectl finds them with --all-namespaces.
CLUSTER_EVENTS_NAMESPACE = "default"


def post(
    api: k8s.ApiClient,
    *,
    about: Mapping[str, Any],
    type: str,  # the Event's own field name
    reason: str,
    message: str,
    now: datetime.datetime,
    component: str = COMPONENT,
) -> bool:
    """Post an Event about the object ``about`` (blocking); False when it could not be posted."""
    meta = about.get("metadata") or {}
    namespace = meta.get("namespace") or CLUSTER_EVENTS_NAMESPACE
    event = k8s.CoreV1Event(
        metadata=k8s.V1ObjectMeta(generate_name=f"{meta.get('name')}.", namespace=namespace),
        involved_object=k8s.V1ObjectReference(
            api_version=about.get("apiVersion"),
            kind=about.get("kind"),
            name=meta.get("name"),
            namespace=meta.get("namespace"),
            uid=meta.get("uid"),
        ),
        type=type,
        reason=reason,
        message=message[:MAX_MESSAGE],
        first_timestamp=now,
        last_timestamp=now,
        count=1,
        source=k8s.V1EventSource(component=component),
    )
    what = f"posting the {reason} Event of {about.get('kind')} {meta.get('name')}"
    try:
        kube_errors.blocking(what, k8s.CoreV1Api(api).create_namespaced_event, namespace, event)
    except errors.AIAnalysisError as exc:
        log.warning("%s failed: %s", what, exc)
        return False
    return True
