"""Evaluation scenarios: one YAML file each, an incident plus the answer an SRE would accept.

A scenario is loaded strictly (unknown keys are errors) because a typo in an expectation would
silently turn a trap into a free point. Every problem is reported as :class:`ScenarioError` naming
the file and the field, and :func:`check_against` rejects expectations the catalog can never meet
(unknown workflow ids, workflows the incident's business context makes ineligible). The file
format is documented in ``examples/eval/README.md``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import pydantic
import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from aianalysis import catalog, errors, resources
from aianalysis.analysis import validation
from aianalysis.kube import kind_table

ANY_REVIEW = "any"
SUFFIXES = (".yaml", ".yml")
#: Kinds without a namespace; every other kind defaults to the incident's namespace. The reader's
#: table says which of its kinds are cluster-scoped; the others here are kinds a scenario may hold
#: that only the tools' listings or the scope read.
CLUSTER_SCOPED_KINDS = frozenset(
    {kind.kind for kind in kind_table.KINDS if not kind.namespaced}
    | {"NodeMetrics", "StorageClass", "ClusterRole", "ClusterRoleBinding"}
)
_NAME = r"^[A-Za-z0-9][-A-Za-z0-9_.]*$"

ReviewReason = Literal["any"] | resources.HumanReviewReason
Scalar = str | int | float | bool


class ScenarioError(errors.ConfigError):
    """A scenario file that cannot be evaluated; the message names the file and the field."""

    reason = "InvalidScenario"


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


class ValuePattern(_Model):
    """An expected parameter value given as a regular expression over its canonical string form
    (for values a person could phrase several ways, e.g. ``2Gi`` or ``2048Mi``)."""

    pattern: Annotated[str, Field(min_length=1, max_length=512)]

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
        return value


ExpectedValue = ValuePattern | Scalar | list[Scalar]


class Expectation(_Model):
    workflow_ids: list[Annotated[str, Field(min_length=1)]]
    """Any of these is a correct selection; empty means a person must decide (``expectReview``)."""
    expect_review: list[ReviewReason] | None = None
    """With an empty ``workflowIds``: the acceptable human-review reasons (``any`` = any reason)."""
    parameters: dict[str, ExpectedValue] = Field(default_factory=dict)
    forbidden_workflow_ids: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)

    @field_validator("expect_review", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value

    @model_validator(mode="after")
    def _consistent(self) -> Expectation:
        if self.workflow_ids and self.expect_review:
            raise ValueError("give either workflowIds or expectReview (with an empty workflowIds), not both")
        if not self.workflow_ids and not self.expect_review:
            raise ValueError("an empty workflowIds needs expectReview: the reason(s) a person must decide")
        if self.parameters and not self.workflow_ids:
            raise ValueError("parameters can only be expected together with workflowIds")
        clash = sorted(set(self.workflow_ids) & set(self.forbidden_workflow_ids))
        if clash:
            raise ValueError(f"workflows both expected and forbidden: {', '.join(clash)}")
        return self

    @property
    def review_expected(self) -> bool:
        return not self.workflow_ids

    def review_accepts(self, reason: str | None) -> bool:
        allowed = self.expect_review or []
        return ANY_REVIEW in allowed or reason in allowed


class PodLog(_Model):
    """A container's log: ``current`` run and, for a crashed or OOM-killed one, ``previous``."""

    current: str = ""
    previous: str | None = None


class _Document(_Model):
    name: Annotated[str, Field(pattern=_NAME, max_length=128)]
    description: Annotated[str, Field(min_length=1)]
    tags: list[Annotated[str, Field(pattern=_NAME, max_length=64)]] = Field(default_factory=list)
    analysis: resources.AIAnalysisSpec
    expect: Expectation
    cluster: list[dict[str, Any]] | None = None
    logs: dict[str, PodLog] = Field(default_factory=dict)

    @field_validator("analysis", mode="before")
    @classmethod
    def _spec_of_object(cls, value: object) -> object:
        """Either an AIAnalysis object (its ``spec`` is used) or the spec itself."""
        if isinstance(value, Mapping) and ("kind" in value or "apiVersion" in value):
            if value.get("kind") != "AIAnalysis":
                raise ValueError(f"expected an AIAnalysis object or spec, got kind {value.get('kind')!r}")
            return value.get("spec")
        return value

    @field_validator("logs", mode="before")
    @classmethod
    def _text_is_current(cls, value: object) -> object:
        if isinstance(value, Mapping):
            return {key: {"current": text} if isinstance(text, str) else text for key, text in value.items()}
        return value


@dataclasses.dataclass(frozen=True, kw_only=True)
class Scenario:
    """A loaded scenario. ``cluster`` is None when the scenario gives no cluster (the tools then
    say that no cluster is attached, as ``aianalysis analyze`` does)."""

    name: str
    description: str
    tags: tuple[str, ...]
    spec: resources.AIAnalysisSpec
    expect: Expectation
    cluster: tuple[dict[str, Any], ...] | None
    logs: Mapping[str, PodLog]
    path: Path


# ---- loading ---------------------------------------------------------------------------------


def load_scenarios(paths: Iterable[Path | str]) -> list[Scenario]:
    """Scenarios from files and directories (searched recursively for ``*.yaml``/``*.yml``), in
    path order. Raises :class:`ScenarioError` on the first bad file, or on duplicate names."""
    scenarios = [parse_file(path) for path in _files(paths)]
    seen: dict[str, Path] = {}
    for scenario in scenarios:
        if scenario.name in seen:
            raise ScenarioError(
                f"{scenario.path}: scenario name {scenario.name!r} is already used by {seen[scenario.name]}"
            )
        seen[scenario.name] = scenario.path
    if not scenarios:
        raise ScenarioError(f"no scenario files (*.yaml) in {', '.join(str(p) for p in paths)}")
    return scenarios


def _files(paths: Iterable[Path | str]) -> list[Path]:
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES and p.is_file()))
        elif path.is_file():
            found.append(path)
        else:
            raise ScenarioError(f"{path}: no such file or directory")
    return found


def parse_file(path: Path) -> Scenario:
    try:
        documents = [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ScenarioError(f"{path}: cannot read: {exc}") from None
    if len(documents) != 1:
        raise ScenarioError(f"{path}: expected exactly one YAML document (one scenario per file)")
    return parse(documents[0], path=path)


def parse(document: object, *, path: Path) -> Scenario:
    """One scenario from its parsed YAML (``path`` is for messages and the report)."""
    if not isinstance(document, Mapping):
        raise ScenarioError(f"{path}: a scenario is a mapping with name, description, analysis, expect")
    try:
        doc = _Document.model_validate(document)
    except pydantic.ValidationError as exc:
        raise ScenarioError(f"{path}: {_problems(exc)}") from None
    cluster = None
    if doc.cluster is not None:
        cluster = tuple(
            _object(obj, index, spec=doc.analysis, path=path) for index, obj in enumerate(doc.cluster)
        )
    _check_logs(doc.logs, cluster, path=path)
    return Scenario(
        name=doc.name,
        description=doc.description.strip(),
        tags=tuple(doc.tags),
        spec=doc.analysis,
        expect=doc.expect,
        cluster=cluster,
        logs=doc.logs,
        path=path,
    )


def _problems(exc: pydantic.ValidationError, limit: int = 3) -> str:
    found = [
        f"{'.'.join(str(part) for part in error['loc']) or '(scenario)'}: {error['msg']}"
        for error in exc.errors()
    ]
    more = f" (and {len(found) - limit} more)" if len(found) > limit else ""
    return "; ".join(found[:limit]) + more


def _object(obj: object, index: int, *, spec: resources.AIAnalysisSpec, path: Path) -> dict[str, Any]:
    """A cluster object, checked enough for the in-memory reader; namespaced kinds default to the
    incident's namespace so scenario authors need not repeat it."""
    where = f"{path}: cluster[{index}]"
    if not isinstance(obj, Mapping) or not isinstance(obj.get("kind"), str):
        raise ScenarioError(f"{where}: a Kubernetes object needs a string 'kind'")
    metadata = obj.get("metadata")
    if not isinstance(metadata, Mapping) or not isinstance(metadata.get("name"), str):
        raise ScenarioError(f"{where}: {obj['kind']} needs metadata.name")
    if obj["kind"] == "Secret":
        raise ScenarioError(f"{where}: Secrets are never shown to the LLM; leave them out of scenarios")
    copied: dict[str, Any] = {**obj, "metadata": dict(metadata)}
    if obj["kind"] not in CLUSTER_SCOPED_KINDS and not metadata.get("namespace"):
        if spec.resource.namespace is None:
            raise ScenarioError(f"{where}: {obj['kind']} needs metadata.namespace (the incident has none)")
        copied["metadata"]["namespace"] = spec.resource.namespace
    return copied


def _check_logs(logs: Mapping[str, PodLog], cluster: Sequence[dict[str, Any]] | None, *, path: Path) -> None:
    if logs and cluster is None:
        raise ScenarioError(f"{path}: logs need a cluster with the Pods they belong to")
    pods = {obj["metadata"]["name"] for obj in cluster or () if obj["kind"] == "Pod"}
    for key in logs:
        pod = key.split("/", 1)[0]
        if pod not in pods:
            raise ScenarioError(
                f"{path}: logs.{key}: no Pod {pod!r} in cluster (keys are POD or POD/CONTAINER)"
            )


# ---- checks against a catalog ----------------------------------------------------------------


def check_against(scenarios: Sequence[Scenario], index: catalog.Catalog) -> None:
    """Reject expectations this catalog can never meet, all problems at once."""
    problems = [f"{s.path}: {problem}" for s in scenarios for problem in catalog_problems(s, index)]
    if problems:
        raise ScenarioError("scenarios do not fit the catalog:\n  " + "\n  ".join(problems))


def catalog_problems(scenario: Scenario, index: catalog.Catalog) -> list[str]:
    expect, business = scenario.expect, scenario.spec.business_context
    problems = [
        f"expect.{field}: {workflow_id!r} is not in the catalog"
        for field, ids in (
            ("workflowIds", expect.workflow_ids),
            ("forbiddenWorkflowIds", expect.forbidden_workflow_ids),
        )
        for workflow_id in ids
        if not index.versions(workflow_id)
    ]
    for workflow_id in expect.workflow_ids:
        workflows = [w for v in index.versions(workflow_id) if (w := index.get(workflow_id, v)) is not None]
        if workflows and all(catalog.policy.ineligibility(w.spec, business) for w in workflows):
            why = "; ".join(catalog.policy.ineligibility(workflows[-1].spec, business))
            problems.append(f"expect.workflowIds: {workflow_id!r} can never be selected here ({why})")
    problems += _parameter_problems(scenario, index)
    return problems


def _parameter_problems(scenario: Scenario, index: catalog.Catalog) -> list[str]:
    declared = declared_types(scenario.expect.workflow_ids, index)
    problems = []
    for name, value in scenario.expect.parameters.items():
        if name not in declared:
            problems.append(f"expect.parameters.{name}: no expected workflow declares this parameter")
        elif not isinstance(value, ValuePattern):
            try:
                validation.canonical_value(declared[name], value)
            except ValueError as exc:
                problems.append(f"expect.parameters.{name}: {exc}")
    return problems


def declared_types(workflow_ids: Iterable[str], index: catalog.Catalog) -> dict[str, str]:
    """Parameter name → declared type, over every version of the given workflows."""
    types: dict[str, str] = {}
    for workflow_id in workflow_ids:
        for version in index.versions(workflow_id):
            workflow = index.get(workflow_id, version)
            for param in workflow.spec.parameters if workflow is not None else ():
                types.setdefault(param.name, param.type)
    return types
