"""``aianalysis eval``: measure how well a provider picks workflows, on a corpus of scenarios.

- ``suite`` — the YAML scenario format (incident + expectation + optional cluster), loading
  and checks against the catalog;
- ``cluster`` — an in-memory ``tools.ClusterReader`` serving a scenario's objects and logs;
- ``runner`` — every scenario through ``pipeline.analyze`` + ``status.completed``, repeated,
  with bounded concurrency;
- ``scoring`` — pure: one run's status against the expectation;
- ``tally`` — pure: the numbers (accuracy, validity, review rate, tokens, latency);
- ``report`` / ``chart`` — JSON and Markdown (pure), PNG (optional matplotlib);
- ``command`` — the command itself (``progress`` draws its bar).
"""

from __future__ import annotations

from aianalysis.evaluation import (
    chart,
    cluster,
    command,
    progress,
    report,
    runner,
    scoring,
    suite,
    tally,
)
from aianalysis.evaluation.cluster import InMemoryCluster
from aianalysis.evaluation.command import Options, evaluate
from aianalysis.evaluation.scoring import RunResult
from aianalysis.evaluation.suite import Scenario, ScenarioError, load_scenarios

__all__ = [
    "InMemoryCluster",
    "Options",
    "RunResult",
    "Scenario",
    "ScenarioError",
    "chart",
    "cluster",
    "command",
    "evaluate",
    "load_scenarios",
    "progress",
    "report",
    "runner",
    "scoring",
    "suite",
    "tally",
]
