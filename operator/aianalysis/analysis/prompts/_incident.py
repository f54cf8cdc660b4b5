"""The incident prompt: observable facts only, in four sections.

No root cause, symptom assessment, pre-selected workflow, confidence or risk assessment ever
appears here: the LLM performs an independent RCA. Free text written by the
alert source (alert name, error message, description, labels) is fenced as untrusted, and so is
every other value of the spec (a kind, a name, a time: identifier-shaped text can still be an
instruction); only closed vocabularies the model validated (severity, priority, risk tolerance) are
shown as they are.
"""

from __future__ import annotations

from collections.abc import Iterable

from aianalysis import resources
from aianalysis.analysis import answer
from aianalysis.analysis.prompts import _fence

MISSING = "not provided"

_OPENING = (
    "Investigate this incident with the read-only tools, determine the root cause, then choose a "
    f"remediation workflow in the catalog and submit it with `{answer.SUBMIT_TOOL_NAME}`."
)

_BUSINESS_NOTE = (
    "Applied by the system for catalog filtering: search results contain only workflows eligible "
    "for these values. You cannot change them and do not need them for your RCA."
)


def incident_prompt(spec: resources.AIAnalysisSpec) -> str:
    """The user message of a first-time analysis."""
    return "# Incident Analysis Request\n\n" + _OPENING + "\n\n" + incident_sections(spec)


def incident_sections(spec: resources.AIAnalysisSpec) -> str:
    """The four fact sections, shared by the incident and the recovery prompt."""
    return "\n\n".join(
        (
            _section("Signal Information", _signal_lines(spec)),
            _section("Error Details", _error_lines(spec.signal)),
            _section("Cluster Context", _cluster_lines(spec)),
            _section("Business Context", _business_lines(spec.business_context), note=_BUSINESS_NOTE),
        )
    )


def _section(title: str, lines: Iterable[str], *, note: str | None = None) -> str:
    head = f"## {title}\n" + (note + "\n\n" if note else "")
    return head + "\n".join(lines)


def _signal_lines(spec: resources.AIAnalysisSpec) -> list[str]:
    signal, resource = spec.signal, spec.resource
    return [
        f"- Signal Type: {_value(signal.type, 'signal_type')}",
        f"- Severity: {signal.severity}",
        f"- Alert Name: {_free(signal.alert_name, 'alert_name')}",
        f"- Namespace: {_value(resource.namespace, 'namespace')}",
        f"- Resource: {_value(f'{resource.kind}/{resource.name}', 'resource')}",
    ]


def _error_lines(signal: resources.Signal) -> list[str]:
    return [
        f"- Error Message: {_free(signal.error_message, 'error_message')}",
        f"- Description: {_free(signal.description, 'description')}",
        f"- Firing Time: {_value(signal.firing_time, 'firing_time')}",
        f"- Received Time: {_value(signal.received_time, 'received_time')}",
    ]


MAX_CUSTOM_LABELS = 32
MAX_SIGNAL_LABELS = 64
MAX_LABEL_CHARS = 256


def _cluster_lines(spec: resources.AIAnalysisSpec) -> list[str]:
    return [
        f"- Cluster: {_value(spec.cluster, 'cluster')}",
        f"- Signal Source: {_value(spec.signal.source, 'signal_source')}",
        f"- Signal Labels: {_labels(spec.signal.labels)}",
    ]


def _business_lines(business: resources.BusinessContext) -> list[str]:
    return [
        f"- Environment: {_value(business.environment, 'environment')}",
        f"- Priority: {business.priority or MISSING}",  # ^P[0-9]$, validated
        f"- Business Category: {_value(business.business_category, 'business_category')}",
        f"- Risk Tolerance: {business.risk_tolerance}",
        f"- Custom Labels: {_custom(business.custom_labels)}",
    ]


def _custom(labels: dict[str, str] | None) -> str:
    """Bounded: the namespace decides how many labels there are, not the prompt budget."""
    if not labels:
        return MISSING
    shown = sorted(labels.items())[:MAX_CUSTOM_LABELS]
    text = "\n".join(f"{key}={value[:MAX_LABEL_CHARS]}" for key, value in shown)
    return _fence.fence(text, label="custom_labels")


def _labels(labels: dict[str, str] | None) -> str:
    """Bounded like the custom labels: an alert decides how many labels it carries."""
    if not labels:
        return MISSING
    shown = sorted(labels.items())[:MAX_SIGNAL_LABELS]
    text = "\n".join(f"{key[:MAX_LABEL_CHARS]}={value[:MAX_LABEL_CHARS]}" for key, value in shown)
    if len(labels) > len(shown):
        text += f"\n... {len(labels) - len(shown)} more label(s) not shown"
    return _fence.fence(text, label="signal_labels")


def _value(value: str | None, label: str) -> str:
    return MISSING if not value else _fence.value(value, label=label)


def _free(value: str | None, label: str) -> str:
    return MISSING if not value else _fence.fence(value, label=label)
