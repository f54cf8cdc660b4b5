"""The composition root: everything one operator process shares, opened at startup and closed at
cleanup."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from collections.abc import Callable, Sequence

import aianalysis.catalog
import aianalysis.settings
from aianalysis import kit, kube, metrics, resources
from aianalysis.analysis import llm, pipeline, tools
from aianalysis.catalog import sync
from aianalysis.controller import budget_store, leadership, llm_budget
from aianalysis.kit import follower, health, workers
from aianalysis.kube import api_reader

log = logging.getLogger(__name__)

#: The AIAnalyses the operator follows: not terminal. The API server filters on the CRD's
#: selectable field ``status.phase``, so finished analyses — thousands of them in a cluster that
#: keeps them — never reach this process; one that goes terminal leaves the watch.
UNFINISHED_ANALYSES = ",".join(f"status.phase!={phase}" for phase in resources.TERMINAL_PHASES)


@dataclasses.dataclass(kw_only=True)
class Runtime(kit.ProcessRuntime):
    """Everything one operator process shares: opened at startup, closed at cleanup."""

    provider: llm.Provider
    reader: tools.ClusterReader
    metrics_reader: tools.MetricsReader | None
    """The Prometheus client (None: no Prometheus configured, no Prometheus tools)."""
    semaphore: asyncio.Semaphore
    budget: llm_budget.BudgetGate
    workers: workers.Workers = dataclasses.field(default_factory=workers.Workers)
    lease: leadership.LeaderElection | None = None
    analyses: follower.Follower | None = None
    """The list-then-watch of the AIAnalyses that are not terminal (started by :meth:`follow_analyses`)."""
    _holding: asyncio.Task[None] | None = None

    @classmethod
    def create(
        cls,
        settings: aianalysis.settings.Settings,
        api: kube.ApiClient,
        *,
        clock: llm_budget.Timer | None = None,
    ) -> Runtime:
        catalog = aianalysis.catalog.Catalog()
        store = (
            budget_store.ConfigMapStore(api, settings.budget.namespace) if settings.budget.namespace else None
        )
        gate = llm_budget.BudgetGate(llm_budget.Allowance.from_settings(settings), clock=clock, store=store)
        observe = metrics.llm_observer(settings.llm.provider)

        def on_request(request: llm.RequestRecord) -> None:
            observe(request)
            gate.observe(request)

        return cls(
            settings=settings,
            catalog=catalog,
            budget=gate,
            provider=llm.make_provider(settings, on_request=on_request),
            api=api,
            reader=api_reader.KubernetesReader(api),
            metrics_reader=pipeline.metrics_reader(settings),
            semaphore=asyncio.Semaphore(settings.analysis.max_concurrent),
            catalog_sync=sync.CatalogSync(
                api=api,
                catalog=catalog,
                on_change=lambda: metrics.CATALOG_SIZE.set(len(catalog)),
                on_heard=metrics.CATALOG_SYNC_LAST_SUCCESS.set,
            ),
        )

    async def lead(self, *, on_lost: Callable[[], None]) -> None:
        """With leader election configured: wait until this replica holds the Lease, then keep it
        (``on_lost`` if it cannot). Once per process."""
        namespace = self.settings.leadership.namespace
        if not namespace or self.lease is not None:
            return
        self.lease = leadership.LeaderElection(
            api=self.api,
            namespace=namespace,
            name="aianalysis-operator",
            identity=self.settings.leadership.identity or f"aianalysis-{uuid.uuid4().hex[:12]}",
            duration_seconds=self.settings.leadership.lease_duration_seconds,
            renew_seconds=max(0.5, self.settings.leadership.lease_duration_seconds / 3),
            renew_deadline_seconds=self.settings.leadership.lease_duration_seconds * 2 / 3,
        )
        await self.lease.acquire()
        self._holding = asyncio.get_running_loop().create_task(self.lease.hold(on_lost), name="lease")

    async def follow_analyses(
        self, *, namespaces: Sequence[str], on_seen: follower.Seen, on_left: follower.Left
    ) -> None:
        """Follow the unfinished AIAnalyses in ``namespaces`` (none: all of them), from one thread
        per namespace; return once each was listed (retried until it is: ``/readyz`` says why it
        is not). Idempotent: a retried startup follows once."""
        if self.analyses is None:
            self.analyses = follower.Follower(
                self.api,
                plural=resources.AIANALYSIS_PLURAL,
                namespaces=namespaces,
                field_selector=UNFINISHED_ANALYSES,
                on_seen=on_seen,
                on_left=on_left,
            )
            self.analyses.start()
        await self.analyses.wait_listed()

    def _readiness(self) -> list[health.Check]:
        return [
            self._leading, self._catalog_ready, self._sync_alive, self._sync_fresh, self._analyses_listed,
            self._api_reachable,
        ]  # fmt: skip

    async def _analyses_listed(self) -> str | None:
        if self.analyses is None or self.analyses.listed:
            return None
        why = f" ({self.analyses.last_error})" if self.analyses.last_error else ""
        return f"AIAnalysis watch: not listed yet{why}"

    async def _leading(self) -> str | None:
        if self.lease is not None and not self.lease.leading:
            return "standby: another replica holds the lease"
        return None

    async def _api_reachable(self) -> str | None:
        try:
            await asyncio.wait_for(asyncio.to_thread(self._version), timeout=5.0)
        except Exception as exc:  # noqa: BLE001  # any failure means "not reachable"; the reason is shown
            return f"API server: not reachable ({type(exc).__name__})"
        return None

    def _version(self) -> None:
        kube.server_version(self.api, timeout_seconds=5.0)

    async def aclose(self) -> None:
        if self.analyses is not None:
            self.analyses.stop()
        await self.workers.aclose()
        await self.budget.aclose()
        if self._holding is not None:
            self._holding.cancel()
        if self.lease is not None:
            await self.lease.release()
        await self.provider.aclose()
        if self.metrics_reader is not None:
            await self.metrics_reader.aclose()
        await self.close_shared()
