"""``aianalysis eval``: load scenarios and catalog, run them all, write the reports.

Input problems (a bad scenario, an expectation the catalog cannot meet, bad settings) raise
``errors.ConfigError`` before anything runs, which the command line turns into exit code 2.
Exit code 1 means the evaluation ran but failed its gate: ``--min-accuracy`` not reached, or no
run finished at all (the provider was never reachable). Ctrl-C stops the runs and still writes
the report of those that finished (exit code 130): LLM runs cost money.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from aianalysis import catalog, resources, settings
from aianalysis.analysis import llm
from aianalysis.evaluation import chart, progress, report, runner, scoring, suite, tally

JSON_FILE = "report.json"
MARKDOWN_FILE = "report.md"
CHART_FILE = "report.png"
INTERRUPTED = 130
DEFAULT_OUT = Path("eval-report")
DESCRIPTION = (
    "Run every scenario (an incident plus the workflows an SRE would accept) through the full pipeline "
    "and report accuracy, parameter validity, human-review rate, forbidden picks, tokens and latency. "
    "Scenario format: examples/eval/README.md."
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Options:
    scenarios: Sequence[Path]
    catalog: Sequence[Path]
    provider: settings.ProviderName | None = None
    repeat: int = 1
    concurrency: int | None = None
    """Conversations at once; default: the operator's ``settings.analysis.max_concurrent``."""
    out: Path | None = None
    """Report directory; default ``eval-report/<UTC time>-<provider>``."""
    min_accuracy: float | None = None


def evaluate(options: Options, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run the evaluation; 0, or 1 when the gate is missed (see the module docstring)."""
    stdout = sys.stdout if stdout is None else stdout
    stderr = sys.stderr if stderr is None else stderr
    scenarios = suite.load_scenarios(options.scenarios)
    index = catalog.load_paths(options.catalog)
    suite.check_against(scenarios, index)
    config = settings.from_env(provider=options.provider)
    warning = asyncio.run(llm.check_model(config))  # a retired model stops here, before any paid run
    if warning:
        print(f"aianalysis eval: warning: {warning}", file=stderr)
    started = resources.utcnow()
    out = options.out or DEFAULT_OUT / f"{started:%Y%m%dT%H%M%SZ}-{config.llm.provider}"
    concurrency = options.concurrency or config.analysis.max_concurrent
    bar = progress.Progress(len(scenarios) * options.repeat, stream=stderr)
    finished: list[scoring.RunResult] = []

    def record(result: scoring.RunResult) -> None:
        finished.append(result)
        bar(result)

    print(
        f"aianalysis eval: {len(scenarios)} scenarios x {options.repeat} with provider {config.llm.provider} "
        f"({concurrency} at once)",
        file=stderr,
    )
    provider = llm.make_provider(config)
    interrupted = False
    try:
        asyncio.run(
            _run(scenarios, index=index, provider=provider, config=config, options=options, on_result=record)
        )
    except KeyboardInterrupt:
        interrupted = True
        print(f"\naianalysis eval: interrupted; reporting the {len(finished)} finished runs", file=stderr)
    results = runner.ordered(finished, scenarios=scenarios)
    meta = report.Meta(
        provider=provider.name,
        model=_model(results, provider),
        catalog=[str(p) for p in options.catalog],
        scenarios=[str(p) for p in options.scenarios],
        repeat=options.repeat,
        generated_at=resources.timestamp(started),
    )
    summary = tally.summarize(results, scenarios=scenarios)
    written = write(out, results, summary=summary, scenarios=scenarios, meta=meta, stderr=stderr)
    print(report.summary_markdown(summary, meta=meta), file=stdout)
    print("\n".join(f"wrote {path}" for path in written), file=stdout)
    return INTERRUPTED if interrupted else _exit_code(summary, options.min_accuracy, stderr=stderr)


async def _run(
    scenarios: Sequence[suite.Scenario],
    *,
    index: catalog.Catalog,
    provider: llm.Provider,
    config: settings.Settings,
    options: Options,
    on_result: runner.OnResult,
) -> None:
    """Every run, reported through ``on_result``; the provider is closed however it ends."""
    try:
        await runner.run_all(
            scenarios,
            index=index,
            provider=provider,
            settings=config,
            repeat=options.repeat,
            concurrency=options.concurrency or config.analysis.max_concurrent,
            on_result=on_result,
        )
    finally:
        await provider.aclose()


def _model(results: Sequence[scoring.RunResult], provider: llm.Provider) -> str:
    """The model(s) that answered, as reported by the API (an alias may resolve to a dated id)."""
    models = {r.usage.model for r in results if r.usage and r.usage.model}
    return ", ".join(sorted(models)) or provider.model


def write(
    out: Path,
    results: Sequence[scoring.RunResult],
    *,
    summary: tally.Summary,
    scenarios: Sequence[suite.Scenario],
    meta: report.Meta,
    stderr: TextIO | None = None,
) -> list[Path]:
    """The JSON, Markdown and (with matplotlib) PNG reports in ``out``; the paths written."""
    stderr = sys.stderr if stderr is None else stderr
    out.mkdir(parents=True, exist_ok=True)
    document = report.to_json(results, summary=summary, scenarios=scenarios, meta=meta)
    (out / JSON_FILE).write_text(json.dumps(document, indent=2) + "\n")
    (out / MARKDOWN_FILE).write_text(
        report.to_markdown(results, summary=summary, scenarios=scenarios, meta=meta)
    )
    written = [out / JSON_FILE, out / MARKDOWN_FILE]
    png = chart.draw(out / CHART_FILE, results, summary=summary, meta=meta)
    if png is None:
        print(
            f"aianalysis eval: matplotlib is not installed, skipped {CHART_FILE}: {chart.INSTALL_HINT}",
            file=stderr,
        )
    else:
        written.append(png)
    return written


def _exit_code(summary: tally.Summary, min_accuracy: float | None, *, stderr: TextIO) -> int:
    if summary.runs and summary.errors == summary.runs:
        print("aianalysis eval: every run failed with a provider error (see the report)", file=stderr)
        return 1
    if min_accuracy is not None and summary.accuracy < min_accuracy:
        print(
            f"aianalysis eval: accuracy {summary.accuracy:.1%} is below --min-accuracy {min_accuracy:.1%}",
            file=stderr,
        )
        return 1
    return 0


# ---- command line --------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    for flag, what in (
        ("--scenarios", "scenario files or directories"),
        ("--catalog", "RemediationWorkflow YAML files or directories"),
    ):
        parser.add_argument(flag, nargs="+", required=True, type=Path, metavar="PATH", help=what)
    parser.add_argument(
        "--provider",
        choices=settings.PROVIDERS,
        help="default: AIANALYSIS_PROVIDER, else anthropic when ANTHROPIC_API_KEY is set, else offline",
    )
    parser.add_argument(
        "--repeat", type=_positive, default=1, metavar="N", help="runs per scenario (default 1)"
    )
    parser.add_argument(
        "--concurrency",
        type=_positive,
        metavar="N",
        help="analyses at once (default AIANALYSIS_MAX_CONCURRENT_ANALYSES)",
    )
    parser.add_argument(
        "--out", type=Path, metavar="DIR", help="report directory (default eval-report/<time>-<provider>)"
    )
    parser.add_argument(
        "--min-accuracy", type=_fraction, metavar="X", help="exit 1 when accuracy is below X (0..1)"
    )


def from_args(args: argparse.Namespace) -> int:
    """The ``aianalysis eval`` handler."""
    options = Options(
        scenarios=args.scenarios,
        catalog=args.catalog,
        provider=args.provider,
        repeat=args.repeat,
        concurrency=args.concurrency,
        out=args.out,
        min_accuracy=args.min_accuracy,
    )
    return evaluate(options)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError("must be between 0 and 1")
    return value
