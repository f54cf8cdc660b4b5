"""The base both processes' runtimes share (the operator's ``controller.process.Runtime`` and the
executor's ``executor.runner.ExecutorRuntime``): the settings, the one API client, the catalog of
RemediationWorkflows followed from the cluster, and the health port — opened at startup, closed at
cleanup.

* live: the catalog-sync thread, once started, is alive (a dead sync cannot heal itself);
* ready: the catalog is loaded, its sync is alive and heard from the API server within
  ``settings.catalog.sync_stale_seconds`` (a process adds its own checks).
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import logging
import time

import aianalysis.catalog
import aianalysis.settings
from aianalysis import kube
from aianalysis.catalog import sync
from aianalysis.kit import health

log = logging.getLogger(__name__)


@dataclasses.dataclass(kw_only=True)
class ProcessRuntime:
    settings: aianalysis.settings.Settings
    api: kube.ApiClient
    catalog: aianalysis.catalog.Catalog
    catalog_sync: sync.CatalogSync
    catalog_loaded: bool = False
    health_server: health.HealthServer | None = None

    async def load_catalog(self) -> None:
        """Fill the catalog from the cluster, then keep following it (before any work starts).
        Idempotent: a retried startup loads again only if the first load did not finish."""
        if not self.catalog_loaded:
            began = time.monotonic()
            count = await asyncio.to_thread(self.catalog_sync.load)
            log.info(
                "catalog loaded: %d RemediationWorkflow objects, %d entries in %.1f s",
                count,
                len(self.catalog),
                time.monotonic() - began,
            )
            # The imported modules and the loaded catalog live as long as the process: out of the
            # cyclic GC's sight, a full collection no longer walks thousands of workflow specs
            # (those pauses were the catalog search's p99 outliers). Freed normally when dropped.
            gc.collect()
            gc.freeze()
            self.catalog_loaded = True
        self.catalog_sync.start()

    async def serve_health(self, port: int) -> None:
        """``/healthz`` and ``/readyz`` on ``port`` (0: none); once per process."""
        if port and self.health_server is None:
            self.health_server = health.HealthServer(live=[self._sync_alive], ready=self._readiness())
            await self.health_server.start(port)

    def _readiness(self) -> list[health.Check]:
        return [self._catalog_ready, self._sync_alive, self._sync_fresh]

    async def _catalog_ready(self) -> str | None:
        return None if self.catalog_loaded else "catalog: not loaded yet"

    async def _sync_alive(self) -> str | None:
        if self.catalog_loaded and not self.catalog_sync.alive:
            return "catalog sync: the thread following RemediationWorkflows is dead"
        return None

    async def _sync_fresh(self) -> str | None:
        limit = self.settings.catalog.sync_stale_seconds
        if self.catalog_loaded and not self.catalog_sync.fresh(now=health.now(), max_age_seconds=limit):
            return f"catalog sync: nothing heard from the API server for more than {limit:g}s"
        return None

    async def close_shared(self) -> None:
        """Stop the health port and following the catalog, and close the API client (last: the
        others may still use it)."""
        if self.health_server is not None:
            await self.health_server.stop()
        self.catalog_sync.stop()
        await asyncio.to_thread(self.api.close)
