"""Every call to the API server ends within its bound, with the project's retryable error, when the
server accepts and never answers, never accepts, or asks to come back in an hour.

The servers are real local sockets (``tests/support/hanging.py``): the fault itself, not a model of
the Kubernetes API. Each call runs under a watchdog far above its bound, so a call that would block
for good fails the test ("still blocked") instead of hanging the suite.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import kopf
import pytest
from kopf._cogs.clients import api as kopf_api
from kopf._cogs.clients import auth as kopf_auth
from kopf._cogs.clients import watching as kopf_watching
from kopf._cogs.structs import credentials as kopf_credentials
from kopf._cogs.structs import references as kopf_references

from aianalysis import errors, kube, resources, settings
from aianalysis.executor import preflight
from aianalysis.kube import config, events, leases, objects, rest, watching
from tests.support import hanging

CONNECT, REQUEST, RETRY_AFTER_MAX = 1.0, 1.5, 1.0
TIMEOUTS = rest.Timeouts(
    connect_seconds=CONNECT, request_seconds=REQUEST, retry_after_max_seconds=RETRY_AFTER_MAX
)
SLACK = 1.5
"""What a loaded 2-core machine may add to a bound (thread start, scheduling)."""
WATCHDOG = 20.0
"""A call still running after this is blocked: the test fails instead of waiting for it."""
WATCH_SECONDS = 1
AIA = resources.AIANALYSIS_PLURAL


def client_of(url: str) -> rest.ApiClient:
    return rest.ApiClient(config.Connection(server=url), pool_size=4, timeouts=TIMEOUTS)


@pytest.fixture
def silent() -> Iterator[hanging.Silent]:
    with hanging.Silent() as server:
        yield server


async def timed(call: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
    """(seconds it took, what it returned or raised)."""
    started = time.monotonic()
    try:
        outcome: Any = await asyncio.wait_for(call(), timeout=WATCHDOG)
    except TimeoutError:
        pytest.fail(f"still blocked after {WATCHDOG:g}s against a server that never answers")
    except errors.AIAnalysisError as exc:
        outcome = exc
    return time.monotonic() - started, outcome


def blocking(function: Callable[..., Any], *args: Any, **options: Any) -> Callable[[], Awaitable[Any]]:
    return lambda: asyncio.to_thread(function, *args, **options)


STATUS = {"phase": "Pending"}
BODY = {
    "apiVersion": resources.API_VERSION,
    "kind": "AIAnalysis",
    "metadata": {"name": "x", "namespace": "ns"},
}
ABOUT = {**BODY, "metadata": {**BODY["metadata"], "uid": "u"}}


def watch(api: rest.ApiClient) -> Iterator[Any]:
    return watching.watch(
        api, plural=AIA, resource_version="1", timeout_seconds=WATCH_SECONDS, stopping=threading.Event()
    )


#: Each call family of kube/, how it is called, and the bound it promises: the client's request
#: timeout, or a shorter one the call asks for (a watch: its ``timeoutSeconds`` plus the request
#: timeout).
FAMILIES: dict[str, tuple[Callable[[rest.ApiClient], Callable[[], Awaitable[Any]]], float]] = {
    "get": (lambda api: lambda: objects.get(api, "ns", AIA, "x"), REQUEST),
    "list": (lambda api: lambda: objects.list_objects(api, plural=AIA, namespace="ns"), REQUEST),
    "list pages": (lambda api: blocking(lambda: list(watching.pages(api, plural=AIA, page_size=5))), REQUEST),
    "create": (lambda api: lambda: objects.create(api, BODY, plural=AIA), REQUEST),
    "patch status": (
        lambda api: (
            lambda: objects.write_status(
                api, namespace="ns", plural=AIA, name="x", uid="u", fields=STATUS, current=None
            )
        ),
        REQUEST,
    ),
    "watch": (lambda api: blocking(lambda: list(watch(api))), WATCH_SECONDS + REQUEST),
    "lease read": (
        lambda api: blocking(leases.fetch, api, namespace="ns", name="l"),
        min(leases.REQUEST_TIMEOUT_SECONDS, REQUEST),
    ),
    "lease write": (
        lambda api: blocking(leases.store, api, leases.Lease(namespace="ns", name="l", holder_identity="me")),
        min(leases.REQUEST_TIMEOUT_SECONDS, REQUEST),
    ),
}


@pytest.mark.parametrize("family", list(FAMILIES))
async def test_a_call_to_a_server_that_never_answers_ends_within_its_bound_as_a_retryable_error(
    silent: hanging.Silent, family: str
) -> None:
    make, bound = FAMILIES[family]
    with client_of(silent.url) as api:
        took, outcome = await timed(make(api))

    assert isinstance(outcome, errors.ClusterError), outcome
    assert outcome.retryable
    assert "no answer within" in str(outcome)
    assert took <= bound + SLACK, f"{family}: {took:.1f}s, bound {bound:g}s"
    assert silent.accepted >= 1  # it did reach the server: the bound is the read's, not the connect's


async def test_a_lease_call_keeps_its_own_shorter_bound(silent: hanging.Silent) -> None:
    """Leader election renews well within its deadline: a Lease read gives up after its own 5 s,
    retries included (it was 20 s: four attempts of 5 s each), under a client allowing 30 s."""
    generous = rest.Timeouts(connect_seconds=CONNECT, request_seconds=30.0, retry_after_max_seconds=1.0)
    with rest.ApiClient(config.Connection(server=silent.url), pool_size=1, timeouts=generous) as api:
        took, outcome = await timed(blocking(leases.fetch, api, namespace="ns", name="l"))
    assert isinstance(outcome, errors.ClusterError) and outcome.retryable
    assert took <= leases.REQUEST_TIMEOUT_SECONDS + SLACK


async def test_an_event_against_a_server_that_never_answers_is_dropped_within_the_bound(
    silent: hanging.Silent,
) -> None:
    """Events are best effort: the post reports False, within the bound, and the work goes on."""
    with client_of(silent.url) as api:
        took, outcome = await timed(
            blocking(
                events.post, api, about=ABOUT, type="Normal", reason="Tested", message="m",
                now=datetime.datetime.now(datetime.UTC),
            )
        )  # fmt: skip
    assert outcome is False
    assert took <= REQUEST + SLACK


async def test_a_server_that_never_accepts_ends_the_call_within_the_bound() -> None:
    """The TCP handshake hangs (a black hole): each connect attempt gives up after the connect
    timeout, and the retries stop at the call's bound."""
    with hanging.Unaccepting() as server, client_of(server.url) as api:
        took, outcome = await timed(lambda: objects.get(api, "ns", AIA, "x"))
    assert isinstance(outcome, errors.ClusterError) and outcome.retryable
    assert took <= REQUEST + SLACK


async def test_a_retry_after_of_an_hour_is_capped_and_the_call_still_ends_within_its_bound() -> None:
    """A 503 asking for an hour: a GET is tried again after at most the cap, and the call ends with
    the 503 (retryable) once its bound is near — never an hour's sleep."""
    with hanging.RetryAfter(status=503, retry_after="3600") as server, client_of(server.url) as api:
        took, outcome = await timed(lambda: objects.get(api, "ns", AIA, "x"))
    assert isinstance(outcome, errors.ClusterError) and outcome.status == 503
    assert took <= REQUEST + SLACK
    assert server.requests >= 2  # it was tried again after the capped wait


async def test_a_create_answered_429_is_not_sent_again() -> None:
    """A POST is never repeated by the transport (a create might have landed); the caller decides."""
    with hanging.RetryAfter(status=429, retry_after="1") as server, client_of(server.url) as api:
        _, outcome = await timed(lambda: objects.create(api, BODY, plural=AIA))
    assert isinstance(outcome, errors.ClusterError) and outcome.status == 429
    assert server.requests == 1


def test_the_connections_to_the_api_server_send_tcp_keepalives() -> None:
    """A peer that vanished without a FIN or RST (a node lost, a NAT entry dropped) is noticed on an
    idle pooled connection: keepalive probes after 30 s idle."""
    with hanging.RetryAfter(status=503, retry_after="0") as server, client_of(server.url) as api:
        api.send("POST", "/version", timeout=REQUEST)  # one answer; the connection goes back to the pool
        pool = api._pool.connection_from_url(server.url)
        conn = pool.pool.get(block=False)  # type: ignore[union-attr]  # urllib3's queue of idle connections
        assert conn is not None and conn.sock is not None
        assert conn.sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        assert conn.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == rest.KEEPALIVE_IDLE_SECONDS


async def test_an_executor_start_against_a_server_that_never_answers_gives_the_start_lock_back(
    silent: hanging.Silent,
) -> None:
    """The executor's start path (Lease, then the count of executions) holds its start lock across
    API calls: each call is bounded, so the pass ends with a retryable error within the Lease's
    bound and the next execution is not stopped behind it."""
    body = {
        "apiVersion": resources.API_VERSION,
        "kind": "WorkflowExecution",
        "metadata": {"name": "e", "namespace": "ns", "uid": "u", "resourceVersion": "1"},
        "spec": {"analysisRef": "a", "workflowRef": {"workflowId": "w", "version": "1.0.0"}},
    }
    spec = resources.WorkflowExecutionSpec.model_validate(body["spec"])
    lock = asyncio.Lock()  # the runner's own start lock
    with client_of(silent.url) as api:
        for lock_namespace in ("ns", ""):  # the Lease across replicas; the process' lock alone
            config_ = settings.Settings(guards=settings.GuardsSettings(start_lock_namespace=lock_namespace))

            async def start(config_: settings.Settings = config_) -> Any:
                async with lock:
                    return await preflight.before_job(
                        api, body, spec, settings=config_, now=datetime.datetime.now(datetime.UTC)
                    )

            took, outcome = await timed(start)
            assert isinstance(outcome, errors.ClusterError) and outcome.retryable, outcome
            bound = REQUEST  # the Lease's own 5 s is longer than this client's whole bound
            assert took <= bound + SLACK, f"lock namespace {lock_namespace!r}: {took:.1f}s"
            assert not lock.locked()


async def test_kopfs_own_calls_are_bounded_by_the_same_settings(silent: hanging.Silent) -> None:
    """The operator's startup hands kopf the same bounds (``kube.configure_kopf``): a request of
    kopf's (a list, an Event) gives up after the request timeout, and its watch after the server's
    ``timeoutSeconds`` plus the request timeout — not kopf's defaults (5 minutes; a watch only
    when it has been silent for 70 s). kopf's client is driven here through its own modules; kopf
    tries a failed request again on its own schedule (``error_backoffs``), each attempt so bounded."""
    kopf_settings = kopf.OperatorSettings()
    config_ = settings.Settings(
        api=settings.ApiSettings(connect_timeout_seconds=CONNECT, request_timeout_seconds=REQUEST)
    )
    kube.configure_kopf(kopf_settings, settings=config_, watch_seconds=WATCH_SECONDS)
    kopf_settings.networking.error_backoffs = ()  # one attempt: kopf's retries repeat it, each as bounded
    vault = kopf_credentials.Vault()
    await vault.populate({"aianalysis": kopf.ConnectionInfo(server=silent.url)})
    kopf_auth.vault_var.set(vault)
    log = logging.getLogger(__name__)

    async def one_request() -> Any:
        try:
            return await kopf_api.request("GET", "/api/v1/namespaces", settings=kopf_settings, logger=log)
        except TimeoutError as exc:  # aiohttp's request timeout, as kopf lets it through
            return exc

    async def one_watch() -> Any:
        pods = kopf_references.Resource("", "v1", "pods", namespaced=True)
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        return [
            event
            async for event in kopf_watching.watch_objs(
                settings=kopf_settings, resource=pods, namespace=None, operator_pause_waiter=waiter
            )
        ]

    try:
        took, outcome = await timed(one_request)
        assert isinstance(outcome, TimeoutError)
        assert took <= REQUEST + SLACK
        took, outcome = await timed(one_watch)
        assert outcome == []  # kopf ends the stream and watches again
        assert took <= WATCH_SECONDS + REQUEST + SLACK
    finally:
        await vault.close()
