"""The settings as the configuration reference lists them: every one documented, named by the
variable a user sets, in groups small enough to read; the variables are those of earlier releases."""

from __future__ import annotations

import dataclasses

import pydantic
import pytest

from aianalysis import errors, settings

#: Every variable the settings read, as of the release before the settings became groups: renaming
#: one breaks every Deployment that sets it.
VARIABLES = {
    "AIANALYSIS_ANALYSIS_DEADLINE_SECONDS", "AIANALYSIS_ANTHROPIC_BASE_URL", "AIANALYSIS_API_KEY",
    "AIANALYSIS_ASSESSMENT_HISTORY_SECONDS", "AIANALYSIS_ASSESSMENT_MAX_CLOCK_SKEW_SECONDS",
    "AIANALYSIS_ASSESSMENT_RECURRENCE_THRESHOLD", "AIANALYSIS_ASSESSMENT_WINDOW_SECONDS",
    "AIANALYSIS_AWS_REGION", "AIANALYSIS_BEDROCK_BASE_URL", "AIANALYSIS_BUSINESS_LABEL_PREFIXES",
    "AIANALYSIS_API_CONNECT_TIMEOUT_SECONDS", "AIANALYSIS_API_REQUEST_TIMEOUT_SECONDS",
    "AIANALYSIS_API_RETRY_AFTER_MAX_SECONDS", "AIANALYSIS_CATALOG_SYNC_STALE_SECONDS",
    "AIANALYSIS_CONFIDENCE_FLOOR", "AIANALYSIS_CROSS_NAMESPACE",
    "AIANALYSIS_DRY_RUN", "AIANALYSIS_EXECUTOR_APPROVAL_POLICY", "AIANALYSIS_EXECUTOR_AUTO_EXECUTE",
    "AIANALYSIS_EXECUTOR_AUTO_EXECUTE_ENVIRONMENTS", "AIANALYSIS_EXECUTOR_AUTO_EXECUTE_MAX_AGE_SECONDS",
    "AIANALYSIS_EXECUTOR_AUTO_EXECUTE_MAX_RISK", "AIANALYSIS_EXECUTOR_AUTO_EXECUTE_MIN_CONFIDENCE",
    "AIANALYSIS_EXECUTOR_AUTO_EXECUTE_NAMESPACES", "AIANALYSIS_EXECUTOR_AUTO_EXECUTE_NAMESPACE_LABEL",
    "AIANALYSIS_EXECUTOR_BACKOFF_LIMIT", "AIANALYSIS_EXECUTOR_COOLDOWN_SECONDS",
    "AIANALYSIS_EXECUTOR_DEADLINE_MULTIPLIER", "AIANALYSIS_EXECUTOR_DEFAULT_DEADLINE_SECONDS",
    "AIANALYSIS_EXECUTOR_FAILURE_BACKOFF_MAX_SECONDS", "AIANALYSIS_EXECUTOR_FAILURE_BACKOFF_SECONDS",
    "AIANALYSIS_EXECUTOR_FAILURE_THRESHOLD", "AIANALYSIS_EXECUTOR_MANAGED_LABEL",
    "AIANALYSIS_EXECUTOR_MAX_CONCURRENT", "AIANALYSIS_EXECUTOR_MAX_PER_HOUR",
    "AIANALYSIS_EXECUTOR_REQUIRE_MANAGED_LABEL", "AIANALYSIS_EXECUTOR_START_LOCK_NAMESPACE",
    "AIANALYSIS_HEALTH_PORT", "AIANALYSIS_INTAKE_COOLDOWN", "AIANALYSIS_INTAKE_COOLDOWN_SECONDS",
    "AIANALYSIS_INTAKE_MAPPING_FILE", "AIANALYSIS_INTAKE_PORT", "AIANALYSIS_INTAKE_QUEUE_LIMIT",
    "AIANALYSIS_INTAKE_TOKEN", "AIANALYSIS_INVESTIGATION_CUSTOM_GROUPS",
    "AIANALYSIS_INVESTIGATION_NAMESPACES", "AIANALYSIS_LEADER_ELECTION_NAMESPACE",
    "AIANALYSIS_LEADER_IDENTITY", "AIANALYSIS_LEASE_DURATION_SECONDS",
    "AIANALYSIS_LLM_BUDGET_CONVERSATIONS_PER_HOUR", "AIANALYSIS_LLM_BUDGET_NAMESPACE",
    "AIANALYSIS_LLM_BUDGET_TOKENS_PER_DAY", "AIANALYSIS_LLM_MAX_RETRIES", "AIANALYSIS_LLM_PRICES_FILE",
    "AIANALYSIS_LLM_TIMEOUT_SECONDS", "AIANALYSIS_LOG_FORMAT", "AIANALYSIS_MAX_CONCURRENT_ANALYSES",
    "AIANALYSIS_MAX_CONVERSATIONS", "AIANALYSIS_MAX_RECONCILE_RETRIES",
    "AIANALYSIS_MAX_RECOVERY_ATTEMPTS", "AIANALYSIS_MAX_TOKENS", "AIANALYSIS_MAX_TOOL_STEPS",
    "AIANALYSIS_MAX_VALIDATION_ATTEMPTS", "AIANALYSIS_MCP_TOKEN", "AIANALYSIS_METRICS_PORT",
    "AIANALYSIS_MODEL", "AIANALYSIS_MODEL_CHECK",
    "AIANALYSIS_NOTIFY_ALERTMANAGER_URLS", "AIANALYSIS_NOTIFY_ATTEMPTS", "AIANALYSIS_NOTIFY_CA_FILE",
    "AIANALYSIS_NOTIFY_CLUSTER", "AIANALYSIS_NOTIFY_CONSOLE_URL", "AIANALYSIS_NOTIFY_INTERVAL_SECONDS",
    "AIANALYSIS_NOTIFY_KINDS", "AIANALYSIS_NOTIFY_MAX_AGE", "AIANALYSIS_NOTIFY_PENDING_SECONDS",
    "AIANALYSIS_NOTIFY_TIMEOUT_SECONDS", "AIANALYSIS_NOTIFY_TOKEN_FILE", "AIANALYSIS_OPENAI_API_KEY",
    "AIANALYSIS_OPENAI_BASE_URL", "AIANALYSIS_PROMETHEUS_CA_FILE",
    "AIANALYSIS_PROMETHEUS_LABEL_PROXY_PARAM", "AIANALYSIS_PROMETHEUS_MAX_RESPONSE_BYTES",
    "AIANALYSIS_PROMETHEUS_MAX_SERIES",
    "AIANALYSIS_PROMETHEUS_TENANT", "AIANALYSIS_PROMETHEUS_TIMEOUT_SECONDS",
    "AIANALYSIS_PROMETHEUS_TOKEN", "AIANALYSIS_PROMETHEUS_TOKEN_FILE", "AIANALYSIS_PROMETHEUS_URL",
    "AIANALYSIS_PROVIDER", "AIANALYSIS_PROVIDER_MAX_RETRY_AFTER_SECONDS",
    "AIANALYSIS_PROVIDER_RETRY_DELAY_SECONDS", "AIANALYSIS_PROVIDER_RETRY_LIMIT",
    "AIANALYSIS_SIGNAL_TYPES", "AIANALYSIS_TOOL_AUDIT_MAX_RECORDS",
    "AIANALYSIS_TOOL_OUTPUT_BUDGET_TOKENS", "AIANALYSIS_TOOL_OUTPUT_MAX_CHARS",
    "AIANALYSIS_VERTEX_ACCESS_TOKEN", "AIANALYSIS_VERTEX_BASE_URL", "AIANALYSIS_VERTEX_PROJECT_ID",
    "AIANALYSIS_VERTEX_REGION",
    # added since: the approval policy's propagation margin (issue 31)
    "AIANALYSIS_EXECUTOR_APPROVAL_POLICY_MARGIN_SECONDS",
    # the platforms' own, read when ours is unset
    "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_BEDROCK_BASE_URL", "ANTHROPIC_VERTEX_BASE_URL",
    "ANTHROPIC_VERTEX_PROJECT_ID", "AWS_DEFAULT_REGION", "AWS_REGION", "CLOUD_ML_REGION", "HOSTNAME",
    "OPENAI_API_KEY",
}  # fmt: skip

ENTRIES = list(settings.reference())


def test_the_variables_are_those_of_earlier_releases_each_read_by_one_setting() -> None:
    read = [name for entry in ENTRIES for name in (entry.env, *entry.also)]
    assert len(read) == len(set(read)), "a variable read by two settings"
    assert set(read) == VARIABLES


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda entry: entry.env)
def test_every_setting_is_documented_for_the_reference(entry: settings.Setting) -> None:
    assert entry.doc.endswith(".") and len(entry.doc.split()) >= 4, "a docstring under the field"
    assert entry.group_doc, "a docstring on the group"
    assert entry.env.startswith("AIANALYSIS_") or entry.env in ("ANTHROPIC_API_KEY",)
    assert entry.kind


def test_no_settings_class_has_more_than_25_fields() -> None:
    sizes = {model.__name__: len(model.model_fields) for _, model in settings.groups()}
    assert max(sizes.values()) <= 25, sizes
    assert len(dataclasses.fields(settings.Settings)) <= 25
    assert sum(sizes.values()) == len(ENTRIES)


def test_a_reference_entry_says_what_to_write() -> None:
    by_env = {entry.env: entry for entry in ENTRIES}
    steps = by_env["AIANALYSIS_MAX_TOOL_STEPS"]
    assert (steps.group, steps.field, steps.kind, steps.rules, steps.default) == (
        "analysis", "max_tool_steps", "an integer", ("must be at least 1",), "12",
    )  # fmt: skip
    key = by_env["ANTHROPIC_API_KEY"]
    assert (key.group, key.also, key.secret, key.default, key.kind) == (
        "llm", ("AIANALYSIS_API_KEY",), True, "", "a secret",
    )  # fmt: skip
    cooldown = by_env["AIANALYSIS_INTAKE_COOLDOWN"]
    assert cooldown.also == ("AIANALYSIS_INTAKE_COOLDOWN_SECONDS",)
    assert cooldown.kind.startswith("a duration") and cooldown.default == "3600.0"
    assert by_env["AIANALYSIS_BUSINESS_LABEL_PREFIXES"].default == "kubernaut.io/,kubernaut.ai/"
    assert by_env["AIANALYSIS_LOG_FORMAT"].kind == "one of text, json"
    assert by_env["AIANALYSIS_EXECUTOR_AUTO_EXECUTE"].default == "false"
    assert by_env["AIANALYSIS_LLM_BUDGET_TOKENS_PER_DAY"].rules == ("must not be negative",)
    assert {entry.env for entry in ENTRIES if entry.secret} == {
        "ANTHROPIC_API_KEY", "AIANALYSIS_VERTEX_ACCESS_TOKEN", "AIANALYSIS_OPENAI_API_KEY",
        "AIANALYSIS_PROMETHEUS_TOKEN", "AIANALYSIS_INTAKE_TOKEN", "AIANALYSIS_MCP_TOKEN",
    }  # fmt: skip


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.secret], ids=lambda entry: entry.env)
def test_secrets_never_show_in_repr_str_or_a_dump(entry: settings.Setting) -> None:
    secret = "s3cret-value-0123456789"
    env = {entry.env: secret, "AIANALYSIS_INTAKE_TOKEN": secret}  # the intake token alone is valid
    config = settings.from_env(env)
    group = getattr(config, entry.group)
    assert getattr(group, entry.field).get_secret_value() == secret
    for shown in (repr(config), str(config), group.model_dump_json(), f"{getattr(group, entry.field)}"):
        assert secret not in shown


def test_groups_built_in_code_are_checked_like_the_environment() -> None:
    with pytest.raises(
        errors.ConfigError, match=r"^invalid settings: AIANALYSIS_MAX_TOOL_STEPS must be at least 1"
    ):
        settings.AnalysisSettings(max_tool_steps=0)
    with pytest.raises(errors.ConfigError, match="provider 'anthropic' needs ANTHROPIC_API_KEY"):
        settings.Settings(llm=settings.LlmSettings(provider="anthropic"))
    assert settings.LlmSettings(api_key="k").provider == "anthropic", (
        "a key selects Claude, as from the environment"
    )
    with pytest.raises(errors.ConfigError, match="AIANALYSIS_EXECUTOR_FAILURE_BACKOFF_MAX_SECONDS"):
        settings.GuardsSettings(failure_backoff_seconds=60, failure_backoff_max_seconds=30)
    with pytest.raises(errors.ConfigError, match="LlmSettings: max_token: Extra inputs are not permitted"):
        settings.LlmSettings(max_token=10)  # a misspelt field is an error, not ignored


def test_settings_are_frozen() -> None:
    config = settings.from_env({})
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        config.llm.model = "another"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.llm = settings.LlmSettings()  # type: ignore[misc]
