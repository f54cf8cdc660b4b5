"""What an analysis' LLM conversation costs in money: the price table its tokens are multiplied by."""

from __future__ import annotations

from typing import Annotated

from aianalysis.settings import _fields


class CostSettings(_fields.Group):
    """The price of LLM tokens, for ``status.llm.cost`` and the cost metric. The built-in table holds
    the providers' published list prices for the models the operator defaults to (dated and sourced
    in ``analysis/pricing.py``); a file replaces it (negotiated rates, another currency, another model)."""

    prices_file: Annotated[str | None, _fields.Env("AIANALYSIS_LLM_PRICES_FILE")] = None
    """YAML price table replacing the built-in one: ``currency`` (ISO 4217, e.g. ``USD``), ``date``
    (``YYYY-MM-DD``, the prices' date, written into each cost), ``source`` (where they come from) and
    ``models``: ``{<model id>: {input, output, cacheRead, cacheWrite}}`` per million tokens. A model id
    also prices its dated and platform variants (``claude-sonnet-4-6`` prices
    ``claude-sonnet-4-6-20260217``, ``anthropic.claude-sonnet-4-6-v1:0`` and ``claude-sonnet-4-6@2026``);
    the longest matching id wins. A model in no entry gets no cost (its tokens are still counted)."""
