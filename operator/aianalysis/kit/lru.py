"""A dict with a size bound: the least recently used entry leaves when a new one would exceed it.

For every in-memory map whose keys come from outside (alert labels, fingerprints, namespaces named
by an alert): a flood of distinct keys costs at most ``max_size`` entries, never the process'
memory. Evictions are counted (``evictions``; ``on_evict`` for a metric)."""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class LRU(Generic[K, V]):
    def __init__(self, max_size: int, *, on_evict: Callable[[], object] = lambda: None) -> None:
        if max_size < 1:
            raise ValueError(f"an LRU holds at least one entry, not {max_size}")
        self.max_size = max_size
        self.evictions = 0
        self._on_evict = on_evict
        self._items: collections.OrderedDict[K, V] = collections.OrderedDict()

    def get(self, key: K) -> V | None:
        """The value (now the most recently used), or None."""
        if key not in self._items:
            return None
        self._items.move_to_end(key)
        return self._items[key]

    def __setitem__(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.max_size:
            self._items.popitem(last=False)
            self.evictions += 1
            self._on_evict()

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def pop(self, key: K) -> V | None:
        return self._items.pop(key, None)

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[K]:
        return iter(self._items)

    def clear(self) -> None:
        self._items.clear()
