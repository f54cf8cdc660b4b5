"""JSON schemas for the LLM, lean: what it needs to write a valid call, and no more.

Tool definitions are re-read on every request of every conversation (cached, but still input
tokens), and pydantic's schemas say much twice: a ``title`` per property repeating its name,
``anyOf [X, null]`` with ``default: null`` for every optional field (shown as ``X``, not
required; a required field that may be null keeps its ``anyOf``), ``$defs`` and ``$ref`` for
nested models, ``additionalProperties: false`` on every object. :func:`lean` keeps the types,
required fields, enums, numeric bounds, non-trivial defaults and descriptions, and drops the rest.
String bounds (``pattern``, ``minLength``, ``maxLength``) are dropped from what the LLM reads:
the same pydantic model still validates every call, and a call that breaks one gets an error
naming the constraint, which the LLM can correct.
"""

from __future__ import annotations

from typing import Any

_DROPPED = frozenset({"title", "pattern", "minLength", "maxLength", "additionalProperties"})


def lean(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` (a pydantic model's JSON schema) trimmed for the LLM. The root's description (the
    model's docstring) is left to the tool's description; the root object keeps
    ``additionalProperties: false`` (extra arguments are refused)."""
    definitions = schema.get("$defs") or {}
    root = {key: value for key, value in schema.items() if key not in ("$defs", "description")}
    out = _clean(root, definitions)
    assert isinstance(out, dict)
    if out.get("type") == "object":
        out["additionalProperties"] = False
    return out


def _clean(node: Any, definitions: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_clean(item, definitions) for item in node]
    if not isinstance(node, dict):
        return node
    reference = node.get("$ref")
    if isinstance(reference, str) and reference.startswith("#/$defs/"):
        target = definitions[reference.removeprefix("#/$defs/")]
        node = {**target, **{key: value for key, value in node.items() if key != "$ref"}}
    node = {key: value for key, value in node.items() if key not in _DROPPED}
    options = node.get("anyOf")
    if isinstance(options, list) and "default" in node:
        rest = [option for option in options if option != {"type": "null"}]
        if len(rest) == 1 and len(rest) < len(options):
            node.pop("anyOf")
            return _clean({**rest[0], **node}, definitions)
    if "default" in node and _trivial(node["default"]):
        node.pop("default")
    if isinstance(node.get("properties"), dict):
        node["properties"] = {name: _clean(value, definitions) for name, value in node["properties"].items()}
        return {
            key: value if key == "properties" else _clean(value, definitions) for key, value in node.items()
        }
    return {key: _clean(value, definitions) for key, value in node.items()}


def _trivial(default: object) -> bool:
    """A default the LLM infers from the field being optional: null, false, empty."""
    return default is None or default is False or (isinstance(default, str | list | dict) and not default)
