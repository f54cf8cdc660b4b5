"""What the three custom resources share: the API group, the pydantic base model (camelCase on the
wire, unknown fields refused), and the field types more than one of them uses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

GROUP = "kubernaut.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
SEMVER_PATTERN = r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$"
Severity = Literal["critical", "high", "medium", "low"]
RiskLevel = Literal["low", "medium", "high"]
RISK_ORDER: dict[str, int] = {"low": 0, "medium": 1, "high": 2}
#: Closed vocabulary of reasons a person must look at an analysis (docs/architecture.md §5).
HumanReviewReason = Literal[
    "no_eligible_workflow",
    "validation_failed",
    "parameters_incomplete",
    "low_confidence",
    "inconclusive",
    "max_recovery_attempts",
    "provider_unavailable",
    "provider_error",
    "investigation_failed",
    "previously_ineffective",
    "previously_rejected",
    "recurring_after_remediation",
]
Name = Annotated[str, Field(min_length=1, max_length=253)]
#: Exact workflow version wherever one is recorded (catalog, selection, execution, recovery history).
Semver = Annotated[str, Field(pattern=SEMVER_PATTERN)]
# Bounded so that whatever the operator echoes into a status fits (an unbounded spec string made the
# status write fail with 422 and the analysis spin).
Short = Annotated[str, Field(max_length=253)]
Text = Annotated[str, Field(max_length=4096)]
Value = Annotated[str, Field(max_length=1024)]


class Model(BaseModel):
    """Base: camelCase on the wire, unknown fields rejected so drift from the CRD is loud."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)
    FOREIGN_FIELDS: ClassVar[frozenset[str]] = frozenset()
    """Fields another writer owns: never part of this writer's :meth:`merge_patch`."""

    def wire(self) -> dict[str, Any]:
        """The JSON-ready camelCase dict, without unset optional fields."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def merge_patch(self) -> dict[str, Any]:
        """The whole object as a JSON merge patch: unset fields become null, so the API server
        removes whatever an earlier write left behind (except :attr:`FOREIGN_FIELDS`, another
        writer's, which stay as that writer left them)."""
        return self.model_dump(
            mode="json", by_alias=True, exclude_none=False, exclude=set(self.FOREIGN_FIELDS)
        )

    @classmethod
    def parse_known(cls, raw: Mapping[str, Any]) -> Self:
        """Parse what the API server holds, ignoring fields other writers add (kopf's bookkeeping
        in a status, say); the fields this model declares are still checked strictly."""
        names = {field.alias or name for name, field in cls.model_fields.items()}
        return cls.model_validate({k: v for k, v in raw.items() if k in names})


class ResourceRef(Model):
    kind: Annotated[str, Field(min_length=1, max_length=253)]
    name: Name
    namespace: Short | None = None
