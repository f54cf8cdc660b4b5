"""Pure: run results → the summary numbers of an evaluation.

Definitions (also in ``examples/eval/README.md``):
- accuracy = correct runs / runs (a run is one analysis of one scenario; ``--repeat`` multiplies);
- parameter validity = runs whose proposal passed every parameter rule / runs that proposed one;
- parameters matched = runs whose expected values all matched / runs of scenarios expecting values;
- human-review rate = runs ending with ``needsHumanReview`` / runs that completed;
- latency percentiles interpolate linearly between the two nearest runs.
"""

from __future__ import annotations

import collections
import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from aianalysis.evaluation import scoring, suite

_TOKEN_FIELDS = (
    "requests",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "tool_calls",
)


@dataclasses.dataclass(frozen=True)
class Rate:
    count: int
    total: int

    @property
    def value(self) -> float | None:
        return self.count / self.total if self.total else None

    def to_json(self) -> dict[str, Any]:
        return {"count": self.count, "total": self.total, "rate": self.value}

    def text(self) -> str:
        value = self.value
        return "n/a (0 runs)" if value is None else f"{value:.1%} ({self.count}/{self.total})"


@dataclasses.dataclass(frozen=True, kw_only=True)
class Summary:
    runs: int
    scenarios: int
    correct: Rate
    parameters_valid: Rate
    parameters_matched: Rate
    first_answer_valid: Rate
    human_review: Rate
    forbidden_selected: int
    forbidden_rejected: int
    errors: int
    tokens: dict[str, int]
    latency_seconds: dict[str, float]
    by_tag: dict[str, Rate]
    unstable: list[str]

    @property
    def accuracy(self) -> float:
        return self.correct.value or 0.0


def summarize(results: Sequence[scoring.RunResult], *, scenarios: Sequence[suite.Scenario]) -> Summary:
    completed = [r for r in results if r.error is None]
    tags = {s.name: s.tags for s in scenarios}
    return Summary(
        runs=len(results),
        scenarios=len({r.scenario for r in results}),
        correct=Rate(sum(r.correct for r in results), len(results)),
        parameters_valid=_judged(r.parameters_valid for r in results),
        parameters_matched=_judged(r.parameters_matched for r in results),
        first_answer_valid=_judged(r.first_answer_valid for r in completed),
        human_review=Rate(sum(r.needs_human_review for r in completed), len(completed)),
        forbidden_selected=sum(r.forbidden_selected for r in results),
        forbidden_rejected=sum(bool(r.forbidden_rejected) for r in results),
        errors=len(results) - len(completed),
        tokens=_tokens(results),
        latency_seconds=latency_stats([r.latency_seconds for r in results]),
        by_tag=_by_tag(results, tags),
        unstable=_unstable(results),
    )


def _judged(values: Iterable[bool | None]) -> Rate:
    judged = [v for v in values if v is not None]
    return Rate(sum(judged), len(judged))


def _tokens(results: Sequence[scoring.RunResult]) -> dict[str, int]:
    return {name: sum(getattr(r.usage, name) for r in results if r.usage) for name in _TOKEN_FIELDS}


def percentile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default); 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def latency_stats(values: Sequence[float]) -> dict[str, float]:
    return {
        "p50": percentile(values, 0.50),
        "p95": percentile(values, 0.95),
        "mean": sum(values) / len(values) if values else 0.0,
        "max": max(values, default=0.0),
    }


def _by_tag(results: Sequence[scoring.RunResult], tags: Mapping[str, Sequence[str]]) -> dict[str, Rate]:
    counts: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for result in results:
        for tag in tags.get(result.scenario, ()):
            counts[tag][0] += result.correct
            counts[tag][1] += 1
    return {tag: Rate(*counts[tag]) for tag in sorted(counts)}


def _unstable(results: Sequence[scoring.RunResult]) -> list[str]:
    """Scenarios whose repeated runs did not all end the same way (workflow and review reason)."""
    outcomes: dict[str, set[tuple[str | None, str | None, bool]]] = collections.defaultdict(set)
    for r in results:
        outcomes[r.scenario].add((r.selected_workflow, r.human_review_reason, r.error is not None))
    return [name for name, seen in outcomes.items() if len(seen) > 1]
