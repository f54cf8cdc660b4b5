"""The tool box one conversation uses: tool definitions for the provider, and dispatch of calls.

A call never raises for anything the LLM did (unknown tool, bad arguments, a refused kind, an
object that does not exist, a cluster or Prometheus read that failed): it returns
``ToolResult(is_error=True)`` with a message the LLM can act on, and the conversation goes on.
Only programming errors escape. A transient failure is reported to the LLM too rather than failing
the whole analysis: one unreadable log should not throw away an investigation.

Every call is accounted (``_audit``): its output is capped per call and, for investigation tools,
by what the analysis' budget has left; each call lands in a bounded audit record.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pydantic

import aianalysis.analysis.facts
import aianalysis.prometheus
from aianalysis import catalog, errors, resources, settings
from aianalysis.analysis import scope
from aianalysis.analysis.tools import (
    _args,
    _audit,
    _catalog_tools,
    _cluster_tools,
    _investigate,
    _output,
    _policy,
    _prom_tools,
    _promql,
    _results,
    _specs,
)
from aianalysis.kube import readers

NO_CLUSTER = _cluster_tools.NO_CLUSTER

FactsOf = Callable[[dict[str, object], frozenset[scope.Key]], Awaitable["catalog.TargetFacts | str"]]
"""Facts detected on an object an answer names as its target (``affected_resource``, given what the
tools returned so far), or why that object cannot be the target."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Limits:
    """How much the tools may return and read (from settings; the defaults are the settings')."""

    budget_tokens: int = 20_000
    max_audit_records: int = 40
    namespaces: tuple[str, ...] = ()
    """Namespaces readable besides the incident's (``*`` = all)."""
    custom_groups: tuple[str, ...] = settings.DEFAULT_CUSTOM_GROUPS
    max_series: int = 20
    prometheus_label_proxy_param: str | None = None
    """The label a prom-label-proxy in front of Prometheus enforces (settings)."""


TOOL_NAMES: tuple[str, ...] = tuple(spec.name for spec in _specs.SPECS if spec.needs != "prometheus")
"""The tools every conversation is offered (the Prometheus ones come on top when configured)."""

PROMETHEUS_TOOL_NAMES: tuple[str, ...] = tuple(
    spec.name for spec in _specs.SPECS if spec.needs == "prometheus"
)

CATALOG_TOOL_NAMES: tuple[str, ...] = tuple(spec.name for spec in _specs.SPECS if spec.needs == "catalog")
"""The tools that read only the catalog (what ``aianalysis mcp`` serves)."""

_DEFINITIONS = {spec.name: spec.definition() for spec in _specs.SPECS}


class ToolBox:
    """The tools of one conversation. ``seen`` maps each workflow_id a catalog tool showed to the
    versions shown; ``returned`` holds the objects the investigation tools returned (what a target
    may be, besides the incident's surroundings); ``calls`` counts every call, failed ones included;
    ``ledger`` holds the budget and the audit record."""

    def __init__(
        self,
        *,
        spec: resources.AIAnalysisSpec,
        catalog: catalog.Catalog,
        reader: readers.ClusterReader | None,
        max_chars: int,
        facts: catalog.TargetFacts | None = None,
        metrics: readers.MetricsReader | None = None,
        limits: Limits | None = None,
        target_facts: FactsOf | None = None,
    ) -> None:
        """``facts``: detected on the incident's resource, filtering the catalog until the LLM names
        its remediation target to a catalog tool (``affected_resource``); ``target_facts`` then
        detects them on that object, or says why it cannot be the target (None: no cluster)."""
        limits = limits or Limits()
        self._target_facts = target_facts
        self.seen: dict[str, set[str]] = {}
        self.returned: set[scope.Key] = set()
        self.calls = 0
        self.errors = 0
        """Calls answered with an error."""
        self.cluster_reads = 0
        self.cluster_read_failures = 0
        """Investigation calls that reached the cluster (or Prometheus), and those it could not answer."""
        self.ledger = _audit.Ledger(budget_tokens=limits.budget_tokens, max_records=limits.max_audit_records)
        self._max_chars = max_chars
        self._catalog = _catalog_tools.CatalogTools(
            catalog=catalog, business=spec.business_context, seen=self.seen, max_chars=max_chars, facts=facts
        )
        policy = _policy.ReadPolicy(
            incident_namespace=spec.resource.namespace,
            namespaces=limits.namespaces,
            custom_groups=limits.custom_groups,
        )
        self._handlers: dict[str, Callable[[Any], Awaitable[str | _results.ToolResult]]] = {
            "list_action_types": self._action_types,
            "search_workflow_catalog": self._search,
            "get_workflow_details": self._details,
        }
        self._has_cluster = reader is not None
        if reader is not None:
            explore = _investigate.InvestigationTools(
                reader=reader, policy=policy, max_chars=max_chars, returned=self.returned
            )
            cluster = _cluster_tools.ClusterTools(
                reader=reader,
                incident=spec.resource,
                max_chars=max_chars,
                returned=self.returned,
                policy=policy,
                resolve=explore.resolve,
            )
            self._handlers.update(
                get_resource=cluster.get_resource,
                list_events=cluster.list_events,
                get_pod_logs=cluster.get_pod_logs,
                list_pods_of_owner=cluster.list_pods_of_owner,
                list_resources=explore.list_resources,
                find_resources=explore.find_resources,
                rollout_history=explore.rollout_history,
                list_namespace_events=explore.list_namespace_events,
                list_custom_kinds=explore.list_custom_kinds,
                top=explore.top,
            )
        self._offered = TOOL_NAMES
        if metrics is not None:
            scoped = tenancy(spec, policy)
            param = limits.prometheus_label_proxy_param
            if param and isinstance(metrics, aianalysis.prometheus.PrometheusClient) and not scoped.every:
                metrics = metrics.with_params(tuple((param, ns) for ns in scoped.namespaces))
            prom = _prom_tools.PrometheusTools(
                source=metrics,
                tenancy=scoped,
                max_chars=max_chars,
                max_series=limits.max_series,
            )
            self._handlers.update(
                prometheus_query=prom.query,
                prometheus_query_range=prom.query_range,
                prometheus_metrics=prom.metrics,
                prometheus_label_values=prom.label_values,
                prometheus_alerts=prom.alerts,
                prometheus_rules=prom.rules,
            )
            self._offered = (*TOOL_NAMES, *PROMETHEUS_TOOL_NAMES)

    def definitions(self) -> list[dict[str, Any]]:
        """Anthropic tool params (name, description, input_schema) of the tools offered; each a fresh
        dict, so the provider may add ``cache_control`` without touching the next conversation's,
        over the one ``input_schema`` of the process (read-only: the SDKs copy request params before
        sending; a deep copy per conversation cost ~3% of the operator's CPU in ``make bench``).
        The same for every analysis of one configuration (the cache prefix stays stable)."""
        return [dict(_DEFINITIONS[name]) for name in self._offered]

    async def call(self, name: str, arguments: object) -> _results.ToolResult:
        """Run one call and account for it (audit record, budget)."""
        started = time.monotonic()
        spec = _specs.BY_NAME.get(name)
        with _output.accounting(self._call_limit(spec)) as truncated:
            result = await self._dispatch(spec, name, arguments)
        self.ledger.record(
            tool=name,
            arguments=arguments,
            text=result.text,
            seconds=time.monotonic() - started,
            truncated=truncated[0],
            error=result.is_error,
            investigates=spec is not None and spec.investigates,
        )
        return result

    async def _dispatch(self, spec: _specs.Spec | None, name: str, arguments: object) -> _results.ToolResult:
        self.calls += 1
        if spec is None or name not in self._offered:
            return self._error(f"unknown tool {name!r}; available tools: {', '.join(self._offered)}")
        if spec.needs == "cluster" and not self._has_cluster:
            return self._error(NO_CLUSTER)
        try:
            args = spec.args.model_validate(arguments)
        except pydantic.ValidationError as exc:
            return self._error(f"invalid arguments for {name}: {_problems(exc)}")
        if spec.investigates and not self.ledger.can_investigate():
            return self._error(self.ledger.spent_message())
        self.cluster_reads += spec.investigates
        try:
            answer = await self._handlers[name](args)
        except (_args.Refused, _promql.BadRequest) as exc:
            return self._error(str(exc))  # our words (and the LLM's own arguments)
        except readers.NotFound as exc:
            self.cluster_read_failures += spec.investigates
            return self._error(str(exc), data=_results.Absent())
        except readers.Unavailable as exc:
            self.cluster_read_failures += spec.investigates
            return self._server_error(f"{self._source(spec)} cannot give this:", exc)
        except errors.ClusterError as exc:
            self.cluster_read_failures += spec.investigates
            source = self._source(spec)
            return self._server_error(
                f"reading {source} failed; it may work later - continue with the evidence you have:", exc
            )
        return answer if isinstance(answer, _results.ToolResult) else _results.ToolResult(answer)

    def _call_limit(self, spec: _specs.Spec | None) -> int:
        if spec is None or not spec.investigates:
            return self._max_chars
        return min(self._max_chars, self.ledger.remaining_chars())

    def set_target_facts(self, facts: catalog.TargetFacts | None) -> None:
        """The facts detected on the remediation target, for workflows' detectedLabels (None = unknown)."""
        self._catalog.facts = facts

    async def _action_types(self, args: _args.ActionTypesArgs) -> _results.ToolResult:
        await self._retarget(args.affected_resource)
        return self._catalog.action_types(args)

    async def _search(self, args: _args.SearchArgs) -> _results.ToolResult:
        await self._retarget(args.affected_resource)
        return self._catalog.search(args)

    async def _retarget(self, named: _args.TargetArg | None) -> None:
        """The catalog filtered by the facts of the target the LLM names (kept for the next calls,
        details included, until it names another): what the validator will check them against."""
        if named is None:
            return
        if self._target_facts is None:
            raise _args.Refused("no cluster is attached: leave affected_resource out of catalog searches")
        found = await self._target_facts(named.model_dump(exclude_none=True), frozenset(self.returned))
        if isinstance(found, str):
            raise _args.Refused(found)
        self.set_target_facts(found)

    async def _details(self, args: _args.DetailsArgs) -> _results.ToolResult:
        answer = self._catalog.details(args)
        if answer is None:
            raise _args.Refused(_catalog_tools.refusal(args))
        return answer

    @property
    def investigation_failed(self) -> bool:
        """The LLM tried to read the cluster and every read failed: nothing it says about the
        incident rests on evidence."""
        return self.cluster_reads > 0 and self.cluster_read_failures == self.cluster_reads

    def _error(self, message: str, *, data: _results.Absent | None = None) -> _results.ToolResult:
        self.errors += 1
        return _results.ToolResult(_output.cap(message, max_chars=self._max_chars), is_error=True, data=data)

    def _server_error(self, header: str, exc: Exception) -> _results.ToolResult:
        """An error whose words come (at least in part) from the API server, an admission webhook or
        Prometheus: untrusted text, fenced under our own one-line header."""
        self.errors += 1
        text = _output.fenced(header, str(exc), label="error", max_chars=self._max_chars)
        return _results.ToolResult(text, is_error=True)

    @staticmethod
    def _source(spec: _specs.Spec) -> str:
        return "Prometheus" if spec.needs == "prometheus" else "the cluster"


def tenancy(spec: resources.AIAnalysisSpec, policy: _policy.ReadPolicy) -> _promql.Tenancy:
    """Whose Prometheus series the analysis may read: those of the namespaces it may read, and the
    cluster-level ones (no namespace label) when the incident is about a cluster-scoped object — a
    Node, a PersistentVolume — but not a Namespace: a namespace incident concerns that namespace."""
    info = aianalysis.analysis.facts.target_kinds().get(spec.resource.kind.strip().casefold())
    cluster = info is not None and not info.namespaced and info.kind != "Namespace"
    return _promql.Tenancy(
        namespaces=tuple(policy.allowed_namespaces()), cluster=cluster, every=policy.every_namespace
    )


def _problems(exc: pydantic.ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(part) for part in error['loc']) or 'arguments'}: {error['msg']}"
        for error in exc.errors()
    )


def catalog_toolbox(
    *, catalog: catalog.Catalog, business: resources.BusinessContext, max_chars: int
) -> ToolBox:
    """A toolbox outside any analysis (``aianalysis mcp``): no cluster, and ``business`` as the fixed
    policy every search applies exactly as for an incident (callers' filters can only narrow it).
    The signal and resource are placeholders no catalog tool reads."""
    spec = resources.AIAnalysisSpec(
        signal=resources.Signal(type="-", severity="low"),
        resource=resources.ResourceRef(kind="-", name="none"),
        business_context=business,
    )
    return ToolBox(spec=spec, catalog=catalog, reader=None, max_chars=max_chars)
