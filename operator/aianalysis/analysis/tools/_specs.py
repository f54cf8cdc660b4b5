"""Every tool's name, description and argument model: what the provider shows the LLM.

Descriptions are read on every turn (cached, but still input tokens), so they say what a tool
returns and when to use it, briefly. ``needs`` says what a tool reads: the catalog, the cluster,
or Prometheus (Prometheus tools are offered only when one is configured).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from aianalysis.analysis.tools import _args
from aianalysis.kube import kind_table

Needs = Literal["catalog", "cluster", "prometheus"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Spec:
    name: str
    description: str
    args: type[_args.Args]
    needs: Needs

    @property
    def investigates(self) -> bool:
        """Reads the cluster or Prometheus: counted as an investigation read, paid from the budget."""
        return self.needs != "catalog"

    def definition(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": _args.input_schema(self.args),
        }


_KINDS_TEXT = ", ".join(kind_table.names())
_S = Spec
SPECS: tuple[Spec, ...] = (
    _S(
        name="list_action_types",
        description=(
            "Action types of the workflows eligible for this incident (meaning, workflow count). Catalog "
            "discovery starts here."
        ),
        args=_args.ActionTypesArgs,
        needs="catalog",
    ),
    _S(
        name="search_workflow_catalog",
        description=(
            "Search the workflow catalog after your RCA: workflow_id, version, description, confidence "
            "(0-1 match to the query), best first, only workflows eligible for this incident."
        ),
        args=_args.SearchArgs,
        needs="catalog",
    ),
    _S(
        name="get_workflow_details",
        description=(
            "One searched workflow's definition: guidance (when_to_use, when_not_to_use, "
            "preconditions), acts_on and the parameter schema. Read it before selecting."
        ),
        args=_args.DetailsArgs,
        needs="catalog",
    ),
    _S(
        name="get_resource",
        description=(f"One object as YAML, status first. Kinds: {_KINDS_TEXT}, and list_custom_kinds'."),
        args=_args.ResourceArgs,
        needs="cluster",
    ),
    _S(
        name="list_events",
        description=("Events about one object, oldest first (they expire, by default after 1h)."),
        args=_args.EventsArgs,
        needs="cluster",
    ),
    _S(
        name="get_pod_logs",
        description=("The last lines of one container's log."),
        args=_args.LogsArgs,
        needs="cluster",
    ),
    _S(
        name="list_pods_of_owner",
        description=(
            "Pods of a workload (through ownerReferences): phase, node, container states, restarts, "
            "last termination, requests and limits."
        ),
        args=_args.OwnerArgs,
        needs="cluster",
    ),
    _S(
        name="list_resources",
        description=(
            "Objects of one kind in a namespace (or cluster-scoped) as kubectl-get rows with status."
        ),
        args=_args.ListArgs,
        needs="cluster",
    ),
    _S(
        name="find_resources",
        description=("Objects of one kind by name part, labels or fields, in every namespace you may read."),
        args=_args.FindArgs,
        needs="cluster",
    ),
    _S(
        name="rollout_history",
        description=("Revisions newest first (age, images, change-cause) and what the last rollout changed."),
        args=_args.RolloutArgs,
        needs="cluster",
    ),
    _S(
        name="list_namespace_events",
        description="A namespace's events, newest first, repeats merged.",
        args=_args.NamespaceEventsArgs,
        needs="cluster",
    ),
    _S(
        name="list_custom_kinds",
        description=("Custom kinds (cert-manager, Argo CD, Flux, Istio, OpenShift...) you may read."),
        args=_args.CustomKindsArgs,
        needs="cluster",
    ),
    _S(
        name="top",
        description=("CPU and memory usage of Nodes or a namespace's Pods (kubectl top)."),
        args=_args.TopArgs,
        needs="cluster",
    ),
    _S(
        name="prometheus_query",
        description=("PromQL now (or `ago`), one line per series, highest first. Aggregate."),
        args=_args.PromQueryArgs,
        needs="prometheus",
    ),
    _S(
        name="prometheus_query_range",
        description=("PromQL over the last `range` (max 7d): per series first/min/max/last, trend."),
        args=_args.PromRangeArgs,
        needs="prometheus",
    ),
    _S(
        name="prometheus_metrics",
        description="Metric names containing a word.",
        args=_args.PromMetricsArgs,
        needs="prometheus",
    ),
    _S(
        name="prometheus_label_values",
        description="Values of one label, optionally of one metric.",
        args=_args.PromLabelArgs,
        needs="prometheus",
    ),
    _S(
        name="prometheus_alerts",
        description="Alerts: labels, value, summary.",
        args=_args.PromAlertsArgs,
        needs="prometheus",
    ),
    _S(
        name="prometheus_rules",
        description="Alerting and recording rules: PromQL, state, errors.",
        args=_args.PromRulesArgs,
        needs="prometheus",
    ),
)

BY_NAME: dict[str, Spec] = {spec.name: spec for spec in SPECS}
