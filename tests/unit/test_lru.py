"""The bounded map used for every in-memory map keyed by external input."""

from __future__ import annotations

import pytest

from aianalysis.kit import lru


def test_the_least_recently_used_entry_leaves_first_and_each_eviction_is_counted() -> None:
    evicted: list[None] = []
    cache: lru.LRU[str, int] = lru.LRU(2, on_evict=lambda: evicted.append(None))
    cache["a"], cache["b"] = 1, 2
    assert cache.get("a") == 1  # "a" is now the most recent: "b" goes next
    cache["c"] = 3

    assert "b" not in cache and list(cache) == ["a", "c"]
    assert (len(cache), cache.evictions, len(evicted)) == (2, 1, 1)


def test_a_flood_of_distinct_keys_stays_at_the_bound() -> None:
    cache: lru.LRU[int, None] = lru.LRU(100)
    for key in range(10_000):
        cache[key] = None
    assert len(cache) == 100 and cache.evictions == 9_900
    assert cache.pop(9_999) is None and len(cache) == 99


def test_a_bound_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one"):
        lru.LRU(0)
