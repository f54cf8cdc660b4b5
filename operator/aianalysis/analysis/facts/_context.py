"""The incident's business context as the analysis uses it: the AIAnalysis spec's, completed from
the incident namespace's labels and annotations (``catalog.business``). Read once per analysis.

A namespace that cannot be read (no cluster, forbidden, gone mid-analysis) adds nothing: the
spec's context stands alone and a warning says why, so the analysis still ends with a status.
"""

from __future__ import annotations

from collections.abc import Sequence

from aianalysis import errors, resources
from aianalysis.catalog import business
from aianalysis.kube import readers


async def with_business_context(
    reader: readers.ClusterReader | None,
    spec: resources.AIAnalysisSpec,
    *,
    prefixes: Sequence[str] = business.DEFAULT_PREFIXES,
    home: str | None = None,
) -> tuple[resources.AIAnalysisSpec, list[str]]:
    """``spec`` with its business context merged over the namespace's, and warnings. The namespace
    is the incident resource's (the Namespace itself for a namespace incident), else ``home``
    (the AIAnalysis' own: a Node incident is analysed in the namespace the alert named)."""
    resource = spec.resource
    namespace = resource.name if resource.kind == "Namespace" else (resource.namespace or home)
    if reader is None or not namespace:
        return spec, []
    try:
        found = await reader.get_object(kind="Namespace", name=namespace, namespace=None)
    except (readers.Unavailable, errors.ClusterError) as exc:
        why = f"namespace {namespace} could not be read ({exc}): business context from the spec only"
        return spec, [why[:300]]
    meta = found.get("metadata") or {}
    derived = business.from_metadata(meta.get("labels"), meta.get("annotations"), prefixes=prefixes)
    merged = business.merge(spec.business_context, derived)
    warnings = [f"namespace {namespace} business label ignored: {why}" for why in derived.ignored]
    return spec.model_copy(update={"business_context": merged}), warnings
