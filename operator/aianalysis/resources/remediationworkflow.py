"""RemediationWorkflow (cluster-scoped catalog entry): its spec, and the status the operator writes
(condition ``Accepted``: whether the workflow is offered to analyses)."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, field_validator, model_validator

from aianalysis.resources.base import Model, RiskLevel, Semver, Severity
from aianalysis.resources.conditions import Condition

REMEDIATIONWORKFLOW_PLURAL = "remediationworkflows"
#: What a workflow's labels.severity may say: the four severities, plus Alertmanager's and
#: Kubernaut's ``warning`` (= medium) and ``info`` (= low), which are stored as their synonym.
SeverityLabel = Literal["critical", "high", "medium", "low", "warning", "info"]
SEVERITY_SYNONYMS: dict[str, Severity] = {"warning": "medium", "info": "low"}
Lifecycle = Literal["Active", "Deprecated", "Disabled"]
ParameterType = Literal["string", "integer", "number", "boolean", "array"]
DURATION_PATTERN = r"^([0-9]+h)?([0-9]+m)?([0-9]+s)?$"


class PreserveUnknown:
    """Marks a field the CRD declares with ``x-kubernetes-preserve-unknown-fields`` (a JSON value of
    any type: typed parameter defaults and enum values, engine configuration)."""


PRESERVE_UNKNOWN = PreserveUnknown()


def typed_text(value: object) -> object:
    """A typed JSON value (``30``, ``true``, ``0.5``, ``[a, b]``) in canonical string form; strings
    and anything else pass through (the type check against the parameter's own type is admission's,
    ``catalog.admission``, so a mismatch is reported on the object instead of dropping it)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, list):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return value


#: A parameter value written in the catalog, typed or as text; held as canonical text.
TypedValue = Annotated[str, BeforeValidator(typed_text), PRESERVE_UNKNOWN]
ParameterName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=128)]
#: Which field of the remediation target the system fills a parameter from ("none" opts out of the
#: naming convention, see ``catalog.target_field``).
FromTarget = Literal["kind", "name", "namespace", "apiVersion", "none"]


class WorkflowParameter(Model):
    """One declared parameter. The bounds on enum/default/dependsOn keep the CRD's CEL rules (which
    iterate over them) within the apiserver's cost budget; the checks mirror those rules so a
    catalog loaded from files is held to what the apiserver enforces."""

    name: ParameterName
    type: ParameterType
    required: bool = False
    description: str | None = None
    enum: Annotated[list[TypedValue], Field(max_length=128)] | None = None
    pattern: Annotated[str, Field(max_length=256)] | None = None
    minimum: float | None = None
    maximum: float | None = None
    default: TypedValue | None = None
    depends_on: Annotated[list[Annotated[str, Field(max_length=128)]], Field(max_length=16)] | None = None
    from_target: FromTarget | None = None
    """The system fills this parameter from the remediation target; the LLM's value never wins."""

    @model_validator(mode="after")
    def _consistent(self) -> WorkflowParameter:
        if self.minimum is not None and self.maximum is not None and self.minimum > self.maximum:
            raise ValueError("minimum must be less than or equal to maximum")
        if (self.minimum is not None or self.maximum is not None) and self.type not in ("integer", "number"):
            raise ValueError("minimum and maximum apply to integer and number parameters only")
        if self.pattern is not None and self.type not in ("string", "array"):
            raise ValueError("pattern applies to string and array parameters only")
        if self.depends_on is not None and self.name in self.depends_on:
            raise ValueError("a parameter cannot depend on itself")
        return self


class DetectedLabels(Model):
    """Facts about the remediation target a workflow requires (Kubernaut's ``detectedLabels``).
    Each set field is a hard requirement: a boolean must equal the detected fact, a tool name
    must equal it (case-insensitive) or be ``*`` (any tool). An unknown fact never satisfies one."""

    helm_managed: bool | None = None
    gitops_managed: bool | None = Field(default=None, alias="gitOpsManaged")
    gitops_tool: str | None = Field(default=None, alias="gitOpsTool")
    pdb_protected: bool | None = None
    hpa_enabled: bool | None = None
    stateful: bool | None = None
    network_isolated: bool | None = None
    service_mesh: str | None = None


class WorkflowLabels(Model):
    signal_types: list[str] = Field(default_factory=list)
    severity: list[SeverityLabel] | None = None
    component: list[str] | None = None
    environment: list[str] | None = None
    priority: list[str] | None = None
    business_category: list[str] | None = None

    @field_validator("severity")
    @classmethod
    def _severity_synonyms(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        return list(dict.fromkeys(SEVERITY_SYNONYMS.get(item, item) for item in value))


class WorkflowGuidance(Model):
    """When the workflow fits and when it does not; shown to the LLM and used by search."""

    when_to_use: str | None = None
    when_not_to_use: str | None = None
    preconditions: str | None = None


class WorkflowExecutionSettings(Model):
    engine: Literal["job", "tekton", "ansible"] = "job"
    container_image: Annotated[str, Field(min_length=1)] | None = None
    """None: nothing can run the workflow (a Kubernaut workflow imported without a bundle); admission
    keeps it out of the catalog offered to analyses (``NotExecutable``) but the object stays."""
    service_account_name: Annotated[str, Field(max_length=253)] | None = None
    bundle: str | None = None
    bundle_digest: str | None = None
    engine_config: Annotated[dict[str, Any], PRESERVE_UNKNOWN] | None = None


class RemediationWorkflowSpec(Model):
    workflow_id: Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=128)]
    version: Semver
    title: Annotated[str, Field(min_length=1)]
    description: Annotated[str, Field(min_length=1)]
    labels: WorkflowLabels
    risk_level: RiskLevel
    parameters: Annotated[list[WorkflowParameter], Field(max_length=64)] = Field(default_factory=list)
    execution: WorkflowExecutionSettings
    estimated_duration: str | None = None
    stabilization_window: Annotated[str, Field(min_length=2, pattern=DURATION_PATTERN)] | None = None
    """How long after this workflow ran its effect is assessed (``5m``; default: the setting)."""
    action_type: Annotated[str, Field(pattern=r"^[A-Z][A-Za-z0-9]*$", max_length=128)] | None = None
    guidance: WorkflowGuidance | None = None
    custom_labels: dict[str, str] | None = None
    detected_labels: DetectedLabels | None = None
    lifecycle: Lifecycle = "Active"

    @model_validator(mode="after")
    def _parameters_consistent(self) -> RemediationWorkflowSpec:
        """Same rules as the CRD: names unique (list-map key), dependsOn names declared parameters,
        a signal type or an action type to classify the workflow by."""
        if not self.labels.signal_types and self.action_type is None:
            raise ValueError("a workflow needs labels.signalTypes or actionType (or both)")
        names = [p.name for p in self.parameters]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"duplicate parameter names: {', '.join(duplicates)}")
        for param in self.parameters:
            unknown = [d for d in param.depends_on or [] if d not in names]
            if unknown:
                raise ValueError(f"dependsOn must name parameters declared in spec.parameters: {unknown}")
        return self


class RemediationWorkflowStatus(Model):
    """Written by the operator only: condition ``Accepted`` says whether the workflow is offered."""

    conditions: list[Condition] | None = None
