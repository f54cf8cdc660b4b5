"""Fencing of untrusted text (alert fields, cluster objects, logs) before it reaches the LLM.

The system prompt tells the model that whatever sits between ``<untrusted-data>`` tags is data,
never instructions. That only holds if the data cannot close the fence itself, so inside a fence
``&``, ``<`` and ``>`` (and their full-width look-alikes) are HTML-escaped: no tag of any kind can
appear, not even a closing one spelled oddly. Control and invisible format characters (bidi
overrides, zero-width joiners) are dropped because they can hide text from a human reviewer while
the model still reads it.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

FENCE_TAG = "untrusted-data"
CLOSE = f"</{FENCE_TAG}>"
DEFAULT_MAX_CHARS = 4000

_ESCAPES = {
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    "\uff1c": "&lt;",  # FULLWIDTH LESS-THAN SIGN
    "\ufe64": "&lt;",  # SMALL LESS-THAN SIGN
    "\uff1e": "&gt;",  # FULLWIDTH GREATER-THAN SIGN
    "\ufe65": "&gt;",  # SMALL GREATER-THAN SIGN
}
_KEPT_CONTROLS = {"\n", "\t"}
_LABEL_UNSAFE = re.compile(r"[^A-Za-z0-9_.:/\[\]-]")


def fence(
    text: str,
    *,
    label: str,
    max_chars: int = DEFAULT_MAX_CHARS,
    keep: Literal["head", "tail"] = "head",
) -> str:
    """``text`` wrapped in an ``<untrusted-data label=...>`` fence it cannot break out of.

    ``max_chars`` bounds the whole returned string, tags included; longer content is cut and a
    marker says how many characters went missing. ``keep="tail"`` keeps the end (logs, events:
    the most recent lines matter most).
    """
    opening = f'<{FENCE_TAG} label="{_safe_label(label)}">'
    clean = sanitize(text)
    overhead = len(opening) + len(CLOSE) + 2  # the two newlines of a multi-line fence
    body = _escape_capped(clean, max_chars=max(max_chars - overhead, 0), keep=keep)
    if "\n" in body:
        return f"{opening}\n{body}\n{CLOSE}"
    return f"{opening}{body}{CLOSE}"


def value(text: str, *, label: str) -> str:
    """One value taken from a spec or a status (a name, a kind, a time), fenced on its line.

    Identifier-shaped text is no safer than a sentence: ``ignore-previous-instructions`` is a valid
    Kubernetes name. Only values a model validated against a closed vocabulary (a severity, a
    priority, a known reason code) are shown unfenced, by their callers."""
    return fence(text, label=label, max_chars=1000)


def sanitize(text: str) -> str:
    """Text with normalised newlines and without control/invisible format characters."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\u2028", "\n").replace("\u2029", "\n")
    return "".join(ch for ch in text if ch in _KEPT_CONTROLS or not _invisible(ch))


def _invisible(ch: str) -> bool:
    return unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn")


def _safe_label(label: str) -> str:
    return _LABEL_UNSAFE.sub("_", label)[:80] or "data"


def _escape_capped(text: str, *, max_chars: int, keep: Literal["head", "tail"]) -> str:
    units = [_ESCAPES.get(ch, ch) for ch in text]
    if sum(map(len, units)) <= max_chars:
        return "".join(units)
    budget = max(max_chars - len(_marker(len(units))) - 1, 0)
    ordered = units if keep == "head" else list(reversed(units))
    kept: list[str] = []
    used = 0
    for unit in ordered:
        if used + len(unit) > budget:
            break
        kept.append(unit)
        used += len(unit)
    marker = _marker(len(units) - len(kept))
    if keep == "head":
        return "".join(kept) + "\n" + marker
    return marker + "\n" + "".join(reversed(kept))


def _marker(cut: int) -> str:
    return f"[... {cut} characters cut ...]"
