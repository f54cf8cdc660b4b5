"""How errors are written for the LLM: clipped to a budget, lists shortened, schemas compact.

Every error goes back to the LLM verbatim and into ``status.validationAttempts``, so each one
stays under :data:`MAX_MESSAGE_CHARS` and names what would be right (the parameter's schema).
"""

from __future__ import annotations

from collections.abc import Iterable

from aianalysis import resources

MAX_MESSAGE_CHARS = 300


def clip(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def listing(items: Iterable[str], limit: int = 160) -> str:
    return clip(", ".join(items), limit) or "(none)"


def plain_number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else repr(float(value))


def describe_parameter(param: resources.WorkflowParameter) -> str:
    """The schema of a parameter, compactly, for the LLM to fix its value."""
    parts = [f"type {param.type}", "required" if param.required else "optional"]
    if param.enum is not None:
        parts.append(f"one of [{listing(param.enum, 100)}]")
    if param.pattern is not None:
        parts.append(f"pattern {clip(param.pattern, 60)}")
    if param.minimum is not None:
        parts.append(f"minimum {plain_number(param.minimum)}")
    if param.maximum is not None:
        parts.append(f"maximum {plain_number(param.maximum)}")
    if param.default is not None:
        parts.append(f"default {clip(param.default, 30)!r}")
    if param.depends_on:
        parts.append(f"depends on {', '.join(param.depends_on)}")
    described = f"{param.name}: {', '.join(parts)}"
    if param.description:
        described += f" — {clip(param.description, 60)}"
    return described
