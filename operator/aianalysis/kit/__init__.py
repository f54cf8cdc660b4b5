"""What every process of the product shares: workers keyed by object uid and the health port."""

from aianalysis.kit.backoff import Backoff

__all__ = ["Backoff"]
