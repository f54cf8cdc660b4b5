"""Business context from the cluster: what a namespace's labels and annotations say about the
incidents in it (the way Kubernaut's SignalProcessing classifies them), merged under what an
AIAnalysis spec or an alert states explicitly. Pure: the caller reads the Namespace.

Keys are read under each configured prefix (default ``kubernaut.io/`` then ``kubernaut.ai/``: a
namespace labelled for Kubernaut works as it is). Labels win over annotations, and an earlier
prefix over a later one. Keys under other prefixes are never read.

=================================  ===========================================================
key (after the prefix)             becomes
=================================  ===========================================================
``environment``                    ``environment`` (lower-cased: ``Production`` → ``production``)
``priority``                       ``priority`` (``P0``..``P9``)
``criticality``                    ``priority`` when none is given: critical → P0, high → P1,
                                   medium → P2, low → P3; also ``customLabels.criticality``
``business-category``,             ``businessCategory`` (the first present)
``business-unit``
``risk-tolerance``                 ``riskTolerance`` (low, medium, high); also
                                   ``customLabels.risk_tolerance`` (Kubernaut workflows match it)
``team``, ``service-owner``        ``customLabels.team`` (the first present)
``sla-tier``, ``sla``              ``customLabels.sla`` (the first present)
``label-<key>``                    ``customLabels.<key>`` (Kubernaut's custom-label convention)
any other key                      ``customLabels.<key>`` as it is (``tier``, ``component``...)
=================================  ===========================================================

Bounded: at most ``MAX_CUSTOM_LABELS`` custom labels (keys sorted; the rest reported), keys of at
most 63 characters and values of at most ``MAX_VALUE_CHARS``; a value outside a field's vocabulary
(``priority: urgent``) is ignored and reported, never fatal.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence

from aianalysis import resources

DEFAULT_PREFIXES: tuple[str, ...] = ("kubernaut.io/", "kubernaut.ai/")
MAX_CUSTOM_LABELS = 32
MAX_KEY_CHARS = 63
MAX_VALUE_CHARS = 256
CUSTOM_PREFIX = "label-"
CRITICALITY_PRIORITY = {"critical": "P0", "high": "P1", "medium": "P2", "low": "P3"}
_PRIORITY = re.compile(r"^P[0-9]$")
#: Custom-label keys each field is also published under, and the keys the fields come from.
_ALIASES = {
    "business_category": ("business-category", "business-unit"),
    "team": ("team", "service-owner"),
    "sla": ("sla-tier", "sla"),
}
_FIELD_KEYS = {"environment", "priority", "risk-tolerance", *(k for keys in _ALIASES.values() for k in keys)}


@dataclasses.dataclass(frozen=True)
class Derived:
    """The business context a namespace declares, and what was ignored (for warnings)."""

    values: dict[str, object]
    """``BusinessContext`` fields (wire names not used: python names)."""
    ignored: list[str] = dataclasses.field(default_factory=list)


def from_metadata(
    labels: Mapping[str, str] | None,
    annotations: Mapping[str, str] | None,
    *,
    prefixes: Sequence[str] = DEFAULT_PREFIXES,
) -> Derived:
    """The business context in a namespace's metadata (see the module table)."""
    found = _collect(labels or {}, annotations or {}, prefixes)
    ignored: list[str] = []
    values: dict[str, object] = {}
    custom: dict[str, str] = {}
    if "environment" in found:
        values["environment"] = found["environment"].lower()
    priority = found.get("priority")
    if priority is not None and not _PRIORITY.match(priority):
        ignored.append(f"priority {priority!r} is not P0..P9")
        priority = None
    criticality = found.get("criticality")
    if priority is None and criticality is not None:
        priority = CRITICALITY_PRIORITY.get(criticality.lower())
    if priority is not None:
        values["priority"] = priority
    tolerance = found.get("risk-tolerance")
    if tolerance is not None:
        if tolerance.lower() in resources.RISK_ORDER:
            values["risk_tolerance"] = tolerance.lower()
            custom["risk_tolerance"] = tolerance.lower()
        else:
            ignored.append(f"risk-tolerance {tolerance!r} is not low, medium or high")
    for field, keys in _ALIASES.items():
        value = next((found[key] for key in keys if key in found), None)
        if value is None:
            continue
        if field == "business_category":
            values[field] = value
        else:
            custom[field] = value
    for key in sorted(found):
        name = key.removeprefix(CUSTOM_PREFIX) if key.startswith(CUSTOM_PREFIX) else key
        if key in _FIELD_KEYS or not name:
            continue
        custom.setdefault(name, found[key])
    kept = dict(sorted(custom.items())[:MAX_CUSTOM_LABELS])
    if len(custom) > len(kept):
        ignored.append(f"{len(custom) - len(kept)} custom label(s) beyond the first {MAX_CUSTOM_LABELS}")
    if kept:
        values["custom_labels"] = kept
    return Derived(values=values, ignored=ignored)


def merge(stated: resources.BusinessContext | None, derived: Derived) -> resources.BusinessContext:
    """What the spec or alert states wins, field by field (``customLabels`` key by key); the
    namespace fills the rest. A value the model refuses is dropped, never fatal."""
    given = stated.model_dump(exclude_unset=True) if stated is not None else {}
    merged: dict[str, object] = {**derived.values, **{k: v for k, v in given.items() if v is not None}}
    custom = {
        **_strings(derived.values.get("custom_labels")),
        **_strings(given.get("custom_labels")),
    }
    if custom:
        merged["custom_labels"] = custom
    try:
        return resources.BusinessContext.model_validate(merged)
    except ValueError:
        return stated if stated is not None else resources.BusinessContext()


def _strings(value: object) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, Mapping) else {}


def _collect(
    labels: Mapping[str, str], annotations: Mapping[str, str], prefixes: Sequence[str]
) -> dict[str, str]:
    """Key (prefix stripped) → value, labels before annotations, earlier prefixes first; bounded."""
    found: dict[str, str] = {}
    for source in (labels, annotations):
        for prefix in prefixes:
            for raw_key, raw_value in source.items():
                if not isinstance(raw_key, str) or not raw_key.startswith(prefix):
                    continue
                key = raw_key[len(prefix) :].strip().lower()
                value = str(raw_value).strip()
                if not key or len(key) > MAX_KEY_CHARS or not value:
                    continue
                found.setdefault(key, value[:MAX_VALUE_CHARS])
    return found


__all__ = [
    "CRITICALITY_PRIORITY",
    "DEFAULT_PREFIXES",
    "MAX_CUSTOM_LABELS",
    "Derived",
    "from_metadata",
    "merge",
]
