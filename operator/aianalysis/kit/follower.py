"""Follows the objects of one namespaced custom kind that match a server-side field selector: a
list-then-watch per namespace (one for all namespaces when none is named), each on a daemon thread
of its own, the way a client-go informer does it (:mod:`aianalysis.kube.watching`). The follower
keeps only each matching object's :class:`Ref` (a new object's body is handed over once, not kept),
and nothing of an object the selector excludes, however many of them the cluster holds.

* ``on_seen(ref, version, body)``: the object matches (listed, ``ADDED``, ``MODIFIED``); ``body`` is
  the object as listed or added — a new object's, which spares its first read — and None for a
  change (it may be the late echo of the caller's own write: read that one again);
* ``on_left(ref)``: it no longer does. The API server sends a deletion and a change out of the
  selection alike, as ``DELETED`` with the object as it was *before*: the caller tells them apart
  if it must.

A watch from a version the server no longer has (410 Gone) lists again; what was known and is not
listed any more has left. Any other failure is retried after a doubling delay capped at
``max_delay_seconds``; a thread ends only at :meth:`Follower.stop` (or when the loop is closed).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from aianalysis import errors, kube
from aianalysis.kit import backoff
from aianalysis.kube import objects, watching

log = logging.getLogger(__name__)

Seen = Callable[[objects.Ref, str | None, dict[str, Any] | None], None]
Left = Callable[[objects.Ref], None]


class _LoopClosed(Exception):
    """The event loop the callbacks run on is gone: the process is stopping."""


@dataclasses.dataclass
class _Scope:
    """One list-then-watch: a namespace (empty: all of them), what it matches now, where it is."""

    namespace: str
    known: dict[str, objects.Ref] = dataclasses.field(default_factory=dict)
    version: str | None = None
    """The version to watch from; None: list first."""
    listed: bool = False


class Follower:
    def __init__(
        self,
        api: kube.ApiClient,
        *,
        plural: str,
        namespaces: Sequence[str],
        field_selector: str | None,
        on_seen: Seen,
        on_left: Left,
        page_size: int = 500,
        watch_timeout_seconds: int = 300,
        first_delay_seconds: float = 1.0,
        max_delay_seconds: float = 30.0,
    ) -> None:
        self._api = api
        self._plural = plural
        self._scopes = [_Scope(namespace) for namespace in dict.fromkeys(namespaces or [""])]
        self._selector = field_selector
        self._on_seen = on_seen
        self._on_left = on_left
        self._page_size = page_size
        self._watch_timeout = watch_timeout_seconds
        self._delays = backoff.Backoff(
            first_seconds=first_delay_seconds, max_seconds=max_delay_seconds, retries=0
        )
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._all_listed: asyncio.Event | None = None
        self.last_error: str | None = None

    def start(self) -> None:
        """Start following (on the running loop, which the callbacks run on); once."""
        if self._threads:
            return
        self._loop = asyncio.get_running_loop()
        self._all_listed = asyncio.Event()
        for scope in self._scopes:
            name = f"follow {self._plural} in {scope.namespace or 'all namespaces'}"
            thread = threading.Thread(target=self._run, args=(scope,), name=name, daemon=True)
            self._threads.append(thread)
            thread.start()

    async def wait_listed(self) -> None:
        """Return once every namespace was listed (and what matched handed over); retried until."""
        assert self._all_listed is not None, "start() first"
        await self._all_listed.wait()

    @property
    def listed(self) -> bool:
        """Every namespace was listed once: the objects that matched then have been seen."""
        return bool(self._threads) and all(scope.listed for scope in self._scopes)

    def stop(self) -> None:
        """Ask the threads to end: at their next event, or when the current watch times out."""
        self._stopping.set()

    def _run(self, scope: _Scope) -> None:
        failures = 0
        while not self._stopping.is_set():
            try:
                if scope.version is None:
                    self._list(scope)
                self._watch(scope)
                failures = 0
            except _LoopClosed:
                return
            except errors.AIAnalysisError as exc:  # kube.calls mapped it
                if getattr(exc, "status", None) == watching.GONE:
                    scope.version = None  # expired: list again, at once
                    continue
                failures += 1
                self._pause(scope, failures, str(exc))
            except Exception as exc:  # supervised: a bug must not end the following silently
                log.exception("following %s: unexpected error; listing again", self._plural)
                scope.version = None
                failures += 1
                self._pause(scope, failures, f"{type(exc).__name__}: {exc}")

    def _list(self, scope: _Scope) -> None:
        listed: dict[str, objects.Ref] = {}
        version = ""
        for page in watching.pages(
            self._api,
            plural=self._plural,
            page_size=self._page_size,
            namespace=scope.namespace,
            field_selector=self._selector,
        ):
            for obj in page.items:
                ref = objects.Ref.of(obj)
                listed[ref.uid] = ref
                self._post(self._on_seen, ref, _version(obj), obj)
            version = page.resource_version
        for uid in scope.known.keys() - listed.keys():
            self._post(self._on_left, scope.known[uid])
        scope.known, scope.version, scope.listed = listed, version, True
        self.last_error = None
        self._post(self._check_listed)

    def _check_listed(self) -> None:
        if self.listed and self._all_listed is not None:
            self._all_listed.set()

    def _watch(self, scope: _Scope) -> None:
        assert scope.version is not None
        for event_type, obj, version in watching.watch(
            self._api,
            plural=self._plural,
            resource_version=scope.version,
            timeout_seconds=self._watch_timeout,
            stopping=self._stopping,
            namespace=scope.namespace,
            field_selector=self._selector,
        ):
            if event_type in ("ADDED", "MODIFIED"):
                ref = objects.Ref.of(obj)
                scope.known[ref.uid] = ref
                self._post(self._on_seen, ref, _version(obj), obj if event_type == "ADDED" else None)
            elif event_type == "DELETED":
                ref = objects.Ref.of(obj)
                scope.known.pop(ref.uid, None)
                self._post(self._on_left, ref)
            scope.version = version or scope.version

    def _post(self, callback: Callable[..., None], *args: Any) -> None:
        assert self._loop is not None
        try:
            self._loop.call_soon_threadsafe(self._call, callback, *args)
        except RuntimeError as exc:  # the loop is closed
            raise _LoopClosed from exc

    def _call(self, callback: Callable[..., None], *args: Any) -> None:
        try:
            callback(*args)
        except Exception:  # one object's bug must not reach the loop's handler for every event
            log.exception("following %s: handling %s failed", self._plural, args[0])

    def _pause(self, scope: _Scope, failures: int, why: str) -> None:
        if self._stopping.is_set():  # the API client closes under us at shutdown: not worth a warning
            return
        self.last_error = why
        delay = self._delays.delay(failures)
        where = scope.namespace or "all namespaces"
        log.warning("following %s in %s failed (%s); retrying in %.0f s", self._plural, where, why, delay)
        self._stopping.wait(delay)


def _version(obj: dict[str, Any]) -> str | None:
    version = (obj.get("metadata") or {}).get("resourceVersion")
    return version if isinstance(version, str) else None
