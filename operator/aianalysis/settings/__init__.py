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
from aianalysis.settings._executor import AutoExecute, Executor, Guards, Safety
from aianalysis.settings._fields import Group, parse_duration
from aianalysis.settings._investigation import DEFAULT_CUSTOM_GROUPS, Investigation, Prometheus
from aianalysis.settings._llm import PROVIDERS, Analysis, Budget, Llm, Provider, Retries
from aianalysis.settings._operator import Api, Assessment, Catalog, Intake, Leadership, Mcp, Observability
from aianalysis.settings._reference import Entry, reference
from aianalysis.settings._root import Settings

__all__ = [
    "DEFAULT_CUSTOM_GROUPS",
    "PROVIDERS",
    "Analysis",
    "Api",
    "Assessment",
    "AutoExecute",
    "Budget",
    "Catalog",
    "CostSettings",
    "Entry",
    "Executor",
    "Group",
    "Guards",
    "Intake",
    "Investigation",
    "Leadership",
    "Llm",
    "Mcp",
    "Observability",
    "Prometheus",
    "Provider",
    "Retries",
    "Safety",
    "Settings",
    "from_env",
    "groups",
    "parse_duration",
    "reference",
]
