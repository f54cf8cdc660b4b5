"""One active operator among replicas: a ``coordination.k8s.io`` Lease, the way client-go's leader
election does it. The standby waits in :meth:`LeaderElection.acquire` (its handlers do not run, its
``/readyz`` says why); the leader renews every ``renew_seconds``; a leader that cannot renew
within ``renew_deadline_seconds`` (< the lease's duration) stops (``on_lost``) *before* any standby
may consider the lease expired. Writes are conditional on the Lease's resourceVersion, so two
candidates never both win.

**Expiry is observed, never computed from another machine's clock.** A standby judges a lease held
by someone else expired only when it has seen no change to it (same holder, same renewTime, same
resourceVersion) for the lease's whole duration *on its own monotonic clock* — as client-go does. A
standby whose wall clock runs ahead (or a leader whose clock runs behind) cannot steal a live lease.

**Every call has a deadline**: each API request carries a timeout, and each renewal is abandoned
when the renew deadline passes, so one hung connection cannot keep a leader acting on a lease it
no longer holds.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable

from aianalysis import errors, kube, resources
from aianalysis.kube import leases

log = logging.getLogger(__name__)

Monotonic = Callable[[], float]


@dataclasses.dataclass(kw_only=True)
class LeaderElection:
    api: kube.ApiClient
    namespace: str
    name: str
    identity: str
    duration_seconds: int = 15
    renew_seconds: float = 5.0
    renew_deadline_seconds: float = 10.0
    """The leader stops acting when it has not renewed for this long (< ``duration_seconds``)."""
    retry_seconds: float = 2.0
    clock: resources.Clock = resources.utcnow
    """Wall time, only for the times written into the Lease (informational for others)."""
    monotonic: Monotonic = time.monotonic
    """What every decision is timed with."""
    leading: bool = False
    _observed: tuple[object, ...] | None = dataclasses.field(default=None, init=False, repr=False)
    _observed_at: float = dataclasses.field(default=0.0, init=False, repr=False)

    def __post_init__(self) -> None:
        if not 0 < self.renew_deadline_seconds < self.duration_seconds:
            raise ValueError("renew_deadline_seconds must be positive and below duration_seconds")

    async def acquire(self) -> None:
        """Return once this process holds the lease (waits while another live holder has it)."""
        announced = False
        while not await self._try():
            if not announced:
                log.info("standby: lease %s/%s is held by another replica", self.namespace, self.name)
                announced = True
            await asyncio.sleep(self.retry_seconds)
        self.leading = True
        log.info("leading: acquired lease %s/%s as %s", self.namespace, self.name, self.identity)

    async def hold(self, on_lost: Callable[[], None]) -> None:
        """Renew until cancelled; ``on_lost()`` once no renewal succeeded for the renew deadline (a
        renewal still in flight then is abandoned: its late success must not count)."""
        last = self.monotonic()
        while True:
            await asyncio.sleep(self.renew_seconds)
            left = self.renew_deadline_seconds - (self.monotonic() - last)
            renewed = False
            if left > 0:
                try:
                    renewed = await asyncio.wait_for(self._try(), timeout=left)
                except Exception as exc:  # noqa: BLE001  # any failure to renew counts against the lease
                    log.warning("renewing lease %s/%s failed: %s", self.namespace, self.name, exc)
            if renewed:
                last = self.monotonic()
            elif self.monotonic() - last >= self.renew_deadline_seconds:
                self.leading = False
                log.error(
                    "lost lease %s/%s: no renewal for %.0f s; stopping so that only one replica acts",
                    self.namespace, self.name, self.renew_deadline_seconds,
                )  # fmt: skip
                on_lost()
                return

    async def release(self) -> None:
        """Give the lease up at a clean shutdown, so a standby takes over at once."""
        if not self.leading:
            return
        self.leading = False
        try:
            lease = await asyncio.to_thread(leases.fetch, self.api, namespace=self.namespace, name=self.name)
            if lease is not None and lease.holder_identity == self.identity:
                lease.holder_identity = None
                lease.renew_time = None
                await asyncio.to_thread(leases.store, self.api, lease)
        except errors.AIAnalysisError as exc:
            log.warning("releasing lease %s/%s failed (it will expire): %s", self.namespace, self.name, exc)

    def _observe(self, lease: leases.Lease) -> LeaseObservation:
        record = (
            lease.holder_identity, lease.renew_time, lease.acquire_time, lease.lease_transitions,
            lease.resource_version,
        )  # fmt: skip
        self._observed_at, seen = observe_lease(self._observed, self._observed_at, record, self.monotonic())
        self._observed = record
        return seen

    async def _try(self) -> bool:
        return await asyncio.to_thread(self._try_sync)

    def _try_sync(self) -> bool:
        """One attempt to take or renew the lease; False when another live holder has it or a
        concurrent writer won the race."""
        now = self.clock()
        lease = leases.fetch(self.api, namespace=self.namespace, name=self.name)
        if lease is None:
            lease = leases.Lease(
                namespace=self.namespace, name=self.name, acquire_time=now, lease_transitions=0
            )
        mine = lease.holder_identity == self.identity
        if not mine and lease.holder_identity and lease.resource_version is not None:
            fresh = self._observe(lease)
            if not fresh.expired(lease.lease_duration_seconds or 15):
                return False
        if not mine and lease.resource_version is not None:
            lease.lease_transitions = (lease.lease_transitions or 0) + 1
            lease.acquire_time = now
        lease.holder_identity = self.identity
        lease.lease_duration_seconds = self.duration_seconds
        lease.renew_time = now
        return leases.store(self.api, lease)  # conditional on the version read


@dataclasses.dataclass(frozen=True)
class LeaseObservation:
    """How long the lease has looked exactly as it does now, on this process' monotonic clock."""

    unchanged_for_seconds: float

    def expired(self, duration_seconds: float) -> bool:
        return self.unchanged_for_seconds > duration_seconds


def observe_lease(
    previous: tuple[object, ...] | None, since: float, record: tuple[object, ...], now: float
) -> tuple[float, LeaseObservation]:
    """Pure: the record seen at ``now`` (monotonic) against the one seen before, first seen at
    ``since``; a change (or a first sighting) restarts the count."""
    if record != previous:
        return now, LeaseObservation(0.0)
    return since, LeaseObservation(now - since)
