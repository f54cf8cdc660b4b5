"""``PrometheusClient``: the one way the product talks to Prometheus — the ``reader.MetricsReader``
over Prometheus' HTTP API (``/api/v1``), used by the investigation tools and by the effectiveness
assessment alike, configured by the ``AIANALYSIS_PROMETHEUS_*`` settings (:func:`from_settings`).

Works with Prometheus and with what speaks its API (Thanos Query, Cortex, Mimir: set a tenant for
the ``X-Scope-OrgID`` header). One ``httpx2.AsyncClient`` per process, opened by the operator at
startup and closed at cleanup; every request has a timeout and a size cap.

Outcomes, like a ``ClusterReader``'s: the answer's ``data``; ``tools.Unavailable`` when Prometheus
refused the request for good (a malformed PromQL query, 400/422, 401/403/404), with Prometheus' own
message; ``errors.ClusterError`` for what may pass (connection refused, timeout, 429, 5xx).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import ssl
from pathlib import Path
from typing import Any

import httpx2

import aianalysis.settings
from aianalysis import errors
from aianalysis.kube import readers

MAX_RESPONSE_BYTES = 4_000_000


@dataclasses.dataclass(frozen=True, kw_only=True)
class PrometheusConfig:
    url: str
    """Base URL, e.g. ``https://prometheus-k8s.monitoring.svc:9091`` (a path prefix is kept)."""
    token: str | None = dataclasses.field(default=None, repr=False)
    token_file: Path | None = None
    """Read at every request (a projected ServiceAccount token rotates)."""
    ca_file: Path | None = None
    tenant: str | None = None
    timeout_seconds: float = 10.0
    max_response_bytes: int = MAX_RESPONSE_BYTES


def from_settings(settings: aianalysis.settings.Settings) -> PrometheusClient | None:
    """The process' client (one connection pool; close it at cleanup), or None when no Prometheus is
    configured (``AIANALYSIS_PROMETHEUS_URL`` unset)."""
    s = settings
    if not s.prometheus.url:
        return None
    return PrometheusClient(
        PrometheusConfig(
            url=s.prometheus.url,
            token=s.prometheus.token.get_secret_value() if s.prometheus.token else None,
            token_file=Path(s.prometheus.token_file) if s.prometheus.token_file else None,
            ca_file=Path(s.prometheus.ca_file) if s.prometheus.ca_file else None,
            tenant=s.prometheus.tenant,
            timeout_seconds=s.prometheus.timeout_seconds,
            max_response_bytes=s.prometheus.max_response_bytes,
        )
    )


class PrometheusClient:
    def __init__(self, config: PrometheusConfig, *, http_client: httpx2.AsyncClient | None = None) -> None:
        self._config = config
        self._url = config.url.rstrip("/")
        self._http = http_client or httpx2.AsyncClient(
            verify=_verify(config.ca_file),
            timeout=httpx2.Timeout(config.timeout_seconds),
            limits=httpx2.Limits(max_connections=8),
            follow_redirects=False,
            trust_env=False,
        )

        self._extra: tuple[tuple[str, str], ...] = ()

    def __repr__(self) -> str:
        return f"PrometheusClient({self._url})"

    def with_params(self, params: tuple[tuple[str, str], ...]) -> PrometheusClient:
        """A view sending ``params`` with every request (prom-label-proxy's label values), over the
        same connection pool; closing stays the owner's job."""
        view = copy.copy(self)
        view._extra = params
        return view

    async def aclose(self) -> None:
        await self._http.aclose()

    async def query(self, *, promql: str, time: float) -> Any:
        return await self._get("query", {"query": promql, "time": f"{time:.3f}"})

    async def query_range(self, *, promql: str, start: float, end: float, step: int) -> Any:
        params = {"query": promql, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": str(step)}
        return await self._get("query_range", params)

    async def label_values(self, *, label: str, match: str | None, start: float, end: float) -> Any:
        params = {"start": f"{start:.3f}", "end": f"{end:.3f}"}
        if match:
            params["match[]"] = match
        return await self._get(f"label/{label}/values", params)

    async def alerts(self) -> Any:
        return await self._get("alerts", {})

    async def rules(self) -> Any:
        return await self._get("rules", {})

    async def _get(self, endpoint: str, params: dict[str, str]) -> Any:
        what = f"Prometheus {endpoint}"
        try:
            async with self._http.stream(
                "GET",
                f"{self._url}/api/v1/{endpoint}",
                params=[*params.items(), *self._extra],
                headers=self._headers(),
            ) as response:
                body = await _read(response, limit=self._config.max_response_bytes, what=what)
        except httpx2.TimeoutException:
            raise errors.ClusterError(
                f"{what} did not answer within {self._config.timeout_seconds:g}s; a narrower query "
                "(fewer series, shorter range, larger step) answers faster"
            ) from None
        except httpx2.HTTPError as exc:
            raise errors.ClusterError(f"{what} is not reachable: {exc or type(exc).__name__}") from None
        return _data(response.status_code, body, what=what)

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        token = self._config.token
        if self._config.token_file is not None:
            try:
                token = self._config.token_file.read_text().strip()
            except OSError as exc:
                raise errors.ClusterError(f"cannot read the Prometheus token file: {exc.strerror}") from None
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if self._config.tenant:
            headers["X-Scope-OrgID"] = self._config.tenant
        return headers


async def _read(response: httpx2.Response, *, limit: int, what: str) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            raise readers.Unavailable(
                f"{what} answered more than {limit:,} bytes: narrow the query (label matchers, "
                "aggregation such as sum by (namespace) or topk(10, ...), a shorter range)"
            )
        chunks.append(chunk)
    return b"".join(chunks)


def _data(status: int, body: bytes, *, what: str) -> Any:
    try:
        answer = json.loads(body) if body else {}
    except ValueError:
        answer = {}
    message = str(answer.get("error") or "") if isinstance(answer, dict) else ""
    if status == 200 and isinstance(answer, dict) and answer.get("status") == "success":
        return answer.get("data")
    if status in (400, 422):
        raise readers.Unavailable(f"{what} rejected the request: {message or 'bad request'}")
    if status in (401, 403):
        raise readers.Unavailable(f"{what} refused the operator's credentials (HTTP {status})")
    if status == 404:
        raise readers.Unavailable(f"{what} is not served at the configured URL (HTTP 404)")
    detail = message or body[:200].decode("utf-8", errors="replace")
    raise errors.ClusterError(f"{what} failed (HTTP {status}): {detail}")


def _verify(ca_file: Path | None) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(ca_file) if ca_file else None)
