"""Rollout history: the revisions of a Deployment (its ReplicaSets) or of a StatefulSet/DaemonSet
(its ControllerRevisions), newest first, and what changed in the pod template between the newest
revision and the one before (``kubectl rollout history`` plus the diff an SRE would do by hand).

Pure: owned objects (already redacted) and ``now`` in, text lines out.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping, Sequence
from typing import Any

from aianalysis.analysis.tools import _columns

REVISION = "deployment.kubernetes.io/revision"
CHANGE_CAUSE = "kubernetes.io/change-cause"
MAX_REVISIONS = 10
MAX_DIFF_LINES = 30
_VOLATILE_LABELS = ("pod-template-hash", "controller-revision-hash")


def revisions(
    kind: str, owned: Sequence[Mapping[str, Any]]
) -> list[tuple[int, Mapping[str, Any], dict[str, Any]]]:
    """(revision number, object, pod template) newest first."""
    out = []
    for obj in owned:
        metadata = obj.get("metadata") or {}
        if kind == "Deployment":
            number = _int((metadata.get("annotations") or {}).get(REVISION))
            template = (obj.get("spec") or {}).get("template") or {}
        else:
            number = _int(obj.get("revision"))
            template = (((obj.get("data") or {}).get("spec") or {}).get("template")) or {}
        out.append((number, obj, dict(template)))
    return sorted(out, key=lambda item: item[0], reverse=True)


def history(
    kind: str, owned: Sequence[Mapping[str, Any]], *, now: datetime.datetime
) -> tuple[list[str], list[str]]:
    """The revision lines and the template diff (newest vs previous) lines."""
    found = revisions(kind, owned)
    lines = []
    for number, obj, template in found[:MAX_REVISIONS]:
        metadata = obj.get("metadata") or {}
        cause = (metadata.get("annotations") or {}).get(CHANGE_CAUSE)
        images = ",".join(
            str(c.get("image", "?")) for c in ((template.get("spec") or {}).get("containers") or ())
        )
        created = _columns.age(metadata.get("creationTimestamp"), now)
        line = f"revision {number}: age {created}, images {images or '?'}"
        if kind == "Deployment":
            status = obj.get("status") or {}
            line += (
                f", replicas {(obj.get('spec') or {}).get('replicas', 0)} "
                f"(ready {status.get('readyReplicas') or 0}), ReplicaSet {metadata.get('name')}"
            )
        line += f", change-cause: {' '.join(str(cause).split())[:200] if cause else '<none>'}"
        lines.append(line)
    if len(found) > MAX_REVISIONS:
        lines.append(f"[... {len(found) - MAX_REVISIONS} more revisions not shown (older) ...]")
    if len(found) < 2:
        return lines, []
    return lines, diff(found[1][2], found[0][2])


def diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """``~ path: old -> new`` / ``+ path: new`` / ``- path: old`` between two pod templates."""
    before, after = flatten(_stable(old)), flatten(_stable(new))
    lines = []
    for path in sorted(before.keys() | after.keys()):
        if path not in after:
            lines.append(f"- {path}: {before[path]}")
        elif path not in before:
            lines.append(f"+ {path}: {after[path]}")
        elif before[path] != after[path]:
            lines.append(f"~ {path}: {before[path]} -> {after[path]}")
    if len(lines) > MAX_DIFF_LINES:
        cut = len(lines) - MAX_DIFF_LINES
        lines = [*lines[:MAX_DIFF_LINES], f"[... {cut} more changed fields not shown ...]"]
    return lines


def _stable(template: Mapping[str, Any]) -> dict[str, Any]:
    """The template without what changes on every revision by construction."""
    out = dict(template)
    metadata = dict(out.get("metadata") or {})
    labels = {k: v for k, v in (metadata.get("labels") or {}).items() if k not in _VOLATILE_LABELS}
    metadata["labels"] = labels
    metadata.pop("creationTimestamp", None)
    out["metadata"] = metadata
    out.pop("$patch", None)
    return out


def flatten(node: Any, prefix: str = "") -> dict[str, str]:
    """Dotted paths to compact JSON leaves; lists of named items are keyed by name
    (``spec.containers[app].image``) so a reordering is not a change."""
    if isinstance(node, Mapping):
        out: dict[str, str] = {}
        for key, value in node.items():
            out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(node, list) and node and all(isinstance(i, Mapping) and "name" in i for i in node):
        out = {}
        for item in node:
            out.update(flatten({k: v for k, v in item.items() if k != "name"}, f"{prefix}[{item['name']}]"))
        return out
    return {prefix: json.dumps(node, separators=(",", ":"), sort_keys=True, ensure_ascii=False)[:200]}


def _int(value: object) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0
