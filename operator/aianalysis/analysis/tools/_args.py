"""Arguments of every tool as pydantic models: one definition gives both the ``input_schema`` the
LLM sees and the validation of what it sends (the same idea as ``answer.SelectionAnswer``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

import aianalysis.catalog.model
from aianalysis.analysis import schema

MAX_TOP_K = 20
MAX_QUERY_CHARS = 2000
MAX_TAIL_LINES = 200

_DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"
_DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"

ObjectName = Annotated[str, Field(pattern=_DNS_SUBDOMAIN, max_length=253)]
Namespace = Annotated[
    str,
    Field(pattern=_DNS_LABEL, max_length=63, description="Default: the incident's."),
]
KindName = Annotated[str, Field(min_length=1, max_length=100)]


class Refused(Exception):
    """Arguments a tool will not act on (a Secret, an unsupported kind...); the message is for the LLM."""


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True, frozen=True)


class TargetArg(Args):
    kind: KindName
    name: ObjectName
    namespace: Namespace | None = None


_TARGET_DESCRIPTION = (
    "The object your RCA found must change, as you will submit it in affected_resource: the catalog "
    "is then filtered by what is detected on it (GitOps, Helm, HPA...) instead of on the incident's "
    "resource. Omit for the incident's resource."
)


class SearchArgs(Args):
    query: Annotated[str, AfterValidator(lambda text: text[:MAX_QUERY_CHARS])] = Field(
        "",
        description="The root cause you found and the remediation you want, e.g. 'memory limit too low, "
        "raise the deployment's limit'.",
    )
    signal_type: str | None = Field(
        None,
        max_length=128,
        description="The signal type your RCA established (may differ from the alert's).",
    )
    action_type: str | None = Field(
        None,
        max_length=128,
        description="One of list_action_types'.",
    )
    severity: Literal["critical", "high", "medium", "low"] | None = Field(
        None, description="Your RCA severity."
    )
    component: str | None = Field(
        None,
        max_length=63,
        description="Lower-case kind that must change: deployment, node...",
    )
    environment: str | None = Field(
        None,
        max_length=63,
        description="Optional, narrowing only.",
    )
    priority: str | None = Field(None, max_length=8, description="Optional, narrowing only.")
    business_category: str | None = Field(
        None,
        max_length=63,
        description="Optional, narrowing only.",
    )
    risk_tolerance: Literal["low", "medium", "high"] | None = Field(
        None,
        description="Optional, narrowing only.",
    )
    top_k: int = Field(aianalysis.catalog.model.DEFAULT_TOP_K, ge=1, le=MAX_TOP_K)
    affected_resource: TargetArg | None = Field(None, description=_TARGET_DESCRIPTION)


class ActionTypesArgs(Args):
    """The incident's business context decides, and what is detected on the remediation target."""

    affected_resource: TargetArg | None = Field(None, description=_TARGET_DESCRIPTION)


class DetailsArgs(Args):
    workflow_id: str = Field(min_length=1, max_length=128, description="From search results.")
    version: str | None = Field(None, max_length=64, description="Omit for the latest.")


class ResourceArgs(Args):
    kind: KindName = Field(description="e.g. Pod, Deployment, Node")
    name: ObjectName
    namespace: Namespace | None = None


class EventsArgs(ResourceArgs):
    pass


class LogsArgs(Args):
    name: ObjectName = Field(description="Pod name")
    namespace: Namespace | None = None
    container: Annotated[str, Field(pattern=_DNS_LABEL, max_length=63)] | None = Field(
        None, description="Required if the Pod has several."
    )
    previous: bool = Field(
        False,
        description="The previous run's (after a crash or OOM kill).",
    )
    tail_lines: int = Field(100, ge=1, le=MAX_TAIL_LINES, description="Last lines.")


class OwnerArgs(Args):
    kind: KindName = Field(description="Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob")
    name: ObjectName
    namespace: Namespace | None = None


def input_schema(model: type[Args]) -> dict[str, Any]:
    """The model's JSON schema as the LLM reads it (:func:`schema.lean`)."""
    return schema.lean(model.model_json_schema())


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
