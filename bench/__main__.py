"""``python -m bench`` (``make bench``): the operator's benchmarks, side by side in one run.

    python -m bench [--quick] [--only NAME ...] [--out DIR]

NAME is one of search, growth, caching, investigation, overhead, concurrency, memory, storm
(repeatable; default all). Prints a table of the goals and writes every figure to
``DIR/bench-<time>.json`` and ``DIR/latest.json`` (default ``bench/results``), and the growth curves
(memory and search latency by catalog size, memory by analyses) to ``DIR/growth-<time>.png`` when
matplotlib is installed. Needs ``AIANALYSIS_K8S_BIN`` (``make k8s``) for the cluster scenarios, and
``AIANALYSIS_PROMETHEUS_BIN`` (``make prometheus``) for ``investigation``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import (
    caching,
    concurrency,
    growth,
    harness,
    investigation,
    memory,
    overhead,
    report,
    search,
    storm,
)

NAMES = ("search", "growth", "caching", "investigation", "overhead", "concurrency", "memory", "storm")
CLUSTER = ("investigation", "overhead", "concurrency", "memory", "storm")

FULL: dict[str, dict[str, Any]] = {
    "search": {"sizes": [100, 1000, 10_000], "queries": 1000},
    "overhead": {"count": 500, "concurrency": 16, "rounds": 3},
    "concurrency": {"count": 100, "caps": [10, 25], "delay": 2.0},
    "memory": {"workflows": 10_000, "analyses": [100, 1000, 5000], "repeats": 2, "repeat_size": 1000},
    "storm": {"deployments": 20, "pods": 5, "repeats": 10},
    "growth": {"sizes": [1000, 10_000, 50_000], "queries": 300},
}
QUICK: dict[str, dict[str, Any]] = {
    "search": {"sizes": [100, 1000, 10_000], "queries": 200},
    "overhead": {"count": 100, "concurrency": 16, "rounds": 1},
    "concurrency": {"count": 40, "caps": [10], "delay": 1.0},
    "memory": {"workflows": 2000, "analyses": [100, 200], "repeats": 1, "repeat_size": 200},
    "storm": {"deployments": 20, "pods": 5, "repeats": 10},
    "growth": {"sizes": [1000, 10_000], "queries": 100},
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller runs (a couple of minutes)")
    parser.add_argument("--only", action="append", choices=NAMES, help="run only this benchmark (repeatable)")
    parser.add_argument("--out", type=Path, default=harness.ROOT / "bench" / "results")
    args = parser.parse_args(argv)
    selected = [name for name in NAMES if name in (args.only or NAMES)]
    sizes = QUICK if args.quick else FULL
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    results: dict[str, Any] = {
        "started": stamp,
        "mode": "quick" if args.quick else "full",
        "cpus": os.cpu_count(),
        "operator_python": harness.OPERATOR_PYTHON,
        "load_before": os.getloadavg(),
    }
    began = time.monotonic()
    log_dir = args.out / f"logs-{stamp}"
    with contextlib.ExitStack() as stack:
        cluster = (
            stack.enter_context(harness.Cluster.running()) if any(n in CLUSTER for n in selected) else None
        )
        for name in selected:
            print(f"bench: {name} ...", file=sys.stderr, flush=True)
            step = time.monotonic()
            results[name] = RUNNERS[name](cluster, sizes.get(name, {}), log_dir)
            print(f"bench: {name} done in {time.monotonic() - step:.0f}s", file=sys.stderr, flush=True)
            # What is measured so far survives a later benchmark's failure.
            (args.out / f"bench-{stamp}.partial.json").write_text(json.dumps(results, indent=1))
    results["load_after"] = os.getloadavg()
    chart = growth.draw(results, args.out / f"growth-{stamp}.png")
    if chart is not None:
        results["chart"] = str(chart)
    results["seconds"] = round(time.monotonic() - began)
    text = json.dumps(results, indent=1)
    (args.out / f"bench-{stamp}.json").write_text(text)
    (args.out / "latest.json").write_text(text)
    (args.out / f"bench-{stamp}.partial.json").unlink(missing_ok=True)
    print(report.table(results))
    print(f"\nfull results: {args.out / f'bench-{stamp}.json'}")
    return 0


Runner = Callable[[harness.Cluster | None, dict[str, Any], Path], Any]


def _on_cluster(run: Callable[..., Any]) -> Runner:
    def call(cluster: harness.Cluster | None, sizes: dict[str, Any], log_dir: Path) -> Any:
        assert cluster is not None
        return run(cluster, log_dir=log_dir, **sizes)

    return call


RUNNERS: dict[str, Runner] = {
    "search": lambda _cluster, sizes, _logs: search.run(**sizes),
    "growth": lambda _cluster, sizes, _logs: growth.run(**sizes),
    "caching": lambda _cluster, _sizes, logs: caching.run(dump=logs.parent / "first-request.json"),
    "investigation": _on_cluster(investigation.run),
    "overhead": _on_cluster(overhead.run),
    "concurrency": _on_cluster(concurrency.run),
    "memory": _on_cluster(memory.run),
    "storm": _on_cluster(storm.run),
}


if __name__ == "__main__":
    raise SystemExit(main())
