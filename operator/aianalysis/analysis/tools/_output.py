"""Shaping tool output for the LLM: the size cap, and cluster data as fenced YAML."""

from __future__ import annotations

from typing import Any, Literal

import yaml

from aianalysis.analysis import prompts

_FIRST_KEYS = ("apiVersion", "kind", "metadata", "status", "spec")


def cap(text: str, *, max_chars: int) -> str:
    """``text`` cut to ``max_chars`` with a marker saying how much was cut (for trusted text;
    untrusted text is capped by ``fenced``)."""
    if len(text) <= max_chars:
        return text
    marker = "\n[... {} characters cut to fit the tool output limit ...]"
    keep = max(max_chars - len(marker.format(len(text))), 0)
    return text[:keep] + marker.format(len(text) - keep)


def fenced(
    header: str, body: str, *, label: str, max_chars: int, keep: Literal["head", "tail"] = "head"
) -> str:
    """A trusted one-line header and untrusted cluster text fenced under it, all within ``max_chars``."""
    budget = max(max_chars - len(header) - 1, 0)
    return header + "\n" + prompts.fence(body.rstrip("\n"), label=label, max_chars=budget, keep=keep)


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
