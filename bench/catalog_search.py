"""Catalog search latency at 100 / 1,000 / 10,000 synthetic workflows.

    python bench/catalog_search.py [--sizes 100 1000 10000] [--queries 2000] [--json]

Prints, per catalog size and query profile, p50/p99 search latency in milliseconds and the mean
cost of one ``Catalog.upsert`` (the index is maintained incrementally, so that is all a catalog
change costs). ``--gc-freeze`` moves the catalog out of the cyclic GC's sight first (what a
long-running process can do after loading): p99 outliers under normal GC are full collections
walking the thousands of pydantic specs, not the search. Profiles:

- ``typical``: what the search tool sends for an incident: a signal type, ~8 words of text, and
  a production/P1 business context with low risk tolerance.
- ``text-only``: no signal type; ~10 words, half the time including a signal-type name.
- ``broad``: worst case for the filter: high risk tolerance, no business labels (most of the
  catalog is eligible) and 12 frequent words.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import string
import time
from collections.abc import Callable, Iterator

from aianalysis import catalog, resources

SIGNALS = (
    *resources.CANONICAL_REASON_CODES,
    "CrashLoopBackOff",
    "HighLatency",
    "HighErrorRate",
    "DiskPressure",
    "MemoryPressure",
    "CertificateExpiring",
    "PVCFull",
    "HPAMaxedOut",
    "ConfigDrift",
    "ReplicasMismatch",
)
DOMAIN = (  # noqa: SIM905  (a sentence of words reads better than 50 quoted strings)
    "memory limit restart rollout pod deployment statefulset node drain cordon scale replicas cpu "
    "request quota image pull secret registry volume mount disk cleanup certificate rotate dns "
    "network policy ingress latency error rate cache connection pool heap jvm garbage leak probe "
    "liveness readiness timeout backoff job cron evict taint toleration affinity autoscaler"
).split()
ENVIRONMENTS = ("production", "staging", "development")
PRIORITIES = ("P0", "P1", "P2", "P3")
CATEGORIES = ("payments", "auth", "search", "checkout", "inventory")
SEVERITIES = ("critical", "high", "medium", "low")
COMPONENTS = ("deployment", "statefulset", "daemonset", "node", "job", "pvc")


class Vocabulary:
    """Domain words plus random filler, drawn with Zipf-like frequencies like real prose."""

    def __init__(self, rng: random.Random, *, filler: int = 2000) -> None:
        made_up = {"".join(rng.choices(string.ascii_lowercase, k=rng.randint(4, 10))) for _ in range(filler)}
        self.words = [*DOMAIN, *sorted(made_up)]
        rng.shuffle(self.words)
        self._weights = [1.0 / (rank + 1) for rank in range(len(self.words))]
        self._rng = rng

    def sample(self, count: int) -> str:
        return " ".join(self._rng.choices(self.words, weights=self._weights, k=count))


def _subset(rng: random.Random, values: tuple[str, ...], *, unrestricted: float) -> list[str] | None:
    if rng.random() < unrestricted:
        return None
    return sorted(rng.sample(values, rng.randint(1, len(values))))


def spec_stream(
    size: int, *, seed: int = 7
) -> tuple[Vocabulary, Iterator[tuple[str, resources.RemediationWorkflowSpec]]]:
    """The vocabulary and, lazily, the ``size`` workflows (name, spec) of the synthetic catalog:
    a caller that loads them one by one never holds them all (``bench.growth`` measures memory)."""
    rng = random.Random(seed)
    vocabulary = Vocabulary(rng)

    def specs() -> Iterator[tuple[str, resources.RemediationWorkflowSpec]]:
        for number in range(size):
            workflow_id = f"wf-{number // 2:05d}"  # two versions per workflowId on average
            spec = resources.RemediationWorkflowSpec.model_validate(
                {
                    "workflowId": workflow_id,
                    "version": f"1.{number % 2}.{rng.randint(0, 9)}",
                    "title": vocabulary.sample(rng.randint(3, 7)),
                    "description": vocabulary.sample(rng.randint(20, 50)),
                    "labels": {
                        "signalTypes": rng.sample(SIGNALS, rng.randint(1, 2)),
                        "severity": _subset(rng, SEVERITIES, unrestricted=0.5),
                        "component": _subset(rng, COMPONENTS, unrestricted=0.4),
                        "environment": _subset(rng, ENVIRONMENTS, unrestricted=0.4),
                        "priority": _subset(rng, PRIORITIES, unrestricted=0.5),
                        "businessCategory": _subset(rng, CATEGORIES, unrestricted=0.7),
                    },
                    "riskLevel": rng.choice(("low", "medium", "high")),
                    "execution": {"containerImage": f"registry.example/wf/{workflow_id}@sha256:{'0' * 64}"},
                }
            )
            yield f"{workflow_id}-{number}", spec

    return vocabulary, specs()


def synthetic_specs(
    size: int, *, seed: int = 7
) -> tuple[list[tuple[str, resources.RemediationWorkflowSpec]], Vocabulary]:
    vocabulary, specs = spec_stream(size, seed=seed)
    return list(specs), vocabulary


def synthetic_catalog(size: int, *, seed: int = 7) -> tuple[catalog.Catalog, Vocabulary]:
    specs, vocabulary = synthetic_specs(size, seed=seed)
    return catalog.Catalog(catalog.Workflow(name=name, spec=spec) for name, spec in specs), vocabulary


Query = tuple[catalog.SearchQuery, resources.BusinessContext]


def typical(rng: random.Random, vocabulary: Vocabulary) -> Query:
    query = catalog.SearchQuery(text=vocabulary.sample(8), signal_type=rng.choice(SIGNALS))
    business = resources.BusinessContext(
        environment="production", priority="P1", business_category=rng.choice(CATEGORIES)
    )
    return query, business


def text_only(rng: random.Random, vocabulary: Vocabulary) -> Query:
    words = vocabulary.sample(10) + (f" {rng.choice(SIGNALS)}" if rng.random() < 0.5 else "")
    return catalog.SearchQuery(text=words), resources.BusinessContext(environment="production", priority="P1")


def broad(rng: random.Random, vocabulary: Vocabulary) -> Query:
    frequent = " ".join(rng.sample(vocabulary.words[:40], 12))
    return catalog.SearchQuery(text=frequent), resources.BusinessContext(risk_tolerance="high")


PROFILES: dict[str, Callable[[random.Random, Vocabulary], Query]] = {
    "typical": typical,
    "text-only": text_only,
    "broad": broad,
}


def measure(
    size: int, *, queries: int, seed: int = 7, freeze: bool = False
) -> list[dict[str, float | int | str]]:
    specs, vocabulary = synthetic_specs(size, seed=seed)
    found = catalog.Catalog()
    started = time.perf_counter()
    for name, spec in specs:
        found.upsert(name, spec)
    upsert_us = (time.perf_counter() - started) * 1e6 / size
    if freeze:
        gc.collect()
        gc.freeze()
    rng = random.Random(seed + 1)
    results: list[dict[str, float | int | str]] = []
    for profile, make in PROFILES.items():
        workload = [make(rng, vocabulary) for _ in range(queries)]
        timings, hits = [], 0
        for query, business in workload:
            started = time.perf_counter()
            hits += len(found.search(query, business=business))
            timings.append((time.perf_counter() - started) * 1000)
        timings.sort()
        results.append(
            {
                "workflows": size,
                "profile": profile,
                "p50_ms": round(statistics.median(timings), 3),
                "p99_ms": round(timings[int(len(timings) * 0.99) - 1], 3),
                "mean_hits": round(hits / queries, 1),
                "upsert_us": round(upsert_us, 1),
            }
        )
    if freeze:
        gc.unfreeze()
    return results


def _line(row: dict[str, float | int | str]) -> str:
    return (
        f"{row['workflows']:>9}  {row['profile']:<9}  {row['p50_ms']:>7.3f}  {row['p99_ms']:>7.3f}  "
        f"{row['mean_hits']:>5}  {row['upsert_us']:>9.1f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--queries", type=int, default=2000, help="queries per profile and size")
    parser.add_argument("--json", action="store_true", help="one JSON object per line instead of a table")
    parser.add_argument("--gc-freeze", action="store_true", help="gc.freeze() after loading the catalog")
    args = parser.parse_args(argv)
    if not args.json:
        print(
            f"{'workflows':>9}  {'profile':<9}  {'p50 ms':>7}  {'p99 ms':>7}  {'hits':>5}  {'upsert µs':>9}"
        )
    for size in args.sizes:
        for row in measure(size, queries=args.queries, freeze=args.gc_freeze):
            if args.json:
                print(json.dumps(row))
            else:
                print(_line(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
