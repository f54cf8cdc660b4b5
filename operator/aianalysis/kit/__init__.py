"""What every process of the product shares: the runtime base (:class:`ProcessRuntime`), workers
keyed by object uid, the health port, one retry schedule (:class:`Backoff`) and how a terminal
transition is announced."""

from aianalysis.kit.announce import Transition, announce
from aianalysis.kit.backoff import Backoff, Sleep
from aianalysis.kit.runtime import ProcessRuntime

__all__ = ["Backoff", "ProcessRuntime", "Sleep", "Transition", "announce"]
