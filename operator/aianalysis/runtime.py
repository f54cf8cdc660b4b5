"""The composition root: everything one operator process shares, opened at startup and closed at
cleanup, and the :class:`Transition` a reconciler hands back for ``handlers`` to announce."""

from __future__ import annotations

import asyncio
import dataclasses
import logging

from kubernetes import client as k8s

from aianalysis import catalog as catalog_mod
from aianalysis import catalog_sync as catalog_sync_mod
from aianalysis import llm, metrics, tools
from aianalysis import settings as settings_mod
from aianalysis.tools import k8s as k8s_tools

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Transition:
    """A terminal transition the caller announces as a Kubernetes Event."""

    type: str  # Normal | Warning
    reason: str
    message: str


@dataclasses.dataclass(kw_only=True)
class Runtime:
    """Everything one operator process shares: opened at startup, closed at cleanup."""

    settings: settings_mod.Settings
    catalog: catalog_mod.Catalog
    provider: llm.Provider
    api: k8s.ApiClient
    reader: tools.ClusterReader
    semaphore: asyncio.Semaphore
    catalog_sync: catalog_sync_mod.CatalogSync

    @classmethod
    def create(cls, settings: settings_mod.Settings, api: k8s.ApiClient) -> Runtime:
        catalog = catalog_mod.Catalog()
        return cls(
            settings=settings,
            catalog=catalog,
            provider=llm.make_provider(settings, on_request=metrics.llm_observer(settings.provider)),
            api=api,
            reader=k8s_tools.KubernetesReader(api),
            semaphore=asyncio.Semaphore(settings.max_concurrent_analyses),
            catalog_sync=catalog_sync_mod.CatalogSync(
                api=api, catalog=catalog, on_change=lambda: metrics.CATALOG_SIZE.set(len(catalog))
            ),
        )

    async def load_catalog(self) -> None:
        """Fill the catalog from the cluster, then keep following it (before any analysis runs)."""
        count = await asyncio.to_thread(self.catalog_sync.load)
        log.info("catalog loaded: %d RemediationWorkflow objects, %d entries", count, len(self.catalog))
        self.catalog_sync.start()

    async def aclose(self) -> None:
        self.catalog_sync.stop()
        await self.provider.aclose()
        await asyncio.to_thread(self.api.close)
