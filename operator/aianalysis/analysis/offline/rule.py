"""What a rule is: a matcher over :class:`evidence.Evidence`, and what it concludes when it matches.

A :class:`Rule` is a name, the signal and action it refines to, the words it adds to the catalog
query, an explanation template and a ``match`` function; the function's docstring documents the
rule (what evidence it needs, what it selects or declines, and why: :attr:`Rule.doc`). The rules
themselves live in :mod:`rules`, one module per failure family, in one ordered list.

Also here: what several families share (which containers crash, the service-level alert on a
healthy workload, quantities, wording).
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable, Mapping

from aianalysis import resources
from aianalysis.analysis.offline import evidence

_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|K|M|G|T)?$")
_UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


@dataclasses.dataclass(frozen=True, kw_only=True)
class Match:
    """What one rule's ``match`` found: the facts behind it and what they let us fill."""

    facts: tuple[str, ...]
    target: resources.ResourceRef | None = None
    values: Mapping[str, str] = dataclasses.field(default_factory=dict)
    detail: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Words for the explanation template."""
    query: str = ""
    """Words added to the rule's catalog query (what this case has that others do not)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Finding:
    rule: str
    signal_type: str
    action_type: str | None
    query: str
    explanation: str
    facts: tuple[str, ...]
    target: resources.ResourceRef | None = None
    values: Mapping[str, str] = dataclasses.field(default_factory=dict)
    decline: str | None = None
    """Why a person must decide instead (red herring, no automated fix): the finding selects nothing."""
    alert_remedies: bool = True
    """Whether the workflows for the alert's own signal type may serve when the catalog has none for
    the refined signal or action type. False when the finding rules them out (a configuration
    error: neither a rollback nor a restart of the template fixes it)."""
    action_only: bool = False
    """Only a workflow of the finding's action type fixes it: no search by signal type, whose
    workflows treat the signal's other causes (a taint is not lifted by lowering requests)."""

    @property
    def strength(self) -> float:
        """0..1: how much evidence stands behind the finding (three independent facts = all)."""
        return min(1.0, len(self.facts) / 3)


Matcher = Callable[[evidence.Evidence], Match | None]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Rule:
    """One analyzer. ``explanation`` is a ``str.format`` template over the match's ``detail``
    (``{workload}`` is always there); ``decline``: a match means a person must decide, for this
    reason."""

    name: str
    signal_type: str
    action_type: str | None
    query: str
    explanation: str
    match: Matcher
    decline: str | None = None
    alert_remedies: bool = True
    """See :attr:`Finding.alert_remedies`."""
    action_only: bool = False
    """See :attr:`Finding.action_only`."""

    @property
    def doc(self) -> str:
        """What the rule needs, what it selects or declines, and why: its matcher's docstring."""
        return inspect.getdoc(self.match) or ""

    def apply(self, seen: evidence.Evidence) -> Finding | None:
        found = self.match(seen)
        if found is None:
            return None
        detail = {"workload": ref_text(seen.workload or seen.incident), **found.detail}
        return Finding(
            rule=self.name,
            signal_type=self.signal_type,
            action_type=self.action_type,
            query=f"{self.query} {found.query}".strip(),
            explanation=self.explanation.format_map(_Defaulting(detail)),
            facts=found.facts,
            target=found.target,
            values=dict(found.values),
            decline=self.decline,
            alert_remedies=self.alert_remedies,
            action_only=self.action_only,
        )


class _Defaulting(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return f"<{key}>"


def crashing(seen: evidence.Evidence) -> list[tuple[evidence.Pod, evidence.Container]]:
    """The containers that crash (:attr:`evidence.Container.crashing`), with their Pods."""
    return [(pod, c) for pod, c in seen.containers if c.crashing]


#: Alerts that name a failure of the Pods themselves (not a service-level symptom).
FAILURE_SIGNALS = frozenset(
    {
        "CrashLoopBackOff",
        "OOMKilled",
        "ImagePullBackOff",
        "ErrImagePull",
        "Error",
        "CreateContainerConfigError",
    }
)


def service_alert_on_healthy_pods(seen: evidence.Evidence) -> bool:
    """A service-level alert (latency, errors: not a Pod failure) on a workload whose Pods are
    all Running, Ready and without restarts, with their CPU use known."""
    return (
        seen.signal_type not in FAILURE_SIGNALS
        and bool(seen.pods)
        and all(p.healthy for p in seen.pods)
        and not any(c.restarts for _, c in seen.containers)
        and len(seen.cpu_of_requests) == len(seen.pods)
    )


def quantity_bytes(text: str) -> int | None:
    """A Kubernetes memory or storage quantity in bytes (``1536Mi``, ``2G``), or None."""
    match = _QUANTITY.match(text.strip())
    if match is None:
        return None
    return int(float(match.group(1)) * _UNITS.get(match.group(2) or "", 1))


def quantity_millicores(text: str) -> int | None:
    """A CPU quantity in millicores (``500m`` → 500, ``2`` → 2000, ``1.5`` → 1500), or None."""
    match = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)(m?)", text.strip())
    if match is None:
        return None
    return round(float(match.group(1)) * (1 if match.group(2) else 1000))


def ref_text(ref: resources.ResourceRef | None) -> str:
    """``Kind namespace/name`` for the explanation and the facts."""
    if ref is None:
        return "the workload"
    return f"{ref.kind} {ref.namespace}/{ref.name}" if ref.namespace else f"{ref.kind} {ref.name}"


def shorten(text: str, limit: int = 160) -> str:
    """Untrusted text quoted in a fact: one line, at most ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
