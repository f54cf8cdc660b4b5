"""The one reader of the environment: each group's fields from their variables, each group
validated by its own model, every problem in one :class:`errors.ConfigError`."""

from __future__ import annotations

import dataclasses
import os
import typing
from collections.abc import Iterator, Mapping
from typing import Any

from aianalysis.settings import _fields, _llm, _root


def groups() -> Iterator[tuple[str, type[_fields.Group]]]:
    """Each group's name in ``Settings`` and its model, in the reference's order."""
    hints = typing.get_type_hints(_root.Settings)
    for field in dataclasses.fields(_root.Settings):
        model = hints[field.name]
        assert isinstance(model, type) and issubclass(model, _fields.Group), field.name
        yield field.name, model


def from_env(env: Mapping[str, str] | None = None, *, provider: str | None = None) -> _root.Settings:
    """The settings from ``env`` (default: this process' environment); ``provider`` overrides
    ``AIANALYSIS_PROVIDER`` (``aianalysis analyze --provider``) and is checked the same way. An
    empty variable counts as unset (a Helm value left empty renders as ``""``)."""
    env = dict(os.environ if env is None else env)
    if provider:
        env[_llm.LlmSettings.env_name("provider")] = provider
    found: dict[str, Any] = {}
    problems: list[str] = []
    for name, model in groups():
        values, read_from = _read(model, env)
        try:
            found[name] = model.model_validate(values, context={"read_from": read_from})
        except _fields.Invalid as exc:
            problems.extend(exc.problems)
    if problems:
        raise _fields.Invalid(problems)
    return _root.Settings(**found)


def _read(model: type[_fields.Group], env: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """The text of each field set in ``env`` (the first of its variables that is set, and not empty),
    and which variable that was (the one an error names)."""
    values: dict[str, str] = {}
    read_from: dict[str, str] = {}
    for field in model.model_fields:
        name = next((name for name in model.env_names(field) if env.get(name)), None)
        if name is not None:
            values[field], read_from[field] = env[name], name
    return values, read_from
