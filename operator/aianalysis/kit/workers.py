"""One asyncio task per object, keyed by its uid: a watch event starts the task unless one runs
already, deleting the object cancels it, and an object is not picked up again at the version a
finished task already saw (a status that cannot be parsed is reported once, not per event). An
object that leaves a filtered watch is released: nothing of it is kept once its task has ended."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

log = logging.getLogger(__name__)


class Workers:
    def __init__(self) -> None:
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._finished_at: dict[str, str | None] = {}
        self._released: set[str] = set()
        """Keys whose object left the watch while their task ran: no record once it ends."""
        self._checks: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        return len(self._tasks)

    def ensure(
        self, key: str, *, version: str | None, start: Callable[[], Coroutine[Any, Any, None]]
    ) -> bool:
        """Start ``start()`` for ``key`` unless a task for it runs, or one finished at ``version``."""
        self._released.discard(key)  # (back) in view
        if key in self._tasks or (version is not None and self._finished_at.get(key) == version):
            return False
        task = asyncio.get_running_loop().create_task(start(), name=f"reconcile {key}")
        self._tasks[key] = task
        task.add_done_callback(lambda done: self._done(key, version, done))
        return True

    def forget(self, key: str) -> None:
        """The object is gone: cancel its task (its result could only be dropped)."""
        self._finished_at.pop(key, None)
        self._released.discard(key)
        task = self._tasks.pop(key, None)
        if task is not None:
            task.cancel()

    def release(self, key: str, *, deleted: Callable[[], Awaitable[bool]], grace_seconds: float) -> None:
        """The object left a filtered watch: deleted, or changed so that the watch's selector
        excludes it (it went terminal) — the API server says both the same way. Nothing of it is
        kept once its task has ended. A task that still runs ``grace_seconds`` later is cancelled
        if ``deleted()`` says the object is gone; otherwise it runs on to its end (it found, or
        will find, the terminal status itself). Most tasks end within the grace (their own
        terminal write is what moved the object out), so the question is rarely asked."""
        task = self._tasks.get(key)
        if task is None:
            self._finished_at.pop(key, None)
            return
        self._released.add(key)
        check = asyncio.get_running_loop().create_task(
            self._cancel_if_deleted(key, task, deleted, grace_seconds), name=f"released {key}"
        )
        self._checks.add(check)
        check.add_done_callback(self._checks.discard)

    async def _cancel_if_deleted(
        self,
        key: str,
        task: asyncio.Task[None],
        deleted: Callable[[], Awaitable[bool]],
        grace_seconds: float,
    ) -> None:
        await asyncio.wait({task}, timeout=grace_seconds)
        if self._tasks.get(key) is not task or key not in self._released:
            return  # it ended, or its object is back in view
        if await deleted() and self._tasks.get(key) is task:
            self.forget(key)

    def _done(self, key: str, version: str | None, task: asyncio.Task[None]) -> None:
        if self._tasks.get(key) is task:
            del self._tasks[key]
            if key in self._released:
                self._released.discard(key)
            else:
                self._finished_at[key] = version
        if not task.cancelled() and task.exception() is not None:
            log.error("reconciling %s ended with an error", key, exc_info=task.exception())

    async def aclose(self) -> None:
        tasks = [*self._tasks.values(), *self._checks]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        self._checks.clear()
