"""Admission of a RemediationWorkflow into the catalog the LLM is offered: pure rules, no I/O.

``review`` decides for one object; ``settle`` decides between objects claiming the same
workflowId + version. The operator writes the verdict to the object's ``Accepted`` condition
(``catalog.gate``); file catalogs (``--catalog``) refuse to load with the same message.

Reasons (condition reason when ``Accepted=False``):

- ``InvalidSpec`` — the spec does not fit the model or the CRD's CEL rules (what the CRD would
  refuse, for objects that bypassed it: files, or a CRD older than the operator).
- ``InvalidPattern`` — a parameter's ``pattern`` is not a regular expression.
- ``InvalidEnum`` — an ``enum`` value does not have the parameter's type.
- ``InvalidDefault`` — a ``default`` does not have the parameter's type, or breaks its enum,
  pattern, minimum or maximum.

Typed ``default`` and ``enum`` values are free-form to the API server
(``x-kubernetes-preserve-unknown-fields``), so CEL cannot see them: these two checks happen here.
- ``NotExecutable`` — nothing can run it (no ``execution.containerImage``: a Kubernaut workflow
  imported without a bundle). The object is kept, so the catalog loses nothing, but it is never
  offered: what the operator selects must be executable as is.
- ``ImageNotPinned`` — ``execution.containerImage`` names a tag, not a digest (``@sha256:<64 hex>``,
  or ``@sha512:``): a tag can be moved to other code after the catalog was reviewed, so what would
  run is not what was admitted. Kept but never offered, as ``NotExecutable``.
- ``ConflictingDefinition`` — the same workflowId + version is defined by an older object (by
  creation time, then name) with different content. Identical copies are all accepted.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal, get_args

import pydantic

from aianalysis import resources

Reason = Literal[
    "Accepted",
    "InvalidSpec",
    "InvalidPattern",
    "InvalidEnum",
    "InvalidDefault",
    "NotExecutable",
    "ImageNotPinned",
    "ConflictingDefinition",
]
REFUSALS: tuple[Reason, ...] = tuple(reason for reason in get_args(Reason) if reason != "Accepted")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")
_MAX_MESSAGE_CHARS = 1000
#: An image reference that ends in a digest (``name[:tag]@sha256:<hex>``), the only kind that runs.
PINNED_IMAGE = re.compile(r"[^@\s]+@(sha256:[0-9a-f]{64}|sha512:[0-9a-f]{128})")
#: The validator's bound (values longer than this are never matched against a catalog regex).
MAX_PATTERNED_CHARS = 1024


@dataclasses.dataclass(frozen=True)
class Ruling:
    reason: Reason
    message: str
    spec: resources.RemediationWorkflowSpec | None = None
    """The parsed spec when the object itself is valid (even if it loses a conflict)."""

    @property
    def accepted(self) -> bool:
        return self.reason == "Accepted"


@dataclasses.dataclass(frozen=True, kw_only=True)
class Claim:
    """A valid object claiming its workflowId + version."""

    name: str
    created: str
    """metadata.creationTimestamp (RFC 3339 sorts as text); "" for objects from files."""
    spec: resources.RemediationWorkflowSpec


def review(raw_spec: Mapping[str, Any]) -> Ruling:
    """The verdict on one object's spec, on its own (conflicts are ``settle``'s)."""
    try:
        spec = resources.RemediationWorkflowSpec.model_validate(raw_spec)
    except pydantic.ValidationError as exc:
        return Ruling("InvalidSpec", _clip(_describe(exc)))
    raw_parameters = raw_spec.get("parameters") or []
    for raw, param in zip(raw_parameters, spec.parameters, strict=True):
        refusal = _parameter_refusal(raw, param)
        if refusal is not None:
            reason, message = refusal
            return Ruling(reason, _clip(f"parameter {param.name}: {message}"), spec)
    if spec.execution.container_image is None:
        engine = spec.execution.engine
        return Ruling(
            "NotExecutable",
            f"{spec.workflow_id} {spec.version}: engine {engine} without execution.containerImage (or a "
            "Kubernaut bundle): nothing can run it, so it is kept but not offered to analyses",
            spec,
        )
    image = spec.execution.container_image
    if PINNED_IMAGE.fullmatch(image) is None:
        return Ruling(
            "ImageNotPinned",
            _clip(
                f"{spec.workflow_id} {spec.version}: execution.containerImage {image} is not pinned by "
                "digest (name@sha256:<digest>): a tag can point at other code later, so it is kept but not "
                "offered to analyses until pinned"
            ),
            spec,
        )
    return Ruling("Accepted", f"{spec.workflow_id} {spec.version} is offered to analyses", spec)


def settle(claims: Sequence[Claim]) -> dict[str, Ruling]:
    """Verdicts for every object claiming one workflowId + version: the oldest definition holds,
    objects with the same content are accepted too, the others are refused."""
    if not claims:
        return {}
    holder = min(claims, key=lambda claim: (claim.created or "~", claim.name))
    verdicts = {}
    for claim in claims:
        spec = claim.spec
        if spec == holder.spec:
            verdicts[claim.name] = Ruling(
                "Accepted", f"{spec.workflow_id} {spec.version} is offered to analyses", spec
            )
        else:
            verdicts[claim.name] = Ruling(
                "ConflictingDefinition",
                f"{spec.workflow_id} {spec.version} is already defined by RemediationWorkflow {holder.name} "
                "with different content; give this definition a new version",
                spec,
            )
    return verdicts


# ---- parameters --------------------------------------------------------------------------------


def _parameter_refusal(
    raw: Mapping[str, Any], param: resources.WorkflowParameter
) -> tuple[Reason, str] | None:
    if param.pattern is not None:
        try:
            re.compile(param.pattern)
        except re.error as exc:
            return "InvalidPattern", f"pattern {param.pattern!r} is not a regular expression ({exc})"
    for value in raw.get("enum") or []:
        # An array parameter's enum lists the values its items may take.
        problem = _type_problem("scalar" if param.type == "array" else param.type, value)
        if problem is not None:
            return "InvalidEnum", f"enum value {value!r} {problem}"
    if "default" in raw and raw["default"] is not None:
        problem = _type_problem(param.type, raw["default"])
        if problem is None and param.default is not None:
            problem = _constraint_problem(param, param.default)
        if problem is not None:
            return "InvalidDefault", f"default {raw['default']!r} {problem}"
    return None


def _type_problem(ptype: str, value: object) -> str | None:
    """Why ``value`` is not a ``ptype`` (typed, or text in its canonical-form grammar), or None."""
    if ptype == "string":
        ok = isinstance(value, str)
    elif ptype == "integer":
        ok = _is_integer(value)
    elif ptype == "number":
        ok = _is_number(value)
    elif ptype == "boolean":
        ok = isinstance(value, bool) or (
            isinstance(value, str) and value.strip().lower() in ("true", "false")
        )
    elif ptype == "scalar":
        ok = isinstance(value, str | int | float | bool)
    else:
        ok = _is_array(value)
    if ok:
        return None
    if ptype == "scalar":
        return "is not a string, number or boolean (an array's enum lists the values of its items)"
    return f"is not of type {ptype}"


def _is_integer(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    if isinstance(value, float):
        return value.is_integer()
    return isinstance(value, str) and _INTEGER.fullmatch(value.strip()) is not None


def _is_number(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return math.isfinite(value)
    return isinstance(value, str) and _NUMBER.fullmatch(value.strip()) is not None


def _is_array(value: object) -> bool:
    items = value
    if isinstance(value, str):
        try:
            items = json.loads(value)
        except ValueError:
            return False
    return isinstance(items, list) and all(isinstance(item, str | int | float | bool) for item in items)


def _constraint_problem(param: resources.WorkflowParameter, text: str) -> str | None:
    """The default's canonical text against the parameter's enum, pattern and range."""
    items = [_item(item) for item in json.loads(text)] if param.type == "array" else [text]
    for item in items:
        if param.enum is not None and not any(_same(param.type, item, option) for option in param.enum):
            return f"is not one of the enum values {param.enum}"
        if param.pattern is not None and param.type in ("string", "array"):
            if len(item) > MAX_PATTERNED_CHARS:
                return f"is longer than the {MAX_PATTERNED_CHARS} characters a pattern is checked against"
            if re.fullmatch(param.pattern, item) is None:
                return f"does not match the pattern {param.pattern!r}"
    if param.type in ("integer", "number"):
        number = float(text)
        if param.minimum is not None and number < param.minimum:
            return f"is below the minimum {param.minimum:g}"
        if param.maximum is not None and number > param.maximum:
            return f"is above the maximum {param.maximum:g}"
    return None


def _item(item: object) -> str:
    if isinstance(item, bool):
        return "true" if item else "false"
    return str(item)


def _same(ptype: str, a: str, b: str) -> bool:
    if ptype in ("integer", "number"):
        try:
            return float(a) == float(b)
        except ValueError:
            return False
    if ptype == "boolean":
        return a.strip().lower() == b.strip().lower()
    return a == b


def _describe(exc: pydantic.ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(part) for part in ('spec', *error['loc']))}: {error['msg']}" for error in exc.errors()
    )


def _clip(message: str) -> str:
    return message if len(message) <= _MAX_MESSAGE_CHARS else message[: _MAX_MESSAGE_CHARS - 3] + "..."
