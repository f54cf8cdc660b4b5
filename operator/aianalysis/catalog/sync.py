"""Keeps the operator's catalog equal to the cluster's RemediationWorkflows: one paginated LIST at
startup (no analysis runs before it completes), then a WATCH from that resourceVersion in a thread,
re-listing when the watch expires (410 Gone) — the list-then-watch of a client-go informer, with
the catalog as its store.

Why not ``kopf.index``: until an index is filled, kopf parks the worker of every indexed object on
one ``asyncio.Condition`` and wakes all of them for each new object, so loading is quadratic in
the number of workflows (4,000 took 130 s, 10,000 would take about 15 minutes, every parked worker
and its body held in memory meanwhile). One LIST loads 10,000 in seconds.
"""

from __future__ import annotations

import gc
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import aianalysis.catalog
from aianalysis import errors, kube, resources
from aianalysis.catalog import gate
from aianalysis.kube import watching

log = logging.getLogger(__name__)

PLURAL = resources.REMEDIATIONWORKFLOW_PLURAL


class CatalogSync:
    """The only writer of ``catalog`` in the operator. ``on_change`` runs after every change."""

    def __init__(
        self,
        *,
        api: kube.ApiClient,
        catalog: aianalysis.catalog.Catalog,
        on_change: Callable[[], None] = lambda: None,
        on_heard: Callable[[float], None] = lambda _: None,
        page_size: int = 500,
        watch_timeout_seconds: int = 300,
        retry_delay_seconds: float = 5.0,
        reporter: gate.Reporter | None = None,
    ) -> None:
        self._api = api
        self._catalog = catalog
        self._reporter = reporter or gate.ClusterReporter(api)
        self._gate = gate.AdmissionGate(catalog=catalog, reporter=self._reporter)
        self._on_change = on_change
        self._on_heard = on_heard
        self._page_size = page_size
        self._watch_timeout = watch_timeout_seconds
        self._retry_delay = retry_delay_seconds
        self._names: set[str] = set()
        self._version = ""
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.last_success: float | None = None
        """Unix time the API server last answered this sync (a list, an event, a watch that ended)."""

    def load(self) -> int:
        """LIST every RemediationWorkflow and make the catalog hold exactly those (blocking).
        Returns how many objects were listed."""
        writer = self._reporter if isinstance(self._reporter, gate.ClusterReporter) else None
        if writer is not None:
            writer.hold()  # the verdicts are written once the catalog serves
        # The first load builds thousands of long-lived records at once: the cyclic GC would walk the
        # growing heap again and again for nothing (the caller collects and freezes once, after).
        collecting = self._thread is None and gc.isenabled()
        if collecting:
            gc.disable()
        try:
            return self._load()
        finally:
            if collecting:
                gc.enable()
            if writer is not None:
                writer.release()

    def _load(self) -> int:
        listed: set[str] = set()
        version = ""
        pages = watching.pages(self._api, plural=PLURAL, page_size=self._page_size)
        for page in _ahead(pages):
            for obj in page.items:
                listed.add(obj["metadata"]["name"])
                self._upsert(obj)
            version = page.resource_version
        for name in self._names - listed:
            self._remove(name)
        self._version = version
        self._on_change()
        self._heard()
        return len(listed)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until the verdicts of what was loaded so far are written to the cluster (the
        writes follow the load in a thread of their own); False on timeout."""
        if isinstance(self._reporter, gate.ClusterReporter):
            return self._reporter.flush(timeout)
        return True

    def start(self) -> None:
        """Follow changes in a daemon thread (call after ``load``; a second call does nothing)."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._follow, name="catalog-sync", daemon=True)
        self._thread.start()

    @property
    def alive(self) -> bool:
        """The following thread runs (False before ``start`` and once it has died)."""
        return self._thread is not None and self._thread.is_alive()

    def fresh(self, *, now: float, max_age_seconds: float) -> bool:
        """The API server answered this sync within ``max_age_seconds`` of ``now`` (Unix time)."""
        return self.last_success is not None and now - self.last_success <= max_age_seconds

    def _heard(self) -> None:
        self.last_success = time.time()
        self._on_heard(self.last_success)

    def stop(self) -> None:
        """Ask the thread to end; it does at its next event or when the current watch times out."""
        self._stopping.set()
        if isinstance(self._reporter, gate.ClusterReporter):
            self._reporter.close()

    def apply(self, event_type: str, obj: dict[str, Any]) -> None:
        """One watch event: ADDED/MODIFIED upsert the object, DELETED removes it."""
        if event_type == "DELETED":
            self._remove(obj["metadata"]["name"])
        elif event_type in ("ADDED", "MODIFIED"):
            self._upsert(obj)
        else:
            return
        self._on_change()

    def _follow(self) -> None:
        while not self._stopping.is_set():
            try:
                self._watch()
            except errors.AIAnalysisError as exc:  # kube.calls mapped it
                if getattr(exc, "status", None) == watching.GONE:
                    self._relist()
                    continue
                self._pause(f"watching RemediationWorkflows failed ({exc})")
            except Exception:  # supervised: a bug in one event must not end the sync silently
                log.exception("catalog sync: unexpected error; re-listing")
                self._pause("catalog sync failed unexpectedly")
                self._relist()

    def _watch(self) -> None:
        for event_type, obj, version in watching.watch(
            self._api,
            plural=PLURAL,
            resource_version=self._version,
            timeout_seconds=self._watch_timeout,
            stopping=self._stopping,
        ):
            self.apply(event_type, obj)
            self._version = version or self._version
            self._heard()
        self._heard()  # the server ended the watch at its timeout: it is alive

    def _relist(self) -> None:
        try:
            self.load()
        except errors.AIAnalysisError as exc:
            self._pause(f"re-listing RemediationWorkflows failed ({exc})")

    def _pause(self, why: str) -> None:
        if self._stopping.is_set():  # the API client closes under us at shutdown: not worth a warning
            return
        log.warning("%s; retrying in %.0f s", why, self._retry_delay)
        self._stopping.wait(self._retry_delay)

    def _upsert(self, obj: dict[str, Any]) -> None:
        """Only accepted objects reach the catalog; the gate reports every verdict."""
        self._gate.admit(obj)
        self._names.add(obj["metadata"]["name"])

    def _remove(self, name: str) -> None:
        self._gate.remove(name)
        self._names.discard(name)


_END = object()


def _ahead(pages: Iterator[watching.Listing]) -> Iterator[watching.Listing]:
    """``pages``, the next one requested from the API server while this one is admitted (a LIST
    page is the API server's work, admitting it ours: on two cores they overlap). At most two
    pages wait; the fetching thread ends with the list, on a failure (raised here) or when the
    consumer stops early."""
    ready: queue.Queue[object] = queue.Queue(maxsize=2)
    done = threading.Event()

    def put(item: object) -> bool:
        while not done.is_set():
            try:
                ready.put(item, timeout=0.5)
                return True
            except queue.Full:
                continue
        return False

    def fetch() -> None:
        last: object = _END
        try:
            for page in pages:
                if not put(page):
                    return
        except Exception as exc:  # noqa: BLE001  # handed to the consumer, which raises it
            last = exc
        finally:
            put(last)  # whatever happened, the consumer is never left waiting

    threading.Thread(target=fetch, name="catalog-list", daemon=True).start()
    try:
        while True:
            item = ready.get()
            if item is _END:
                return
            if isinstance(item, Exception):
                raise item
            assert isinstance(item, watching.Listing)
            yield item
    finally:
        done.set()
