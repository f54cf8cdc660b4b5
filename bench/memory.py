"""Operator memory and start with a large catalog: W RemediationWorkflows in the apiserver (the
synthetic catalog of ``bench/catalog_search.py``), the operator started (offline provider; start →
catalog loaded, and → ready), then analyses to a terminal status in cumulative steps (100, 1,000,
5,000); VmRSS and VmHWM (peak) of the operator process from /proc at each step.

Run last: the catalog stays in the cluster.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from bench import catalog_search, harness, workload

MIB = 1024


def _workflow_bodies(size: int) -> list[dict[str, Any]]:
    specs, _ = catalog_search.synthetic_specs(size)
    return [
        {
            "apiVersion": workload.API_VERSION,
            "kind": "RemediationWorkflow",
            "metadata": {"name": name},
            "spec": spec.wire(),
        }
        for name, spec in specs
    ]


def run(
    cluster: harness.Cluster,
    *,
    workflows: int,
    analyses: list[int],
    log_dir: Path,
    repeats: int = 0,
    repeat_size: int = 1000,
) -> dict[str, Any]:
    """``analyses`` are cumulative steps (e.g. 100, 1,000, 5,000): RSS is read at each. Then
    ``repeats`` more bursts of ``repeat_size`` (each in a namespace of its own): a growth there would
    be what finished analyses keep; none means the steps' growth is a burst's high-water mark."""
    offline = {"AIANALYSIS_PROVIDER": "offline"}
    existing = cluster.count(harness.RW)
    with harness.Operator(cluster, env=offline, log_dir=log_dir) as operator:
        operator.wait_catalog(existing, timeout=60)
        time.sleep(1.0)
        idle = harness.memory_kib(operator.pid)
    started = time.monotonic()
    cluster.create_all(_workflow_bodies(workflows), namespace=None, threads=16)
    create_s = time.monotonic() - started
    catalog_size = existing + workflows
    namespace = cluster.namespace("mem")
    signals = catalog_search.SIGNALS[:12]
    steps: list[dict[str, Any]] = []
    with harness.Operator(cluster, env=offline, log_dir=log_dir) as operator:
        operator.wait_catalog(catalog_size, timeout=600)
        startup_s = time.monotonic() - operator.started
        operator.wait_ready(timeout=120)
        ready_s = time.monotonic() - operator.started
        loaded = harness.memory_kib(operator.pid)
        with harness.TerminalWatch(cluster, namespace) as watcher:
            done = 0
            for total in analyses:
                bodies = [
                    workload.analysis_body(n, signals=signals, name_prefix="mem") for n in range(done, total)
                ]
                began = time.monotonic()
                cluster.create_all(bodies, namespace=namespace, threads=16)
                watcher.wait(total, timeout=900 + total * 0.5)
                took = time.monotonic() - began
                time.sleep(1.0)
                rss = harness.memory_kib(operator.pid)
                steps.append(
                    {
                        "analyses": total,
                        "rss_mib": round(rss["VmRSS"] / MIB, 1),
                        "hwm_mib": round(rss["VmHWM"] / MIB, 1),
                        "per_second": round((total - done) / took, 1),
                    }
                )
                done = total
        for _ in range(repeats):
            again = cluster.namespace("mem")
            with harness.TerminalWatch(cluster, again) as watcher_again:
                bodies = [
                    workload.analysis_body(n, signals=signals, name_prefix="mem")
                    for n in range(done, done + repeat_size)
                ]
                began = time.monotonic()
                cluster.create_all(bodies, namespace=again, threads=16)
                watcher_again.wait(repeat_size, timeout=900 + repeat_size * 0.5)
                took = time.monotonic() - began
            time.sleep(1.0)
            done += repeat_size
            rss = harness.memory_kib(operator.pid)
            steps.append(
                {
                    "analyses": done,
                    "rss_mib": round(rss["VmRSS"] / MIB, 1),
                    "hwm_mib": round(rss["VmHWM"] / MIB, 1),
                    "per_second": round(repeat_size / took, 1),
                    "repeat": True,
                }
            )
    cumulative = [step for step in steps if not step.get("repeat")]
    at_goal = next((step for step in cumulative if step["analyses"] >= 1000), cumulative[-1])
    after_catalog = round(loaded["VmRSS"] / MIB, 1)
    return {
        "workflows": catalog_size,
        "analyses": at_goal["analyses"],
        "create_workflows_s": round(create_s, 1),
        "startup_s": round(startup_s, 1),
        "ready_s": round(ready_s, 1),
        "idle_workflows": existing,
        "rss_idle_mib": round(idle["VmRSS"] / MIB, 1),
        "rss_after_catalog_mib": after_catalog,
        "rss_end_mib": at_goal["rss_mib"],
        "hwm_mib": at_goal["hwm_mib"],
        "steps": steps,
        "kib_per_analysis": round(
            (cumulative[-1]["rss_mib"] - after_catalog) * MIB / cumulative[-1]["analyses"], 1
        ),
        "phases": sorted(set(watcher.phases.values())),
        "goal_max_mib": 150,
        "goal_idle_max_mib": 90,
        "goal_startup_max_s": 10,
    }
