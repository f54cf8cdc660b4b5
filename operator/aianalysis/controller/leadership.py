"""One active operator among replicas: a ``coordination.k8s.io`` Lease, the way client-go's leader
election does it. The standby waits in :meth:`Lease.acquire` (its handlers do not run, its
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
from typing import Any

from kubernetes import client as k8s

log = logging.getLogger(__name__)

Clock = Callable[[], datetime.datetime]


def utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


@dataclasses.dataclass(kw_only=True)
class Lease:
    api: k8s.ApiClient
    namespace: str
    name: str
    identity: str
    duration_seconds: int = 15
    renew_seconds: float = 5.0
    retry_seconds: float = 2.0
    clock: Clock = utcnow
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
            lease: Any = await asyncio.to_thread(
                self._coordination().read_namespaced_lease, self.name, self.namespace
            )
            if lease.spec.holder_identity == self.identity:
                lease.spec.holder_identity = None
                lease.spec.renew_time = None
                await asyncio.to_thread(
                    self._coordination().replace_namespaced_lease, self.name, self.namespace, lease
                )
        except (k8s.ApiException, OSError) as exc:
            log.warning("releasing lease %s/%s failed (it will expire): %s", self.namespace, self.name, exc)

    def _coordination(self) -> k8s.CoordinationV1Api:
        return k8s.CoordinationV1Api(self.api)

    async def _try(self) -> bool:
        return await asyncio.to_thread(self._try_sync)

    def _try_sync(self) -> bool:
        """One attempt to take or renew the lease; False when another live holder has it or a
        concurrent writer won the race (409)."""
        api, now = self._coordination(), self.clock()
        try:
            lease: Any = api.read_namespaced_lease(self.name, self.namespace)
        except k8s.ApiException as exc:
            if exc.status != 404:
                raise
            return self._create(api, now)
        spec = lease.spec
        mine = spec.holder_identity == self.identity
        if not mine and spec.holder_identity and not _expired(spec, now):
            return False
        if not mine:
            spec.lease_transitions = (spec.lease_transitions or 0) + 1
            spec.acquire_time = now
        spec.holder_identity = self.identity
        spec.lease_duration_seconds = self.duration_seconds
        spec.renew_time = now
        try:
            api.replace_namespaced_lease(
                self.name, self.namespace, lease
            )  # conditional on its resourceVersion
        except k8s.ApiException as exc:
            if exc.status == 409:
                return False
            raise
        return True

    def _create(self, api: k8s.CoordinationV1Api, now: datetime.datetime) -> bool:
        body = k8s.V1Lease(
            metadata=k8s.V1ObjectMeta(name=self.name, namespace=self.namespace),
            spec=k8s.V1LeaseSpec(
                holder_identity=self.identity,
                lease_duration_seconds=self.duration_seconds,
                acquire_time=now,
                renew_time=now,
                lease_transitions=0,
            ),
        )
        try:
            api.create_namespaced_lease(self.namespace, body)
        except k8s.ApiException as exc:
            if exc.status == 409:
                return False
            raise
        return True


def _expired(spec: Any, now: datetime.datetime) -> bool:
    renewed = spec.renew_time or spec.acquire_time
    if renewed is None:
        return True
    if renewed.tzinfo is None:
        renewed = renewed.replace(tzinfo=datetime.UTC)
    return bool((now - renewed).total_seconds() > (spec.lease_duration_seconds or 15))
