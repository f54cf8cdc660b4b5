"""How the operator's costs grow with its work: memory and search latency at 1,000 / 10,000 / 50,000
workflows, measured in a fresh interpreter per size (no cluster: the catalog is filled through the
same admission gate the operator's catalog sync uses), plus the import cost on its own; the
analyses' side (memory at 100 / 1,000 / 5,000 analyses) comes from ``bench.memory``. ``draw``
plots both to one PNG (matplotlib, the optional extra ``aianalysis eval`` uses too).

    python -m bench.growth --point 10000 --queries 300   # one size, JSON on stdout
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

SIZES = (1000, 10_000, 50_000)
#: What the operator process imports before it loads anything (``aianalysis run``).
OPERATOR_MODULES = ("aianalysis.cli", "aianalysis.controller.handlers")


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def imports() -> dict[str, Any]:
    """RSS of a fresh interpreter (the operator's: ``AIANALYSIS_OPERATOR_PYTHON``, as for
    ``bench.harness.Operator``) before and after importing what the operator imports."""
    python = os.environ.get("AIANALYSIS_OPERATOR_PYTHON") or sys.executable
    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    out = subprocess.run(
        [python, "-m", "bench.growth", "--imports"], check=True, capture_output=True, text=True, env=env
    )
    return dict(json.loads(out.stdout))


def _imports_point() -> dict[str, Any]:
    before = _rss_kib()
    started = time.perf_counter()
    for name in OPERATOR_MODULES:
        importlib.import_module(name)
    return {
        "python_mib": round(before / 1024, 1),
        "imports_mib": round((_rss_kib() - before) / 1024, 1),
        "imports_s": round(time.perf_counter() - started, 2),
        "modules": len(sys.modules),
    }


def catalog(sizes: tuple[int, ...] = SIZES, *, queries: int) -> list[dict[str, Any]]:
    """One fresh interpreter per catalog size (RSS is never given back, so sizes must not share one)."""
    rows = []
    for size in sizes:
        out = subprocess.run(
            [sys.executable, "-m", "bench.growth", "--point", str(size), "--queries", str(queries)],
            check=True,
            capture_output=True,
            text=True,
        )
        rows.append(json.loads(out.stdout))
    return rows


def _catalog_point(size: int, queries: int) -> dict[str, Any]:
    from aianalysis import catalog as catalog_mod  # noqa: PLC0415  (after the RSS baseline's imports)
    from aianalysis.catalog import gate  # noqa: PLC0415
    from bench import catalog_search  # noqa: PLC0415

    gc.collect()
    before = _rss_kib()
    found = catalog_mod.Catalog()
    admitted = gate.AdmissionGate(catalog=found, reporter=gate.ReadOnlyReporter())
    started = time.perf_counter()
    vocabulary, specs = catalog_search.spec_stream(size)
    for name, spec in specs:
        # What the catalog sync hands the gate: the listed object, as JSON.
        admitted.admit(
            {
                "metadata": {"name": name, "creationTimestamp": "2026-11-20T10:00:00Z"},
                "spec": spec.wire(),
            }
        )
    load_s = time.perf_counter() - started
    gc.collect()
    gc.freeze()  # as the operator does once its catalog is loaded
    loaded = _rss_kib()
    rng = random.Random(11)
    row: dict[str, Any] = {
        "workflows": size,
        "entries": len(found),
        "load_s": round(load_s, 2),
        "catalog_mib": round((loaded - before) / 1024, 1),
        "kib_per_workflow": round((loaded - before) / size, 2),
    }
    for profile in ("typical", "text-only"):
        make = catalog_search.PROFILES[profile]
        workload = [make(rng, vocabulary) for _ in range(queries)]
        timings = []
        for query, business in workload:
            began = time.perf_counter()
            found.search(query, business=business)
            timings.append((time.perf_counter() - began) * 1000)
        key = profile.replace("-", "_")
        row[f"{key}_p50_ms"] = round(statistics.median(timings), 3)
        row[f"{key}_p99_ms"] = round(sorted(timings)[max(0, round(0.99 * len(timings)) - 1)], 3)
    return row


def draw(results: dict[str, Any], path: Path) -> Path | None:
    """The growth curves as one PNG; None when matplotlib is missing or there is nothing to draw."""
    growth = results.get("growth") or {}
    points = growth.get("catalog") or []
    memory = results.get("memory") or {}
    steps = memory.get("steps") or []
    if not points and not steps:
        return None
    try:
        figure_module = importlib.import_module("matplotlib.figure")
    except ImportError:
        return None
    figure = figure_module.Figure(figsize=(12, 3.6), dpi=100)
    left, middle, right = figure.subplots(1, 3)
    if points:
        sizes = [p["workflows"] for p in points]
        base = (growth.get("imports") or {}).get("imports_mib", 0.0)
        left.plot(sizes, [p["catalog_mib"] for p in points], marker="o", label="catalog")
        if base:
            left.plot(sizes, [base + p["catalog_mib"] for p in points], marker="o", label="imports + catalog")
        left.set(xscale="log", xlabel="workflows", ylabel="MiB", title="memory by catalog size")
        left.legend()
        for key, label in (("text_only", "text-only (worst)"), ("typical", "typical")):
            middle.plot(sizes, [p[f"{key}_p50_ms"] for p in points], marker="o", label=f"{label} p50")
            middle.plot(
                sizes, [p[f"{key}_p99_ms"] for p in points], marker="x", ls="--", label=f"{label} p99"
            )
        middle.set(xscale="log", xlabel="workflows", ylabel="ms", title="catalog search latency")
        middle.legend(fontsize="small")
    if steps:
        counts = [s["analyses"] for s in steps]
        right.plot(counts, [s["rss_mib"] for s in steps], marker="o", label="operator RSS")
        right.axhline(memory.get("goal_max_mib", 150) / 1.048576, color="grey", ls=":", label="goal 150 MB")
        right.set(
            xscale="log",
            xlabel="analyses (with the 10k-workflow catalog)",
            ylabel="MiB",
            title="operator memory by analyses",
        )
        right.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path)
    return path


def run(*, sizes: list[int], queries: int) -> dict[str, Any]:
    """The import cost, then one catalog size per fresh interpreter."""
    return {"imports": imports(), "catalog": catalog(tuple(sizes), queries=queries)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--point", type=int, help="measure one catalog size")
    parser.add_argument("--imports", action="store_true", help="measure the operator's imports")
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args(argv)
    if args.imports:
        print(json.dumps(_imports_point()))
    elif args.point:
        print(json.dumps(_catalog_point(args.point, args.queries)))
    else:
        print(json.dumps(run(sizes=list(SIZES), queries=args.queries), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
