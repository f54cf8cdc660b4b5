"""Before/after metrics and alert state from Prometheus: which queries, and one number out of an
answer.

The assessment talks to Prometheus through the product's one client (``aianalysis.prometheus``, the
``readers.MetricsReader`` the investigation tools use too, configured by the same
``AIANALYSIS_PROMETHEUS_*`` settings: token, token file, CA, tenant, timeout, size cap).
:class:`Source` is all the verdict needs (one instant value at a time); :class:`ReaderSource` reads
it through that client. No retries: a Prometheus that is down or refuses makes the check "unknown",
never a pass; a query without series is "no data" (None), never zero.
"""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any, Protocol

from aianalysis import errors
from aianalysis.kube import readers


class Unanswered(Exception):
    """Prometheus could not answer (down, refused, timed out, or an error reply)."""


class Source(Protocol):
    async def value(self, query: str, *, at: datetime.datetime) -> float | None:
        """The sum of the query's series at ``at``; None when it has no series (no data)."""
        ...


@dataclasses.dataclass(frozen=True)
class ReaderSource:
    """:class:`Source` over the process' Prometheus client."""

    client: readers.MetricsReader

    async def value(self, query: str, *, at: datetime.datetime) -> float | None:
        try:
            data = await self.client.query(promql=query, time=at.timestamp())
        except (readers.Unavailable, errors.ClusterError) as exc:
            raise Unanswered(str(exc)[:200]) from exc
        return total(data)


def total(data: Any) -> float | None:
    """The sum of an instant query's answer (``data`` of ``/api/v1/query``); None: no series."""
    kind = (data or {}).get("resultType") if isinstance(data, dict) else None
    result = data.get("result") if isinstance(data, dict) else None
    try:
        if kind == "scalar" and isinstance(result, list):
            return float(result[1])
        if kind == "vector" and isinstance(result, list):
            return sum(float(s["value"][1]) for s in result) if result else None
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise Unanswered("unreadable reply") from exc
    raise Unanswered(f"unexpected reply (resultType {str(kind)[:40]})")


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
