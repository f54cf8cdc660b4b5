"""The tool box one conversation uses: tool definitions for the provider, and dispatch of calls.

A call never raises for anything the LLM did (unknown tool, bad arguments, a refused kind, an
object that does not exist, a cluster read that failed): it returns ``ToolResult(is_error=True)``
with a message the LLM can act on, and the conversation goes on. Only programming errors escape.
A transient cluster failure is reported to the LLM too rather than failing the whole analysis:
one unreadable log should not throw away an investigation.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

import pydantic

from aianalysis import catalog, errors, resources
from aianalysis.analysis import scope
from aianalysis.analysis.tools import _args, _catalog_tools, _cluster_tools, _output
from aianalysis.kube import kinds as _kinds
from aianalysis.kube import reader as _reader

NO_CLUSTER = _cluster_tools.NO_CLUSTER


@dataclasses.dataclass(frozen=True)
class ToolResult:
    text: str
    is_error: bool = False


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Spec:
    name: str
    description: str
    args: type[_args.Args]
    needs_cluster: bool


_KINDS_TEXT = ", ".join(_kinds.names())
_SPECS: tuple[_Spec, ...] = (
    _Spec(
        name="list_action_types",
        description=(
            "The action types of the workflows eligible for this incident, each with a one-line meaning "
            'and how many workflows have it: {"action_types": [{"action_type", "meaning", "workflows"}]}. '
            "Start discovery here: pick the action type your RCA calls for, then search_workflow_catalog "
            "with action_type, then get_workflow_details."
        ),
        args=_args.ActionTypesArgs,
        needs_cluster=False,
    ),
    _Spec(
        name="search_workflow_catalog",
        description=(
            "Search the remediation workflow catalog, after your RCA. Returns JSON "
            '{"workflows": [{"workflow_id", "version", "description", "confidence"}], "total_results"}, '
            "best first; confidence (0-1) is how well a workflow matches the query. Only workflows "
            "eligible for this incident's business context are ever returned: the system applies it, "
            "and the optional business arguments can only narrow it. Use the CURRENT signal type your "
            "investigation established; action_type (from list_action_types) narrows to one action type."
        ),
        args=_args.SearchArgs,
        needs_cluster=False,
    ),
    _Spec(
        name="get_workflow_details",
        description=(
            "The definition of one workflow returned by search_workflow_catalog: title, description, "
            "action type, signal types, guidance (when_to_use, when_not_to_use, preconditions: respect "
            "them), estimated duration and the parameter schema (name, type, required, description, "
            "enum, pattern, minimum, maximum, default, depends_on; filled_by marks parameters the system "
            "fills from the remediation target - leave those out). Read it before filling parameters, "
            "and select the exact version it returns."
        ),
        args=_args.DetailsArgs,
        needs_cluster=False,
    ),
    _Spec(
        name="get_resource",
        description=(
            "Read one Kubernetes object (read-only) as YAML, status before spec, managedFields stripped, "
            f"secret-looking values redacted. Supported kinds: {_KINDS_TEXT}. Secrets are never read."
        ),
        args=_args.ResourceArgs,
        needs_cluster=True,
    ),
    _Spec(
        name="list_events",
        description=(
            "The Kubernetes Events about one object (its involvedObject), oldest first: time, type, "
            "reason, count, source and message. Events expire (by default after one hour)."
        ),
        args=_args.EventsArgs,
        needs_cluster=True,
    ),
    _Spec(
        name="get_pod_logs",
        description=(
            f"The last lines (at most {_args.MAX_TAIL_LINES}) of one container's log. Use previous=true "
            "for the run that crashed or was OOM-killed."
        ),
        args=_args.LogsArgs,
        needs_cluster=True,
    ),
    _Spec(
        name="list_pods_of_owner",
        description=(
            "The Pods controlled by a Deployment (through its ReplicaSets), ReplicaSet, StatefulSet, "
            "DaemonSet, Job or CronJob (through its Jobs), following ownerReferences: phase, node, "
            "owner, container states, restart counts, last termination reasons, requests and limits."
        ),
        args=_args.OwnerArgs,
        needs_cluster=True,
    ),
)

_DEFINITIONS: list[dict[str, Any]] = [
    {"name": spec.name, "description": spec.description, "input_schema": _args.input_schema(spec.args)}
    for spec in _SPECS
]

TOOL_NAMES: tuple[str, ...] = tuple(spec.name for spec in _SPECS)

CATALOG_TOOL_NAMES: tuple[str, ...] = tuple(spec.name for spec in _SPECS if not spec.needs_cluster)
"""The tools that read only the catalog (what ``aianalysis mcp`` serves)."""


class ToolBox:
    """The tools of one conversation. ``seen`` maps each workflow_id a catalog tool showed to the
    versions shown; ``returned`` holds the objects the investigation tools returned (what a target
    may be, besides the incident's surroundings); ``calls`` counts every call, failed ones included."""

    def __init__(
        self,
        *,
        spec: resources.AIAnalysisSpec,
        catalog: catalog.Catalog,
        reader: _reader.ClusterReader | None,
        max_chars: int,
        facts: catalog.TargetFacts | None = None,
    ) -> None:
        self.seen: dict[str, set[str]] = {}
        self.returned: set[scope.Key] = set()
        self.calls = 0
        self.errors = 0
        """Calls answered with an error."""
        self.cluster_reads = 0
        self.cluster_read_failures = 0
        """Investigation calls that reached the cluster, and those the cluster could not answer."""
        self._max_chars = max_chars
        self._catalog = _catalog_tools.CatalogTools(
            catalog=catalog, business=spec.business_context, seen=self.seen, max_chars=max_chars, facts=facts
        )
        self._cluster = (
            None
            if reader is None
            else _cluster_tools.ClusterTools(
                reader=reader, incident=spec.resource, max_chars=max_chars, returned=self.returned
            )
        )
        self._specs = {spec.name: spec for spec in _SPECS}
        self._handlers: dict[str, Callable[[Any], Awaitable[str]]] = {
            "list_action_types": self._action_types,
            "search_workflow_catalog": self._search,
            "get_workflow_details": self._details,
        }
        if self._cluster is not None:
            self._handlers.update(
                get_resource=self._cluster.get_resource,
                list_events=self._cluster.list_events,
                get_pod_logs=self._cluster.get_pod_logs,
                list_pods_of_owner=self._cluster.list_pods_of_owner,
            )

    def definitions(self) -> list[dict[str, Any]]:
        """Anthropic tool params (name, description, input_schema); a fresh copy each time, so the
        provider may add ``cache_control`` without touching the next conversation's."""
        return copy.deepcopy(_DEFINITIONS)

    async def call(self, name: str, arguments: object) -> ToolResult:
        self.calls += 1
        spec = self._specs.get(name)
        if spec is None:
            return self._error(f"unknown tool {name!r}; available tools: {', '.join(TOOL_NAMES)}")
        if spec.needs_cluster and self._cluster is None:
            return self._error(NO_CLUSTER)
        try:
            args = spec.args.model_validate(arguments)
        except pydantic.ValidationError as exc:
            return self._error(f"invalid arguments for {name}: {_problems(exc)}")
        self.cluster_reads += spec.needs_cluster
        try:
            return ToolResult(await self._handlers[name](args))
        except _args.Refused as exc:
            return self._error(str(exc))
        except _reader.Unavailable as exc:
            self.cluster_read_failures += spec.needs_cluster
            return self._error(str(exc))
        except errors.ClusterError as exc:
            self.cluster_read_failures += spec.needs_cluster
            return self._error(
                f"reading the cluster failed ({exc}); it may work later - continue with the evidence you have"
            )

    def set_target_facts(self, facts: catalog.TargetFacts | None) -> None:
        """The facts detected on the remediation target, for workflows' detectedLabels (None = unknown)."""
        self._catalog.facts = facts

    async def _action_types(self, args: _args.ActionTypesArgs) -> str:
        return self._catalog.action_types(args)

    async def _search(self, args: _args.SearchArgs) -> str:
        return self._catalog.search(args)

    async def _details(self, args: _args.DetailsArgs) -> str:
        text = self._catalog.details(args)
        if text is None:
            raise _args.Refused(_catalog_tools.refusal(args))
        return text

    @property
    def investigation_failed(self) -> bool:
        """The LLM tried to read the cluster and every read failed: nothing it says about the
        incident rests on evidence."""
        return self.cluster_reads > 0 and self.cluster_read_failures == self.cluster_reads

    def _error(self, message: str) -> ToolResult:
        self.errors += 1
        return ToolResult(_output.cap(message, max_chars=self._max_chars), is_error=True)


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
