"""The cost of an analysis in money: each kind of token at its own price, the model found under the
names platforms give it, a table a user supplies in a file, the offline provider free."""

from __future__ import annotations

from pathlib import Path

import pytest

from aianalysis import errors, resources, settings
from aianalysis.analysis import pricing


def usage(model: str = "claude-sonnet-4-6", provider: str = "anthropic", **tokens: int) -> resources.LLMUsage:
    return resources.LLMUsage(provider=provider, model=model, **tokens)


def test_the_default_model_is_priced_with_a_dated_sourced_table() -> None:
    table = pricing.DEFAULT
    assert pricing.price_of(table, settings.from_env({}).llm.model) is not None
    assert table.currency == "USD" and table.date == "2026-11-27"
    assert "platform.claude.com" in table.source


def test_each_kind_of_token_has_its_own_price() -> None:
    """Sonnet: input $3, output $15, cache read $0.30, cache write $3.75 per million tokens."""
    billed = usage(input_tokens=1200, output_tokens=150, cache_read_tokens=900, cache_write_tokens=300)

    cost = pricing.cost(billed, pricing.DEFAULT)

    assert cost == resources.LLMCost(amount=0.007245, currency="USD", price_table_date="2026-11-27")
    one_million = {"input_tokens": 1, "output_tokens": 1, "cache_read_tokens": 1, "cache_write_tokens": 1}
    per_kind = {}
    for kind in one_million:
        priced = pricing.cost(usage(**{kind: 1_000_000}), pricing.DEFAULT)
        assert priced is not None
        per_kind[kind] = priced.amount
    assert per_kind == {
        "input_tokens": 3.0, "output_tokens": 15.0, "cache_read_tokens": 0.3, "cache_write_tokens": 3.75,
    }  # fmt: skip


def test_amounts_are_exact_to_the_millionth() -> None:
    """Decimal arithmetic: 7 input tokens of Haiku are $0.000007, not 6.999...e-06."""
    cost = pricing.cost(usage("claude-haiku-4-5", input_tokens=7), pricing.DEFAULT)
    assert cost is not None and cost.amount == 0.000007
    tiny = pricing.cost(usage("claude-haiku-4-5", cache_read_tokens=4), pricing.DEFAULT)
    assert tiny is not None and tiny.amount == 0.0, "0.0000004 rounds to 0 at 6 decimals"


@pytest.mark.parametrize(
    "reported",
    [
        "claude-sonnet-4-6",
        "claude-sonnet-4-6-20260217",  # a dated release, as the Messages API reports it
        "anthropic.claude-sonnet-4-6-v1:0",  # Bedrock
        "us.anthropic.claude-sonnet-4-6-v1:0",  # a Bedrock cross-region inference profile
        "claude-sonnet-4-6@20260217",  # Vertex AI
        "Claude-Sonnet-4-6",
    ],
)
def test_a_model_is_found_under_the_names_platforms_give_it(reported: str) -> None:
    assert pricing.price_of(pricing.DEFAULT, reported) == pricing.DEFAULT.models["claude-sonnet-4-6"]


def test_the_longest_matching_id_wins_and_a_prefix_is_not_a_match() -> None:
    table = pricing.PriceTable(
        currency="EUR",
        date="2026-12-01",
        models={
            "claude-sonnet-4": pricing.Price(input=1, output=1, cache_read=1, cache_write=1),
            "claude-sonnet-4-6": pricing.Price(input=2, output=2, cache_read=2, cache_write=2),
        },
    )
    assert pricing.price_of(table, "claude-sonnet-4-6-20260217") == table.models["claude-sonnet-4-6"]
    assert pricing.price_of(table, "claude-sonnet-4-20250514") == table.models["claude-sonnet-4"]
    assert pricing.price_of(table, "claude-sonnet-45") is None, "not a dated release of claude-sonnet-4"
    cost = pricing.cost(usage("claude-sonnet-4-6", input_tokens=500_000), table)
    assert cost == resources.LLMCost(amount=1.0, currency="EUR", price_table_date="2026-12-01")


def test_an_unpriced_model_has_no_cost_and_offline_costs_nothing() -> None:
    assert pricing.cost(usage("llama-3.3-70b", provider="openai", input_tokens=5000), pricing.DEFAULT) is None
    free = pricing.cost(usage("offline-analyzers", provider="offline", input_tokens=5000), pricing.DEFAULT)
    assert free == resources.LLMCost(amount=0.0, currency="USD", price_table_date="2026-11-27")
    with_cost = pricing.priced(usage(output_tokens=1000), pricing.DEFAULT)
    assert with_cost.cost is not None and with_cost.cost.amount == 0.015
    assert with_cost.output_tokens == 1000


def test_a_prices_file_replaces_the_table(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(
        "currency: EUR\n"
        "date: '2026-12-01'\n"
        "source: our contract\n"
        "models:\n"
        "  claude-sonnet-4-6: {input: 2.5, output: 12, cacheRead: 0.25, cacheWrite: 3}\n"
        "  qwen3-coder: {input: 0, output: 0, cacheRead: 0, cacheWrite: 0}\n"
    )
    config = settings.from_env({"AIANALYSIS_LLM_PRICES_FILE": str(path)})

    table = pricing.price_table(config)

    assert table.currency == "EUR" and table.source == "our contract"
    assert pricing.cost(usage(input_tokens=1_000_000, cache_write_tokens=1_000_000), table) == (
        resources.LLMCost(amount=5.5, currency="EUR", price_table_date="2026-12-01")
    )
    local = pricing.cost(usage("qwen3-coder", provider="openai", input_tokens=9), table)
    assert local is not None and local.amount == 0.0
    assert pricing.price_of(table, "claude-haiku-4-5") is None, "the file replaces the built-in table"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("currency: usd\ndate: '2026-12-01'\nmodels: {}\n", "currency: String should match pattern"),
        ("currency: USD\ndate: yesterday\nmodels: {}\n", "date: String should match pattern"),
        (
            "currency: USD\ndate: '2026-12-01'\n"
            "models: {m: {input: -1, output: 1, cacheRead: 0, cacheWrite: 0}}\n",
            "models.m.input: Input should be greater than or equal to 0",
        ),
        (
            "currency: USD\ndate: '2026-12-01'\nmodels: {m: {input: 1, output: 1}}\n",
            "models.m.cacheRead: Field required",
        ),
        (
            "currency: USD\ndate: '2026-12-01'\nmodels: {}\nextra: 1\n",
            "extra: Extra inputs are not permitted",
        ),
        ("currency: [USD\n", "not YAML"),
    ],
)
def test_a_bad_prices_file_says_what_to_fix(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(text)
    with pytest.raises(errors.ConfigError, match=r"^AIANALYSIS_LLM_PRICES_FILE .*prices.yaml: ") as raised:
        pricing.read_price_table(path)
    assert says in str(raised.value)


def test_a_missing_prices_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(errors.ConfigError, match="cannot be read"):
        pricing.read_price_table(tmp_path / "absent.yaml")
