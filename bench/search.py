"""Catalog search latency p50/p99 at several catalog sizes (the generator and profiles of
``bench/catalog_search.py``), in this process: no cluster involved."""

from __future__ import annotations

from typing import Any

from bench import catalog_search


def run(*, sizes: list[int], queries: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for size in sizes:
        # gc.freeze() after loading, as the operator does once its catalog is loaded.
        rows.extend(catalog_search.measure(size, queries=queries, freeze=True))
    for row in rows:
        row["goal_max_p50_ms"] = 5.0 if row["workflows"] >= 10_000 else None
        row["goal_max_p99_ms"] = 20.0 if row["workflows"] >= 10_000 else None
    return rows
