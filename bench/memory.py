"""Operator memory with a large catalog: W RemediationWorkflows in the apiserver (the synthetic
catalog of ``bench/catalog_search.py``), the operator started (offline provider), then A analyses
to a terminal status; VmRSS and VmHWM (peak) of the operator process from /proc.

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


def run(cluster: harness.Cluster, *, workflows: int, analyses: int, log_dir: Path) -> dict[str, Any]:
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
    bodies = [workload.analysis_body(n, signals=signals, name_prefix="mem") for n in range(analyses)]
    with harness.Operator(cluster, env=offline, log_dir=log_dir) as operator:
        operator.wait_catalog(catalog_size, timeout=600)
        startup_s = time.monotonic() - operator.started
        loaded = harness.memory_kib(operator.pid)
        with harness.TerminalWatch(cluster, namespace) as watcher:
            cluster.create_all(bodies, namespace=namespace, threads=16)
            watcher.wait(analyses, timeout=900)
        time.sleep(1.0)
        final = harness.memory_kib(operator.pid)
    return {
        "workflows": catalog_size,
        "analyses": analyses,
        "create_workflows_s": round(create_s, 1),
        "startup_s": round(startup_s, 1),
        "idle_workflows": existing,
        "rss_idle_mib": round(idle["VmRSS"] / MIB, 1),
        "rss_after_catalog_mib": round(loaded["VmRSS"] / MIB, 1),
        "rss_end_mib": round(final["VmRSS"] / MIB, 1),
        "hwm_mib": round(final["VmHWM"] / MIB, 1),
        "phases": sorted(set(watcher.phases.values())),
        "goal_max_mib": 150,
    }
