"""The Prometheus tools: ``prometheus_query``, ``prometheus_query_range``, ``prometheus_metrics``,
``prometheus_label_values``, ``prometheus_alerts`` and ``prometheus_rules``.

Offered only when a Prometheus is configured. Every query, label lookup, alert and rule is scoped
to the namespaces the analysis may read (``_promql.Tenancy``: the operator's credentials read every
tenant's series; an analysis reads its own). Everything Prometheus returns (label values, alert
annotations, rule expressions) is untrusted text: fenced, redacted, capped. Results are bounded
before they are formatted: at most ``max_series`` series (highest last value first), a range query
as a per-series summary, never its points; when something was left out the output says what and
how to narrow the query.
"""

from __future__ import annotations

import time as time_mod
from collections.abc import Callable
from typing import Any

from aianalysis.analysis import redact
from aianalysis.analysis.tools import _args, _output, _promql
from aianalysis.kube import readers

MAX_NAMES = 60
MAX_ALERTS = 30
MAX_RULES = 40
LOOKUP_WINDOW_SECONDS = 6 * 3600
"""Metric names and label values are looked up over the last 6 hours (cheap on every backend)."""


class PrometheusTools:
    def __init__(
        self,
        *,
        source: readers.MetricsReader,
        tenancy: _promql.Tenancy,
        max_chars: int,
        max_series: int,
        clock: Callable[[], float] = time_mod.time,
    ) -> None:
        self._source = source
        self._tenancy = tenancy
        self._max_chars = max_chars
        self._max_series = max_series
        self._clock = clock

    async def query(self, args: _args.PromQueryArgs) -> str:
        at = self._clock() - (_promql.seconds(args.ago, what="ago") if args.ago else 0)
        data = await self._source.query(promql=self._tenancy.enforce(args.query), time=at)
        kind = (data or {}).get("resultType")
        result = (data or {}).get("result")
        when = f"{args.ago} ago" if args.ago else "now"
        if kind in ("scalar", "string"):
            return self._fenced(
                f"{args.query} at {when} ({kind}):", str(result[1] if result else ""), "query"
            )
        shared = _promql.shared_labels(result or [])
        rows = (
            _promql.summarise_matrix(result or [], omit=shared)
            if kind == "matrix"
            else _promql.summarise_vector(result or [], omit=shared)
        )
        return self._series(rows, head=f"{args.query} at {when}", label="query", shared=shared)

    async def query_range(self, args: _args.PromRangeArgs) -> str:
        window = _promql.window(duration=args.range, step=args.step, end=self._clock())
        data = await self._source.query_range(
            promql=self._tenancy.enforce(args.query), start=window.start, end=window.end, step=window.step
        )
        result = (data or {}).get("result") or []
        shared = _promql.shared_labels(result)
        rows = _promql.summarise_matrix(result, omit=shared)
        head = f"{args.query} over the last {args.range.strip()} (step {window.step}s, summary per series)"
        return self._series(rows, head=head, label="query_range", shared=shared)

    async def metrics(self, args: _args.PromMetricsArgs) -> str:
        end = self._clock()
        names = await self._source.label_values(
            label="__name__", match=self._tenancy.selector(None), start=end - LOOKUP_WINDOW_SECONDS, end=end
        )
        needle = args.contains.lower()
        found = sorted(str(n) for n in names or () if needle in str(n).lower())
        if not found:
            return f"No metric name contains {args.contains!r} (series seen in the last 6h)."
        return self._names(found, head=f"Metric names containing {args.contains!r}", label="metrics")

    async def label_values(self, args: _args.PromLabelArgs) -> str:
        end = self._clock()
        values = await self._source.label_values(
            label=args.label,
            match=self._tenancy.selector(args.metric),
            start=end - LOOKUP_WINDOW_SECONDS,
            end=end,
        )
        found = sorted(str(v) for v in values or ())
        of = f" of {args.metric}" if args.metric else ""
        if not found:
            return f"Label {args.label}{of} has no values in the last 6h."
        return self._names(found, head=f"Values of label {args.label}{of}", label="label_values")

    async def alerts(self, args: _args.PromAlertsArgs) -> str:
        data = await self._source.alerts()
        alerts = [
            a
            for a in (data or {}).get("alerts") or ()
            if (args.state == "all" or a.get("state") == args.state)
            and self._tenancy.admits(a.get("labels") or {})
        ]
        if not alerts:
            return f"No {'' if args.state == 'all' else args.state + ' '}alerts in Prometheus right now."
        alerts.sort(key=lambda a: str(a.get("activeAt") or ""), reverse=True)
        lines = [_alert_line(alert) for alert in alerts[:MAX_ALERTS]]
        head = f"{len(alerts)} {args.state} alert(s), most recently activated first"
        if len(alerts) > MAX_ALERTS:
            _output.note_truncated()
            cut = len(alerts) - MAX_ALERTS
            head += f"; {cut} more not shown: query ALERTS{{alertname=...}} with prometheus_query"
        return self._fenced(head + ":", "\n".join(lines), "alerts")

    async def rules(self, args: _args.PromRulesArgs) -> str:
        data = await self._source.rules()
        rules = []
        for group in (data or {}).get("groups") or ():
            for rule in (self._scoped(rule) for rule in group.get("rules") or ()):
                if rule is None:
                    continue
                if args.name_contains and args.name_contains.lower() not in str(rule.get("name", "")).lower():
                    continue
                if args.only_unhealthy and rule.get("health") == "ok":
                    continue
                rules.append((str(group.get("name")), rule))
        if not rules:
            return "No rule matches."
        lines = [_rule_line(group, rule) for group, rule in rules[:MAX_RULES]]
        head = f"{len(rules)} rule(s)"
        if len(rules) > MAX_RULES:
            _output.note_truncated()
            head += f"; {len(rules) - MAX_RULES} more not shown: pass name_contains"
        return self._fenced(head + ":", "\n".join(lines), "rules")

    def _scoped(self, rule: dict[str, Any]) -> dict[str, Any] | None:
        """The rule as this analysis may see it, or None: kept when one of its alerts is of a
        namespace the analysis may read (with only those alerts, as prom-label-proxy filters
        ``/api/v1/rules``), or when nothing fires and its labels admit it (a namespace it may read;
        none, for a cluster-scoped incident). A rule whose alerts are all another tenant's is theirs."""
        alerts = rule.get("alerts") or ()
        kept = [a for a in alerts if self._tenancy.admits(a.get("labels") or {})]
        if kept or (not alerts and self._tenancy.admits(rule.get("labels") or {})):
            return {**rule, "alerts": kept}
        return None

    # ---- plumbing -----------------------------------------------------------------------------

    def _series(
        self, rows: list[tuple[float, str]], *, head: str, label: str, shared: dict[str, Any] | None = None
    ) -> str:
        if not rows:
            return f"{head}: no data (the series do not exist in that window, or the query matches nothing)."
        lines, cut = _promql.top(rows, self._max_series)
        head += f": {len(rows)} series"
        if cut:
            _output.note_truncated()
            head += (
                f", the {len(lines)} highest (by last value) shown, {cut} left out: narrow with label "
                "matchers or aggregate, e.g. sum by (pod) (...) or topk(5, ...)"
            )
        if shared:
            # Label values are Prometheus' text: inside the fence, never in the header.
            lines = [f"every series has {_promql.labels(shared)}", *lines]
        return self._fenced(head + ":", "\n".join(lines), label)

    def _names(self, found: list[str], *, head: str, label: str) -> str:
        shown = found[:MAX_NAMES]
        head += f": {len(found)}"
        if len(found) > len(shown):
            _output.note_truncated()
            head += f", first {len(shown)} shown: be more specific"
        return self._fenced(head + ":", "\n".join(shown), label)

    def _fenced(self, header: str, body: str, label: str) -> str:
        return _output.fenced(
            header,
            redact.redact_text(body),
            label=f"prometheus:{label}",
            max_chars=self._max_chars,
        )


def _alert_line(alert: dict[str, Any]) -> str:
    labels = dict(alert.get("labels") or {})
    name = labels.pop("alertname", "?")
    annotations = alert.get("annotations") or {}
    text = annotations.get("summary") or annotations.get("description") or ""
    where = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    return (
        f"{name} [{alert.get('state')}] since {alert.get('activeAt', '?')} value {alert.get('value', '?')} "
        f"{{{where}}}: {' '.join(str(text).split())[:300]}"
    )


def _rule_line(group: str, rule: dict[str, Any]) -> str:
    query = " ".join(str(rule.get("query", "")).split())[:300]
    line = f"[{group}] {rule.get('type', '?')} {rule.get('name')}: {query}"
    if rule.get("type") == "alerting":
        line += f" (state {rule.get('state', '?')}, for {rule.get('duration', 0)}s)"
    if rule.get("health") not in (None, "ok"):
        line += f" HEALTH {rule.get('health')}: {' '.join(str(rule.get('lastError', '')).split())[:200]}"
    return line
