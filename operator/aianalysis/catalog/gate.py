"""The admission gate between the cluster's RemediationWorkflows and the operator's catalog.

``AdmissionGate`` decides (``catalog.admission``) which objects the catalog offers and hands each verdict to
a ``Reporter``, which makes it visible: the object's ``Accepted`` condition (written only when it
changes, so a restart or a re-list writes nothing), a Warning Event when an object is refused, and
the metrics ``aianalysis_catalog_workflows_refused`` / ``aianalysis_catalog_refusals_total``.

Only ``CatalogSync`` calls the gate, from its one thread, so the gate needs no lock of its own.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from aianalysis import errors, kube, metrics, resources
from aianalysis.catalog import admission, store
from aianalysis.kube import events, objects

log = logging.getLogger(__name__)

CONDITION = "Accepted"
_Key = tuple[str, str]


class Reporter(Protocol):
    def observe(self, obj: Mapping[str, Any]) -> None: ...
    def forget(self, name: str) -> None: ...
    def report(self, name: str, verdict: admission.Verdict) -> None: ...


class AdmissionGate:
    """Keeps ``catalog`` equal to the accepted objects and reports every verdict."""

    def __init__(self, *, catalog: store.Catalog, reporter: Reporter) -> None:
        self._catalog = catalog
        self._reporter = reporter
        self._claims: dict[str, tuple[_Key, admission.Claim]] = {}

    def admit(self, obj: Mapping[str, Any]) -> None:
        """An object was listed, added or modified."""
        metadata = obj.get("metadata") or {}
        name = str(metadata.get("name"))
        self._reporter.observe(obj)
        verdict = admission.review(obj.get("spec") or {})
        previous = self._claims.pop(name, None)
        if verdict.spec is None or not verdict.accepted:
            self._catalog.remove(name)
            self._reporter.report(name, verdict)
            log.warning("RemediationWorkflow %s is refused (%s): %s", name, verdict.reason, verdict.message)
        else:
            key = (verdict.spec.workflow_id, verdict.spec.version)
            claim = admission.Claim(
                name=name, created=str(metadata.get("creationTimestamp") or ""), spec=verdict.spec
            )
            self._claims[name] = (key, claim)
            self._settle(key)
        if previous is not None and previous[0] != self._key(name):
            self._settle(previous[0])

    def remove(self, name: str) -> None:
        """An object was deleted."""
        previous = self._claims.pop(name, None)
        self._catalog.remove(name)
        self._reporter.forget(name)
        if previous is not None:
            self._settle(previous[0])

    def _key(self, name: str) -> _Key | None:
        held = self._claims.get(name)
        return held[0] if held else None

    def _settle(self, key: _Key) -> None:
        claims = [claim for held, claim in self._claims.values() if held == key]
        for name, verdict in admission.settle(claims).items():
            if verdict.accepted and verdict.spec is not None:
                self._catalog.upsert(name, verdict.spec)
            else:
                self._catalog.remove(name)
            self._reporter.report(name, verdict)


class ReadOnlyReporter:
    """For processes that only read the catalog (the executor, ``aianalysis mcp``): they apply the
    same verdicts but leave writing them (status, Events, metrics) to the operator."""

    def observe(self, obj: Mapping[str, Any]) -> None:
        pass

    def forget(self, name: str) -> None:
        pass

    def report(self, name: str, verdict: admission.Verdict) -> None:
        pass


@dataclasses.dataclass
class _Seen:
    generation: int | None
    uid: str | None
    resource_version: str | None
    status: Mapping[str, Any] | None
    """The status as observed: a verdict is written onto that version of the object only."""
    condition: tuple[str, str, str, int | None] | None
    """(status, reason, message, observedGeneration) of the object's Accepted condition."""


class ClusterReporter:
    """Writes verdicts to the cluster (status, Events) and the metrics. API failures are logged
    and dropped: the verdict is written again the next time the object changes or is re-listed."""

    def __init__(self, api: kube.ApiClient, *, now: Callable[[], datetime.datetime] | None = None) -> None:
        self._api = api
        self._now = now or (lambda: datetime.datetime.now(datetime.UTC))
        self._seen: dict[str, _Seen] = {}
        self._refused: dict[str, str] = {}

    def observe(self, obj: Mapping[str, Any]) -> None:
        metadata = obj.get("metadata") or {}
        self._seen[str(metadata.get("name"))] = _Seen(
            generation=metadata.get("generation"),
            uid=metadata.get("uid"),
            resource_version=metadata.get("resourceVersion"),
            status=obj.get("status") if isinstance(obj.get("status"), Mapping) else None,
            condition=_accepted_condition(obj.get("status")),
        )

    def forget(self, name: str) -> None:
        self._seen.pop(name, None)
        self._refused.pop(name, None)
        metrics.CATALOG_REFUSED.set(len(self._refused))

    def report(self, name: str, verdict: admission.Verdict) -> None:
        seen = self._seen.get(name)
        if seen is None:
            return
        wanted = ("True" if verdict.accepted else "False", verdict.reason, verdict.message, seen.generation)
        was_refused = self._refused.get(name)
        if verdict.accepted:
            self._refused.pop(name, None)
        else:
            self._refused[name] = verdict.reason
        metrics.CATALOG_REFUSED.set(len(self._refused))
        if seen.condition == wanted:
            return
        if self._patch(name, seen, wanted):
            seen.condition = wanted
            if not verdict.accepted and was_refused != verdict.reason:
                metrics.CATALOG_REFUSALS.labels(reason=verdict.reason).inc()
                self._event(name, seen, verdict)

    def _patch(self, name: str, seen: _Seen, wanted: tuple[str, str, str, int | None]) -> bool:
        status, reason, message, generation = wanted
        condition = resources.Condition(
            type=CONDITION,
            status=status,
            reason=reason,
            message=message,
            last_transition_time=_stamp(self._now()),
            observed_generation=generation,
        )
        fields = resources.RemediationWorkflowStatus(conditions=[condition]).wire()
        if not seen.uid:
            return False
        try:
            written = objects.write_status_blocking(
                self._api,
                namespace="",
                plural=resources.REMEDIATIONWORKFLOW_PLURAL,
                name=name,
                uid=seen.uid,
                fields=fields,
                current=seen.status,
                resource_version=seen.resource_version,
            )
        except errors.AIAnalysisError as exc:
            log.warning("could not write the Accepted condition of RemediationWorkflow %s: %s", name, exc)
            return False
        # Changed or gone since observed: the watch brings the newer version, and it is reported then.
        return written is objects.Written.OK

    def _event(self, name: str, seen: _Seen, verdict: admission.Verdict) -> None:
        about = {
            "apiVersion": resources.API_VERSION,
            "kind": "RemediationWorkflow",
            "metadata": {"name": name, "uid": seen.uid},
        }
        events.post(
            self._api,
            about=about,
            type="Warning",
            reason=verdict.reason,
            message=verdict.message,
            now=self._now(),
        )


def _accepted_condition(status: object) -> tuple[str, str, str, int | None] | None:
    if not isinstance(status, Mapping):
        return None
    for condition in status.get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == CONDITION:
            return (
                str(condition.get("status")),
                str(condition.get("reason")),
                str(condition.get("message") or ""),
                condition.get("observedGeneration"),
            )
    return None


def _stamp(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
