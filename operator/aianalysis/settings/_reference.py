"""The configuration reference, read from the models: what a documentation page (or ``aianalysis``
itself) lists for every setting, so that no page is kept by hand."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
from collections.abc import Iterator
from typing import Any

import pydantic

from aianalysis.settings import _env, _fields


@dataclasses.dataclass(frozen=True, kw_only=True)
class Setting:
    """One setting as a user sets it."""

    group: str
    """The group's name in ``Settings`` (``settings.<group>.<field>``)."""
    group_doc: str
    """What the group is about (its model's docstring)."""
    field: str
    env: str
    """The variable to set (the documented one)."""
    also: tuple[str, ...]
    """Other variables read when ``env`` is unset, in this order (the platforms' own names)."""
    kind: str
    """How the variable's text reads: ``an integer``, ``true or false``, ``one of text, json``..."""
    rules: tuple[str, ...]
    """What the value must be besides (``must be at least 1``...)."""
    default: str
    """The default, written as the variable's text would be ("" = unset)."""
    doc: str
    secret: bool
    """From a Secret; never logged."""


def reference() -> Iterator[Setting]:
    """Every setting of every group, in the order of ``Settings`` and of each group's fields."""
    for group, model in _env.groups():
        docs = field_docs(model)
        for field, info in model.model_fields.items():
            env, *also = model.env_names(field)
            yield Setting(
                group=group,
                group_doc=" ".join((model.__doc__ or "").split()),
                field=field,
                env=env,
                also=tuple(also),
                kind=_kind(info),
                rules=tuple(meta.func.rule for meta in info.metadata if _is_check(meta)),
                default=_text(info.get_default(call_default_factory=True)),
                doc=" ".join(docs.get(field, "").split()),
                secret=_is_secret(info),
            )


def field_docs(model: type[pydantic.BaseModel]) -> dict[str, str]:
    """The docstring under each field of ``model`` (from its source: the documentation is there)."""
    body = ast.parse(textwrap.dedent(inspect.getsource(model))).body[0]
    assert isinstance(body, ast.ClassDef)
    docs: dict[str, str] = {}
    for field, after in zip(body.body, body.body[1:], strict=False):
        if not (isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)):
            continue
        said = after.value if isinstance(after, ast.Expr) else None
        text = said.value if isinstance(said, ast.Constant) else None
        docs[field.target.id] = text if isinstance(text, str) else ""
    return docs


def _is_check(meta: Any) -> bool:
    return isinstance(meta, pydantic.AfterValidator) and isinstance(meta.func, _fields.Constraint)


def _is_secret(info: pydantic.fields.FieldInfo) -> bool:
    return info.annotation == pydantic.SecretStr | None


def _kind(info: pydantic.fields.FieldInfo) -> str:
    for meta in info.metadata:
        if isinstance(meta, pydantic.BeforeValidator) and isinstance(meta.func, _fields.Parser):
            return meta.func.what
        if isinstance(meta, pydantic.BeforeValidator) and isinstance(meta.func, _fields.Choice):
            return "one of " + ", ".join(meta.func.options)
    return "a secret" if _is_secret(info) else "text"


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)
