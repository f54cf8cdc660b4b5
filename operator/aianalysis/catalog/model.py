"""Value types of the catalog: a stored workflow, a search query and a search hit."""

from __future__ import annotations

import dataclasses
import hashlib
import json

from aianalysis import resources

DEFAULT_TOP_K = 10
MAX_TOP_K = 100


@dataclasses.dataclass(frozen=True, slots=True)
class Workflow:
    """One RemediationWorkflow object: its Kubernetes name and its spec."""

    name: str
    spec: resources.RemediationWorkflowSpec

    @property
    def workflow_id(self) -> str:
        return self.spec.workflow_id

    @property
    def version(self) -> str:
        return self.spec.version

    @property
    def digest(self) -> str:
        return spec_digest(self.spec)


def spec_digest(spec: resources.RemediationWorkflowSpec) -> str:
    """``sha256:<hex>`` of the spec's canonical JSON: what was validated is what runs (the image,
    ServiceAccount, parameters and lifecycle all count; a change under the same id and version
    gives another digest)."""
    wire = spec.model_dump(mode="json", by_alias=True, exclude_none=True)
    text = json.dumps(wire, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


@dataclasses.dataclass(frozen=True, kw_only=True)
class SearchQuery:
    """What the caller (usually the LLM, through the search tool) asks for.

    ``environment``, ``priority``, ``business_category`` and ``risk_tolerance`` can only
    NARROW the incident's business context (the system's, never the LLM's): a value that contradicts the
    incident matches nothing, and a risk tolerance above the incident's is capped at it.
    ``signal_type``, ``action_type``, ``severity`` and ``component`` are hard filters when given
    (``signal_type`` also admits workflows that declare no signal types; they are classified by
    action type). ``text`` ranks.
    """

    text: str = ""
    signal_type: str | None = None
    action_type: str | None = None
    severity: str | None = None
    component: str | None = None
    environment: str | None = None
    priority: str | None = None
    business_category: str | None = None
    risk_tolerance: str | None = None
    top_k: int = DEFAULT_TOP_K
    all_versions: bool = False
    """Return every matching version instead of only the highest eligible version of each workflowId."""

    def __post_init__(self) -> None:
        # Raised as ValueError so a tool can hand the message back to the LLM verbatim.
        if not 1 <= self.top_k <= MAX_TOP_K:
            raise ValueError(f"top_k must be between 1 and {MAX_TOP_K}, got {self.top_k}")
        if self.risk_tolerance is not None and self.risk_tolerance not in resources.RISK_ORDER:
            allowed = ", ".join(resources.RISK_ORDER)
            raise ValueError(f"risk_tolerance must be one of {allowed}, got {self.risk_tolerance!r}")


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class SearchHit:
    """One search result in the minimal shape the LLM needs to choose (plus the title, for people).

    ``confidence`` is in 0..1; see ``aianalysis.catalog.index`` for exactly what it means.
    """

    workflow_id: str
    version: str
    title: str
    description: str
    confidence: float
    action_type: str | None = None
    deprecated: bool = False
