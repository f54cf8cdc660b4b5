"""Before/after metrics and alert state from Prometheus, behind a small interface.

:class:`Source` is all the assessment needs (one instant query at a time); :class:`HttpSource` is a
minimal client of Prometheus' HTTP API (stdlib, bounded time, no retries: a down Prometheus makes
the check "unknown", never a pass). Another Prometheus client can stand behind ``Source`` later.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Protocol


class Unavailable(Exception):
    """Prometheus could not answer (down, refused, timed out, or an error reply)."""


class Source(Protocol):
    async def value(self, query: str, *, at: datetime.datetime) -> float | None:
        """The sum of the query's series at ``at``; None when it has no series (no data)."""
        ...


@dataclasses.dataclass(frozen=True, kw_only=True)
class HttpSource:
    url: str
    timeout_seconds: float = 5.0
    bearer_token: str | None = dataclasses.field(default=None, repr=False)

    async def value(self, query: str, *, at: datetime.datetime) -> float | None:
        return await asyncio.to_thread(self._value, query, at)

    def _value(self, query: str, at: datetime.datetime) -> float | None:
        params = urllib.parse.urlencode({"query": query, "time": f"{at.timestamp():.3f}"})
        if not self.url.startswith(("http://", "https://")):
            raise Unavailable(f"not an http(s) URL: {self.url[:100]}")
        request = urllib.request.Request(f"{self.url.rstrip('/')}/api/v1/query?{params}")  # noqa: S310  # http(s) only, checked above
        if self.bearer_token:
            request.add_header("Authorization", f"Bearer {self.bearer_token}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_seconds) as reply:  # noqa: S310  # http(s) only, checked above
                body = json.loads(reply.read(1_000_000))
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise Unavailable(f"{type(exc).__name__}: {exc}"[:200]) from exc
        if body.get("status") != "success":
            raise Unavailable(f"query refused: {str(body.get('error'))[:200]}")
        series = (body.get("data") or {}).get("result") or []
        if not series:
            return None
        try:
            return sum(float(s["value"][1]) for s in series)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise Unavailable("unreadable reply") from exc


def _selector(kind: str, name: str, namespace: str) -> str:
    ns = _quote(namespace)
    if kind == "Pod":
        return f'namespace="{ns}",pod="{_quote(name)}"'
    return f'namespace="{ns}",pod=~"{_regex(name)}-.+"'


def standard_queries(kind: str, name: str, namespace: str) -> dict[str, str]:
    """A few queries (kube-state-metrics series) where lower is better, per workload kind."""
    if kind not in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Pod"):
        return {}
    sel = _selector(kind, name, namespace)
    return {
        "restarts": f"sum(increase(kube_pod_container_status_restarts_total{{{sel}}}[5m]))",
        "notReady": f'sum(kube_pod_status_ready{{{sel},condition="false"}})',
    }


def alert_query(alert_name: str, namespace: str | None) -> str:
    where = f',namespace="{_quote(namespace)}"' if namespace else ""
    return f'ALERTS{{alertname="{_quote(alert_name)}",alertstate="firing"{where}}}'


def _quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _regex(text: str) -> str:
    return "".join(c if c.isalnum() or c == "-" else "\\\\" + c for c in text)
