"""The Alertmanager webhook receiver: ``POST /api/v1/alertmanager`` on ``AIANALYSIS_INTAKE_PORT``.

The request path only authenticates, parses, maps (pure) and queues: it answers in milliseconds and
never waits for the cluster or an LLM. A few worker tasks drain the bounded queue (resolve the
workload, read the namespace, deduplicate, create or count); a payload that does not fit in the
queue is answered 429, so Alertmanager retries it later instead of the operator buffering a storm
without bound.
"""

from __future__ import annotations

import asyncio
import datetime
import hmac
import json
import logging
from collections.abc import Callable

import pydantic
from aiohttp import web

from aianalysis import errors, kube, metrics, resources, settings
from aianalysis.intake import dedup, mapping, payload, resolve
from aianalysis.kit import lru

log = logging.getLogger(__name__)

PATH = "/api/v1/alertmanager"
MAX_BODY_BYTES = 1024 * 1024
WORKERS = 4
RETRY_AFTER_SECONDS = 10


class Intake:
    def __init__(
        self,
        *,
        token: str,
        config: mapping.MappingConfig,
        resolver: resolve.Resolver,
        tracker: dedup.Tracker,
        queue_limit: int,
        now: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC),
        cross_namespace: frozenset[tuple[str, str]] = frozenset(),
    ) -> None:
        self._expected = f"Bearer {token}".encode()
        self._config = config
        self._cross_namespace = cross_namespace
        """Allowed (alert namespace, other namespace) pairs: the operator's own rule, not the mapping's."""
        self._resolver = resolver
        self._tracker = tracker
        self._now = now
        self._queue: asyncio.Queue[mapping.Mapped] = asyncio.Queue(maxsize=queue_limit)
        self._workers: list[asyncio.Task[None]] = []
        self._runner: web.AppRunner | None = None
        self._missing_namespaces: lru.LRU[str, None] = lru.LRU(
            resolve.MAX_CACHED, on_evict=metrics.CACHE_EVICTIONS.labels(cache="intake_missing_namespaces").inc
        )
        """Namespaces already warned about (one warning each, until they exist)."""
        self.port: int | None = None

    @classmethod
    def create(
        cls, config: settings.Settings, api: kube.ApiClient, *, on_cancelled: Callable[[str], object]
    ) -> Intake:
        assert config.intake.token, "settings require a token when the intake is on"
        loaded = mapping.load_config(config.intake.mapping_file)
        return cls(
            token=config.intake.token.get_secret_value(),
            config=loaded,
            resolver=resolve.Resolver(
                api,
                prefixes=config.catalog.business_label_prefixes,
                orphans_to_namespace=loaded.namespace_incidents,
            ),
            tracker=dedup.Tracker(
                api, cooldown_seconds=config.intake.cooldown_seconds, on_cancelled=on_cancelled
            ),
            queue_limit=config.intake.queue_limit,
            cross_namespace=config.safety.cross_namespace_pairs(),
        )

    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        app.router.add_post(PATH, self.receive)
        return app

    async def start(self, port: int, host: str = "0.0.0.0") -> None:  # noqa: S104  # a pod's port
        self._workers = [
            asyncio.get_running_loop().create_task(self._work(), name=f"intake-{i}") for i in range(WORKERS)
        ]
        self._runner = web.AppRunner(self.app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        self.port = self._runner.addresses[0][1]
        log.info("Alertmanager intake listening on %s:%d%s", host, self.port, PATH)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        for task in self._workers:
            task.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        await self._tracker.aclose()

    async def drained(self) -> None:
        """Every accepted alert processed (tests and the benchmark wait on it)."""
        await self._queue.join()

    async def receive(self, request: web.Request) -> web.Response:
        if not hmac.compare_digest(request.headers.get("Authorization", "").encode(), self._expected):
            return _error(401, "missing or wrong bearer token")
        try:
            data = json.loads(await request.read())
        except web.HTTPRequestEntityTooLarge:
            return _error(413, f"payload larger than {MAX_BODY_BYTES} bytes")
        except ValueError as exc:
            return _error(400, f"malformed JSON: {exc}")
        if not isinstance(data, dict) or data.get("version") != payload.VERSION:
            found = data.get("version") if isinstance(data, dict) else type(data).__name__
            return _error(
                400, f"unsupported payload version {found!r}: expected Alertmanager webhook version 4"
            )
        try:
            parsed = payload.WebhookPayload.model_validate(data)
        except pydantic.ValidationError as exc:
            return _error(400, f"invalid payload: {_first_errors(exc)}")
        return self._accept(parsed)

    def _accept(self, parsed: payload.WebhookPayload) -> web.Response:
        received = resources.timestamp(self._now())
        results = [
            mapping.map_alert(
                a,
                common_labels=parsed.common_labels,
                config=self._config,
                received=received,
                allowed=self._cross_namespace,
            )
            for a in parsed.alerts
        ]
        accepted = [r for r in results if isinstance(r, mapping.Mapped)]
        unmapped = [r for r in results if isinstance(r, mapping.Unmapped)]
        if len(accepted) > self._queue.maxsize:  # can never fit: a retry would loop forever
            metrics.INTAKE_ALERTS.labels(outcome="too_large").inc(len(accepted))
            return _error(
                413,
                f"{len(accepted)} alerts in one payload exceed the queue of {self._queue.maxsize} "
                "(AIANALYSIS_INTAKE_QUEUE_LIMIT); lower the route's max_alerts or raise the limit",
            )
        if len(accepted) > self._queue.maxsize - self._queue.qsize():
            metrics.INTAKE_ALERTS.labels(outcome="rate_limited").inc(len(accepted))
            return _error(
                429, "too many alerts queued; retry later", headers={"Retry-After": str(RETRY_AFTER_SECONDS)}
            )
        for alert in accepted:
            self._queue.put_nowait(alert)
        for lost in unmapped:
            log.warning(
                "alert %s (%s) maps to no resource: %s", lost.alert_name, lost.fingerprint, lost.reason
            )
            metrics.INTAKE_ALERTS.labels(outcome="unmapped").inc()
        body = {
            "accepted": len(accepted),
            "unmapped": [
                {"alertname": u.alert_name, "fingerprint": u.fingerprint, "reason": u.reason}
                for u in unmapped
            ],
        }
        return web.json_response(body)

    async def _work(self) -> None:
        while True:
            alert = await self._queue.get()
            try:
                outcome = await self._process(alert)
            except resolve.NamespaceMissingError:
                outcome = "no_namespace"
                if alert.analysis_namespace not in self._missing_namespaces:
                    self._missing_namespaces[alert.analysis_namespace] = None
                    log.warning(
                        "alerts for namespace %s dropped: it does not exist", alert.analysis_namespace
                    )
            except (errors.AIAnalysisError, pydantic.ValidationError) as exc:
                outcome = "error"
                log.warning("alert %s not processed: %s", alert.alert_name, exc)
            except Exception:  # a worker must outlive any one alert
                outcome = "error"
                log.exception("alert %s not processed", alert.alert_name)
            finally:
                self._queue.task_done()
            metrics.INTAKE_ALERTS.labels(outcome=outcome).inc()

    async def _process(self, alert: mapping.Mapped) -> str:
        workload = await self._resolver.workload(alert.target, alert.signal.labels)
        business = await self._resolver.business_context(
            alert.analysis_namespace, self._config.business_context_defaults
        )
        self._missing_namespaces.pop(alert.analysis_namespace)
        incoming = dedup.Incoming(
            alert=alert, workload=workload, business=business, received=alert.signal.received_time or ""
        )
        return await self._tracker.handle(incoming)


def _error(code: int, message: str, *, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response({"error": message}, status=code, headers=headers)


def _first_errors(exc: pydantic.ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5])
