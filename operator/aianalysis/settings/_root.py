"""All the settings: one group per concern, in the order the configuration reference shows them."""

from __future__ import annotations

import pydantic

from aianalysis.settings import _executor, _investigation, _llm, _operator


class Settings(pydantic.BaseModel):
    """Everything a process is configured with, frozen; ``settings.<group>.<field>``. Each process
    reads the groups it needs (the executor never looks at ``llm``)."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    llm: _llm.Llm = pydantic.Field(default_factory=_llm.Llm)
    """The LLM provider and its calls."""

    analysis: _llm.Analysis = pydantic.Field(default_factory=_llm.Analysis)
    """The limits of one analysis."""

    retries: _llm.Retries = pydantic.Field(default_factory=_llm.Retries)
    """How the reconcilers retry."""

    budget: _llm.Budget = pydantic.Field(default_factory=_llm.Budget)
    """The LLM budget."""

    investigation: _investigation.Investigation = pydantic.Field(default_factory=_investigation.Investigation)
    """The investigation tools."""

    prometheus: _investigation.Prometheus = pydantic.Field(default_factory=_investigation.Prometheus)
    """Prometheus."""

    catalog: _operator.Catalog = pydantic.Field(default_factory=_operator.Catalog)
    """The catalog and business context."""

    assessment: _operator.Assessment = pydantic.Field(default_factory=_operator.Assessment)
    """The effectiveness assessment."""

    intake: _operator.Intake = pydantic.Field(default_factory=_operator.Intake)
    """The Alertmanager intake."""

    leadership: _operator.Leadership = pydantic.Field(default_factory=_operator.Leadership)
    """Leader election."""

    safety: _executor.Safety = pydantic.Field(default_factory=_executor.Safety)
    """Product-wide safety switches."""

    executor: _executor.Executor = pydantic.Field(default_factory=_executor.Executor)
    """The executor's Jobs."""

    auto_execute: _executor.AutoExecute = pydantic.Field(default_factory=_executor.AutoExecute)
    """``autoExecute``."""

    guards: _executor.Guards = pydantic.Field(default_factory=_executor.Guards)
    """The executor's guards."""

    observability: _operator.Observability = pydantic.Field(default_factory=_operator.Observability)
    """Logs, metrics and health."""

    mcp: _operator.Mcp = pydantic.Field(default_factory=_operator.Mcp)
    """The MCP server."""
