"""The base both processes' runtimes share (the operator's ``controller.runtime.Runtime`` and the
executor's ``executor.runner.ExecutorRuntime``): the settings, the one API client, and the catalog
of RemediationWorkflows followed from the cluster — opened at startup, closed at cleanup."""

from __future__ import annotations

import asyncio
import dataclasses
import logging

from aianalysis import catalog as catalog_mod
from aianalysis import kube
from aianalysis import settings as settings_mod
from aianalysis.catalog import sync as catalog_sync_mod

log = logging.getLogger(__name__)


@dataclasses.dataclass(kw_only=True)
class ProcessRuntime:
    settings: settings_mod.Settings
    api: kube.ApiClient
    catalog: catalog_mod.Catalog
    catalog_sync: catalog_sync_mod.CatalogSync
    catalog_loaded: bool = False

    async def load_catalog(self) -> None:
        """Fill the catalog from the cluster, then keep following it (before any work starts).
        Idempotent: a retried startup loads again only if the first load did not finish."""
        if not self.catalog_loaded:
            count = await asyncio.to_thread(self.catalog_sync.load)
            log.info("catalog loaded: %d RemediationWorkflow objects, %d entries", count, len(self.catalog))
            self.catalog_loaded = True
        self.catalog_sync.start()

    async def close_shared(self) -> None:
        """Stop following the catalog and close the API client (last: the others may still use it)."""
        self.catalog_sync.stop()
        await asyncio.to_thread(self.api.close)
