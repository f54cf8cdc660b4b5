"""What every process of the product shares: workers keyed by object uid, the health port, one
retry schedule (:class:`Backoff`) and how a terminal transition is announced."""

from aianalysis.kit.announce import Transition, announce
from aianalysis.kit.backoff import Backoff

__all__ = ["Backoff", "Transition", "announce"]
