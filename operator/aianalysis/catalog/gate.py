"""The admission gate between the cluster's RemediationWorkflows and the operator's catalog.

``AdmissionGate`` decides (``catalog.admission``) which objects the catalog offers and hands each verdict to
a ``Reporter``, which makes it visible: the object's ``Accepted`` condition (written only when it
changes, so a restart or a re-list writes nothing), a Warning Event when an object is refused, and
the metrics ``aianalysis_catalog_workflows_refused`` / ``aianalysis_catalog_refusals_total``.

Only ``CatalogSync`` calls the gate, from its one thread, so the gate needs no lock of its own.
Settling a workflowId + version looks only at the objects claiming it (an index by key), so
admitting N objects costs O(N), not O(N²) (10,000 objects: 4 s before). The cluster writes happen
in ``ClusterReporter``'s writer thread, after the catalog is usable.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from aianalysis import errors, kube, metrics, resources
from aianalysis.catalog import admission, store
from aianalysis.kube import events, objects

log = logging.getLogger(__name__)

CONDITION = "Accepted"
_Key = tuple[str, str]
#: (status, reason, message, observedGeneration) of an object's Accepted condition.
_Condition = tuple[str, str, str, int | None]


class Reporter(Protocol):
    def observe(self, obj: Mapping[str, Any]) -> None: ...
    def forget(self, name: str) -> None: ...
    def report(self, name: str, verdict: admission.Ruling) -> None: ...


class AdmissionGate:
    """Keeps ``catalog`` equal to the accepted objects and reports every verdict."""

    def __init__(self, *, catalog: store.Catalog, reporter: Reporter) -> None:
        self._catalog = catalog
        self._reporter = reporter
        self._claims: dict[str, tuple[_Key, admission.Claim]] = {}
        self._claimants: dict[_Key, set[str]] = {}
        """The names claiming each key: settling one key never walks the whole catalog."""

    def admit(self, obj: Mapping[str, Any]) -> None:
        """An object was listed, added or modified."""
        metadata = obj.get("metadata") or {}
        name = str(metadata.get("name"))
        self._reporter.observe(obj)
        verdict = admission.review(obj.get("spec") or {})
        previous = self._unclaim(name)
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
            self._claimants.setdefault(key, set()).add(name)
            self._settle(key)
        if previous is not None and previous[0] != self._key(name):
            self._settle(previous[0])

    def remove(self, name: str) -> None:
        """An object was deleted."""
        previous = self._unclaim(name)
        self._catalog.remove(name)
        self._reporter.forget(name)
        if previous is not None:
            self._settle(previous[0])

    def _unclaim(self, name: str) -> tuple[_Key, admission.Claim] | None:
        previous = self._claims.pop(name, None)
        if previous is not None:
            names = self._claimants[previous[0]]
            names.discard(name)
            if not names:
                del self._claimants[previous[0]]
        return previous

    def _key(self, name: str) -> _Key | None:
        held = self._claims.get(name)
        return held[0] if held else None

    def _settle(self, key: _Key) -> None:
        claims = [self._claims[name][1] for name in sorted(self._claimants.get(key, ()))]
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

    def report(self, name: str, verdict: admission.Ruling) -> None:
        pass


@dataclasses.dataclass
class _Seen:
    generation: int | None
    uid: str | None
    resource_version: str | None
    status: Mapping[str, Any] | None
    """The status as observed: a verdict is written onto that version of the object only."""
    condition: _Condition | None
    """(status, reason, message, observedGeneration) of the object's Accepted condition."""


@dataclasses.dataclass(frozen=True)
class _Write:
    condition: _Condition
    announce: bool
    """Post the refusal Event once the condition is written (the refusal is new)."""


class ClusterReporter:
    """Writes verdicts to the cluster (status, Events) and the metrics. API failures are logged
    and dropped: the verdict is written again the next time the object changes or is re-listed.

    The writes happen in a writer thread, in the order the verdicts came (one pending write per
    object: a newer verdict replaces an unwritten one), so loading a large catalog never waits
    for thousands of status writes: the catalog serves searches as soon as it is listed, and the
    conditions follow. The thread exits when nothing is pending; ``close`` drops what is left."""

    def __init__(self, api: kube.ApiClient, *, now: Callable[[], datetime.datetime] | None = None) -> None:
        self._api = api
        self._now = now or (lambda: datetime.datetime.now(datetime.UTC))
        self._seen: dict[str, _Seen] = {}
        self._refused: dict[str, str] = {}
        self._lock = threading.Lock()
        self._pending: dict[str, _Write] = {}
        self._writer: threading.Thread | None = None
        self._closed = False
        self._held = False

    def observe(self, obj: Mapping[str, Any]) -> None:
        metadata = obj.get("metadata") or {}
        seen = _Seen(
            generation=metadata.get("generation"),
            uid=metadata.get("uid"),
            resource_version=metadata.get("resourceVersion"),
            status=obj.get("status") if isinstance(obj.get("status"), Mapping) else None,
            condition=_accepted_condition(obj.get("status")),
        )
        with self._lock:
            self._seen[str(metadata.get("name"))] = seen

    def forget(self, name: str) -> None:
        with self._lock:
            self._seen.pop(name, None)
            self._pending.pop(name, None)
        self._refused.pop(name, None)
        metrics.CATALOG_REFUSED.set(len(self._refused))

    def report(self, name: str, verdict: admission.Ruling) -> None:
        with self._lock:
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
        with self._lock:
            if seen.condition == wanted:
                self._pending.pop(name, None)
                return
            announce = not verdict.accepted and was_refused != verdict.reason
            if announce:
                metrics.CATALOG_REFUSALS.labels(reason=verdict.reason).inc()
            earlier = self._pending.pop(name, None)
            if earlier is not None and earlier.condition == wanted:
                announce = announce or earlier.announce
            self._pending[name] = _Write(wanted, announce)
            self._start_writer()

    def hold(self) -> None:
        """Queue verdicts without writing them until ``release`` (while the catalog loads: the
        writer would compete with the load for the interpreter)."""
        with self._lock:
            self._held = True

    def release(self) -> None:
        with self._lock:
            self._held = False
            self._start_writer()

    def _start_writer(self) -> None:
        """(lock held)"""
        if self._pending and self._writer is None and not self._closed and not self._held:
            self._writer = threading.Thread(target=self._write_all, name="catalog-verdicts", daemon=True)
            self._writer.start()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every pending verdict is written (or dropped); False on timeout."""
        with self._lock:
            writer = self._writer
        if writer is not None:
            writer.join(timeout)
            return not writer.is_alive()
        return True

    def close(self) -> None:
        """Drop the pending writes and let the writer thread end (the process is stopping)."""
        with self._lock:
            self._closed = True
            self._pending.clear()

    def _write_all(self) -> None:
        while True:
            with self._lock:
                if not self._pending or self._closed:
                    self._writer = None
                    return
                name = next(iter(self._pending))
                write = self._pending.pop(name)
                seen = self._seen.get(name)
            if seen is None or not self._patch(name, seen, write.condition):
                continue
            with self._lock:
                seen.condition = write.condition
            if write.announce:
                self._event(name, seen, write.condition)

    def _patch(self, name: str, seen: _Seen, wanted: _Condition) -> bool:
        status, reason, message, generation = wanted
        accepted: resources.ConditionStatus = "True" if status == "True" else "False"  # a verdict's
        condition = resources.condition(
            CONDITION, accepted, reason, message, now=self._now(), generation=generation
        )
        fields = resources.RemediationWorkflowStatus(conditions=[condition]).wire()
        if not seen.uid:
            return False
        try:
            written, _ = objects.write_status_blocking(
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

    def _event(self, name: str, seen: _Seen, condition: _Condition) -> None:
        _, reason, message, _ = condition
        about = {
            "apiVersion": resources.API_VERSION,
            "kind": "RemediationWorkflow",
            "metadata": {"name": name, "uid": seen.uid},
        }
        events.post(self._api, about=about, type="Warning", reason=reason, message=message, now=self._now())


def _accepted_condition(status: object) -> _Condition | None:
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
