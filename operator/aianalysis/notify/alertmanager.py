"""``AlertmanagerClient``: Alertmanager's v2 API as the notifier uses it — ``POST /api/v2/alerts``
(firing and resolved alerts, to every configured Alertmanager, as Prometheus sends to each replica of
an Alertmanager cluster) and ``GET /api/v2/alerts`` (the operator's own alerts still active, so a
new leader resolves what its predecessor left firing).

One ``httpx2.AsyncClient`` per process; every request has a timeout; a post is tried ``attempts``
times (a refused connection, a timeout, 429 or 5xx; 1 s, 2 s, … apart) and a 4xx is not retried.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import ssl
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import httpx2

import aianalysis.settings
from aianalysis.notify import desired

log = logging.getLogger(__name__)

Outcome = Literal["sent", "rejected", "failed"]
"""``rejected``: Alertmanager answered 4xx (retrying cannot help); ``failed``: no answer or 5xx
after every attempt (the next pass posts again)."""

MAX_BATCH = 200
"""Alerts per request (Alertmanager takes a list; a bounded body per request)."""
MAX_RESPONSE_BYTES = 8_000_000


@dataclasses.dataclass(frozen=True, kw_only=True)
class AlertmanagerConfig:
    urls: tuple[str, ...]
    token_file: Path | None = None
    """Read at every request (a projected token rotates)."""
    ca_file: Path | None = None
    timeout_seconds: float = 10.0
    attempts: int = 3


def config_from(settings: aianalysis.settings.Settings) -> AlertmanagerConfig:
    s = settings.notify
    return AlertmanagerConfig(
        urls=tuple(url.rstrip("/") for url in s.alertmanager_urls),
        token_file=Path(s.token_file) if s.token_file else None,
        ca_file=Path(s.ca_file) if s.ca_file else None,
        timeout_seconds=s.timeout_seconds,
        attempts=s.attempts,
    )


class AlertmanagerClient:
    def __init__(self, config: AlertmanagerConfig, *, http_client: httpx2.AsyncClient | None = None) -> None:
        self._config = config
        self._http = http_client or httpx2.AsyncClient(
            verify=ssl.create_default_context(cafile=str(config.ca_file) if config.ca_file else None),
            timeout=httpx2.Timeout(config.timeout_seconds),
            limits=httpx2.Limits(max_connections=4),
            follow_redirects=False,
            trust_env=False,
        )

    def __repr__(self) -> str:
        return f"AlertmanagerClient({', '.join(self._config.urls)})"

    async def aclose(self) -> None:
        await self._http.aclose()

    async def post(self, alerts: Sequence[desired.AlertParam]) -> list[Outcome]:
        """Every alert to every Alertmanager, in batches; one outcome per batch and Alertmanager. An
        Alertmanager that did not answer one batch is not tried with the rest (they count as failed):
        a pass lasts at most one batch's attempts per Alertmanager."""
        outcomes: list[Outcome] = []
        for url in self._config.urls:
            failed = False
            for start in range(0, len(alerts), MAX_BATCH):
                outcome = (
                    "failed"
                    if failed
                    else await self._post_batch(url, list(alerts[start : start + MAX_BATCH]))
                )
                failed = outcome == "failed"
                outcomes.append(outcome)
        return outcomes

    async def active(self, matchers: Sequence[str]) -> list[dict[str, Any]] | None:
        """The alerts matching ``matchers`` (``name="value"``) that are still active in any of the
        Alertmanagers (their union by labels); None when none of them answered."""
        found: dict[tuple[tuple[str, str], ...], dict[str, Any]] = {}
        answered = False
        for url in self._config.urls:
            alerts = await self._get_alerts(url, matchers)
            if alerts is None:
                continue
            answered = True
            for alert in alerts:
                labels = alert.get("labels") or {}
                found[tuple(sorted(labels.items()))] = alert
        return list(found.values()) if answered else None

    async def _post_batch(self, url: str, batch: list[desired.AlertParam]) -> Outcome:
        body = json.dumps(batch).encode()
        for attempt in range(1, self._config.attempts + 1):
            try:
                response = await self._http.post(
                    f"{url}/api/v2/alerts", content=body, headers=self._headers("application/json")
                )
            except httpx2.HTTPError as exc:
                problem = f"not reachable: {exc or type(exc).__name__}"
            else:
                if response.status_code == 200:
                    return "sent"
                problem = f"HTTP {response.status_code}: {response.text[:200]}"
                if response.status_code < 500 and response.status_code != 429:
                    log.error("Alertmanager %s refused %d alerts (%s)", url, len(batch), problem)
                    return "rejected"
            if attempt < self._config.attempts:
                await asyncio.sleep(float(2 ** (attempt - 1)))
        log.warning("posting %d alerts to Alertmanager %s failed (%s)", len(batch), url, problem)
        return "failed"

    async def _get_alerts(self, url: str, matchers: Sequence[str]) -> list[dict[str, Any]] | None:
        states = ("active", "silenced", "inhibited", "unprocessed")
        params: list[tuple[str, str | int | float | bool | None]] = [(state, "true") for state in states]
        params += [("filter", matcher) for matcher in matchers]
        try:
            async with self._http.stream(
                "GET", f"{url}/api/v2/alerts", params=params, headers=self._headers(None)
            ) as response:
                chunks: list[bytes] = []
                async for chunk in response.aiter_bytes():
                    chunks.append(chunk)
                    if sum(map(len, chunks)) > MAX_RESPONSE_BYTES:
                        log.warning("Alertmanager %s answered more than %d bytes", url, MAX_RESPONSE_BYTES)
                        return None
        except httpx2.HTTPError as exc:
            log.warning(
                "reading the active alerts of Alertmanager %s failed: %s", url, exc or type(exc).__name__
            )
            return None
        if response.status_code != 200:
            log.warning("reading the active alerts of Alertmanager %s: HTTP %d", url, response.status_code)
            return None
        try:
            answer = json.loads(b"".join(chunks))
        except ValueError:
            return None
        return [a for a in answer if isinstance(a, dict)] if isinstance(answer, list) else None

    def _headers(self, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        if self._config.token_file is not None:
            try:
                token = self._config.token_file.read_text().strip()
            except OSError as exc:
                log.warning("cannot read the Alertmanager token file: %s", exc.strerror)
            else:
                headers["Authorization"] = f"Bearer {token}"
        return headers
