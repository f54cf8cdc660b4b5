"""One active operator among replicas: a ``coordination.k8s.io`` Lease, the way client-go's leader
election does it. The standby waits in :meth:`LeaderElection.acquire` (its handlers do not run, its
``/readyz`` says why); the leader renews every ``renew_seconds``; a leader that cannot renew
within the lease's duration stops (``on_lost``), and a standby takes over once the lease has
expired — at most ``duration_seconds`` + ``retry_seconds`` after the leader died. Writes are
conditional on the Lease's resourceVersion, so two candidates never both win.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import logging
from collections.abc import Callable

from aianalysis import errors, kube, resources
from aianalysis.kube import leases

log = logging.getLogger(__name__)


@dataclasses.dataclass(kw_only=True)
class LeaderElection:
    api: kube.ApiClient
    namespace: str
    name: str
    identity: str
    duration_seconds: int = 15
    renew_seconds: float = 5.0
    retry_seconds: float = 2.0
    clock: resources.Clock = resources.utcnow
    leading: bool = False

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
        """Renew until cancelled; ``on_lost()`` if a renewal is not possible within the duration."""
        last = self.clock()
        while True:
            await asyncio.sleep(self.renew_seconds)
            try:
                renewed = await self._try()
            except Exception as exc:  # noqa: BLE001  # any failure to renew counts against the lease
                log.warning("renewing lease %s/%s failed: %s", self.namespace, self.name, exc)
                renewed = False
            if renewed:
                last = self.clock()
            elif (self.clock() - last).total_seconds() >= self.duration_seconds:
                self.leading = False
                log.error(
                    "lost lease %s/%s: stopping so that only one replica acts", self.namespace, self.name
                )
                on_lost()
                return

    async def release(self) -> None:
        """Give the lease up at a clean shutdown, so a standby takes over at once."""
        if not self.leading:
            return
        self.leading = False
        try:
            lease = await asyncio.to_thread(leases.read, self.api, namespace=self.namespace, name=self.name)
            if lease is not None and lease.holder_identity == self.identity:
                lease.holder_identity = None
                lease.renew_time = None
                await asyncio.to_thread(leases.write, self.api, lease)
        except errors.AIAnalysisError as exc:
            log.warning("releasing lease %s/%s failed (it will expire): %s", self.namespace, self.name, exc)

    async def _try(self) -> bool:
        return await asyncio.to_thread(self._try_sync)

    def _try_sync(self) -> bool:
        """One attempt to take or renew the lease; False when another live holder has it or a
        concurrent writer won the race."""
        now = self.clock()
        lease = leases.read(self.api, namespace=self.namespace, name=self.name)
        if lease is None:
            lease = leases.Lease(
                namespace=self.namespace, name=self.name, acquire_time=now, lease_transitions=0
            )
        mine = lease.holder_identity == self.identity
        if not mine and lease.holder_identity and not _expired(lease, now):
            return False
        if not mine and lease.resource_version is not None:
            lease.lease_transitions = (lease.lease_transitions or 0) + 1
            lease.acquire_time = now
        lease.holder_identity = self.identity
        lease.lease_duration_seconds = self.duration_seconds
        lease.renew_time = now
        return leases.write(self.api, lease)  # conditional on the version read


def _expired(spec: leases.Lease, now: datetime.datetime) -> bool:
    renewed = spec.renew_time or spec.acquire_time
    if renewed is None:
        return True
    if renewed.tzinfo is None:
        renewed = renewed.replace(tzinfo=datetime.UTC)
    return bool((now - renewed).total_seconds() > (spec.lease_duration_seconds or 15))
