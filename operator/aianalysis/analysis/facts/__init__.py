"""What the cluster says about an incident, read-only: the facts detected on a remediation target
(Kubernaut's ``detectedLabels``, ``_detect``), the workload the incident concerns (``_workload``)
and the business context its namespace adds to the spec's (``_context``).

The analysis reads them to filter the catalog and validate its answer; the executor reads them
again, from the cluster and never from the analysis' status (which anyone who may write that status
could forge), so a selection is re-validated under the facts it was validated under
(:func:`as_analysed`). No LLM and no tool text here: both processes use this package.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence

from aianalysis import catalog, resources
from aianalysis.analysis import scope
from aianalysis.analysis.facts._context import with_business_context
from aianalysis.analysis.facts._detect import (
    detect,
    list_in,
    owner_chain,
    owner_refs,
    pod_template,
    read,
    selects,
)
from aianalysis.analysis.facts._workload import (
    SELECTORS,
    at,
    concerned_workload,
    listed,
    named_ref,
    target_kinds,
    workload_starts,
)
from aianalysis.catalog import business
from aianalysis.kube import readers


@dataclasses.dataclass(frozen=True, kw_only=True)
class AsAnalysed:
    """The facts a selection is validated under, as the cluster shows them now."""

    business: resources.BusinessContext
    """The spec's business context completed from the incident namespace's labels and annotations."""
    target: catalog.TargetFacts
    """The facts detected on the remediation target (with the incident's workload's, as the analysis)."""
    warnings: list[str]


async def as_analysed(
    reader: readers.ClusterReader,
    spec: resources.AIAnalysisSpec,
    target: scope.ObjectRef | None,
    *,
    home: str,
    prefixes: Sequence[str] = business.DEFAULT_PREFIXES,
) -> AsAnalysed:
    """The business context and the target's facts, read from the cluster exactly as the analysis
    read them (``pipeline.analyze``: ``with_business_context``, the scope's concerned workload,
    ``detect``). ``home`` is the AIAnalysis' own namespace (an incident about a Node is analysed
    there). A read that fails leaves its part unknown, as in the analysis: an unknown fact never
    meets a requirement, so the selection is then refused, never admitted on a guess. Without a
    ``target`` only the business context is read (every fact unknown)."""
    context = with_business_context(reader, spec, prefixes=prefixes, home=home)
    if target is None:
        completed, warnings = await context
        return AsAnalysed(
            business=completed.business_context, target=catalog.TargetFacts(), warnings=warnings
        )
    resource = spec.resource
    belongs = scope.namespace_of(kind=resource.kind, name=resource.name, namespace=resource.namespace)
    incident = scope.Scope.of(
        resource.model_copy(update={"namespace": belongs or home}), cluster=True, kinds=target_kinds()
    ).incident
    (completed, warnings), starts = await asyncio.gather(context, workload_starts(reader, incident))
    detected = await detect(reader, target, workload=concerned_workload(starts))
    return AsAnalysed(business=completed.business_context, target=detected, warnings=warnings)


__all__ = [
    "SELECTORS",
    "AsAnalysed",
    "as_analysed",
    "at",
    "concerned_workload",
    "detect",
    "list_in",
    "listed",
    "named_ref",
    "owner_chain",
    "owner_refs",
    "pod_template",
    "read",
    "selects",
    "target_kinds",
    "with_business_context",
    "workload_starts",
]
