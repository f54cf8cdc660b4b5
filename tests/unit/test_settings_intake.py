"""Settings of the Alertmanager intake and the LLM budget, as an operator sets them in the chart."""

from __future__ import annotations

import pytest

from aianalysis import errors, settings
from aianalysis.controller import llm_budget


def test_defaults_keep_the_intake_off_and_the_budget_limited_in_memory() -> None:
    s = settings.from_env({})
    assert s.intake.port == 0
    assert s.intake.cooldown_seconds == 3600.0
    assert (s.budget.conversations_per_hour, s.budget.tokens_per_day) == (30, 3_000_000)
    assert s.budget.namespace == "", "no record outside a cluster install (the chart sets it)"


def test_the_budget_is_unlimited_only_when_asked_and_never_for_the_offline_analyzers() -> None:
    s = settings.from_env(
        {
            "AIANALYSIS_API_KEY": "k",
            "AIANALYSIS_LLM_BUDGET_CONVERSATIONS_PER_HOUR": "unlimited",
            "AIANALYSIS_LLM_BUDGET_TOKENS_PER_DAY": "Unlimited",
        }
    )
    assert s.budget.conversations_per_hour is None and s.budget.tokens_per_day is None
    assert llm_budget.Allowance.from_settings(s).unlimited
    offline = settings.from_env({"AIANALYSIS_PROVIDER": "offline"})
    assert llm_budget.Allowance.from_settings(offline).unlimited, "the offline analyzers cost nothing"
    paid = settings.from_env({"AIANALYSIS_API_KEY": "k"})
    assert llm_budget.Allowance.from_settings(paid) == llm_budget.Allowance(
        conversations_per_hour=30, tokens_per_day=3_000_000
    )


def test_intake_and_budget_from_the_environment() -> None:
    s = settings.from_env(
        {
            "AIANALYSIS_INTAKE_PORT": "9443",
            "AIANALYSIS_INTAKE_TOKEN": "t0ken",
            "AIANALYSIS_INTAKE_TLS_CERT_FILE": "/etc/aianalysis/intake-tls/tls.crt",
            "AIANALYSIS_INTAKE_TLS_KEY_FILE": "/etc/aianalysis/intake-tls/tls.key",
            "AIANALYSIS_INTAKE_COOLDOWN": "90m",
            "AIANALYSIS_LLM_BUDGET_CONVERSATIONS_PER_HOUR": "20",
            "AIANALYSIS_LLM_BUDGET_TOKENS_PER_DAY": "2000000",
        }
    )
    assert s.intake.token is not None and s.intake.token.get_secret_value() == "t0ken"
    assert (s.intake.port, s.intake.cooldown_seconds) == (9443, 5400.0)
    assert (s.budget.conversations_per_hour, s.budget.tokens_per_day) == (20, 2_000_000)
    assert "t0ken" not in repr(s), "the token is never printed"


@pytest.mark.parametrize(
    ("raw", "seconds"), [("1h", 3600.0), ("3600s", 3600.0), ("3600", 3600.0), ("1d", 86400.0)]
)
def test_cooldown_durations(raw: str, seconds: float) -> None:
    assert settings.from_env({"AIANALYSIS_INTAKE_COOLDOWN": raw}).intake.cooldown_seconds == seconds


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"AIANALYSIS_INTAKE_PORT": "9443"}, "AIANALYSIS_INTAKE_TOKEN"),
        ({"AIANALYSIS_INTAKE_COOLDOWN": "soon"}, "AIANALYSIS_INTAKE_COOLDOWN"),
        (
            {"AIANALYSIS_LLM_BUDGET_CONVERSATIONS_PER_HOUR": "-1"},
            "AIANALYSIS_LLM_BUDGET_CONVERSATIONS_PER_HOUR",
        ),
        ({"AIANALYSIS_LLM_BUDGET_TOKENS_PER_DAY": "lots"}, "AIANALYSIS_LLM_BUDGET_TOKENS_PER_DAY"),
        ({"AIANALYSIS_INTAKE_PORT": "70000", "AIANALYSIS_INTAKE_TOKEN": "t"}, "AIANALYSIS_INTAKE_PORT"),
    ],
)
def test_bad_values_stop_the_operator_naming_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(errors.ConfigError, match=message):
        settings.from_env(env)
