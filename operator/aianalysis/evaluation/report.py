"""Pure: run results and their summary → the JSON document and the Markdown report."""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic.alias_generators import to_camel

from aianalysis.evaluation import scoring, suite, tally


@dataclasses.dataclass(frozen=True, kw_only=True)
class Meta:
    """Where the numbers come from (shown at the top of every report)."""

    provider: str
    model: str
    catalog: Sequence[str]
    scenarios: Sequence[str]
    repeat: int
    generated_at: str


# ---- JSON --------------------------------------------------------------------------------------


def to_json(
    results: Sequence[scoring.RunResult],
    *,
    summary: tally.Summary,
    scenarios: Sequence[suite.Scenario],
    meta: Meta,
) -> dict[str, Any]:
    """The full report: metadata, summary numbers, and every run with the status it produced."""
    by_scenario = _group(results)
    return {
        "meta": {
            "provider": meta.provider,
            "model": meta.model,
            "catalog": list(meta.catalog),
            "scenarios": list(meta.scenarios),
            "repeat": meta.repeat,
            "generatedAt": meta.generated_at,
        },
        "summary": _summary_json(summary),
        "scenarios": [
            {
                "name": s.name,
                "description": s.description,
                "file": str(s.path),
                "tags": list(s.tags),
                "expect": s.expect.model_dump(mode="json", by_alias=True, exclude_defaults=True),
                "runs": [r.to_json() for r in by_scenario.get(s.name, [])],
            }
            for s in scenarios
        ],
    }


def _summary_json(summary: tally.Summary) -> dict[str, Any]:
    return {
        "runs": summary.runs,
        "scenarios": summary.scenarios,
        "correct": summary.correct.count,
        "accuracy": summary.accuracy,
        "parametersValid": summary.parameters_valid.to_json(),
        "parametersMatched": summary.parameters_matched.to_json(),
        "firstAnswerValid": summary.first_answer_valid.to_json(),
        "humanReview": summary.human_review.to_json(),
        "forbiddenSelected": summary.forbidden_selected,
        "forbiddenRejected": summary.forbidden_rejected,
        "errors": summary.errors,
        "tokens": {to_camel(name): value for name, value in summary.tokens.items()},
        "latencySeconds": summary.latency_seconds,
        "byTag": {tag: rate.to_json() for tag, rate in summary.by_tag.items()},
        "unstableScenarios": summary.unstable,
    }


def _group(results: Sequence[scoring.RunResult]) -> dict[str, list[scoring.RunResult]]:
    grouped: dict[str, list[scoring.RunResult]] = collections.defaultdict(list)
    for result in results:
        grouped[result.scenario].append(result)
    return grouped


# ---- Markdown ----------------------------------------------------------------------------------


def summary_markdown(summary: tally.Summary, *, meta: Meta) -> str:
    """The headline table (also printed by the command)."""
    tokens, latency = summary.tokens, summary.latency_seconds
    per_run = summary.runs or 1
    rows = [
        ("accuracy", summary.correct.text()),
        ("parameter validity", summary.parameters_valid.text()),
        ("expected parameters matched", summary.parameters_matched.text()),
        ("first answer valid", summary.first_answer_valid.text()),
        ("human review", summary.human_review.text()),
        (
            "forbidden workflow selected",
            f"{summary.forbidden_selected} (proposed, then rejected: {summary.forbidden_rejected})",
        ),
        ("provider errors", str(summary.errors)),
        (
            "tokens",
            f"input {tokens['input_tokens']:,} · output {tokens['output_tokens']:,} · cache read "
            f"{tokens['cache_read_tokens']:,} · per run {tokens['input_tokens'] / per_run:,.0f} in / "
            f"{tokens['output_tokens'] / per_run:,.0f} out · {tokens['requests']:,} requests · "
            f"{tokens['tool_calls']:,} tool calls",
        ),
        (
            "latency",
            f"p50 {_secs(latency['p50'])} · p95 {_secs(latency['p95'])} · max {_secs(latency['max'])}",
        ),
    ]
    header = (
        f"# aianalysis eval — {meta.provider} ({meta.model})\n\n"
        f"{summary.scenarios} scenarios × {meta.repeat} run(s) = {summary.runs} runs · catalog "
        f"{', '.join(f'`{c}`' for c in meta.catalog)} · {meta.generated_at}\n"
    )
    return header + "\n" + _table(("metric", "value"), rows)


def to_markdown(
    results: Sequence[scoring.RunResult],
    *,
    summary: tally.Summary,
    scenarios: Sequence[suite.Scenario],
    meta: Meta,
) -> str:
    parts = [summary_markdown(summary, meta=meta)]
    if summary.by_tag:
        tag_rows = [
            (f"`{tag}`", str(rate.total), str(rate.count), rate.text())
            for tag, rate in summary.by_tag.items()
        ]
        parts.append("## By tag\n\n" + _table(("tag", "runs", "correct", "accuracy"), tag_rows))
    if summary.unstable:
        parts.append("Runs disagreed on: " + ", ".join(f"`{name}`" for name in summary.unstable) + "\n")
    grouped = _group(results)
    rows = [_scenario_row(s, grouped.get(s.name, [])) for s in scenarios]
    parts.append(
        "## Scenarios\n\n"
        + _table(
            ("scenario", "expected", "selected", "correct", "review", "parameters", "tokens in/out", "p50"),
            rows,
        )
    )
    return "\n".join(parts)


def _scenario_row(scenario: suite.Scenario, runs: Sequence[scoring.RunResult]) -> tuple[str, ...]:
    expect = scenario.expect
    expected = " or ".join(expect.workflow_ids) or f"review ({', '.join(expect.expect_review or [])})"
    if expect.forbidden_workflow_ids:
        expected += f"; never {', '.join(expect.forbidden_workflow_ids)}"
    correct = sum(r.correct for r in runs)
    mark = "✓" if runs and correct == len(runs) else ("✗" if correct == 0 else "~")
    tokens_in = sum(r.input_tokens for r in runs) // max(len(runs), 1)
    tokens_out = sum(r.output_tokens for r in runs) // max(len(runs), 1)
    return (
        f"`{scenario.name}`",
        expected,
        _counted(_selected(r) for r in runs),
        f"{mark} {correct}/{len(runs)}",
        _counted(r.human_review_reason or "—" for r in runs if r.error is None) or "—",
        _counted(_parameters(r) for r in runs),
        f"{tokens_in:,}/{tokens_out:,}",
        _secs(tally.percentile([r.latency_seconds for r in runs], 0.5)),
    )


def _selected(result: scoring.RunResult) -> str:
    if result.error is not None:
        return "error: " + result.error[:80]
    if result.selected_workflow:
        return result.selected_workflow + (" **FORBIDDEN**" if result.forbidden_selected else "")
    return f"— (proposed {result.candidate})" if result.candidate else "—"


def _parameters(result: scoring.RunResult) -> str:
    validity = {True: "valid", False: "invalid", None: "—"}[result.parameters_valid]
    if result.parameters_matched is False and result.parameter_mismatches:
        return f"{validity}; " + "; ".join(result.parameter_mismatches)
    return validity + ("; as expected" if result.parameters_matched else "")


def _counted(values: Iterable[str]) -> str:
    counts = collections.Counter(values)
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{value} ×{n}" for value, n in counts.most_common())


def _secs(value: float) -> str:
    if value < 1:
        return f"{value * 1000:.1f}ms"
    return f"{value:.2f}s" if value < 10 else f"{value:.1f}s"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")
