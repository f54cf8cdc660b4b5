"""All the settings: one group per concern, in the order the configuration reference shows them."""

from __future__ import annotations

import dataclasses

from aianalysis.settings import _cost, _executor, _investigation, _llm, _operator


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings:
    """Everything a process is configured with, frozen; ``settings.<group>.<field>``. Each group is
    validated by its own model; this is only their container (a pydantic model here would build one
    more validator holding all sixteen: ~0.4 MiB of RSS in every process)."""

    llm: _llm.Llm = dataclasses.field(default_factory=_llm.Llm)
    """The LLM provider and its calls."""

    analysis: _llm.Analysis = dataclasses.field(default_factory=_llm.Analysis)
    """The limits of one analysis."""

    retries: _llm.Retries = dataclasses.field(default_factory=_llm.Retries)
    """How the reconcilers retry."""

    budget: _llm.Budget = dataclasses.field(default_factory=_llm.Budget)
    """The LLM budget."""

    cost: _cost.CostSettings = dataclasses.field(default_factory=_cost.CostSettings)
    """The price of LLM tokens."""

    investigation: _investigation.Investigation = dataclasses.field(
        default_factory=_investigation.Investigation
    )
    """The investigation tools."""

    prometheus: _investigation.Prometheus = dataclasses.field(default_factory=_investigation.Prometheus)
    """Prometheus."""

    catalog: _operator.Catalog = dataclasses.field(default_factory=_operator.Catalog)
    """The catalog and business context."""

    assessment: _operator.Assessment = dataclasses.field(default_factory=_operator.Assessment)
    """The effectiveness assessment."""

    intake: _operator.Intake = dataclasses.field(default_factory=_operator.Intake)
    """The Alertmanager intake."""

    api: _operator.Api = dataclasses.field(default_factory=_operator.Api)
    """The Kubernetes API calls."""

    leadership: _operator.Leadership = dataclasses.field(default_factory=_operator.Leadership)
    """Leader election."""

    safety: _executor.Safety = dataclasses.field(default_factory=_executor.Safety)
    """Product-wide safety switches."""

    executor: _executor.Executor = dataclasses.field(default_factory=_executor.Executor)
    """The executor's Jobs."""

    auto_execute: _executor.AutoExecute = dataclasses.field(default_factory=_executor.AutoExecute)
    """``autoExecute``."""

    guards: _executor.Guards = dataclasses.field(default_factory=_executor.Guards)
    """The executor's guards."""

    observability: _operator.Observability = dataclasses.field(default_factory=_operator.Observability)
    """Logs, metrics and health."""

    mcp: _operator.Mcp = dataclasses.field(default_factory=_operator.Mcp)
    """The MCP server."""
