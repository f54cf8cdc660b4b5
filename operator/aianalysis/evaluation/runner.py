"""Runs every scenario through the operator's own pipeline (``pipeline.analyze`` then
``status.completed``), ``repeat`` times, at most ``concurrency`` conversations at once.

One provider serves every run, as in the operator process. A provider failure (after the SDK's
retries) is recorded on that run, which counts as incorrect, and the evaluation goes on: one
overloaded minute should not throw away a long run.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Sequence

import aianalysis.settings
from aianalysis import catalog, errors, resources
from aianalysis.analysis import llm, pipeline, status
from aianalysis.evaluation import cluster, scoring, suite

_Timer = Callable[[], float]
OnResult = Callable[[scoring.RunResult], None]


@dataclasses.dataclass(frozen=True)
class Job:
    scenario: suite.Scenario
    run: int


def jobs(scenarios: Sequence[suite.Scenario], *, repeat: int) -> list[Job]:
    """Round by round, so an interrupted long evaluation has covered every scenario evenly."""
    return [Job(scenario, run) for run in range(1, repeat + 1) for scenario in scenarios]


async def run_all(
    scenarios: Sequence[suite.Scenario],
    *,
    index: catalog.Catalog,
    provider: llm.Provider,
    settings: aianalysis.settings.Settings,
    repeat: int = 1,
    concurrency: int = 4,
    on_result: OnResult = lambda result: None,
    timer: _Timer = time.perf_counter,
    now: resources.Clock = resources.utcnow,
) -> list[scoring.RunResult]:
    """Every run's result, ordered by scenario then run number."""
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(job: Job) -> scoring.RunResult:
        async with gate:
            result = await run_one(
                job.scenario,
                run=job.run,
                index=index,
                provider=provider,
                settings=settings,
                timer=timer,
                now=now,
            )
        on_result(result)
        return result

    results = await asyncio.gather(*(one(job) for job in jobs(scenarios, repeat=repeat)))
    return ordered(results, scenarios=scenarios)


def ordered(
    results: Sequence[scoring.RunResult], *, scenarios: Sequence[suite.Scenario]
) -> list[scoring.RunResult]:
    """Scenario order, then run number (runs finish in any order)."""
    position = {scenario.name: index for index, scenario in enumerate(scenarios)}
    return sorted(results, key=lambda r: (position[r.scenario], r.run))


async def run_one(
    scenario: suite.Scenario,
    *,
    run: int,
    index: catalog.Catalog,
    provider: llm.Provider,
    settings: aianalysis.settings.Settings,
    timer: _Timer = time.perf_counter,
    now: resources.Clock = resources.utcnow,
) -> scoring.RunResult:
    """One analysis of one scenario, scored; latency covers the whole pipeline."""
    started = timer()
    try:
        decision = await pipeline.analyze(
            scenario.spec,
            catalog=index,
            provider=provider,
            reader=cluster.InMemoryCluster.of(scenario),
            settings=settings,
            now=now,
        )
    except errors.ProviderError as exc:
        return scoring.errored(
            scenario, error=f"{exc.reason}: {exc}", run=run, latency_seconds=timer() - started
        )
    latency = timer() - started
    moment = now()
    begun = resources.AIAnalysisStatus(
        phase="Investigating", attempt=1, started_at=resources.timestamp(moment)
    )
    final = status.completed(previous=begun, decision=decision, now=moment, generation=None)
    return scoring.score(scenario, status=final, index=index, run=run, latency_seconds=latency)
