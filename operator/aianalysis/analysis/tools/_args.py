"""Arguments of every tool as pydantic models: one definition gives both the ``input_schema`` the
LLM sees and the validation of what it sends (the same idea as ``answer.SelectionAnswer``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from aianalysis.catalog import model as catalog_model

MAX_TOP_K = 20
MAX_QUERY_CHARS = 2000
MAX_TAIL_LINES = 200

_DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"
_DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"

ObjectName = Annotated[str, Field(pattern=_DNS_SUBDOMAIN, max_length=253, description="Object name.")]
Namespace = Annotated[
    str,
    Field(pattern=_DNS_LABEL, max_length=63, description="Namespace; defaults to the incident's namespace."),
]
KindName = Annotated[str, Field(min_length=1, max_length=100)]


class Refused(Exception):
    """Arguments a tool will not act on (a Secret, an unsupported kind...); the message is for the LLM."""


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True, frozen=True)


class SearchArgs(Args):
    query: Annotated[str, AfterValidator(lambda text: text[:MAX_QUERY_CHARS])] = Field(
        "",
        description="Natural-language description of the root cause you found and the remediation you "
        "want, e.g. 'memory limit too low for the workload, raise the limit of the deployment' "
        f"(only the first {MAX_QUERY_CHARS} characters are used).",
    )
    signal_type: str | None = Field(
        None,
        max_length=128,
        description="The CURRENT signal type established by your RCA (e.g. OOMKilled, CrashLoopBackOff); "
        "it may differ from the alert's.",
    )
    action_type: str | None = Field(
        None,
        max_length=128,
        description="Only workflows of this action type (from list_action_types), e.g. IncreaseMemoryLimits.",
    )
    severity: Literal["critical", "high", "medium", "low"] | None = Field(
        None, description="Your assessed RCA severity."
    )
    component: str | None = Field(
        None,
        max_length=63,
        description="Lower-case kind of the object that must change: deployment, statefulset, node, pod...",
    )
    environment: str | None = Field(
        None,
        max_length=63,
        description="Optional, narrowing only. The incident's environment is always applied.",
    )
    priority: str | None = Field(
        None, max_length=8, description="Optional, narrowing only. The incident's priority is always applied."
    )
    business_category: str | None = Field(
        None,
        max_length=63,
        description="Optional, narrowing only. The incident's business category is always applied.",
    )
    risk_tolerance: Literal["low", "medium", "high"] | None = Field(
        None,
        description="Optional, narrowing only: can lower, never raise, the incident's risk tolerance.",
    )
    top_k: int = Field(catalog_model.DEFAULT_TOP_K, ge=1, le=MAX_TOP_K, description="Maximum results.")


class ActionTypesArgs(Args):
    """list_action_types takes no arguments: the incident's business context and target decide."""


class DetailsArgs(Args):
    workflow_id: str = Field(min_length=1, max_length=128, description="A workflow_id from search results.")
    version: str | None = Field(
        None, max_length=64, description="Exact version; omit (or 'latest') for the highest version."
    )


class ResourceArgs(Args):
    kind: KindName = Field(
        description="Object kind, e.g. Pod, Deployment, Node (one of the supported kinds)."
    )
    name: ObjectName
    namespace: Namespace | None = None


class EventsArgs(ResourceArgs):
    pass


class LogsArgs(Args):
    name: ObjectName = Field(description="Pod name.")
    namespace: Namespace | None = None
    container: Annotated[str, Field(pattern=_DNS_LABEL, max_length=63)] | None = Field(
        None, description="Container name; required when the Pod has several containers."
    )
    previous: bool = Field(
        False,
        description="Logs of the previous, terminated run of the container (after a crash or OOM kill).",
    )
    tail_lines: int = Field(100, ge=1, le=MAX_TAIL_LINES, description="How many of the last lines to return.")


class OwnerArgs(Args):
    kind: KindName = Field(description="Deployment, ReplicaSet, StatefulSet, DaemonSet, Job or CronJob.")
    name: ObjectName
    namespace: Namespace | None = None


def input_schema(model: type[Args]) -> dict[str, Any]:
    """The model's JSON schema, trimmed for the LLM: no titles, ``X | None`` shown as ``X``."""
    schema = _clean(model.model_json_schema())
    assert isinstance(schema, dict)
    schema["additionalProperties"] = False
    return schema


def _clean(node: Any) -> Any:
    if isinstance(node, list):
        return [_clean(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = dict(node)
    node.pop("title", None)
    options = node.get("anyOf")
    if isinstance(options, list):
        rest = [option for option in options if option != {"type": "null"}]
        if len(rest) == 1 and len(rest) < len(options):
            node.pop("anyOf")
            node = {**rest[0], **node}
            if node.get("default", ...) is None:
                node.pop("default")
    if isinstance(node.get("properties"), dict):
        node["properties"] = {name: _clean(value) for name, value in node["properties"].items()}
        return node
    return {key: _clean(value) for key, value in node.items()}


MAX_LIST_ROWS = 100
MAX_SELECTOR_CHARS = 500
MAX_PROMQL_CHARS = 2000

Selector = Annotated[str, Field(max_length=MAX_SELECTOR_CHARS)]
Duration = Annotated[str, Field(pattern=r"^\s*(\d{1,6}[smhdw])+\s*$", max_length=20)]
PromQL = Annotated[str, Field(min_length=1, max_length=MAX_PROMQL_CHARS)]


class ListArgs(Args):
    kind: KindName
    namespace: Namespace | None = None
    label_selector: Selector | None = Field(None, description="e.g. app=web,tier!=cache")
    field_selector: Selector | None = Field(None, description="e.g. status.phase!=Running")
    limit: int = Field(30, ge=1, le=MAX_LIST_ROWS)


class FindArgs(Args):
    kind: KindName
    name_contains: str | None = Field(None, min_length=1, max_length=253)
    label_selector: Selector | None = None
    field_selector: Selector | None = Field(None, description="e.g. spec.nodeName=node-1")
    limit: int = Field(30, ge=1, le=MAX_LIST_ROWS)


class RolloutArgs(Args):
    kind: Literal["Deployment", "StatefulSet", "DaemonSet"]
    name: ObjectName
    namespace: Namespace | None = None


class NamespaceEventsArgs(Args):
    namespace: Namespace | None = None
    type: Literal["Warning", "Normal"] | None = None
    reason: str | None = Field(None, pattern=r"^[A-Za-z0-9]{1,128}$", description="e.g. BackOff")
    involved_kind: str | None = Field(None, pattern=r"^[A-Za-z]{1,63}$", description="e.g. Pod")
    limit: int = Field(40, ge=1, le=MAX_LIST_ROWS)


class CustomKindsArgs(Args):
    """list_custom_kinds takes no arguments."""


class TopArgs(Args):
    resource: Literal["nodes", "pods"]
    namespace: Namespace | None = None
    sort_by: Literal["cpu", "memory"] = "memory"
    limit: int = Field(20, ge=1, le=MAX_LIST_ROWS)


class PromQueryArgs(Args):
    query: PromQL
    ago: Duration | None = Field(None, description="e.g. 30m")


class PromRangeArgs(Args):
    query: PromQL
    range: Duration = Field("1h", description="e.g. 30m, 6h, 2d")
    step: Duration | None = Field(None, description="e.g. 1m (default: ~240 points)")


class PromMetricsArgs(Args):
    contains: str = Field(min_length=2, max_length=100, pattern=r"^[A-Za-z0-9_:]+$")


class PromLabelArgs(Args):
    label: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
    metric: str | None = Field(None, pattern=r"^[A-Za-z_:][A-Za-z0-9_:]{0,199}$")


class PromAlertsArgs(Args):
    state: Literal["firing", "pending", "all"] = "firing"


class PromRulesArgs(Args):
    name_contains: str | None = Field(None, max_length=100)
    only_unhealthy: bool = False
