"""Prometheus queries scoped to the incident, and answers shaped for the LLM: durations, range
limits, and per-series summaries.

Pure: values in, text or plain data out. A range query's points are never shown; each series is
summarised as first/min/max/last and a trend, so a day of data costs about as much as one instant
value (the trend, not the points, is what tells a leak from a spike).

**Tenancy** (:class:`Tenancy`): the tools query Prometheus with the operator's credentials, which
read every tenant's series. So, as prom-label-proxy does, every selector of the query's AST (parsed
by ``promql-parser``, never edited as a string) gets a ``namespace`` matcher for the namespaces the
analysis may read; a namespace matcher of the LLM's that names anything else is refused, not
rewritten (an empty answer would read as "no problem"). Series without a ``namespace`` label
(Nodes, PersistentVolumes: cluster-level) are readable only for a cluster-scoped incident. The
query actually sent is parsed again and checked, so a printing quirk cannot drop a matcher.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any

import promql_parser

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}
_DURATION = re.compile(r"^(?:(\d{1,6})([smhdw]))+$")
_PART = re.compile(r"(\d{1,6})([smhdw])")

MAX_RANGE_SECONDS = 7 * 86_400
"""The longest range a range query may cover (a week)."""
MAX_POINTS = 1_000
"""Points per series a range query may ask for (range / step); Prometheus itself allows 11,000."""


class BadRequest(ValueError):
    """Arguments that cannot become a sensible Prometheus request; the message says how to fix them."""


LABEL = "namespace"
"""The label a tenant's series carry (kube-state-metrics, cAdvisor, the Prometheus Operator's
``enforcedNamespaceLabel``)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Tenancy:
    """Whose series one conversation may read."""

    namespaces: tuple[str, ...]
    """The incident's namespace and the ones the investigation settings add."""
    cluster: bool = False
    """Also series without a namespace label: a cluster-scoped incident (a Node, a PV)."""
    every: bool = False
    """Every namespace (``investigation_namespaces: "*"``): queries are left as they are."""

    def enforce(self, query: str) -> str:
        """``query`` with every selector scoped (see the module), or ``BadRequest`` saying why not."""
        if self.every:
            return query
        if not self.namespaces and not self.cluster:
            raise BadRequest("this incident has no namespace to scope Prometheus queries to")
        tree = _parse(query)
        for selector in _selectors(tree):
            self._scope(selector)
        scoped = str(tree)
        if any(not self._scoped(selector) for selector in _selectors(_parse(scoped))):
            raise BadRequest("the query could not be scoped to the incident's namespace; simplify it")
        return scoped

    def selector(self, metric: str | None) -> str | None:
        """The ``match[]`` series selector of a label lookup (None: no restriction)."""
        if self.every or metric:
            return self.enforce(metric) if metric else None
        if not self.namespaces and not self.cluster:
            raise BadRequest("this incident has no namespace to scope Prometheus queries to")
        # A selector needs one matcher that cannot match "" (``namespace=~"|shop"`` can).
        named = [promql_parser.Matcher(promql_parser.MatchOp.Re, "__name__", ".+")] if self.cluster else []
        return str(promql_parser.Matchers([*named, self._matcher()]))

    def admits(self, labels: Mapping[str, Any]) -> bool:
        """Whether an alert or a rule with these labels concerns what this analysis may read."""
        namespace = labels.get(LABEL)
        if self.every:
            return True
        return namespace in self.namespaces if namespace else self.cluster

    def _matcher(self) -> promql_parser.Matcher:
        if len(self.namespaces) == 1 and not self.cluster:
            return promql_parser.Matcher(promql_parser.MatchOp.Equal, LABEL, self.namespaces[0])
        values = ("",) * self.cluster + tuple(re.escape(n) for n in self.namespaces)
        return promql_parser.Matcher(promql_parser.MatchOp.Re, LABEL, "|".join(values))

    def _scope(self, selector: promql_parser.VectorSelector) -> None:
        if selector.matchers.or_matchers:
            raise BadRequest("`or` inside a selector's braces is not supported: join two selectors with or")
        for matcher in selector.matchers.matchers:
            if matcher.name == LABEL and not self._allowed(matcher):
                raise BadRequest(
                    f"{matcher} reads outside this analysis: its Prometheus queries see only the series of "
                    f"namespace {self._described()}; leave the namespace matcher out (it is added to every "
                    "selector for you)"
                )
        selector.matchers = promql_parser.Matchers([*selector.matchers.matchers, self._matcher()])

    def _allowed(self, matcher: promql_parser.Matcher) -> bool:
        if matcher.op != promql_parser.MatchOp.Equal:
            return False
        return matcher.value in self.namespaces or (self.cluster and matcher.value == "")

    def _scoped(self, selector: promql_parser.VectorSelector) -> bool:
        wanted = str(self._matcher())
        return not selector.matchers.or_matchers and any(str(m) == wanted for m in selector.matchers.matchers)

    def _described(self) -> str:
        names = " or ".join(repr(n) for n in self.namespaces)
        if self.cluster:
            return (
                f"{names} and series without a namespace label"
                if names
                else "series without a namespace label"
            )
        return names


def _parse(query: str) -> promql_parser.Expr:
    try:
        return promql_parser.parse(query)
    except ValueError as exc:
        raise BadRequest(f"not valid PromQL: {exc}") from None


def _selectors(node: promql_parser.Expr) -> Iterator[promql_parser.VectorSelector]:
    """Every vector selector of the tree (the AST's nodes share their children: a selector changed
    here is changed in the tree). An unknown node type fails closed."""
    if isinstance(node, promql_parser.VectorSelector):
        yield node
    elif isinstance(node, promql_parser.MatrixSelector):
        yield node.vector_selector
    elif isinstance(node, promql_parser.BinaryExpr):
        yield from _selectors(node.lhs)
        yield from _selectors(node.rhs)
    elif isinstance(node, promql_parser.AggregateExpr):
        if isinstance(node.param, promql_parser.Expr):
            yield from _selectors(node.param)
        yield from _selectors(node.expr)
    elif isinstance(node, promql_parser.Call):
        for arg in node.args:
            yield from _selectors(arg)
    elif isinstance(node, (promql_parser.ParenExpr, promql_parser.UnaryExpr, promql_parser.SubqueryExpr)):
        yield from _selectors(node.expr)
    elif not isinstance(node, (promql_parser.NumberLiteral, promql_parser.StringLiteral)):
        raise BadRequest(f"this query cannot be scoped to the incident's namespace ({type(node).__name__})")


def seconds(text: str, *, what: str) -> int:
    """A Prometheus duration (``90s``, ``15m``, ``1h30m``, ``2d``) in seconds."""
    text = text.strip()
    if not _DURATION.fullmatch(text):
        raise BadRequest(f"{what} {text!r} is not a duration like 30s, 5m, 1h or 1h30m")
    total = sum(int(n) * _UNITS[unit] for n, unit in _PART.findall(text))
    if total <= 0:
        raise BadRequest(f"{what} must be longer than 0s")
    return total


@dataclasses.dataclass(frozen=True)
class Window:
    start: float
    end: float
    step: int

    @property
    def points(self) -> int:
        return int((self.end - self.start) // self.step) + 1


def window(*, duration: str, step: str | None, end: float) -> Window:
    """The range ``[end - duration, end]`` with a step that keeps the points per series bounded:
    the given step if it does, else an error naming the smallest step that would."""
    length = seconds(duration, what="range")
    if length > MAX_RANGE_SECONDS:
        raise BadRequest(
            f"range {duration} is longer than the {MAX_RANGE_SECONDS // 86_400}d allowed; "
            "query a shorter range (the incident's last hours are usually what matters)"
        )
    if step is None:
        chosen = max(math.ceil(length / 240), 15)
    else:
        chosen = seconds(step, what="step")
        if length / chosen + 1 > MAX_POINTS:
            smallest = math.ceil(length / (MAX_POINTS - 1))
            raise BadRequest(
                f"range {duration} at step {step} is {int(length / chosen) + 1} points per series "
                f"(at most {MAX_POINTS}); use a step of at least {smallest}s or leave step out"
            )
    return Window(start=end - length, end=end, step=chosen)


def labels(metric: dict[str, Any], *, omit: Collection[str] = ()) -> str:
    """``name{a="1",b="2"}`` (the metric name first, then the labels sorted), without ``omit``."""
    name = str(metric.get("__name__", ""))
    rest = ",".join(
        f'{key}="{value}"' for key, value in sorted(metric.items()) if key != "__name__" and key not in omit
    )
    return f"{name}{{{rest}}}" if rest or not name else name


def shared_labels(result: list[dict[str, Any]]) -> dict[str, Any]:
    """The labels (not the metric name) every series of a result has with the same value, when
    there are several series: shown once instead of on every line (``job``, ``instance``,
    ``namespace``... of a non-aggregated query)."""
    metrics = [series.get("metric") or {} for series in result]
    if len(metrics) < 2:
        return {}
    first, *others = metrics
    return {
        key: value
        for key, value in first.items()
        if key != "__name__" and all(key in other and other[key] == value for other in others)
    }


def number(value: float) -> str:
    """A value in at most 4 significant digits (``0.00012``, ``1.235e+09``, ``NaN``)."""
    if math.isnan(value) or math.isinf(value):
        return str(value)
    return f"{value:.4g}"


def _floats(pairs: Sequence[Sequence[Any]]) -> list[float]:
    out = []
    for pair in pairs:
        try:
            out.append(float(pair[1]))
        except (TypeError, ValueError, IndexError):
            continue
    return out


def trend(values: Sequence[float]) -> str:
    """rising / falling / flat / spiky, from the change first -> last against the spread."""
    finite = [v for v in values if math.isfinite(v)]
    if len(finite) < 2:
        return "single point"
    low, high = min(finite), max(finite)
    spread = high - low
    if spread == 0:
        return "flat"
    change = finite[-1] - finite[0]
    scale = max(abs(high), abs(low), 1e-12)
    if abs(change) >= 0.5 * spread and spread / scale > 0.02:
        direction = "rising" if change > 0 else "falling"
        pairs = list(itertools.pairwise(finite))
        steady = all(b >= a for a, b in pairs) or all(b <= a for a, b in pairs)
        return f"{direction}{' steadily' if steady else ''}"
    if spread / scale <= 0.05:
        return "flat"
    peak = finite.index(high)
    return f"spiky (peak at point {peak + 1} of {len(finite)}, then back)"


def summarise_matrix(result: list[dict[str, Any]], *, omit: Collection[str] = ()) -> list[tuple[float, str]]:
    """One line per series: labels, first, min, max, last, trend (one value when they are all the
    same); keyed by the last value (for ordering, highest first)."""
    rows = []
    for series in result:
        values = _floats(series.get("values") or ())
        if not values:
            continue
        name = labels(series.get("metric") or {}, omit=omit)
        if len(values) == 1:
            line = f"{name}: {number(values[0])} (1 point)"
        elif number(min(values)) == number(max(values)):
            line = f"{name}: {number(values[0])}, flat ({len(values)} points)"
        else:
            line = (
                f"{name}: first {number(values[0])}, min {number(min(values))}, max {number(max(values))}, "
                f"last {number(values[-1])}, {trend(values)} ({len(values)} points)"
            )
        rows.append((_key(values[-1]), line))
    return rows


def summarise_vector(result: list[dict[str, Any]], *, omit: Collection[str] = ()) -> list[tuple[float, str]]:
    rows = []
    for sample in result:
        values = _floats([sample.get("value") or ()])
        if values:
            rows.append(
                (_key(values[0]), f"{labels(sample.get('metric') or {}, omit=omit)} {number(values[0])}")
            )
    return rows


def _key(value: float) -> float:
    return value if math.isfinite(value) else -math.inf


def top(rows: list[tuple[float, str]], limit: int) -> tuple[list[str], int]:
    """The ``limit`` rows with the highest values, and how many were left out."""
    ordered = sorted(rows, key=lambda row: row[0], reverse=True)
    return [line for _, line in ordered[:limit]], max(len(ordered) - limit, 0)
