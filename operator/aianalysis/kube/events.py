"""The one way the product posts Kubernetes Events: ``post`` names the object an Event is about
(its apiVersion, kind, name, namespace and uid, from its body as read) and says what happened.
An Event is best effort: a failure to post is logged and dropped, never fails the work it reports."""

from __future__ import annotations

import datetime
import logging
from collections.abc import Mapping
from typing import Any

from aianalysis import errors, resources
from aianalysis.kube import calls, rest

log = logging.getLogger(__name__)

COMPONENT = "aianalysis-operator"
MAX_MESSAGE = 1024
#: Events about cluster-scoped objects are namespaced; kubectl finds them with --all-namespaces.
CLUSTER_EVENTS_NAMESPACE = "default"


def post(
    api: rest.ApiClient,
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
    stamp = resources.timestamp(now)
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{meta.get('name')}.", "namespace": namespace},
        "involvedObject": {
            key: value
            for key, value in (
                ("apiVersion", about.get("apiVersion")),
                ("kind", about.get("kind")),
                ("name", meta.get("name")),
                ("namespace", meta.get("namespace")),
                ("uid", meta.get("uid")),
            )
            if value is not None
        },
        "type": type,
        "reason": reason,
        "message": message[:MAX_MESSAGE],
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
        "source": {"component": component},
    }
    what = f"posting the {reason} Event of {about.get('kind')} {meta.get('name')}"
    url_path = rest.path("api", "v1", "namespaces", namespace, "events")
    try:
        calls.blocking(what, rest.send_json, api, "POST", url_path, event)
    except errors.AIAnalysisError as exc:
        log.warning("%s failed: %s", what, exc)
        return False
    return True
