"""Pure: one Alertmanager alert → the facts of an AIAnalysis (signal, resource as labelled, cluster),
or the reason it cannot become one. Configurable with a YAML file; the defaults fit the alerts of
kube-prometheus and kube-state-metrics.

Alert text (labels, annotations) is untrusted: it is copied into the spec as data and bounded in
size; the prompt builder fences it. Nothing here reads the cluster (see ``resolve``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Set
from pathlib import Path
from typing import Annotated, Any, Literal

import pydantic
import yaml
from pydantic import Field

from aianalysis import errors, resources
from aianalysis.analysis import scope
from aianalysis.catalog import signals
from aianalysis.intake import payload

SOURCE = "alertmanager"
MAX_TEXT = 4096
MAX_LABELS = 64
MAX_LABEL_VALUE = 1024

DEFAULT_SIGNAL_TYPES: dict[str, str] = dict(signals.DEFAULT_SIGNAL_TYPES)


DEFAULT_SEVERITIES: dict[str, resources.Severity] = {
    "critical": "critical",
    "error": "high",
    "high": "high",
    "warning": "medium",
    "medium": "medium",
    "info": "low",
    "low": "low",
    "none": "low",
}


class _Config(resources.Model):
    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)


class SignalTypePattern(_Config):
    pattern: Annotated[str, Field(min_length=1, max_length=256)]
    signal_type: Annotated[str, Field(min_length=1)]


class ResourceLabel(_Config):
    label: Annotated[str, Field(min_length=1)]
    kind: Annotated[str, Field(min_length=1)]
    cluster_scoped: bool = False


DEFAULT_RESOURCE_LABELS = [
    # Most specific owner first. Prometheus' own `job` label names the scrape job, never a Job: Jobs
    # come from kube-state-metrics' `job_name`.
    ResourceLabel(label="deployment", kind="Deployment"),
    ResourceLabel(label="statefulset", kind="StatefulSet"),
    ResourceLabel(label="daemonset", kind="DaemonSet"),
    ResourceLabel(label="cronjob", kind="CronJob"),
    ResourceLabel(label="job_name", kind="Job"),
    ResourceLabel(label="pod", kind="Pod"),
    ResourceLabel(label="persistentvolumeclaim", kind="PersistentVolumeClaim"),
    ResourceLabel(label="horizontalpodautoscaler", kind="HorizontalPodAutoscaler"),
    ResourceLabel(label="poddisruptionbudget", kind="PodDisruptionBudget"),
    ResourceLabel(label="replicaset", kind="ReplicaSet"),
    ResourceLabel(label="networkpolicy", kind="NetworkPolicy"),
    ResourceLabel(label="service", kind="Service"),
    ResourceLabel(label="certificate", kind="Certificate"),
    ResourceLabel(label="route", kind="Route"),
    ResourceLabel(label="buildconfig", kind="BuildConfig"),
    ResourceLabel(label="subscription", kind="Subscription"),
    ResourceLabel(label="authorizationpolicy", kind="AuthorizationPolicy"),
    ResourceLabel(label="node", kind="Node", cluster_scoped=True),
    ResourceLabel(label="clusterissuer", kind="ClusterIssuer", cluster_scoped=True),
]
#: Labels an alert may use to name its object generically (``target_kind``/``target_name``, as
#: Kubernaut's demo rules do); tried after the resource labels.
GENERIC_KIND_LABELS = ("target_resource_kind", "target_kind")
GENERIC_NAME_LABELS = ("target_resource_name", "target_name")


class BusinessDefaults(_Config):
    """Used when the namespace has no ``kubernaut.io/*`` label for a field: conservative."""

    environment: str | None = None
    priority: Annotated[str, Field(pattern=r"^P[0-9]$")] | None = None
    business_category: str | None = None
    risk_tolerance: resources.RiskLevel = "low"


class MappingConfig(_Config):
    signal_types: dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_SIGNAL_TYPES))
    """Alert name → signal type; the file's entries are added to (and override) the defaults."""
    signal_type_patterns: list[SignalTypePattern] = Field(
        default_factory=lambda: [SignalTypePattern(pattern="OOMKill", signal_type="OOMKilled")]
    )
    """Tried in order when the name is not listed (``re.search`` on the alert name)."""
    severities: dict[str, resources.Severity] = Field(default_factory=lambda: dict(DEFAULT_SEVERITIES))
    default_severity: resources.Severity = "medium"
    resource_labels: list[ResourceLabel] = Field(default_factory=lambda: list(DEFAULT_RESOURCE_LABELS))
    cluster_label: str = "cluster"
    cluster: str | None = None
    """Cluster name when the alert has no ``clusterLabel`` label."""
    cluster_scoped_namespace: str | None = None
    """Namespace for analyses of cluster-scoped resources (Nodes); none = such alerts are unmapped."""
    business_context_defaults: BusinessDefaults = Field(default_factory=BusinessDefaults)
    namespace_incidents: bool = True
    """An alert with a ``namespace`` label but no resource label (aggregated ``by (namespace)``)
    becomes an incident about that Namespace; false = such alerts are unmapped."""

    namespaces: list[str] = Field(default_factory=lambda: ["*"])
    """Namespaces alerts may open analyses in (the alert's ``namespace`` label is data, not a
    permission); ``*`` = any. An alert about another namespace is unmapped, with that reason."""


def load_config(path: str | None, *, cluster: str | None = None) -> MappingConfig:
    """The defaults, overridden by the file at ``path`` (dicts merge, everything else replaces)."""
    raw: dict[str, Any] = {}
    if path:
        try:
            loaded = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise errors.ConfigError(f"intake mapping file {path}: {exc}") from exc
        if not isinstance(loaded, dict):
            raise errors.ConfigError(f"intake mapping file {path}: expected a mapping at the top level")
        raw = loaded
    try:
        config = MappingConfig.model_validate(raw)
        base = MappingConfig()
        merged = config.model_copy(
            update={
                "signal_types": {**base.signal_types, **config.signal_types},
                "severities": {**base.severities, **config.severities},
                "cluster": config.cluster or cluster,
            }
        )
        for rule in merged.signal_type_patterns:
            re.compile(rule.pattern)
    except (pydantic.ValidationError, re.error) as exc:
        raise errors.ConfigError(f"intake mapping {path or '(defaults)'}: {exc}") from exc
    return merged


@dataclasses.dataclass(frozen=True, kw_only=True)
class Target:
    kind: str
    name: str
    namespace: str | None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Mapped:
    status: Literal["firing", "resolved"]
    fingerprint: str
    alert_name: str
    signal: resources.Signal
    target: Target
    analysis_namespace: str
    cluster: str | None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Unmapped:
    fingerprint: str
    alert_name: str
    reason: str


def map_alert(
    alert: payload.Alert,
    *,
    common_labels: dict[str, str],
    config: MappingConfig,
    received: str,
    allowed: Set[tuple[str, str]] = frozenset(),
) -> Mapped | Unmapped:
    """One alert of a payload (its own labels win over the group's common ones). Its object must
    belong to the namespace the analysis opens in (``scope.foreign_namespace``: a Namespace belongs
    to itself) unless ``allowed`` pairs them (``AIANALYSIS_CROSS_NAMESPACE``)."""
    labels = {**common_labels, **alert.labels}
    name = labels.get("alertname", "")
    fingerprint = alert.fingerprint or ""
    target = _target(labels, config)
    if isinstance(target, str):
        return Unmapped(fingerprint=fingerprint, alert_name=name, reason=target)
    namespace = target.namespace or labels.get("namespace") or config.cluster_scoped_namespace
    if not namespace:
        reason = f"{target.kind} is cluster-scoped and no clusterScopedNamespace is configured"
        return Unmapped(fingerprint=fingerprint, alert_name=name, reason=reason)
    if "*" not in config.namespaces and namespace not in config.namespaces:
        reason = f"namespace {namespace} is not in the intake's namespace allowlist"
        return Unmapped(fingerprint=fingerprint, alert_name=name, reason=reason)
    other = scope.foreign_namespace(
        namespace, kind=target.kind, name=target.name, namespace=target.namespace, allowed=allowed
    )
    if other is not None:
        reason = (
            f"{target.kind} {target.name} is in namespace {other}, not the alert's namespace {namespace} "
            "(AIANALYSIS_CROSS_NAMESPACE can allow the pair)"
        )
        return Unmapped(fingerprint=fingerprint, alert_name=name, reason=reason)
    annotations = alert.annotations
    signal = resources.Signal(
        type=signal_type(name, labels, config),
        severity=config.severities.get(labels.get("severity", "").lower(), config.default_severity),
        alert_name=name or None,
        source=SOURCE,
        labels=_bounded_labels(labels),
        error_message=_text(annotations.get("summary") or annotations.get("message")),
        description=_text(annotations.get("description") or annotations.get("message")),
        firing_time=alert.starts_at,
        received_time=received,
    )
    return Mapped(
        status=alert.status,
        fingerprint=fingerprint,
        alert_name=name,
        signal=signal,
        target=target,
        analysis_namespace=namespace,
        cluster=labels.get(config.cluster_label) or config.cluster,
    )


def signal_type(name: str, labels: dict[str, str], config: MappingConfig) -> str:
    """Listed name, else the first matching pattern, else the ``reason`` label, else the name."""
    if name in config.signal_types:
        return config.signal_types[name]
    for rule in config.signal_type_patterns:
        if re.search(rule.pattern, name):
            return rule.signal_type
    return labels.get("reason") or name or "Unknown"


def _target(labels: dict[str, str], config: MappingConfig) -> Target | str:
    namespace = labels.get("namespace") or None
    for rule in config.resource_labels:
        value = labels.get(rule.label)
        if not value:
            continue
        if rule.cluster_scoped:
            return Target(kind=rule.kind, name=value, namespace=None)
        if namespace is None:
            return f"label {rule.label}={value} has no namespace label"
        return Target(kind=rule.kind, name=value, namespace=namespace)
    kind = next((labels[k] for k in GENERIC_KIND_LABELS if labels.get(k)), None)
    name = next((labels[k] for k in GENERIC_NAME_LABELS if labels.get(k)), None)
    if kind and name and namespace is not None and "{{" not in name:
        return Target(kind=kind, name=name, namespace=namespace)
    if namespace is not None and config.namespace_incidents:
        # Aggregated by namespace (a pool exhausted, a mesh denying): the namespace is the incident
        # and the investigation names the object to act on (checked by the target rule).
        return Target(kind="Namespace", name=namespace, namespace=namespace)
    wanted = ", ".join(r.label for r in config.resource_labels)
    return f"no resource label (one of {wanted})"


def _text(value: str | None) -> str | None:
    return value[:MAX_TEXT] if value else None


def _bounded_labels(labels: dict[str, str]) -> dict[str, str]:
    return {k[:256]: v[:MAX_LABEL_VALUE] for k, v in sorted(labels.items())[:MAX_LABELS]}


_LABEL_VALUE = re.compile(r"[^A-Za-z0-9_.-]+")


def label_value(value: str) -> str:
    """A Kubernetes label value (≤ 63 characters of ``[A-Za-z0-9_.-]``, alphanumeric at both ends)."""
    return _LABEL_VALUE.sub("-", value)[:63].strip("-_.")
