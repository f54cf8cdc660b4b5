"""The one retry schedule of the product: doubling delays from ``first_seconds``, capped at
``max_seconds``, for at most ``retries`` retries — every retry path that uses it ends."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable

Sleep = Callable[[float], Awaitable[None]]
"""How a retry waits (``asyncio.sleep``; tests pass one that returns at once)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Backoff:
    first_seconds: float
    max_seconds: float = 300.0
    retries: int
    """How many retries follow the first try (0: the first failure is final)."""

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (1 = the first retry)."""
        return float(min(self.max_seconds, self.first_seconds * 2 ** (retry - 1)))

    @classmethod
    def of_reconciles(cls, *, first_seconds: float, retries: int) -> Backoff:
        """The reconcilers' schedule: from the configured first delay, capped at 5 minutes."""
        return cls(first_seconds=first_seconds, max_seconds=300.0, retries=retries)

    def allows(self, retry: int) -> bool:
        """Retry number ``retry`` (1-based) is within the budget."""
        return retry <= self.retries
