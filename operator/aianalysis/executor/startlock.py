"""The start lock shared by executor replicas: a ``coordination.k8s.io`` Lease held only for the few
calls between "count the executions" and "this one is started" (``preflight``).

Why: the cluster-wide caps (and one execution per target) are decided from a fresh list of
executions, and an execution counts as started once its baseline is written. Two executors deciding
at the same moment (a scaled Deployment, a rollout's overlap, two installations) would each see the
other's execution not yet started and both pass a cap of 1. Holding this Lease around the decision
and the baseline write serialises starts across processes: whoever holds it lists after the previous
holder's write landed (the API server's reads are linearizable), so it counts it.

Acquiring is a resourceVersion-conditional create or replace (the API server lets one writer win);
the holder releases it right after; a holder that died is overtaken once its ``leaseDurationSeconds``
passed. Waiting is bounded: after ``wait_seconds`` the pass fails with a retryable ``ClusterError``
(the executor's handler retries it with backoff), it never blocks forever.

Holding is bounded too: every API call made while it is held ends (a retryable error if the API
server is slow to answer) ``HOLD_MARGIN_SECONDS`` before the hold could be overtaken, so no
decision is written after another replica may have taken the lock — and a wedged API server never
keeps it, or the process' own start lock, past that.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from aianalysis import errors
from aianalysis.kube import leases, rest

log = logging.getLogger(__name__)

NAME = "aianalysis-executor-start"
HOLD_MARGIN_SECONDS = 5.0
"""A write that reaches the API server late still lands before the hold runs out."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class StartLock:
    api: Any
    namespace: str
    identity: str
    hold_seconds: int = 15
    """A holder that died is overtaken after this (a pass holds it well under a second)."""
    wait_seconds: float = 20.0
    poll_seconds: float = 0.2
    now: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC)

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        since = await self._acquire()
        try:
            with rest.deadline(since + self.hold_seconds - HOLD_MARGIN_SECONDS):
                yield
        finally:
            await self._release()

    async def _acquire(self) -> float:
        """Hold it; the ``time.monotonic()`` before the write that took it (the hold counts from
        then at the latest)."""
        deadline = time.monotonic() + self.wait_seconds
        while True:
            found = await asyncio.to_thread(leases.fetch, self.api, namespace=self.namespace, name=NAME)
            since = time.monotonic()
            mine = self._take(found)
            if mine is not None and await asyncio.to_thread(leases.store, self.api, mine):
                return since
            if time.monotonic() >= deadline:
                holder = found.holder_identity if found is not None else "?"
                raise errors.ClusterError(
                    f"the executors' start lock (lease {self.namespace}/{NAME}) is held by {holder} "
                    f"for more than {self.wait_seconds:g}s; this execution is decided on a later try"
                )
            await asyncio.sleep(self.poll_seconds)

    def _take(self, found: leases.Lease | None) -> leases.Lease | None:
        """The Lease held by us, to write — None while another holder's hold runs."""
        now = self.now()
        if found is None:
            return leases.Lease(
                namespace=self.namespace,
                name=NAME,
                holder_identity=self.identity,
                lease_duration_seconds=self.hold_seconds,
                acquire_time=now,
                renew_time=now,
                lease_transitions=0,
            )
        holder, renewed = found.holder_identity, found.renew_time or found.acquire_time
        expired = renewed is None or now >= renewed + datetime.timedelta(
            seconds=found.lease_duration_seconds or self.hold_seconds
        )
        if holder and holder != self.identity and not expired:
            return None
        return dataclasses.replace(
            found,
            holder_identity=self.identity,
            lease_duration_seconds=self.hold_seconds,
            acquire_time=now,
            renew_time=now,
            lease_transitions=(found.lease_transitions or 0) + (holder != self.identity),
        )

    async def _release(self) -> None:
        """Give it back (conditional on the version read); a failure is harmless: it expires."""
        try:
            found = await asyncio.to_thread(leases.fetch, self.api, namespace=self.namespace, name=NAME)
            if found is not None and found.holder_identity == self.identity:
                await asyncio.to_thread(
                    leases.store, self.api, dataclasses.replace(found, holder_identity=None)
                )
        except errors.AIAnalysisError as exc:
            log.warning(
                "releasing the start lock %s/%s: %s (it expires by itself)", self.namespace, NAME, exc
            )


@contextlib.asynccontextmanager
async def nothing() -> AsyncIterator[None]:
    """No cross-process lock (one executor): the runner's own lock serialises its starts."""
    yield
