"""Every tool's name, description and argument model: what the provider shows the LLM.

Descriptions are read on every turn (cached, but still input tokens), so they say what a tool
returns and when to use it, briefly. ``needs`` says what a tool reads: the catalog, the cluster,
or Prometheus (Prometheus tools are offered only when one is configured).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from aianalysis.analysis.tools import _args
from aianalysis.kube import kinds as _kinds

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


_KINDS_TEXT = ", ".join(_kinds.names())
_S = Spec
SPECS: tuple[Spec, ...] = (
    _S(
        name="list_action_types",
        description=(
            "The action types of the workflows eligible for this incident, each with a one-line meaning "
            'and how many workflows have it: {"action_types": [{"action_type", "meaning", "workflows"}]}. '
            "Start discovery here: pick the action type your RCA calls for, then search_workflow_catalog "
            "with action_type, then get_workflow_details."
        ),
        args=_args.ActionTypesArgs,
        needs="catalog",
    ),
    _S(
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
        needs="catalog",
    ),
    _S(
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
        needs="catalog",
    ),
    _S(
        name="get_resource",
        description=(
            "Read one Kubernetes object (read-only) as YAML, status before spec, managedFields stripped, "
            f"secret-looking values redacted. Kinds: {_KINDS_TEXT}, and custom kinds from "
            "list_custom_kinds. Secrets are never read."
        ),
        args=_args.ResourceArgs,
        needs="cluster",
    ),
    _S(
        name="list_events",
        description=(
            "The Kubernetes Events about one object (its involvedObject), oldest first: time, type, "
            "reason, count, source and message. Events expire (by default after one hour)."
        ),
        args=_args.EventsArgs,
        needs="cluster",
    ),
    _S(
        name="get_pod_logs",
        description=(
            f"The last lines (at most {_args.MAX_TAIL_LINES}) of one container's log. Use previous=true "
            "for the run that crashed or was OOM-killed."
        ),
        args=_args.LogsArgs,
        needs="cluster",
    ),
    _S(
        name="list_pods_of_owner",
        description=(
            "The Pods controlled by a Deployment (through its ReplicaSets), ReplicaSet, StatefulSet, "
            "DaemonSet, Job or CronJob (through its Jobs), following ownerReferences: phase, node, "
            "owner, container states, restart counts, last termination reasons, requests and limits."
        ),
        args=_args.OwnerArgs,
        needs="cluster",
    ),
    _S(
        name="list_resources",
        description=(
            "Objects of one kind in a namespace (or cluster-scoped) as kubectl-get rows with a status "
            "summary (Pods: ready, reason, restarts, node; Nodes: pressure, taints; HPAs: targets, replicas)."
        ),
        args=_args.ListArgs,
        needs="cluster",
    ),
    _S(
        name="find_resources",
        description=(
            "Find objects of one kind by name part, labels or fields in every namespace you may read."
        ),
        args=_args.FindArgs,
        needs="cluster",
    ),
    _S(
        name="rollout_history",
        description=(
            "Revisions of a Deployment, StatefulSet or DaemonSet, newest first (age, images, "
            "change-cause) and the pod-template fields the last rollout changed."
        ),
        args=_args.RolloutArgs,
        needs="cluster",
    ),
    _S(
        name="list_namespace_events",
        description=("Events of a whole namespace, newest first, repeats merged, optionally filtered."),
        args=_args.NamespaceEventsArgs,
        needs="cluster",
    ),
    _S(
        name="list_custom_kinds",
        description=(
            "Custom kinds (cert-manager, Argo CD, Flux, Istio, OpenShift, OLM...) you may read here."
        ),
        args=_args.CustomKindsArgs,
        needs="cluster",
    ),
    _S(
        name="top",
        description=(
            "CPU and memory usage of Nodes (vs allocatable) or of a namespace's Pods (vs limits), like "
            "kubectl top."
        ),
        args=_args.TopArgs,
        needs="cluster",
    ),
    _S(
        name="prometheus_query",
        description=(
            "Evaluate PromQL now (or `ago`): one line per series, highest first, bounded. Aggregate."
        ),
        args=_args.PromQueryArgs,
        needs="prometheus",
    ),
    _S(
        name="prometheus_query_range",
        description=(
            "Evaluate PromQL over the last `range` (max 7d): per series first/min/max/last and trend."
        ),
        args=_args.PromRangeArgs,
        needs="prometheus",
    ),
    _S(
        name="prometheus_metrics",
        description="Metric names containing a word (memory, restarts, filesystem...).",
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
        description="Firing (or pending) alerts with labels, value and summary.",
        args=_args.PromAlertsArgs,
        needs="prometheus",
    ),
    _S(
        name="prometheus_rules",
        description="Alerting and recording rules: PromQL, state, evaluation errors.",
        args=_args.PromRulesArgs,
        needs="prometheus",
    ),
)

BY_NAME: dict[str, Spec] = {spec.name: spec for spec in SPECS}
