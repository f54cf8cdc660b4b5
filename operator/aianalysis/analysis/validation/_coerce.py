"""Parameter values to their one canonical string form (status, WorkflowExecution, recovery history).

JSON types are accepted as such. Because LLMs often quote scalars, ``integer`` and ``number``
also accept plain decimal strings (``"3"``, ``"03"``, ``"+3"``, ``"0.5"``, ``"1e-3"``; not
``"1_000"``, ``"0x10"``, ``"nan"`` or ``"inf"``), canonicalized (``"03"`` → ``"3"``), and an
integral float (``3.0``) is an integer; ``boolean`` also accepts ``"true"``/``"false"`` in any
case. ``bool`` is never a number (upstream's ``int/bool`` mapping let it through and skipped
ranges). ``string`` accepts only strings: a quoted value costs the LLM one correction, a
silently stringified ``True`` would cost an execution. ``array`` is a list of scalars (or the
JSON text of one); its canonical form is compact JSON.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from aianalysis.analysis.validation import _messages

_MAX_NUMERIC_TEXT_CHARS = 64
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")
_NUMBER_TEXT = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")
_SCALARS = (str, int, float, bool)


def canonical_value(ptype: str, value: Any) -> str:
    """The one string form of a parameter value (status, WorkflowExecution, recovery history).

    Raises ``ValueError`` whose message tells the LLM what was expected.
    """
    converter = _CONVERTERS.get(ptype)
    if converter is None:
        raise ValueError(f"unknown parameter type {ptype!r}")
    return converter(value)


def numeric(text: str) -> int | float:
    """The number of a canonical ``integer`` or ``number`` text."""
    return int(text) if _INTEGER_TEXT.fullmatch(text) else float(text)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    return "an object" if isinstance(value, dict) else type(value).__name__


def _as_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    raise ValueError(f"expected a string, got {_json_type(value)} (quote it)")


def _as_integer(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if (
        isinstance(value, str)
        and len(value) <= _MAX_NUMERIC_TEXT_CHARS
        and _INTEGER_TEXT.fullmatch(value.strip())
    ):
        return str(int(value))
    raise ValueError(f"expected an integer, got {_json_type(value)} {_messages.clip(repr(value), 40)}")


def _as_number(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)
    if (
        isinstance(value, str)
        and len(value) <= _MAX_NUMERIC_TEXT_CHARS
        and _NUMBER_TEXT.fullmatch(value.strip())
    ):
        text = value.strip()
        if _INTEGER_TEXT.fullmatch(text):
            return str(int(text))
        number = float(text)
        if math.isfinite(number):
            return repr(number)
    raise ValueError(f"expected a finite number, got {_json_type(value)} {_messages.clip(repr(value), 40)}")


def _as_boolean(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower()
    raise ValueError(
        f"expected a boolean (true or false), got {_json_type(value)} {_messages.clip(repr(value), 40)}"
    )


def _as_array(value: Any) -> str:
    items = value
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:
            items = json.loads(value)
        except json.JSONDecodeError:
            items = value
    if not isinstance(items, list | tuple):
        raise ValueError(f"expected an array of scalars, got {_json_type(value)}")
    for item in items:
        if not isinstance(item, _SCALARS) or (isinstance(item, float) and not math.isfinite(item)):
            raise ValueError(f"array items must be strings, numbers or booleans, got {_json_type(item)}")
    return json.dumps(list(items), separators=(",", ":"), ensure_ascii=False)


_CONVERTERS: dict[str, Callable[[Any], str]] = {
    "string": _as_string,
    "integer": _as_integer,
    "number": _as_number,
    "boolean": _as_boolean,
    "array": _as_array,
}
