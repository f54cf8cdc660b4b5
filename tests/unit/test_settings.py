"""Settings from the environment: what an operator gets by default, and the one-line error a typo
in a Deployment's env produces before anything starts."""

from __future__ import annotations

import pytest

from aianalysis import catalog, errors, settings

KEY = "sk-ant-unit-0f9e8d7c6b5a"


def rejected(env: dict[str, str]) -> str:
    with pytest.raises(errors.ConfigError) as caught:
        settings.from_env(env)
    message = str(caught.value)
    assert "\n" not in message, "a configuration error is one line"
    return message


def test_empty_environment_gives_the_documented_defaults() -> None:
    s = settings.from_env({})

    assert s.llm.provider == "offline"
    assert s.llm.api_key is None
    assert s.llm.model == "claude-sonnet-4-6"
    assert s.llm.anthropic_base_url is None
    assert (s.llm.timeout_seconds, s.llm.max_retries) == (60.0, 4)
    assert (s.analysis.max_tool_steps, s.analysis.max_validation_attempts) == (12, 3)
    assert s.analysis.confidence_floor == 0.7
    assert (s.analysis.max_concurrent, s.analysis.max_recovery_attempts, s.retries.provider_limit) == (
        8,
        3,
        5,
    )
    assert s.observability.log_format == "text"
    assert (s.observability.metrics_port, s.observability.health_port) == (9090, 8080)


def test_an_api_key_selects_the_anthropic_provider() -> None:
    s = settings.from_env({"ANTHROPIC_API_KEY": KEY})

    assert s.llm.provider == "anthropic"
    assert s.llm.api_key is not None and s.llm.api_key.get_secret_value() == KEY


def test_an_explicit_offline_provider_wins_over_a_present_key() -> None:
    s = settings.from_env({"ANTHROPIC_API_KEY": KEY, "AIANALYSIS_PROVIDER": "offline"})

    assert s.llm.provider == "offline"


def test_variables_are_read_and_typed() -> None:
    s = settings.from_env(
        {
            "AIANALYSIS_PROVIDER": "anthropic",
            "ANTHROPIC_API_KEY": KEY,
            "AIANALYSIS_MODEL": "claude-opus-4-1",
            "AIANALYSIS_ANTHROPIC_BASE_URL": "http://gateway.local:8080",
            "AIANALYSIS_LLM_TIMEOUT_SECONDS": "12.5",
            "AIANALYSIS_LLM_MAX_RETRIES": "0",
            "AIANALYSIS_CONFIDENCE_FLOOR": "0.85",
            "AIANALYSIS_MAX_CONCURRENT_ANALYSES": "2",
            "AIANALYSIS_LOG_FORMAT": "json",
            "AIANALYSIS_METRICS_PORT": "0",
        }
    )

    assert s.llm.model == "claude-opus-4-1"
    assert s.llm.anthropic_base_url == "http://gateway.local:8080"
    assert s.llm.timeout_seconds == 12.5
    assert s.llm.max_retries == 0
    assert s.analysis.confidence_floor == 0.85
    assert s.analysis.max_concurrent == 2
    assert s.observability.log_format == "json"
    assert s.observability.metrics_port == 0


def test_empty_variables_mean_the_default() -> None:
    """A Helm value left empty renders as ``""``: that is "not set", not an invalid number."""
    s = settings.from_env({"AIANALYSIS_CONFIDENCE_FLOOR": "", "AIANALYSIS_PROVIDER": ""})

    assert s.analysis.confidence_floor == 0.7
    assert s.llm.provider == "offline"


def test_the_sdk_base_url_variable_is_honoured_when_ours_is_unset() -> None:
    assert settings.from_env({"ANTHROPIC_BASE_URL": "http://a"}).llm.anthropic_base_url == "http://a"
    both = {"ANTHROPIC_BASE_URL": "http://a", "AIANALYSIS_ANTHROPIC_BASE_URL": "http://b"}
    assert settings.from_env(both).llm.anthropic_base_url == "http://b"


def test_unknown_provider_is_rejected_with_the_allowed_values() -> None:
    message = rejected({"AIANALYSIS_PROVIDER": "bogus"})

    assert (
        "AIANALYSIS_PROVIDER must be one of offline, anthropic, bedrock, vertex, openai, not 'bogus'"
        in message
    )


def test_anthropic_without_a_key_is_rejected() -> None:
    message = rejected({"AIANALYSIS_PROVIDER": "anthropic"})

    assert "provider 'anthropic' needs ANTHROPIC_API_KEY" in message


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("AIANALYSIS_MAX_TOOL_STEPS", "twelve", "AIANALYSIS_MAX_TOOL_STEPS='twelve' is not an integer"),
        ("AIANALYSIS_MAX_TOOL_STEPS", "2.5", "AIANALYSIS_MAX_TOOL_STEPS='2.5' is not an integer"),
        ("AIANALYSIS_LLM_TIMEOUT_SECONDS", "60s", "AIANALYSIS_LLM_TIMEOUT_SECONDS='60s' is not a number"),
        ("AIANALYSIS_METRICS_PORT", "http", "AIANALYSIS_METRICS_PORT='http' is not an integer"),
    ],
)
def test_values_that_are_not_numbers_name_the_variable(variable: str, value: str, expected: str) -> None:
    assert rejected({variable: value}) == "invalid settings: " + expected


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("AIANALYSIS_CONFIDENCE_FLOOR", "1.5", "AIANALYSIS_CONFIDENCE_FLOOR must be within 0..1, not 1.5"),
        ("AIANALYSIS_CONFIDENCE_FLOOR", "-0.1", "AIANALYSIS_CONFIDENCE_FLOOR must be within 0..1, not -0.1"),
        ("AIANALYSIS_CONFIDENCE_FLOOR", "nan", "AIANALYSIS_CONFIDENCE_FLOOR must be within 0..1, not nan"),
        ("AIANALYSIS_MAX_CONCURRENT_ANALYSES", "0", "AIANALYSIS_MAX_CONCURRENT_ANALYSES must be at least 1"),
        ("AIANALYSIS_MAX_VALIDATION_ATTEMPTS", "0", "AIANALYSIS_MAX_VALIDATION_ATTEMPTS must be at least 1"),
        ("AIANALYSIS_LLM_MAX_RETRIES", "-1", "AIANALYSIS_LLM_MAX_RETRIES must not be negative"),
        ("AIANALYSIS_HEALTH_PORT", "70000", "AIANALYSIS_HEALTH_PORT must be a port number (0..65535)"),
        ("AIANALYSIS_LLM_TIMEOUT_SECONDS", "0", "AIANALYSIS_LLM_TIMEOUT_SECONDS must be positive"),
        ("AIANALYSIS_LOG_FORMAT", "xml", "AIANALYSIS_LOG_FORMAT must be 'text' or 'json', not 'xml'"),
    ],
)
def test_out_of_range_values_name_the_variable(variable: str, value: str, expected: str) -> None:
    assert expected in rejected({variable: value})


def test_every_problem_is_reported_at_once() -> None:
    message = rejected(
        {
            "AIANALYSIS_PROVIDER": "anthropic",
            "AIANALYSIS_CONFIDENCE_FLOOR": "7",
            "AIANALYSIS_MAX_TOOL_STEPS": "0",
            "AIANALYSIS_METRICS_PORT": "http",
            "AIANALYSIS_EXECUTOR_FAILURE_BACKOFF_MAX_SECONDS": "60",
        }
    )

    assert message.startswith("invalid settings: ")
    assert "AIANALYSIS_METRICS_PORT='http' is not an integer" in message, "a typo does not hide the rest"
    assert "AIANALYSIS_EXECUTOR_FAILURE_BACKOFF_MAX_SECONDS must be at least the first backoff" in message
    assert "ANTHROPIC_API_KEY" in message
    assert "AIANALYSIS_CONFIDENCE_FLOOR" in message
    assert "AIANALYSIS_MAX_TOOL_STEPS" in message


def test_overrides_beat_the_environment_and_are_validated_too() -> None:
    """``aianalysis analyze --provider`` passes an override; it gets the same checks."""
    assert settings.from_env({"ANTHROPIC_API_KEY": KEY}, provider="offline").llm.provider == "offline"
    with pytest.raises(errors.ConfigError, match="ANTHROPIC_API_KEY"):
        settings.from_env({}, provider="anthropic")


def test_the_api_key_never_shows_in_repr_or_errors() -> None:
    s = settings.from_env({"ANTHROPIC_API_KEY": KEY})
    assert KEY not in repr(s) and KEY not in str(s)
    assert KEY not in s.llm.model_dump_json() and KEY not in f"{s.llm.api_key}"
    message = rejected({"ANTHROPIC_API_KEY": KEY, "AIANALYSIS_MAX_TOKENS": "0"})
    assert KEY not in message


# ---- bedrock, vertex, openai --------------------------------------------------------------------


def test_platform_providers_read_their_settings_and_the_platforms_own_variables() -> None:
    bedrock = settings.from_env(
        {
            "AIANALYSIS_PROVIDER": "bedrock",
            "AIANALYSIS_MODEL": "eu.anthropic.claude-x",
            "AWS_REGION": "eu-west-1",
        }
    )
    assert (bedrock.llm.provider, bedrock.llm.aws_region, bedrock.llm.model) == (
        "bedrock",
        "eu-west-1",
        "eu.anthropic.claude-x",
    )
    vertex = settings.from_env(
        {"AIANALYSIS_PROVIDER": "vertex", "CLOUD_ML_REGION": "us-east5", "AIANALYSIS_VERTEX_PROJECT_ID": "p"}
    )
    assert (vertex.llm.vertex_region, vertex.llm.vertex_project_id) == ("us-east5", "p")
    ours = settings.from_env(
        {"AIANALYSIS_PROVIDER": "vertex", "CLOUD_ML_REGION": "us-east5", "AIANALYSIS_VERTEX_REGION": "global"}
    )
    assert ours.llm.vertex_region == "global", "AIANALYSIS_* wins over the platform's variable"
    openai = settings.from_env(
        {
            "AIANALYSIS_PROVIDER": "openai",
            "AIANALYSIS_MODEL": "m",
            "AIANALYSIS_OPENAI_BASE_URL": "http://vllm:8000/v1",
        }
    )
    assert (openai.llm.openai_base_url, openai.llm.openai_api_key) == ("http://vllm:8000/v1", None), (
        "the key is optional"
    )


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"AIANALYSIS_PROVIDER": "bedrock", "AWS_REGION": "x"}, "provider 'bedrock' needs AIANALYSIS_MODEL"),
        (
            {"AIANALYSIS_PROVIDER": "bedrock", "AIANALYSIS_MODEL": "m"},
            "provider 'bedrock' needs AIANALYSIS_AWS_REGION",
        ),
        ({"AIANALYSIS_PROVIDER": "vertex"}, "provider 'vertex' needs AIANALYSIS_VERTEX_REGION"),
        (
            {"AIANALYSIS_PROVIDER": "openai", "AIANALYSIS_MODEL": "m"},
            "provider 'openai' needs AIANALYSIS_OPENAI_BASE_URL",
        ),
        ({"AIANALYSIS_MODEL_CHECK": "maybe"}, "AIANALYSIS_MODEL_CHECK='maybe' is not true or false"),
    ],
)
def test_platform_providers_name_the_missing_setting(env: dict[str, str], expected: str) -> None:
    assert expected in rejected(env)


def test_the_model_check_can_be_turned_off() -> None:
    assert settings.from_env({}).llm.model_check is True
    assert settings.from_env({"AIANALYSIS_MODEL_CHECK": "false"}).llm.model_check is False


def test_platform_secrets_never_show_in_repr() -> None:
    token, key = "ya29.SECRET-vertex-token", "sk-SECRET-openai-key"
    vertex = settings.from_env(
        {"AIANALYSIS_PROVIDER": "vertex", "CLOUD_ML_REGION": "r", "AIANALYSIS_VERTEX_ACCESS_TOKEN": token}
    )
    openai = settings.from_env(
        {
            "AIANALYSIS_PROVIDER": "openai",
            "AIANALYSIS_MODEL": "m",
            "AIANALYSIS_OPENAI_BASE_URL": "u",
            "OPENAI_API_KEY": key,
        }
    )
    assert vertex.llm.vertex_access_token is not None and openai.llm.openai_api_key is not None
    assert vertex.llm.vertex_access_token.get_secret_value() == token
    assert openai.llm.openai_api_key.get_secret_value() == key
    assert token not in repr(vertex) and key not in repr(openai)
    assert key not in rejected(
        {
            "AIANALYSIS_PROVIDER": "openai",
            "AIANALYSIS_MODEL": "m",
            "OPENAI_API_KEY": key,
            "AIANALYSIS_MAX_TOKENS": "0",
        }
    )


def test_executor_settings_from_the_environment() -> None:
    s = settings.from_env(
        {
            "AIANALYSIS_EXECUTOR_AUTO_EXECUTE": "true",
            "AIANALYSIS_EXECUTOR_AUTO_EXECUTE_ENVIRONMENTS": "staging, dev,",
            "AIANALYSIS_EXECUTOR_AUTO_EXECUTE_MIN_CONFIDENCE": "0.8",
            "AIANALYSIS_EXECUTOR_BACKOFF_LIMIT": "2",
        }
    )
    assert s.auto_execute.enabled is True
    assert s.auto_execute.environments == ("staging", "dev")
    assert (s.auto_execute.min_confidence, s.executor.backoff_limit) == (0.8, 2)
    defaults = settings.from_env({})
    assert defaults.auto_execute.enabled is False and defaults.auto_execute.environments == ()


def test_executor_settings_are_checked() -> None:
    assert "AIANALYSIS_EXECUTOR_AUTO_EXECUTE" in rejected({"AIANALYSIS_EXECUTOR_AUTO_EXECUTE": "sometimes"})
    assert "AIANALYSIS_EXECUTOR_DEADLINE_MULTIPLIER" in rejected(
        {"AIANALYSIS_EXECUTOR_DEADLINE_MULTIPLIER": "0"}
    )
    assert "AIANALYSIS_EXECUTOR_BACKOFF_LIMIT" in rejected({"AIANALYSIS_EXECUTOR_BACKOFF_LIMIT": "-1"})


def test_investigation_and_prometheus_settings_are_read_and_the_token_never_shows() -> None:
    config = settings.from_env(
        {
            "AIANALYSIS_PROMETHEUS_URL": "https://thanos.monitoring.svc:9091",
            "AIANALYSIS_PROMETHEUS_TOKEN": "prom-secret-token",
            "AIANALYSIS_PROMETHEUS_TENANT": "team-a",
            "AIANALYSIS_PROMETHEUS_LABEL_PROXY_PARAM": "namespace",
            "AIANALYSIS_PROMETHEUS_TIMEOUT_SECONDS": "2.5",
            "AIANALYSIS_INVESTIGATION_NAMESPACES": "ingress-nginx, monitoring",
            "AIANALYSIS_INVESTIGATION_CUSTOM_GROUPS": "cert-manager.io,*.toolkit.fluxcd.io",
            "AIANALYSIS_TOOL_OUTPUT_BUDGET_TOKENS": "12000",
        }
    )
    assert (
        config.prometheus.url == "https://thanos.monitoring.svc:9091" and config.prometheus.tenant == "team-a"
    )
    assert (
        config.prometheus.timeout_seconds == 2.5 and config.investigation.tool_output_budget_tokens == 12000
    )
    assert config.investigation.namespaces == ("ingress-nginx", "monitoring")
    assert config.investigation.custom_groups == ("cert-manager.io", "*.toolkit.fluxcd.io")
    assert config.prometheus.label_proxy_param == "namespace"
    assert settings.from_env({}).prometheus.label_proxy_param is None
    assert "prom-secret-token" not in repr(config)
    assert settings.from_env({}).prometheus.url is None


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("AIANALYSIS_PROMETHEUS_URL", "prometheus:9090", "must start with http:// or https://"),
        ("AIANALYSIS_TOOL_OUTPUT_BUDGET_TOKENS", "0", "must be at least 1"),
        ("AIANALYSIS_TOOL_AUDIT_MAX_RECORDS", "500", "must be at most 100"),
        ("AIANALYSIS_PROMETHEUS_TIMEOUT_SECONDS", "0", "must be positive"),
        ("AIANALYSIS_PROMETHEUS_LABEL_PROXY_PARAM", 'namespace"}', "must be a label name"),
    ],
)
def test_bad_investigation_settings_name_the_variable(variable: str, value: str, expected: str) -> None:
    with pytest.raises(errors.ConfigError, match=f"{variable}.*{expected}|{expected}"):
        settings.from_env({variable: value})


def test_the_role_deny_list_names_the_operator_s_own_roles_and_takes_more() -> None:
    """``AIANALYSIS_PRIVILEGED_ROLES`` adds to the built-in list (cluster-admin, admin, edit,
    system:*); by default it names this operator's roles (the chart names its release's)."""
    defaults = settings.from_env({})
    assert catalog.policy.privileged_binding(
        {"ROLE_NAME": "aianalysis-operator-approver"}, also=defaults.safety.privileged_roles
    )
    configured = settings.from_env({"AIANALYSIS_PRIVILEGED_ROLES": "ops-approver, team-*-breakglass"})
    assert configured.safety.privileged_roles == ("ops-approver", "team-*-breakglass")
