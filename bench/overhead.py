"""Operator overhead: N AIAnalyses, create → terminal status, with an instant scripted model,
against a raw floor on the same apiserver.

The floor is the least any controller must do for the same outcome: a minimal client that creates
the same objects and writes the same two statuses (``Investigating``, then the terminal one the
operator would write) with plain PATCHes, at the same concurrency. Both runs are timed the same
way: from the first create to the moment a watch sees the last object terminal. Floor and
operator runs alternate (F O F O ...) so drift in machine load hits both; the figure is the
ratio of their medians.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aianalysis import catalog, resources, settings
from aianalysis.analysis import pipeline, status
from bench import harness, workload

TIMEOUT_S = 600.0
SETTLE_S = 6.0


def terminal_statuses() -> tuple[dict[str, Any], dict[str, Any]]:
    """The Investigating and Completed statuses the operator writes for a bench analysis, made by
    the real pipeline (offline provider) in this process, as JSON merge patches."""
    found = catalog.Catalog()
    for obj in workload.catalog_objects():
        found.upsert(obj["metadata"]["name"], resources.RemediationWorkflowSpec.model_validate(obj["spec"]))
    spec = resources.AIAnalysisSpec.model_validate(workload.analysis_body(0)["spec"])
    config = settings.Settings(llm=settings.LlmSettings(provider="offline"))
    from aianalysis.analysis import llm  # noqa: PLC0415

    decision = asyncio.run(
        pipeline.analyze(
            spec, catalog=found, provider=llm.make_provider(config), reader=None, settings=config
        )
    )
    now = resources.utcnow()
    marked = status.investigating(previous=resources.AIAnalysisStatus(), attempt=1, now=now, generation=1)
    final = status.completed(previous=marked, decision=decision, now=now, generation=1)
    assert final.selected_workflow is not None, "the bench catalog must solve the bench analysis"
    return marked.merge_patch(), final.merge_patch()


def _timed(
    cluster: harness.Cluster, namespace: str, *, count: int, run: Any, meter: harness.CpuMeter
) -> dict[str, Any]:
    with harness.TerminalWatch(cluster, namespace) as watcher:
        before = harness.apiserver_requests(cluster)
        meter.start()
        started = run()
        done = watcher.wait(count, timeout=TIMEOUT_S)
        cpu = meter.stop()
        after = harness.apiserver_requests(cluster)
        # Stay watching a little longer than kopf's consistency timeout (5 s): a stale event that
        # re-analyses a finished object shows up as ``attempt: 2`` only after that.
        time.sleep(SETTLE_S)
    requests = {
        k: round((v - before.get(k, 0)) / count, 2) for k, v in after.items() if v != before.get(k, 0)
    }
    first = min(started.values())
    latencies = [(done[name] - started[name]) * 1000 for name in started]
    phases = sorted(set(watcher.phases.values()))
    picked = [(watcher.investigating[n] - started[n]) * 1000 for n in started if n in watcher.investigating]
    return {
        "seconds": round(max(done.values()) - first, 3),
        "latency_ms": {
            "p50": round(harness.percentile(latencies, 0.5), 1),
            "p99": round(harness.percentile(latencies, 0.99), 1),
        },
        "pickup_ms": {
            "p50": round(harness.percentile(picked, 0.5), 1) if picked else None,
            "p99": round(harness.percentile(picked, 0.99), 1) if picked else None,
        },
        "phases": phases,
        "analysed_twice": len(watcher.reattempted),
        "cpu_s": cpu,
        "requests_per_analysis": requests,
    }


def floor_run(cluster: harness.Cluster, *, count: int, concurrency: int) -> dict[str, Any]:
    investigating, final = terminal_statuses()
    namespace = cluster.namespace("floor")
    bodies = [workload.analysis_body(n) for n in range(count)]

    def one(body: dict[str, Any]) -> None:
        cluster.create(body, namespace=namespace)
        name = body["metadata"]["name"]
        cluster.patch_status(name, namespace=namespace, status=investigating)
        cluster.patch_status(name, namespace=namespace, status=final)

    meter = harness.CpuMeter(cluster.control_plane_pids())
    result = _timed(
        cluster,
        namespace,
        count=count,
        run=lambda: harness.parallel(bodies, one, threads=concurrency),
        meter=meter,
    )
    cluster.delete_analyses(namespace)
    return result


def operator_run(
    cluster: harness.Cluster,
    *,
    count: int,
    concurrency: int,
    provider_env: dict[str, str],
    extra_pids: dict[str, int],
    log_dir: Path,
) -> dict[str, Any]:
    namespace = cluster.namespace("op")
    bodies = [workload.analysis_body(n) for n in range(count)]
    env = {"AIANALYSIS_MAX_CONCURRENT_ANALYSES": str(concurrency), **provider_env}
    with harness.Operator(cluster, env=env, log_dir=log_dir) as operator:
        operator.wait_catalog(len(workload.SIGNALS), timeout=60)
        time.sleep(2.0)  # let start-up work (imports, initial lists) finish before the clock starts
        meter = harness.CpuMeter({**cluster.control_plane_pids(), "operator": operator.pid, **extra_pids})
        result = _timed(
            cluster,
            namespace,
            count=count,
            run=lambda: cluster.create_all(bodies, namespace=namespace, threads=concurrency),
            meter=meter,
        )
        result["rss_mib"] = round(harness.memory_kib(operator.pid)["VmRSS"] / 1024, 1)
    cluster.delete_analyses(namespace)
    if result["phases"] != ["Completed"]:  # a refused analysis costs less than one analysed
        raise RuntimeError(f"the operator did not analyse every analysis: phases {result['phases']}")
    return result


def run(
    cluster: harness.Cluster, *, count: int, concurrency: int, rounds: int, log_dir: Path
) -> dict[str, Any]:
    cluster.ensure(workload.catalog_objects())
    runs: dict[str, list[dict[str, Any]]] = {"floor": [], "scripted": [], "offline": []}
    stats: list[dict[str, Any]] = []

    def scripted() -> dict[str, Any]:
        with harness.LlmServer(delay=0.0) as llm:
            result = operator_run(
                cluster,
                count=count,
                concurrency=concurrency,
                provider_env=llm.operator_env(),
                extra_pids={"llm_server": llm.pid},
                log_dir=log_dir,
            )
        stats.append(llm.stats)
        return result

    kinds: dict[str, Callable[[], dict[str, Any]]] = {
        "floor": lambda: floor_run(cluster, count=count, concurrency=concurrency),
        "scripted": scripted,
        "offline": lambda: operator_run(
            cluster,
            count=count,
            concurrency=concurrency,
            provider_env={"AIANALYSIS_PROVIDER": "offline"},
            extra_pids={},
            log_dir=log_dir,
        ),
    }
    order = list(kinds)
    for number in range(rounds):
        # Each round starts with a different kind, so slow drift in load favours none of them.
        for kind in order[number % 3 :] + order[: number % 3]:
            result = kinds[kind]()
            result["order"] = len(runs["floor"]) + len(runs["scripted"]) + len(runs["offline"])
            runs[kind].append(result)
    median = {kind: statistics.median(r["seconds"] for r in done) for kind, done in runs.items()}
    return {
        "analyses": count,
        "concurrency": concurrency,
        "rounds": rounds,
        "floor": runs["floor"],
        "operator_scripted": runs["scripted"],
        "operator_offline": runs["offline"],
        "median_s": median,
        "llm_server": stats,
        "requests_per_analysis": [round(s.get("requests", 0) / count, 2) for s in stats],
        "ratio_scripted": round(median["scripted"] / median["floor"], 2),
        "ratio_offline": round(median["offline"] / median["floor"], 2),
        "goal_max_ratio": 1.5,  # issue 24
    }
