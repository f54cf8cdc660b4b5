"""Pure parts of the providers: the model check's verdicts and how OpenAI-style tool-call
arguments (text the model wrote) are read."""

from __future__ import annotations

import pytest

from aianalysis import errors
from aianalysis.analysis.llm import model_check, openai_provider


def test_a_transient_failure_of_the_model_check_is_a_warning_not_a_stop() -> None:
    failure = errors.ProviderUnavailableError("the Anthropic API answered 529 overloaded_error: Overloaded")

    warning = model_check.judge_failure("anthropic", "claude-x", status=529, failure=failure)

    assert (
        "could not verify model 'claude-x'" in warning and "529" in warning and "starting anyway" in warning
    )


def test_an_unknown_model_stops_with_one_line_naming_the_setting() -> None:
    failure = errors.ProviderError("the platform answered 404:\n  model: claude-2.0\n  (retired)")

    with pytest.raises(errors.ConfigError) as caught:
        model_check.judge_failure("vertex", "claude-2.0", status=404, failure=failure)

    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("model 'claude-2.0' is unknown or retired at provider 'vertex'")
    assert message.endswith("set AIANALYSIS_MODEL to a model id it serves")


def test_refused_credentials_stop_and_say_what_to_check() -> None:
    failure = errors.ProviderError("403 AccessDeniedException: You don't have access to the model")

    with pytest.raises(errors.ConfigError, match=r"refused access to model 'm'.*check its credentials"):
        model_check.judge_failure("bedrock", "m", status=403, failure=failure)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"query": "oom"}', ({"query": "oom"}, None)),
        ("", ({}, None)),
        (None, ({}, None)),
        ("[1, 2]", (None, "a JSON list instead of an object")),
        ('"just a string"', (None, "a JSON str instead of an object")),
    ],
)
def test_tool_call_arguments_are_an_object_or_a_reason(
    text: str | None, expected: tuple[dict[str, str] | None, str | None]
) -> None:
    assert openai_provider.arguments(text) == expected


def test_arguments_that_are_not_json_say_where_they_broke() -> None:
    raw, problem = openai_provider.arguments('{"analysis_summary": "cut')

    assert raw is None and problem is not None and problem.startswith("invalid JSON: Unterminated string")
