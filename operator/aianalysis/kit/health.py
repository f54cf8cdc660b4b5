"""The health port: ``GET /healthz`` (liveness) and ``GET /readyz`` (readiness), 200 or 503 with a
plain-text reason per check, served on the operator's event loop (so an answer proves it runs).

* live: the event loop answers and the background work is alive (the catalog-sync thread, once
  started); a dead sync cannot heal itself, so the kubelet should restart the process;
* ready: the catalog is loaded, the catalog sync is alive and heard from the API server within
  ``settings.catalog.sync_stale_seconds``, and the API server answers now.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable

from aiohttp import web

Check = Callable[[], Awaitable[str | None]]
"""A check returns None when fine, else the reason it is not."""


@dataclasses.dataclass
class HealthServer:
    live: list[Check]
    ready: list[Check]
    _runner: web.AppRunner | None = None

    @property
    def serving(self) -> bool:
        return self._runner is not None

    async def start(self, port: int, *, host: str = "0.0.0.0") -> None:  # noqa: S104  # probes come from the kubelet
        """Listen on ``port`` (once: a second call does nothing)."""
        if self._runner is not None:
            return
        app = web.Application()
        app.router.add_get("/healthz", self._answer(self.live))
        app.router.add_get("/readyz", self._answer(self.ready))
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, host, port).start()
        self._runner = runner

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @staticmethod
    def _answer(checks: list[Check]) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handle(_: web.Request) -> web.Response:
            problems = [p for p in await asyncio.gather(*(check() for check in checks)) if p]
            if problems:
                return web.Response(status=503, text="\n".join(problems) + "\n")
            return web.Response(status=200, text="ok\n")

        return handle


def now() -> float:
    return time.time()
