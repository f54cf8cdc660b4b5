"""Shaping tool output for the LLM: the size cap, and cluster data as fenced YAML; per call, the
cap lowered to what the analysis' budget has left, and whether something was left out."""

from __future__ import annotations

import contextlib
import contextvars
import re
from collections.abc import Iterator
from typing import Any, Literal

import yaml

from aianalysis.analysis import prompts

_FIRST_KEYS = ("apiVersion", "kind", "metadata", "status", "spec")


def cap(text: str, *, max_chars: int) -> str:
    """``text`` cut to ``max_chars`` with a marker saying how much was cut (for trusted text;
    untrusted text is capped by ``fenced``)."""
    if len(text) <= max_chars:
        return text
    note_truncated()
    marker = "\n[... {} characters cut to fit the tool output limit ...]"
    keep = max(max_chars - len(marker.format(len(text))), 0)
    return text[:keep] + marker.format(len(text) - keep)


def fenced(
    header: str, body: str, *, label: str, max_chars: int, keep: Literal["head", "tail"] = "head"
) -> str:
    """A trusted one-line header and untrusted cluster text fenced under it, all within ``max_chars``."""
    budget = max(limit(max_chars) - len(header) - 1, 0)
    out = prompts.fence(body.rstrip("\n"), label=label, max_chars=budget, keep=keep)
    if not CUT_MARKER.search(out) or CUT_MARKER.search(body):
        return header + "\n" + out
    note_truncated()
    out = prompts.fence(body.rstrip("\n"), label=label, max_chars=max(budget - len(NARROW) - 1, 0), keep=keep)
    return header + "\n" + NARROW + "\n" + out


def to_yaml(data: Any) -> str:
    """Readable block YAML; long strings are not folded, so logs and messages stay greppable."""
    return str(
        yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True, width=10_000)
    )


def status_first(obj: dict[str, Any]) -> dict[str, Any]:
    """The object's keys reordered so ``status`` precedes ``spec``: if the output must be cut, the
    observed state (what an RCA needs most) survives and the tail of the spec goes."""
    ordered = {key: obj[key] for key in _FIRST_KEYS if key in obj}
    ordered.update({key: value for key, value in obj.items() if key not in ordered})
    return ordered


# Values the API server fills in when a manifest leaves them out: shown, they cost tokens on every
# later turn and tell an SRE nothing (a non-default value is kept, so it stands out).
_POD_SPEC_DEFAULTS: dict[str, Any] = {
    "dnsPolicy": "ClusterFirst",
    "restartPolicy": "Always",
    "schedulerName": "default-scheduler",
    "securityContext": {},
    "terminationGracePeriodSeconds": 30,
    "enableServiceLinks": True,
    "preemptionPolicy": "PreemptLowerPriority",
    "priority": 0,
}
_CONTAINER_DEFAULTS: dict[str, Any] = {
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
}
_WORKLOAD_DEFAULTS: dict[str, Any] = {
    "revisionHistoryLimit": 10,
    "progressDeadlineSeconds": 600,
    "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
}
_DEFAULT_TOLERATIONS = frozenset({"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"})
_OPAQUE_METADATA = ("uid", "resourceVersion")
COMPACT_NOTE = "managedFields, uid, resourceVersion, nulls and API defaults left out"


def compact(obj: dict[str, Any]) -> dict[str, Any]:
    """A copy of a Kubernetes object without what an RCA never reads: opaque ids (``uid``,
    ``resourceVersion``, owners' ``uid``), null or empty-string fields, and the API server's
    defaults in workload and Pod specs (``COMPACT_NOTE`` says so in the output)."""
    out = _drop_empty(obj)
    assert isinstance(out, dict)
    metadata = out.get("metadata")
    if isinstance(metadata, dict):
        for key in _OPAQUE_METADATA:
            metadata.pop(key, None)
        for owner in metadata.get("ownerReferences") or ():
            if isinstance(owner, dict):
                owner.pop("uid", None)
                owner.pop("blockOwnerDeletion", None)
    spec = out.get("spec")
    if isinstance(spec, dict):
        _drop_defaults(spec, _WORKLOAD_DEFAULTS)
        template = spec.get("template")
        pod_spec = template.get("spec") if isinstance(template, dict) else spec
        if isinstance(pod_spec, dict) and isinstance(pod_spec.get("containers"), list):
            _pod_spec(pod_spec)
    return out


def _pod_spec(spec: dict[str, Any]) -> None:
    _drop_defaults(spec, _POD_SPEC_DEFAULTS)
    for name in ("containers", "initContainers"):
        for container in spec.get(name) or ():
            if isinstance(container, dict):
                _drop_defaults(container, _CONTAINER_DEFAULTS)
    tolerations = spec.get("tolerations")
    if isinstance(tolerations, list):
        kept = [t for t in tolerations if not _default_toleration(t)]
        if kept:
            spec["tolerations"] = kept
        else:
            spec.pop("tolerations")


def _default_toleration(toleration: Any) -> bool:
    """The not-ready/unreachable NoExecute tolerations (300 s) admission adds to every Pod."""
    return (
        isinstance(toleration, dict)
        and toleration.get("key") in _DEFAULT_TOLERATIONS
        and toleration.get("effect") == "NoExecute"
        and toleration.get("tolerationSeconds") == 300
    )


def _drop_defaults(node: dict[str, Any], defaults: dict[str, Any]) -> None:
    for key, value in defaults.items():
        if key in node and node[key] == value and type(node[key]) is type(value):
            node.pop(key)


def _drop_empty(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _drop_empty(v) for k, v in node.items() if v is not None and v != ""}
    if isinstance(node, list):
        return [_drop_empty(item) for item in node]
    return node


# ---- per-call accounting ----------------------------------------------------------------------
# The tool box sets these for each call (each call runs in its own task, or awaits to the end
# before the next starts), so a handler needs no extra parameter to respect the remaining budget
# or to say it left something out.

_LIMIT: contextvars.ContextVar[int | None] = contextvars.ContextVar("tool_output_limit", default=None)
_TRUNCATED: contextvars.ContextVar[list[bool] | None] = contextvars.ContextVar("tool_truncated", default=None)
NARROW = (
    "(the data below was cut at the tool output limit: ask for less - a selector, a namespace, "
    "fewer lines - or a summary tool such as list_resources instead of get_resource)"
)
CUT_MARKER = re.compile(r"\[\.\.\. \d+ characters cut")


@contextlib.contextmanager
def accounting(limit: int) -> Iterator[list[bool]]:
    """Account for one call: its output cap; the flag yielded turns True when something is cut."""
    flag = [False]
    limit_token = _LIMIT.set(limit)
    flag_token = _TRUNCATED.set(flag)
    try:
        yield flag
    finally:
        _TRUNCATED.reset(flag_token)
        _LIMIT.reset(limit_token)


def limit(default: int) -> int:
    """The cap for the current call: the per-call cap, lowered to what the analysis' budget has left."""
    current = _LIMIT.get()
    return default if current is None else min(default, current)


def note_truncated() -> None:
    """The current call's output leaves something out (rows, series, characters)."""
    flag = _TRUNCATED.get()
    if flag is not None:
        flag[0] = True
