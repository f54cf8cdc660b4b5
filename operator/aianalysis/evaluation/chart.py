"""The PNG chart of a report, drawn with matplotlib when it is installed (the optional ``eval``
extra); without it the report skips the picture and says how to get it.

matplotlib is imported by name at call time, so neither importing this package nor type-checking
it needs matplotlib; its objects are ``Any`` here.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aianalysis.evaluation import report, scoring, tally

INSTALL_HINT = "pip install matplotlib (or the package's 'eval' extra)"


def available() -> bool:
    try:
        importlib.import_module("matplotlib")
    except ImportError:
        return False
    return True


def draw(
    path: Path, results: Sequence[scoring.RunResult], *, summary: tally.Summary, meta: report.Meta
) -> Path | None:
    """Draw the chart to ``path``; None (and nothing written) when matplotlib is missing."""
    try:
        figure_module = importlib.import_module("matplotlib.figure")
    except ImportError:
        return None
    figure = figure_module.Figure(
        figsize=(12, max(4.0, 0.32 * len(summary.by_tag) + 2)), layout="constrained"
    )
    by_tag, latency = figure.subplots(1, 2, width_ratios=(3, 2))
    _accuracy_by_tag(by_tag, summary)
    _latency(latency, results, summary)
    figure.suptitle(
        f"{meta.provider} ({meta.model}) — accuracy {summary.correct.text()}, "
        f"{summary.forbidden_selected} forbidden selected, review {summary.human_review.text()}"
    )
    figure.savefig(path, dpi=110)
    return path


def _accuracy_by_tag(axes: Any, summary: tally.Summary) -> None:
    names = ["all", *summary.by_tag]
    rates = [summary.correct, *summary.by_tag.values()]
    values = [100 * (rate.value or 0.0) for rate in rates]
    colors = ["#4c72b0", *["#55a868" if v >= 80 else "#dd8452" if v >= 50 else "#c44e52" for v in values[1:]]]
    bars = axes.barh(names, values, color=colors)
    axes.bar_label(bars, labels=[f"{rate.count}/{rate.total}" for rate in rates], padding=3, fontsize=8)
    axes.invert_yaxis()
    axes.set_xlim(0, 110)
    axes.set_xlabel("correct runs (%)")
    axes.set_title("Accuracy by tag")


def _latency(axes: Any, results: Sequence[scoring.RunResult], summary: tally.Summary) -> None:
    """Milliseconds when every run took under a second (the offline provider), else seconds."""
    scale, unit = (1000.0, "ms") if summary.latency_seconds["max"] < 1 else (1.0, "s")
    values = [r.latency_seconds * scale for r in results]
    axes.hist(values, bins=min(30, max(5, len(values) // 3)), color="#8172b3")
    for name, style in (("p50", "--"), ("p95", ":")):
        axes.axvline(summary.latency_seconds[name] * scale, color="black", linestyle=style, label=name)
    axes.legend()
    axes.set_xlabel(f"{unit} per analysis")
    axes.set_ylabel("runs")
    axes.set_title("Latency")
