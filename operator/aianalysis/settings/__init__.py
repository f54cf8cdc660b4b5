"""Typed, frozen settings in groups, one per concern; the only package that reads the environment.

Each field is set by one variable (``AIANALYSIS_*``; a few also read the platforms' own, such as
``ANTHROPIC_API_KEY`` or ``AWS_REGION``), documented by the docstring under it, and checked by its
group's model. :func:`from_env` reads them all and reports every problem at once, each naming the
variable to fix; :func:`reference` lists them for the configuration reference::

    config = settings.from_env()
    config.llm.provider, config.prometheus.url, config.guards.max_per_hour
"""

from __future__ import annotations

from aianalysis.settings._cost import CostSettings
from aianalysis.settings._env import from_env, groups
from aianalysis.settings._executor import (
    AutoExecuteSettings,
    ExecutorSettings,
    GuardsSettings,
    SafetySettings,
)
from aianalysis.settings._fields import Group, parse_duration
from aianalysis.settings._investigation import (
    DEFAULT_CUSTOM_GROUPS,
    InvestigationSettings,
    PrometheusSettings,
)
from aianalysis.settings._llm import (
    PROVIDERS,
    AnalysisSettings,
    BudgetSettings,
    LlmSettings,
    ProviderName,
    RetriesSettings,
)
from aianalysis.settings._notify import NOTIFICATION_KINDS, NotificationSettings
from aianalysis.settings._operator import (
    ApiSettings,
    AssessmentSettings,
    CatalogSettings,
    IntakeSettings,
    LeadershipSettings,
    McpSettings,
    ObservabilitySettings,
)
from aianalysis.settings._reference import Setting, reference
from aianalysis.settings._root import Settings

__all__ = [
    "DEFAULT_CUSTOM_GROUPS",
    "NOTIFICATION_KINDS",
    "PROVIDERS",
    "AnalysisSettings",
    "ApiSettings",
    "AssessmentSettings",
    "AutoExecuteSettings",
    "BudgetSettings",
    "CatalogSettings",
    "CostSettings",
    "ExecutorSettings",
    "Group",
    "GuardsSettings",
    "IntakeSettings",
    "InvestigationSettings",
    "LeadershipSettings",
    "LlmSettings",
    "McpSettings",
    "NotificationSettings",
    "ObservabilitySettings",
    "PrometheusSettings",
    "ProviderName",
    "RetriesSettings",
    "SafetySettings",
    "Setting",
    "Settings",
    "from_env",
    "groups",
    "parse_duration",
    "reference",
]
