"""LLM-bound concurrency: N analyses against a scripted model that takes ``delay`` seconds per reply,
with the operator's concurrency cap at C.

Each analysis costs ``REQUESTS_PER_ANALYSIS`` replies, so with a perfect scheduler the run takes
``N * requests * delay / C`` seconds. Efficiency = that ideal / the measured create → last terminal
time. The scripted server also reports the most requests it had in flight at once: it should reach
C (and never exceed it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench import harness, workload


def run_one(cluster: harness.Cluster, *, count: int, cap: int, delay: float, log_dir: Path) -> dict[str, Any]:
    cluster.ensure(workload.catalog_objects())
    namespace = cluster.namespace(f"conc{cap}")
    bodies = [workload.analysis_body(n) for n in range(count)]
    with harness.LlmServer(delay=delay) as llm:
        env = {**llm.operator_env(), "AIANALYSIS_MAX_CONCURRENT_ANALYSES": str(cap)}
        with harness.Operator(cluster, env=env, log_dir=log_dir) as operator:
            operator.wait_catalog(len(workload.SIGNALS), timeout=60)
            with harness.TerminalWatch(cluster, namespace) as watcher:
                started = cluster.create_all(bodies, namespace=namespace, threads=16)
                done = watcher.wait(count, timeout=max(120.0, 10 * count * delay))
    cluster.delete_analyses(namespace)
    measured = max(done.values()) - min(started.values())
    ideal = count * workload.REQUESTS_PER_ANALYSIS * delay / cap
    return {
        "analyses": count,
        "cap": cap,
        "reply_delay_s": delay,
        "ideal_s": round(ideal, 2),
        "measured_s": round(measured, 2),
        "efficiency": round(ideal / measured, 3),
        "max_in_flight": llm.stats.get("max_in_flight"),
        "requests": llm.stats.get("requests"),
        "phases": sorted(set(watcher.phases.values())),
        "goal_min_efficiency": 0.75,
    }


def run(
    cluster: harness.Cluster, *, count: int, caps: list[int], delay: float, log_dir: Path
) -> list[dict[str, Any]]:
    return [run_one(cluster, count=count, cap=cap, delay=delay, log_dir=log_dir) for cap in caps]
