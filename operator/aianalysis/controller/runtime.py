"""The composition root: everything one operator process shares, opened at startup and closed at
cleanup, and the :class:`Transition` a reconciler hands back for ``handlers`` to announce."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from collections.abc import Callable

from kubernetes import client as k8s

from aianalysis import catalog as catalog_mod
from aianalysis import metrics
from aianalysis import settings as settings_mod
from aianalysis.analysis import llm, tools
from aianalysis.catalog import sync as catalog_sync_mod
from aianalysis.controller import budget as budget_mod
from aianalysis.controller import leadership
from aianalysis.kit import health, workers
from aianalysis.kube import api_reader as k8s_tools

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
    budget: budget_mod.Gate
    workers: workers.Workers = dataclasses.field(default_factory=workers.Workers)
    health_server: health.HealthServer | None = None
    catalog_loaded: bool = False
    lease: leadership.Lease | None = None
    _holding: asyncio.Task[None] | None = None

    @classmethod
    def create(
        cls, settings: settings_mod.Settings, api: k8s.ApiClient, *, clock: budget_mod.Clock | None = None
    ) -> Runtime:
        catalog = catalog_mod.Catalog()
        gate = budget_mod.Gate(budget_mod.Limits.from_settings(settings), clock=clock)
        observe = metrics.llm_observer(settings.provider)

        def on_request(request: llm.RequestRecord) -> None:
            observe(request)
            gate.observe(request)

        return cls(
            settings=settings,
            catalog=catalog,
            budget=gate,
            provider=llm.make_provider(settings, on_request=on_request),
            api=api,
            reader=k8s_tools.KubernetesReader(api),
            semaphore=asyncio.Semaphore(settings.max_concurrent_analyses),
            catalog_sync=catalog_sync_mod.CatalogSync(
                api=api,
                catalog=catalog,
                on_change=lambda: metrics.CATALOG_SIZE.set(len(catalog)),
                on_heard=metrics.CATALOG_SYNC_LAST_SUCCESS.set,
            ),
        )

    async def load_catalog(self) -> None:
        """Fill the catalog from the cluster, then keep following it (before any analysis runs).
        Idempotent: a retried startup loads again only if the first load did not finish."""
        if not self.catalog_loaded:
            count = await asyncio.to_thread(self.catalog_sync.load)
            log.info("catalog loaded: %d RemediationWorkflow objects, %d entries", count, len(self.catalog))
            self.catalog_loaded = True
        self.catalog_sync.start()

    async def lead(self, *, on_lost: Callable[[], None]) -> None:
        """With leader election configured: wait until this replica holds the Lease, then keep it
        (``on_lost`` if it cannot). Once per process."""
        namespace = self.settings.leader_election_namespace
        if not namespace or self.lease is not None:
            return
        self.lease = leadership.Lease(
            api=self.api,
            namespace=namespace,
            name="aianalysis-operator",
            identity=self.settings.leader_identity or f"aianalysis-{uuid.uuid4().hex[:12]}",
            duration_seconds=self.settings.lease_duration_seconds,
            renew_seconds=max(0.5, self.settings.lease_duration_seconds / 3),
            renew_deadline_seconds=self.settings.lease_duration_seconds * 2 / 3,
        )
        await self.lease.acquire()
        self._holding = asyncio.get_running_loop().create_task(self.lease.hold(on_lost), name="lease")

    async def serve_health(self, port: int) -> None:
        """``/healthz`` and ``/readyz`` on ``port`` (0: none); once per process."""
        if port and self.health_server is None:
            self.health_server = health.HealthServer(live=[self._sync_alive], ready=self._readiness())
            await self.health_server.start(port)

    def _readiness(self) -> list[health.Check]:
        return [self._leading, self._catalog_ready, self._sync_alive, self._sync_fresh, self._api_reachable]

    async def _leading(self) -> str | None:
        if self.lease is not None and not self.lease.leading:
            return "standby: another replica holds the lease"
        return None

    async def _catalog_ready(self) -> str | None:
        return None if self.catalog_loaded else "catalog: not loaded yet"

    async def _sync_alive(self) -> str | None:
        if self.catalog_loaded and not self.catalog_sync.alive:
            return "catalog sync: the thread following RemediationWorkflows is dead"
        return None

    async def _sync_fresh(self) -> str | None:
        limit = self.settings.catalog_sync_stale_seconds
        if self.catalog_loaded and not self.catalog_sync.fresh(now=health.now(), max_age_seconds=limit):
            return f"catalog sync: nothing heard from the API server for more than {limit:g}s"
        return None

    async def _api_reachable(self) -> str | None:
        try:
            await asyncio.wait_for(asyncio.to_thread(self._version), timeout=5.0)
        except Exception as exc:  # noqa: BLE001  # any failure means "not reachable"; the reason is shown
            return f"API server: not reachable ({type(exc).__name__})"
        return None

    def _version(self) -> None:
        k8s.VersionApi(self.api).get_code(_request_timeout=5)

    async def aclose(self) -> None:
        await self.workers.aclose()
        await self.budget.aclose()
        if self._holding is not None:
            self._holding.cancel()
        if self.lease is not None:
            await self.lease.release()
        if self.health_server is not None:
            await self.health_server.stop()
        self.catalog_sync.stop()
        await self.provider.aclose()
        await asyncio.to_thread(self.api.close)
