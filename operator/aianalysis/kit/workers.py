"""One asyncio task per object, keyed by its uid: a watch event starts the task unless one runs
already, deleting the object cancels it, and an object is not picked up again at the version a
finished task already saw (a status that cannot be parsed is reported once, not per event)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import Any

log = logging.getLogger(__name__)


class Workers:
    def __init__(self) -> None:
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._finished_at: dict[str, str | None] = {}

    def __len__(self) -> int:
        return len(self._tasks)

    def ensure(
        self, key: str, *, version: str | None, start: Callable[[], Coroutine[Any, Any, None]]
    ) -> bool:
        """Start ``start()`` for ``key`` unless a task for it runs, or one finished at ``version``."""
        if key in self._tasks or (version is not None and self._finished_at.get(key) == version):
            return False
        task = asyncio.get_running_loop().create_task(start(), name=f"reconcile {key}")
        self._tasks[key] = task
        task.add_done_callback(lambda done: self._done(key, version, done))
        return True

    def forget(self, key: str) -> None:
        """The object is gone: cancel its task (its result could only be dropped)."""
        self._finished_at.pop(key, None)
        task = self._tasks.pop(key, None)
        if task is not None:
            task.cancel()

    def _done(self, key: str, version: str | None, task: asyncio.Task[None]) -> None:
        if self._tasks.get(key) is task:
            del self._tasks[key]
            self._finished_at[key] = version
        if not task.cancelled() and task.exception() is not None:
            log.error("reconciling %s ended with an error", key, exc_info=task.exception())

    async def aclose(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
