"""What an analysis' LLM conversation cost in money: its billed tokens (input, output, cache read,
cache write), each kind at its own price per million tokens, from a dated price table.

The built-in table (:data:`DEFAULT`) holds the list prices Anthropic publishes for the Claude models
the operator defaults to (``claude-sonnet-4-6``) and their neighbours, in USD per million tokens.
Source: Anthropic, "Pricing" — Model pricing table, columns base input, 5-minute cache writes, cache
hits & refreshes, output (https://platform.claude.com/docs/en/about-claude/pricing), read on
2026-11-27. Cache writes are priced at the 5-minute rate: the operator never asks for the 1-hour
cache. Bedrock, Vertex AI and OpenAI-compatible servers have their own price lists (regional
endpoints, a local vLLM that costs nothing per token): set ``AIANALYSIS_LLM_PRICES_FILE`` for them —
it replaces this table — and for negotiated rates or another currency. Prices change: each cost
carries the date of the table it was computed with.
"""

from __future__ import annotations

import decimal
import functools
import re
from pathlib import Path
from typing import Annotated

import pydantic
import yaml
from pydantic.alias_generators import to_camel

import aianalysis.settings
from aianalysis import errors, resources

OFFLINE = "offline"
"""The deterministic provider: no tokens are sold, so its cost is 0."""

_PER = decimal.Decimal(1_000_000)
_PLACES = decimal.Decimal("0.000001")
#: What platforms wrap a model id in: a region or inference profile and the vendor (Bedrock:
#: ``us.anthropic.``), a version after ``@`` (Vertex AI) or ``-v1:0`` (Bedrock).
_PLATFORM_PREFIX = re.compile(r"^(?:[a-z]{2,6}\.)?anthropic\.")
_PLATFORM_SUFFIX = re.compile(r"(?:@.*|-v\d+(?::\d+)?)$")

PerMillion = Annotated[float, pydantic.Field(ge=0, allow_inf_nan=False)]


class _Shape(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid"
    )


class Price(_Shape):
    """One model's prices, per million tokens."""

    input: PerMillion
    output: PerMillion
    cache_read: PerMillion
    cache_write: PerMillion


class PriceTable(_Shape):
    currency: Annotated[str, pydantic.Field(pattern=r"^[A-Z]{3}$")]
    date: Annotated[str, pydantic.Field(pattern=r"^\d{4}-\d{2}-\d{2}$")]
    source: Annotated[str, pydantic.Field(max_length=500)] = ""
    models: dict[Annotated[str, pydantic.Field(min_length=1, max_length=200)], Price]


_SONNET = Price(input=3.0, output=15.0, cache_read=0.30, cache_write=3.75)
_OPUS = Price(input=5.0, output=25.0, cache_read=0.50, cache_write=6.25)
_HAIKU = Price(input=1.0, output=5.0, cache_read=0.10, cache_write=1.25)

DEFAULT = PriceTable(
    currency="USD",
    date="2026-11-27",
    source="Anthropic list prices, https://platform.claude.com/docs/en/about-claude/pricing",
    models={
        "claude-sonnet-4-6": _SONNET,  # the default model (AIANALYSIS_MODEL)
        "claude-sonnet-4-5": _SONNET,
        "claude-opus-4-6": _OPUS,
        "claude-opus-4-5": _OPUS,
        "claude-haiku-4-5": _HAIKU,
    },
)


def read_price_table(path: Path) -> PriceTable:
    """The table in a YAML file (:class:`aianalysis.settings.CostSettings` shows the shape)."""
    try:
        raw = yaml.safe_load(path.read_text())
        return PriceTable.model_validate(raw)
    except OSError as exc:
        raise errors.ConfigError(
            f"AIANALYSIS_LLM_PRICES_FILE {path}: cannot be read ({exc.strerror})"
        ) from None
    except yaml.YAMLError as exc:
        raise errors.ConfigError(f"AIANALYSIS_LLM_PRICES_FILE {path}: not YAML ({exc})") from None
    except pydantic.ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "the file"
        raise errors.ConfigError(f"AIANALYSIS_LLM_PRICES_FILE {path}: {where}: {first['msg']}") from None


@functools.cache
def _loaded(path: str) -> PriceTable:
    return read_price_table(Path(path))


def price_table(settings: aianalysis.settings.Settings) -> PriceTable:
    """The process' table: the configured file (read once per process), else :data:`DEFAULT`."""
    path = settings.cost.prices_file
    return _loaded(path) if path else DEFAULT


def price_of(table: PriceTable, model: str) -> Price | None:
    """The price of ``model`` (an id as an endpoint reports it): the longest table id it is, or
    starts with before a ``-`` (a dated release), once a platform's wrapping is taken off."""
    bare = _PLATFORM_SUFFIX.sub("", _PLATFORM_PREFIX.sub("", model.strip().lower()))
    matches = [name for name in table.models if bare == name.lower() or bare.startswith(name.lower() + "-")]
    return table.models[max(matches, key=len)] if matches else None


def cost(usage: resources.LLMUsage, table: PriceTable) -> resources.LLMCost | None:
    """What ``usage`` cost at ``table``; 0 for the offline provider, None for a model it has no price for."""
    if usage.provider == OFFLINE:
        return resources.LLMCost(amount=0.0, currency=table.currency, price_table_date=table.date)
    price = price_of(table, usage.model or "")
    if price is None:
        return None
    billed = (
        (usage.input_tokens, price.input),
        (usage.output_tokens, price.output),
        (usage.cache_read_tokens, price.cache_read),
        (usage.cache_write_tokens, price.cache_write),
    )
    total = sum(
        (decimal.Decimal(tokens) * decimal.Decimal(str(per)) for tokens, per in billed), decimal.Decimal(0)
    )
    amount = (total / _PER).quantize(_PLACES, rounding=decimal.ROUND_HALF_UP)
    return resources.LLMCost(amount=float(amount), currency=table.currency, price_table_date=table.date)


def priced(usage: resources.LLMUsage, table: PriceTable) -> resources.LLMUsage:
    """``usage`` with its cost."""
    return usage.model_copy(update={"cost": cost(usage, table)})
