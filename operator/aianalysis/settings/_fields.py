"""What every settings group is made of: the variables that set a field, how a value is read from
its variable's text, the checks it must pass, and the base class that turns a failed check into
one :class:`errors.ConfigError` line naming the variable to fix."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Annotated, Any, ClassVar, Self

import pydantic
import pydantic_core

from aianalysis import errors

PREFIX = "AIANALYSIS_"

# The error types below, told apart when the message is put together: the text of a variable does
# not read as its type (the text is quoted), or a value fails a check.
UNREADABLE, INVALID = "setting_unreadable", "setting_invalid"


class Env:
    """The variables that set a field, looked up in this order; the first is the one to document.
    Without it a field is set by its group's ``env_prefix`` + the field's name in capitals."""

    __slots__ = ("names",)

    def __init__(self, *names: str) -> None:
        self.names = names


class Constraint:
    """A rule a value (``each``: every item of a list) must follow, said the way the error message
    and the reference say it."""

    __slots__ = ("each", "ok", "rule")

    def __init__(self, rule: str, ok: Callable[[Any], bool], *, each: bool = False) -> None:
        self.rule, self.ok, self.each = rule, ok, each

    def __call__(self, value: Any) -> Any:
        if value is None:
            return value
        if self.each and (bad := [item for item in value if not self.ok(item)]):
            raise problem(INVALID, f"{self.rule}, not {bad}")
        if not self.each and not self.ok(value):
            raise problem(
                INVALID,
                f"{self.rule}, not {value!r}" if isinstance(value, str) else f"{self.rule}, not {value}",
            )
        return value


class Choice:
    """One of a few words, checked before pydantic's ``Literal`` so the message lists them plainly."""

    __slots__ = ("options", "rule")

    def __init__(self, options: tuple[str, ...], rule: str = "") -> None:
        self.options, self.rule = options, rule or "must be one of " + ", ".join(options)

    def __call__(self, value: Any) -> Any:
        if isinstance(value, str) and value not in self.options:
            raise problem(INVALID, f"{self.rule}, not {value!r}")
        return value


def problem(kind: str, text: str) -> pydantic_core.PydanticCustomError:
    """An error pydantic reports at the field that raised it, its text kept verbatim."""
    return pydantic_core.PydanticCustomError(kind, "{text}", {"text": text})


class Parser:
    """How a variable's text becomes a value (other values, from Python, pass through as they are)."""

    __slots__ = ("convert", "what")

    def __init__(self, what: str, convert: Callable[[str], Any]) -> None:
        self.what, self.convert = what, convert

    def __call__(self, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        try:
            return self.convert(value)
        except ValueError:
            raise problem(UNREADABLE, f"is not {self.what}") from None


def _flag(text: str) -> bool:
    word = text.strip().lower()
    if word in ("1", "true", "yes", "on"):
        return True
    if word in ("0", "false", "no", "off"):
        return False
    raise ValueError(text)


def _names(text: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in text.split(",") if item.strip())


def _limit(text: str) -> int | None:
    return None if text.strip().lower() == "unlimited" else int(text)


_DURATION_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str) -> float:
    """``90m``, ``1h``, ``3600s``, ``1d`` or plain seconds → seconds."""
    text = text.strip()
    factor = _DURATION_UNITS.get(text[-1:].lower())
    return float(text[:-1] if factor is not None else text) * (factor or 1.0)


# ---- the types of the groups' fields: how the text reads, then what the value must be ----------

Flag = Annotated[bool, pydantic.BeforeValidator(Parser("true or false", _flag))]
Integer = Annotated[int, pydantic.BeforeValidator(Parser("an integer", int))]
Number = Annotated[float, pydantic.BeforeValidator(Parser("a number", float))]
Names = Annotated[tuple[str, ...], pydantic.BeforeValidator(Parser("a comma-separated list", _names))]
"""A comma-separated list; blanks around and between the commas are dropped."""

NOT_NEGATIVE = Constraint("must not be negative", lambda value: value >= 0)
POSITIVE = Constraint("must be positive", lambda value: value > 0)

Count = Annotated[
    Integer, pydantic.AfterValidator(Constraint("must be at least 1", lambda value: value >= 1))
]
Tries = Annotated[Integer, pydantic.AfterValidator(NOT_NEGATIVE)]
Port = Annotated[
    Integer,
    pydantic.AfterValidator(Constraint("must be a port number (0..65535)", lambda v: 0 <= v <= 65535)),
]
Seconds = Annotated[Number, pydantic.AfterValidator(POSITIVE)]
"""A time in seconds, more than 0."""
WholeSeconds = Annotated[Integer, pydantic.AfterValidator(POSITIVE)]
Pause = Annotated[Number, pydantic.AfterValidator(NOT_NEGATIVE)]
"""A time in seconds, 0 or more (0 usually turns the pause off)."""
Multiplier = Annotated[Number, pydantic.AfterValidator(POSITIVE)]
Fraction = Annotated[
    Number,
    pydantic.AfterValidator(Constraint("must be within 0..1", lambda v: not math.isnan(v) and 0 <= v <= 1)),
]
Limit = Annotated[
    int | None,
    pydantic.BeforeValidator(Parser("an integer", _limit)),
    pydantic.AfterValidator(NOT_NEGATIVE),
]
"""A count, or ``unlimited`` (None)."""
DurationSeconds = Annotated[
    float,
    pydantic.BeforeValidator(Parser("a duration such as 90m, 1h or 3600s", parse_duration)),
    pydantic.AfterValidator(NOT_NEGATIVE),
]
"""``90m``, ``1h``, ``3600s``, ``1d`` or plain seconds; 0 or more."""


class Invalid(errors.ConfigError):
    """Settings that cannot work, every problem at once (a restart loop per typo is slow), each
    naming the variable to fix, in one line."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("invalid settings: " + "; ".join(problems))
        self.problems = problems


class Group(pydantic.BaseModel):
    """One concern's settings: frozen, each field documented by the docstring under it (read by
    ``reference()`` only: pydantic's ``use_attribute_docstrings`` would parse the sources in every
    process, ~0.6 MiB of RSS), set by the variables :meth:`env_names` gives, validated by this model
    alone."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    env_prefix: ClassVar[str] = PREFIX
    """What a field's name in capitals is prefixed with to name its variable (unless ``Env`` says)."""

    @pydantic.model_validator(mode="wrap")
    @classmethod
    def _one_line_per_problem(
        cls, values: Any, handler: pydantic.ModelWrapValidatorHandler[Self], info: pydantic.ValidationInfo
    ) -> Self:
        """From the environment or built in code (tests, tools): the same checks, the same error."""
        try:
            group = handler(values)
        except pydantic.ValidationError as exc:
            read_from = (info.context or {}).get("read_from", {})
            raise Invalid(list(cls.problems(exc, read_from))) from None
        if conflicts := group.conflicts():
            raise Invalid(conflicts)
        return group

    def conflicts(self) -> list[str]:
        """What the fields, each valid, cannot mean together (checked once every field is valid)."""
        return []

    @classmethod
    def env_names(cls, field: str) -> tuple[str, ...]:
        """The variables that set ``field``, in the order they are looked up."""
        declared = [meta for meta in cls.model_fields[field].metadata if isinstance(meta, Env)]
        return declared[0].names if declared else (cls.env_prefix + field.upper(),)

    @classmethod
    def env_name(cls, field: str) -> str:
        """The variable to name when ``field`` is wrong (what a user edits)."""
        return cls.env_names(field)[0]

    @classmethod
    def problems(cls, exc: pydantic.ValidationError, read_from: dict[str, str]) -> Iterator[str]:
        """Each error as a line naming the variable: the one a value was read from, else the first."""
        for error in exc.errors(include_url=False):
            field = str(error["loc"][0]) if error["loc"] else ""
            if field not in cls.model_fields:  # no field of ours: an unknown keyword in code
                yield f"{cls.__name__}: {field}: {error['msg']}" if field else error["msg"]
                continue
            name = read_from.get(field) or cls.env_name(field)
            if error["type"] == UNREADABLE:  # the text as it was written, to show what reads wrong
                yield f"{name}={error['input']!r} {error['msg']}"
            elif error["type"] == INVALID:
                yield f"{name} {error['msg']}"
            else:  # pydantic's own (a value of the wrong type, from code): never the input, maybe a secret
                yield f"{name}: {error['msg']}"
