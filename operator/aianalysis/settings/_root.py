"""All the settings: one group per concern, in the order the configuration reference shows them."""

from __future__ import annotations

import dataclasses

from aianalysis.settings import _cost, _executor, _investigation, _llm, _notify, _operator


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings:
    """Everything a process is configured with, frozen; ``settings.<group>.<field>``. Each group is
    validated by its own model; this is only their container (a pydantic model here would build one
    more validator holding all sixteen: ~0.4 MiB of RSS in every process)."""

    llm: _llm.LlmSettings = dataclasses.field(default_factory=_llm.LlmSettings)
    """The LLM provider and its calls."""

    analysis: _llm.AnalysisSettings = dataclasses.field(default_factory=_llm.AnalysisSettings)
    """The limits of one analysis."""

    retries: _llm.RetriesSettings = dataclasses.field(default_factory=_llm.RetriesSettings)
    """How the reconcilers retry."""

    budget: _llm.BudgetSettings = dataclasses.field(default_factory=_llm.BudgetSettings)
    """The LLM budget."""

    cost: _cost.CostSettings = dataclasses.field(default_factory=_cost.CostSettings)
    """The price of LLM tokens."""

    investigation: _investigation.InvestigationSettings = dataclasses.field(
        default_factory=_investigation.InvestigationSettings
    )
    """The investigation tools."""

    prometheus: _investigation.PrometheusSettings = dataclasses.field(
        default_factory=_investigation.PrometheusSettings
    )
    """Prometheus."""

    catalog: _operator.CatalogSettings = dataclasses.field(default_factory=_operator.CatalogSettings)
    """The catalog and business context."""

    assessment: _operator.AssessmentSettings = dataclasses.field(default_factory=_operator.AssessmentSettings)
    """The effectiveness assessment."""

    intake: _operator.IntakeSettings = dataclasses.field(default_factory=_operator.IntakeSettings)
    """The Alertmanager intake."""

    notify: _notify.NotificationSettings = dataclasses.field(default_factory=_notify.NotificationSettings)
    """Notifications through Alertmanager."""

    api: _operator.ApiSettings = dataclasses.field(default_factory=_operator.ApiSettings)
    """The Kubernetes API calls."""

    leadership: _operator.LeadershipSettings = dataclasses.field(default_factory=_operator.LeadershipSettings)
    """Leader election."""

    safety: _executor.SafetySettings = dataclasses.field(default_factory=_executor.SafetySettings)
    """Product-wide safety switches."""

    executor: _executor.ExecutorSettings = dataclasses.field(default_factory=_executor.ExecutorSettings)
    """The executor's Jobs."""

    auto_execute: _executor.AutoExecuteSettings = dataclasses.field(
        default_factory=_executor.AutoExecuteSettings
    )
    """``autoExecute``."""

    guards: _executor.GuardsSettings = dataclasses.field(default_factory=_executor.GuardsSettings)
    """The executor's guards."""

    observability: _operator.ObservabilitySettings = dataclasses.field(
        default_factory=_operator.ObservabilitySettings
    )
    """Logs, metrics and health."""

    mcp: _operator.McpSettings = dataclasses.field(default_factory=_operator.McpSettings)
    """The MCP server."""
