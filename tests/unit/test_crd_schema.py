"""The CRDs in ``crds/`` and the pydantic models in ``resources`` describe the same objects.

The operator writes every status from a model, and the apiserver silently prunes what the CRD does
not declare, so a field present on one side only is data lost (or an object rejected) in a real
cluster. The walker below is generic: it derives the OpenAPI subset the CRD must declare from the
models' type annotations and compares it with the CRD, so a field added to one side only fails here.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import annotated_types
import pydantic
import pytest
import yaml
from pydantic.fields import FieldInfo

from aianalysis import resources

CRD_DIR = Path(__file__).resolve().parents[2] / "crds"

#: OpenAPI keywords that describe the shape and the validation of a value; everything else in a
#: CRD schema (descriptions, defaults, x-kubernetes-* extensions) is compared separately or not at all.
SHAPE_KEYWORDS = frozenset(
    {
        "type", "properties", "required", "items", "additionalProperties", "enum", "pattern",
        "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties",
        "minimum", "maximum",
    }
)  # fmt: skip

SIZE_KEYWORDS = {  # annotated_types MinLen/MaxLen → OpenAPI keyword by JSON type
    "string": ("minLength", "maxLength"),
    "array": ("minItems", "maxItems"),
    "object": ("minProperties", "maxProperties"),
}


@dataclasses.dataclass(frozen=True, kw_only=True)
class Kind:
    file: str
    kind: str
    plural: str
    short_name: str
    scope: str
    spec: type[resources.Model]
    status: type[resources.Model] | None
    immutable_spec: bool


KINDS = [
    Kind(
        file="kubernaut.io_aianalyses.yaml",
        kind="AIAnalysis",
        plural=resources.AIANALYSIS_PLURAL,
        short_name="aia",
        scope="Namespaced",
        spec=resources.AIAnalysisSpec,
        status=resources.AIAnalysisStatus,
        immutable_spec=True,
    ),
    Kind(
        file="kubernaut.io_workflowexecutions.yaml",
        kind="WorkflowExecution",
        plural=resources.WORKFLOWEXECUTION_PLURAL,
        short_name="wfe",
        scope="Namespaced",
        spec=resources.WorkflowExecutionSpec,
        status=resources.WorkflowExecutionStatus,
        immutable_spec=True,
    ),
    Kind(
        file="kubernaut.io_remediationworkflows.yaml",
        kind="RemediationWorkflow",
        plural=resources.REMEDIATIONWORKFLOW_PLURAL,
        short_name="rw",
        scope="Cluster",
        spec=resources.RemediationWorkflowSpec,
        status=resources.RemediationWorkflowStatus,
        immutable_spec=False,
    ),
    Kind(
        file="kubernaut.io_workflowrejections.yaml",
        kind="WorkflowRejection",
        plural=resources.WORKFLOWREJECTION_PLURAL,
        short_name="wfr",
        scope="Namespaced",
        spec=resources.WorkflowRejectionSpec,
        status=None,
        immutable_spec=True,
    ),
]
KIND_IDS = [k.kind for k in KINDS]


def load_crd(kind: Kind) -> dict[str, Any]:
    docs = [d for d in yaml.safe_load_all((CRD_DIR / kind.file).read_text()) if d]
    assert len(docs) == 1, f"{kind.file}: expected exactly one document"
    crd: dict[str, Any] = docs[0]
    return crd


def only_version(crd: Mapping[str, Any]) -> dict[str, Any]:
    versions: list[dict[str, Any]] = crd["spec"]["versions"]
    assert [v["name"] for v in versions] == [resources.VERSION]
    return versions[0]


def root_schema(kind: Kind) -> dict[str, Any]:
    schema: dict[str, Any] = only_version(load_crd(kind))["schema"]["openAPIV3Schema"]
    return schema


# --------------------------------------------------------------------------------------------
# Model → OpenAPI subset


def _unwrap_annotated(tp: Any, constraints: list[Any]) -> Any:
    """Peels ``Annotated[T, ...]`` layers, collecting their constraints (FieldInfo or annotated_types)."""
    while typing.get_origin(tp) is typing.Annotated:
        for extra in tp.__metadata__:
            constraints.extend(extra.metadata if isinstance(extra, FieldInfo) else [extra])
        tp = tp.__origin__
    return tp


def _strip_none(tp: Any) -> Any:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(tp) if a is not type(None)]
        assert len(members) == 1, f"unions other than Optional have no CRD equivalent: {tp}"
        return members[0]
    return tp


def _apply_constraints(schema: dict[str, Any], constraints: list[Any]) -> None:
    for item in constraints:
        if isinstance(item, resources.PreserveUnknown):
            continue  # the shape was decided by model_schema
        if isinstance(item, annotated_types.MinLen):
            schema[SIZE_KEYWORDS[schema["type"]][0]] = item.min_length
        elif isinstance(item, annotated_types.MaxLen):
            schema[SIZE_KEYWORDS[schema["type"]][1]] = item.max_length
        elif isinstance(item, annotated_types.Ge):
            schema["minimum"] = item.ge
        elif isinstance(item, annotated_types.Le):
            schema["maximum"] = item.le
        elif getattr(item, "pattern", None) is not None:
            schema["pattern"] = item.pattern
        else:
            raise AssertionError(f"constraint {item!r} has no CRD counterpart in this walker: teach it")


def model_schema(tp: Any, constraints: list[Any] | None = None) -> dict[str, Any]:
    """The structural OpenAPI (shape keywords only) a CRD must declare for a value of type ``tp``."""
    found = list(constraints or [])
    tp = _strip_none(_unwrap_annotated(tp, found))
    tp = _unwrap_annotated(tp, found)  # Optional[Annotated[...]] nests the other way round
    origin = typing.get_origin(tp)
    schema: dict[str, Any]
    if any(isinstance(item, resources.PreserveUnknown) for item in found):
        # Any JSON value (typed defaults) or a free-form object (engineConfig): no shape to compare.
        return {"type": "object"} if origin is dict else {}
    if origin is typing.Literal:
        values = list(typing.get_args(tp))
        assert all(isinstance(v, str) for v in values), f"only string Literals map to CRD enums: {tp}"
        schema = {"type": "string", "enum": values}
    elif origin is list:
        schema = {"type": "array", "items": model_schema(typing.get_args(tp)[0])}
    elif origin is dict:
        key, value = typing.get_args(tp)
        assert key is str, f"CRD maps have string keys: {tp}"
        schema = {"type": "object", "additionalProperties": model_schema(value)}
    elif isinstance(tp, type) and issubclass(tp, pydantic.BaseModel):
        schema = _object_schema(tp)
    else:
        scalars: dict[Any, str] = {bool: "boolean", int: "integer", float: "number", str: "string"}
        assert tp in scalars, f"type {tp!r} has no CRD counterpart in this walker: teach it"
        schema = {"type": scalars[tp]}
    _apply_constraints(schema, found)
    return schema


def _wire_name(name: str, field: FieldInfo) -> str:
    assert field.alias is not None, f"field {name} has no camelCase alias"
    return field.alias


def _object_schema(model: type[pydantic.BaseModel]) -> dict[str, Any]:
    fields = model.model_fields
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {_wire_name(n, f): model_schema(f.annotation, f.metadata) for n, f in fields.items()},
    }
    required = sorted(_wire_name(n, f) for n, f in fields.items() if f.is_required())
    if required:
        schema["required"] = required
    return schema


def crd_shape(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The CRD schema reduced to shape keywords (required sorted: its order means nothing)."""
    shape: dict[str, Any] = {}
    for key, value in schema.items():
        if key not in SHAPE_KEYWORDS:
            continue
        if key == "properties":
            shape[key] = {name: crd_shape(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties"):
            shape[key] = crd_shape(value)
        elif key == "required":
            shape[key] = sorted(value)
        else:
            shape[key] = value
    return shape


def differences(model: Any, crd: Any, path: str) -> Iterator[str]:
    """Readable mismatches between the model's shape and the CRD's, one per keyword or field."""
    if not (isinstance(model, dict) and isinstance(crd, dict)):
        if model != crd:
            yield f"{path}: model says {model!r}, CRD says {crd!r}"
        return
    for key in sorted(model.keys() | crd.keys()):
        where = f"{path}.{key}"
        if key not in crd:
            yield f"{where}: in the model, missing from the CRD"
        elif key not in model:
            yield f"{where}: in the CRD, missing from the model"
        else:
            yield from differences(model[key], crd[key], where)


def model_crd_differences(model: type[pydantic.BaseModel], schema: Mapping[str, Any], path: str) -> list[str]:
    return list(differences(model_schema(model), crd_shape(schema), path))


# --------------------------------------------------------------------------------------------
# The walker itself must notice drift, or every test below would pass vacuously.


class _Inner(resources.Model):
    level: resources.RiskLevel
    tags: list[str] | None = None


class _Sample(resources.Model):
    target_name: resources.Name
    inner: _Inner
    ratios: dict[str, float] = pydantic.Field(default_factory=dict)


_SAMPLE_CRD: dict[str, Any] = {
    "type": "object",
    "required": ["inner", "targetName"],
    "properties": {
        "targetName": {"type": "string", "minLength": 1, "maxLength": 253, "description": "x"},
        "inner": {
            "type": "object",
            "required": ["level"],
            "properties": {
                "level": {"type": "string", "enum": ["low", "medium", "high"]},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
        },
        "ratios": {"type": "object", "additionalProperties": {"type": "number"}},
    },
}


def test_walker_accepts_a_matching_schema() -> None:
    assert model_crd_differences(_Sample, _SAMPLE_CRD, "sample") == []


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda s: s["properties"].update(extra={"type": "string"}), "sample.properties.extra: in the CRD"),
        (lambda s: s["properties"].pop("ratios"), "sample.properties.ratios: in the model"),
        (lambda s: s["properties"]["inner"]["properties"].pop("tags"), "inner.properties.tags: in the model"),
        (lambda s: s["properties"]["inner"].pop("required"), "inner.required: in the model"),
        (lambda s: s["required"].remove("inner"), "sample.required: model says"),
        (lambda s: s["properties"]["inner"]["properties"]["level"]["enum"].pop(), "level.enum: model says"),
        (lambda s: s["properties"]["ratios"]["additionalProperties"].update(type="string"), "type: model"),
        (lambda s: s["properties"]["targetName"].pop("maxLength"), "targetName.maxLength: in the model"),
        (lambda s: s["properties"]["targetName"].update(pattern="^a$"), "targetName.pattern: in the CRD"),
    ],
    ids=["crd-only-field", "model-only-field", "nested-model-only", "required-dropped", "required-differs",
         "enum-differs", "map-value-type", "bound-dropped", "crd-only-pattern"],
)  # fmt: skip
def test_walker_reports_drift(mutate: Any, expected: str) -> None:
    crd = yaml.safe_load(yaml.safe_dump(_SAMPLE_CRD))  # deep copy
    mutate(crd)
    found = model_crd_differences(_Sample, crd, "sample")
    assert any(expected in line for line in found), found


def test_walker_refuses_types_it_cannot_map() -> None:
    with pytest.raises(AssertionError, match="no CRD counterpart"):
        model_schema(bytes)


# --------------------------------------------------------------------------------------------
# The real CRDs


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
def test_spec_matches_model(kind: Kind) -> None:
    assert model_crd_differences(kind.spec, root_schema(kind)["properties"]["spec"], "spec") == []


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
def test_status_matches_model(kind: Kind) -> None:
    properties = root_schema(kind)["properties"]
    if kind.status is None:
        assert "status" not in properties, f"{kind.kind} has no status model, so the CRD declares none"
        return
    assert model_crd_differences(kind.status, properties["status"], "status") == []


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
def test_top_level_fields(kind: Kind) -> None:
    schema = root_schema(kind)
    expected = {"apiVersion", "kind", "metadata", "spec"} | ({"status"} if kind.status else set())
    assert set(schema["properties"]) == expected
    assert schema["required"] == ["spec"]


def _properties(schema: Mapping[str, Any], path: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for name, sub in schema.get("properties", {}).items():
        yield f"{path}.{name}", sub
        yield from _properties(sub, f"{path}.{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), Mapping):
            yield from _properties(schema[key], f"{path}[]")


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
def test_every_field_is_described_for_kubectl_explain(kind: Kind) -> None:
    schema = root_schema(kind)
    # The apiserver forbids anything but type on metadata; kubectl explain shows ObjectMeta's own docs.
    undocumented = [
        path
        for path, sub in _properties(schema, kind.kind)
        if path != f"{kind.kind}.metadata" and not str(sub.get("description", "")).strip()
    ]
    assert str(schema.get("description", "")).strip()
    assert undocumented == []


def _defaults(model: type[pydantic.BaseModel], schema: Mapping[str, Any], path: str) -> Iterator[str]:
    """CRD defaults equal the model's; in specs, every scalar model default is declared in the CRD
    so the stored object shows the value the operator will use."""
    for name, field in model.model_fields.items():
        sub = schema["properties"].get(_wire_name(name, field))
        if sub is None:
            continue  # a missing field is test_*_matches_model's finding
        where = f"{path}.{_wire_name(name, field)}"
        default = field.get_default(call_default_factory=True)
        if isinstance(default, resources.Model):
            default = default.wire()
        if "default" in sub and sub["default"] != default:
            yield f"{where}: CRD default {sub['default']!r}, model default {default!r}"
        if "default" not in sub and path.startswith("spec") and isinstance(default, str | int | float | bool):
            yield f"{where}: model default {default!r} is not declared in the CRD"
        for nested in _models_in(field.annotation):
            inner = sub.get("items", sub) if sub.get("type") == "array" else sub
            yield from _defaults(nested, inner, where)


def _models_in(tp: Any) -> list[type[pydantic.BaseModel]]:
    found = _strip_none(_unwrap_annotated(tp, []))
    found = _unwrap_annotated(found, [])
    if typing.get_origin(found) is list:
        return _models_in(typing.get_args(found)[0])
    if isinstance(found, type) and issubclass(found, pydantic.BaseModel):
        return [found]
    return []


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
def test_defaults_match_model(kind: Kind) -> None:
    properties = root_schema(kind)["properties"]
    found = list(_defaults(kind.spec, properties["spec"], "spec"))
    if kind.status is not None:
        found += list(_defaults(kind.status, properties["status"], "status"))
    assert found == []


def _walk(node: Any) -> Iterator[tuple[Any, Any]]:
    if isinstance(node, Mapping):
        for key, value in node.items():
            yield key, value
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


#: The only free-form fields: typed parameter values (any JSON type, checked by admission) and the
#: engine's own configuration, carried for whoever runs the workflow.
FREE_FORM = {
    "RemediationWorkflow": {
        "spec.parameters[].default",
        "spec.parameters[].enum[]",
        "spec.execution.engineConfig",
    }
}


def _free_form(schema: Mapping[str, Any], path: str) -> Iterator[str]:
    if schema.get("x-kubernetes-preserve-unknown-fields") or schema.get("x-kubernetes-int-or-string"):
        yield path
    for name, sub in schema.get("properties", {}).items():
        yield from _free_form(sub, f"{path}.{name}" if path else name)
    if isinstance(schema.get("items"), Mapping):
        yield from _free_form(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), Mapping):
        yield from _free_form(schema["additionalProperties"], f"{path}{{}}")


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
def test_nothing_escapes_pruning(kind: Kind) -> None:
    """Free-form fields would let drift between the operator and the CRD go unnoticed: only the
    listed ones may exist."""
    assert set(_free_form(root_schema(kind), "")) == FREE_FORM.get(kind.kind, set())


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
def test_names_scope_and_version(kind: Kind) -> None:
    crd = load_crd(kind)
    spec = crd["spec"]
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["metadata"]["name"] == f"{kind.plural}.{resources.GROUP}"
    assert spec["group"] == resources.GROUP
    assert spec["scope"] == kind.scope
    assert spec["names"]["kind"] == kind.kind
    assert spec["names"]["plural"] == kind.plural
    assert spec["names"]["shortNames"] == [kind.short_name]
    assert spec["names"]["categories"] == ["kubernaut"]
    version = only_version(crd)
    assert version["served"] is True
    assert version["storage"] is True
    assert ("status" in version.get("subresources", {})) == (kind.status is not None)


def _resolve(schema: Mapping[str, Any], json_path: str) -> Mapping[str, Any] | None:
    """The schema a column path points at; a ``[?(...)]`` filter selects an item of the array."""
    node: Mapping[str, Any] | None = schema
    for part in re.sub(r"\[\?\(.*?\)\]", "[]", json_path).strip(".").split("."):
        if node is None:
            return None
        name, filtered = part.removesuffix("[]"), part.endswith("[]")
        node = node.get("properties", {}).get(name)
        if filtered and node is not None:
            node = node.get("items")
    return node


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
def test_printer_columns_point_at_declared_fields(kind: Kind) -> None:
    """A column whose path was renamed away prints an empty cell forever, without any error."""
    version = only_version(load_crd(kind))
    schema = version["schema"]["openAPIV3Schema"]
    for column in version["additionalPrinterColumns"]:
        if column["jsonPath"] == ".metadata.creationTimestamp":
            continue
        target = _resolve(schema, column["jsonPath"])
        assert target is not None, f"{column['name']}: {column['jsonPath']} is not declared"
        declared = target["type"]
        expected = {"array": "string"}.get(declared, declared)  # kubectl prints arrays as JSON text
        if declared == "string" and column["type"] == "date":  # an RFC 3339 timestamp shown as an age
            assert "RFC 3339" in target.get("description", ""), column
            continue
        assert column["type"] == expected, column


EXPECTED_COLUMNS = {
    "AIAnalysis": {
        "Phase": ".status.phase", "Workflow": ".status.selectedWorkflow.workflowId",
        "Confidence": ".status.selectedWorkflow.confidence", "Review": ".status.humanReviewReason",
        "Age": ".metadata.creationTimestamp",
    },
    "WorkflowExecution": {
        "Phase": ".status.phase", "Workflow": ".spec.workflowRef.workflowId",
        "Reason": ".status.failureDetails.reason", "Verdict": ".status.assessment.verdict",
        "Score": ".status.assessment.score", "Age": ".metadata.creationTimestamp",
        "Analysis": ".spec.analysisRef", "Recovery": ".status.recoveryAnalysisRef",
    },
    "RemediationWorkflow": {
        "Workflow ID": ".spec.workflowId", "Version": ".spec.version", "Action": ".spec.actionType",
        "Risk": ".spec.riskLevel", "Accepted": '.status.conditions[?(@.type=="Accepted")].status',
        "Age": ".metadata.creationTimestamp",
    },
    "WorkflowRejection": {
        "Analysis": ".spec.analysisRef", "Workflow": ".spec.workflowRef.workflowId",
        "Rejected By": ".spec.rejectedBy", "Reason": ".spec.reason", "Age": ".metadata.creationTimestamp",
    },
}  # fmt: skip


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
def test_default_printer_columns(kind: Kind) -> None:
    columns = only_version(load_crd(kind))["additionalPrinterColumns"]
    default_view = {c["name"]: c["jsonPath"] for c in columns if c.get("priority", 0) == 0}
    assert default_view == EXPECTED_COLUMNS[kind.kind]


def test_wide_aianalysis_columns_show_reason_recovery_attempt_alert_occurrences_cost_and_rejecter() -> None:
    columns = only_version(load_crd(KINDS[0]))["additionalPrinterColumns"]
    wide = {c["name"]: c["jsonPath"] for c in columns if c.get("priority", 0) == 1}
    assert wide == {
        "Reason": ".status.reason",
        "Attempt": ".spec.recovery.attemptNumber",
        "Occurrences": ".status.intake.occurrences",
        "Last Seen": ".status.intake.lastSeenAt",
        "Cost": ".status.llm.cost.amount",
        "Rejected By": ".status.rejection.rejectedBy",
    }


@pytest.mark.parametrize("kind", [k for k in KINDS if k.immutable_spec], ids=lambda k: k.kind)
def test_spec_is_immutable(kind: Kind) -> None:
    rules = root_schema(kind)["properties"]["spec"]["x-kubernetes-validations"]
    assert {"rule": "self == oldSelf"} in [{"rule": r["rule"]} for r in rules]
    assert all("immutable" in r["message"] for r in rules if r["rule"] == "self == oldSelf")


def test_semver_pattern_is_the_models() -> None:
    schema = root_schema(KINDS[2])["properties"]["spec"]
    assert schema["properties"]["version"]["pattern"] == resources.SEMVER_PATTERN
