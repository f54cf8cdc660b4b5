"""Pure: a fingerprint of what a workload *is* (its desired state), to tell whether anyone changed it.

Taken three times per execution — before the Job is created, when the execution ends, and when the
assessment is made — and compared: *after ≠ before* is the workflow's change; *now ≠ after* means
someone changed the target during the window (drift), and *now = before ≠ after* means the change
was undone (reverted). What the cluster itself keeps rewriting is left out: ``status``, the
bookkeeping fields of ``metadata`` and annotations controllers stamp on every rollout.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

PREFIX = "sha256:"
LENGTH = 16
"""Hex characters kept: enough to tell two states apart, short enough for ``kubectl get``."""
_TOP_LEVEL_SKIPPED = frozenset({"apiVersion", "kind", "metadata", "status"})
_VOLATILE_ANNOTATIONS = (
    "deployment.kubernetes.io/revision",
    "kubectl.kubernetes.io/last-applied-configuration",
)


def fingerprint(body: Mapping[str, Any]) -> str:
    """``sha256:<16 hex>`` of the object's desired state (``spec``, or ``data`` for a ConfigMap, ...),
    its labels and its non-volatile annotations; key order never matters, list order does."""
    meta = body.get("metadata") or {}
    annotations = {
        k: v for k, v in (meta.get("annotations") or {}).items() if not k.startswith(_VOLATILE_ANNOTATIONS)
    }
    state = {k: v for k, v in body.items() if k not in _TOP_LEVEL_SKIPPED}
    state["metadata"] = {"labels": meta.get("labels") or {}, "annotations": annotations}
    text = json.dumps(state, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return PREFIX + hashlib.sha256(text.encode()).hexdigest()[:LENGTH]
