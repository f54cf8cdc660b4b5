"""The process' HTTP client of the API server: a method, a URL path, query options — the API
server's JSON back exactly as it sent it.

One urllib3 pool per client, TLS, proxy and credentials from :mod:`aianalysis.kube.config`'s
:class:`~aianalysis.kube.config.Login` (a rotated token or certificate is picked up when it
expires, and after a 401 the request is sent once more with credentials loaded again; a new
certificate gets a new pool). The ``kubernetes`` Python client is not the transport: it brings
requests, oauthlib, google-auth, websocket and pydantic-generated models (~25 MiB of RSS before any
call; kopf also imports its models whenever it is installed) — outside a Pod only its kubeconfig
loader is used, by ``config``. A non-2xx answer raises :class:`ApiError`; connection failures are urllib3's or
the OS's (:class:`NoAnswer` when the call's time is up). :mod:`aianalysis.kube.calls` maps both.

**Every call is bounded** (:class:`Timeouts`): a connect timeout per attempt, and one deadline for
the whole call — every attempt, every wait between attempts — so a server that accepts and never
answers, or a black hole, ends the call with :class:`NoAnswer` on time. A watch's deadline is its
``timeoutSeconds`` plus the request timeout. The sockets send TCP keepalives, so a pooled
connection to a peer that vanished is noticed.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import datetime
import json
import math
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import quote, urlencode

import urllib3
from urllib3.connection import HTTPConnection

from aianalysis.kube import config

Query = Mapping[str, str | int | bool | None]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Timeouts:
    """How long a call may take (the process' settings ``api_*_seconds`` give them)."""

    connect_seconds: float
    """One attempt's TCP connect and TLS handshake."""
    request_seconds: float
    """A whole call, retries and their waits included; a call may ask for less (a Lease's 5 s),
    never more. A watch: its ``timeoutSeconds`` plus this."""
    retry_after_max_seconds: float
    """The longest wait a ``Retry-After`` gets (the API server may ask for any time)."""


#: As the ``kubernetes`` client had it (urllib3's default retry): a GET, PUT or DELETE is sent again
#: after a connection failure, or after a 429/503 that says ``Retry-After`` (an API server whose
#: storage is still initialising, API Priority and Fairness shedding load), three times at most; a
#: POST or PATCH only when it was never sent (the connection was refused). The last answer is
#: returned as it is (an :class:`ApiError`); redirects are not followed. All of it within the
#: call's deadline: the wait a ``Retry-After`` asks for is capped, and no attempt starts that could
#: not end in time.
RETRIES = 3
IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
RETRY_AFTER_STATUSES = frozenset({429, 503})
BACKOFF_SECONDS = 0.2
_RETRY_AFTER = urllib3.Retry(total=0)  # only its parser of the header (seconds or an HTTP date)

#: TCP keepalive on every connection: probes after 30 s idle, every 10 s, given up after 3 missed
#: (a dead peer is noticed within ~60 s, as client-go's dialer does with its 30 s keepalive).
KEEPALIVE_IDLE_SECONDS, KEEPALIVE_INTERVAL_SECONDS, KEEPALIVE_PROBES = 30, 10, 3
SOCKET_OPTIONS = [
    *HTTPConnection.default_socket_options,
    (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1),
    *(
        [
            (socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, KEEPALIVE_IDLE_SECONDS),
            (socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, KEEPALIVE_INTERVAL_SECONDS),
            (socket.IPPROTO_TCP, socket.TCP_KEEPCNT, KEEPALIVE_PROBES),
        ]
        if hasattr(socket, "TCP_KEEPIDLE")  # Linux; elsewhere the system's keepalive timing
        else []
    ),
]


_DEADLINE: contextvars.ContextVar[float] = contextvars.ContextVar("aianalysis_api_deadline", default=math.inf)


@contextlib.contextmanager
def deadline(at: float) -> Iterator[None]:
    """Every call made in this context — on its threads too (``asyncio.to_thread`` copies the
    context) — ends by ``at`` (``time.monotonic()``), however long it could take otherwise: a lock
    held across calls is never held past its own end."""
    token = _DEADLINE.set(min(at, _DEADLINE.get()))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


@dataclasses.dataclass(frozen=True)
class _Request:
    method: str
    target: str
    """The URL path and query."""
    body: bytes | None
    content_type: str | None
    stream: bool
    deadline: float
    what: str
    """What a :class:`NoAnswer` says."""


class NoAnswer(TimeoutError):
    """The call's time was up before the API server answered (an ``OSError``: unreachable)."""


class ApiError(Exception):
    """A non-2xx answer: the HTTP ``status``, its ``reason`` and the ``body`` (the API server's
    ``Status`` as bytes, when it sent one)."""

    def __init__(self, *, status: int, reason: str, body: bytes | None = None) -> None:
        super().__init__(f"({status}) {reason}")
        self.status = status
        self.reason = reason
        self.body = body


class ApiClient:
    """The API server of ``login``: a pool of up to ``pool_size`` connections, shared by the
    threads that call it (each blocking call takes one), every call bounded by ``timeouts``. A new
    pool when the credentials' TLS material changes (an exec plugin's rotated certificate). A
    context manager that closes the pool."""

    def __init__(
        self, login: config.Login | config.Connection, *, pool_size: int, timeouts: Timeouts
    ) -> None:
        self.login = login if isinstance(login, config.Login) else config.Login.fixed(login)
        self.timeouts = timeouts
        self._pool_size = pool_size
        self._lock = threading.Lock()
        first = self.login.current  # a TLS material that cannot load fails here, at start
        self._transport, self._pool = first.transport, self._new_pool(first)

    def _new_pool(self, connection: config.Connection) -> urllib3.PoolManager:
        options: dict[str, Any] = {"maxsize": self._pool_size, "socket_options": SOCKET_OPTIONS}
        if connection.server.startswith("https:"):
            options["ssl_context"] = connection.ssl_context()
            if connection.tls_server_name:
                options["server_hostname"] = connection.tls_server_name
        if not connection.proxy_url:
            return urllib3.PoolManager(num_pools=2, **options)
        if connection.proxy_url.startswith("socks"):
            try:
                from urllib3.contrib import socks  # noqa: PLC0415  # needs PySocks, only for a SOCKS proxy
            except ImportError as exc:
                raise config.KubeconfigError(
                    f"the proxy {connection.proxy_url} is a SOCKS proxy, which needs PySocks installed"
                ) from exc
            return socks.SOCKSProxyManager(connection.proxy_url, num_pools=2, **options)
        return urllib3.ProxyManager(connection.proxy_url, num_pools=2, **options)

    def _pool_for(self, connection: config.Connection) -> urllib3.PoolManager:
        """The pool made for ``connection``'s TLS material (made now if it changed: new
        connections present the new certificate, the old ones are closed). Only the login's
        current credentials make a new pool: a request that began just before a rotation uses
        the new one rather than turning the pool back."""
        with self._lock:
            if connection.transport != self._transport and connection is self.login.current:
                old, self._pool = self._pool, self._new_pool(connection)
                self._transport = connection.transport
                old.clear()
            return self._pool

    def send(
        self,
        method: str,
        url_path: str,
        *,
        query: Query | None = None,
        body: bytes | None = None,
        content_type: str | None = None,
        timeout: float | None = None,
        stream: bool = False,
    ) -> urllib3.BaseHTTPResponse:
        """One call, retried as :data:`RETRIES` says, within ``timeout`` seconds (at most the
        client's request timeout; a watch passes its own, longer one with ``stream``);
        :class:`NoAnswer` when the time is up. A 401 loads the credentials again and, if they
        changed, sends the request once more with them (client-go's exec and token-file sources)."""
        limit = self.timeouts.request_seconds
        seconds = timeout if stream and timeout is not None else min(timeout or limit, limit)
        seconds = max(0.0, min(seconds, _DEADLINE.get() - time.monotonic()))
        deadline = time.monotonic() + seconds
        options = [
            (key, str(value).lower() if isinstance(value, bool) else str(value))
            for key, value in (query or {}).items()
            if value is not None
        ]
        target = url_path + (f"?{urlencode(options)}" if options else "")
        what = f"{method} {url_path}: no answer within {seconds:g}s"
        connection = self.login.connection(wait_seconds=seconds)
        request = _Request(method, target, body, content_type, stream=stream, deadline=deadline, what=what)
        response = self._attempts(connection, request)
        if response.status != 401:
            return response
        fresh = self.login.refresh(connection, wait_seconds=deadline - time.monotonic())
        if fresh.authorization == connection.authorization and fresh.transport == connection.transport:
            return response  # the same credentials again: refused for good
        response.drain_conn()
        response.release_conn()
        return self._attempts(fresh, request)

    def _attempts(self, connection: config.Connection, request: _Request) -> urllib3.BaseHTTPResponse:
        pool = self._pool_for(connection)
        headers = {"Accept": "application/json", "User-Agent": "aianalysis-operator"}
        if request.content_type is not None:
            headers["Content-Type"] = request.content_type
        if connection.authorization:
            headers["Authorization"] = connection.authorization
        url = connection.server + request.target
        method, deadline = request.method, request.deadline
        for attempt in range(RETRIES + 1):
            left = deadline - time.monotonic()
            if left <= 0:
                raise NoAnswer(request.what)
            try:
                response = pool.request(
                    method,
                    url,
                    body=request.body,
                    headers=headers,
                    timeout=urllib3.Timeout(connect=min(self.timeouts.connect_seconds, left), read=left),
                    preload_content=not request.stream,
                    retries=False,
                )
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                unsent = isinstance(exc, urllib3.exceptions.ConnectTimeoutError)  # refused, or no handshake
                wait = BACKOFF_SECONDS * 2**attempt
                if (
                    attempt == RETRIES
                    or not (unsent or method in IDEMPOTENT)
                    or time.monotonic() + wait >= deadline
                ):
                    raise _timed_out(exc, request.what) from exc
                time.sleep(wait)
                continue
            wait_after = self._retry_after(method, response)
            if wait_after is None or attempt == RETRIES or time.monotonic() + wait_after >= deadline:
                return response
            response.drain_conn()
            response.release_conn()
            time.sleep(wait_after)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _retry_after(self, method: str, response: urllib3.BaseHTTPResponse) -> float | None:
        """The wait a 429/503 asks for, capped (None: not to be tried again)."""
        header = response.headers.get("Retry-After")
        if method not in IDEMPOTENT or response.status not in RETRY_AFTER_STATUSES or header is None:
            return None
        try:
            asked = _RETRY_AFTER.parse_retry_after(header)
        except urllib3.exceptions.InvalidHeader:
            return None
        return min(asked, self.timeouts.retry_after_max_seconds)

    def close(self) -> None:
        self._pool.clear()

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _timed_out(exc: BaseException, what: str) -> BaseException:
    """A timeout as :class:`NoAnswer` (saying how long was waited); other failures as they are (a
    refused connection is urllib3's ``NewConnectionError``, which it files under its timeouts)."""
    if isinstance(exc, urllib3.exceptions.NewConnectionError):
        return exc
    if isinstance(exc, TimeoutError | urllib3.exceptions.TimeoutError):
        return NoAnswer(what)
    return exc


def path(*segments: str) -> str:
    """``/``-joined, each segment escaped (a name cannot smuggle a ``/`` or a ``?``)."""
    return "/" + "/".join(quote(segment, safe="") for segment in segments)


def request(
    api: ApiClient,
    method: str,
    url_path: str,
    *,
    query: Query | None = None,
    body: Any = None,
    content_type: str | None = None,
    timeout: float | None = None,
) -> urllib3.BaseHTTPResponse:
    """The response (body read), or :class:`ApiError` for a non-2xx answer; connection failures
    are urllib3's / the OS's. ``timeout``: a bound shorter than the client's (None: the client's)."""
    encoded = None if body is None else json.dumps(body, default=_json_default).encode()
    if encoded is not None and content_type is None:
        content_type = "application/json"
    response = api.send(
        method, url_path, query=query, body=encoded, content_type=content_type, timeout=timeout
    )
    if not 200 <= response.status <= 299:
        raise _error(response)
    return response


def get_bytes(
    api: ApiClient, url_path: str, *, query: Query | None = None, timeout: float | None = None
) -> bytes:
    """GET ``url_path``: the body as sent."""
    return bytes(request(api, "GET", url_path, query=query, timeout=timeout).data or b"")


def get_json(
    api: ApiClient, url_path: str, *, query: Query | None = None, timeout: float | None = None
) -> Any:
    """GET ``url_path``: the JSON body, decoded."""
    return json.loads(get_bytes(api, url_path, query=query, timeout=timeout))


def send_json(
    api: ApiClient,
    method: str,
    url_path: str,
    body: Any,
    *,
    content_type: str = "application/json",
    query: Query | None = None,
    timeout: float | None = None,
) -> Any:
    """``method`` (POST, PUT, PATCH) with a JSON ``body``: the JSON answer, decoded."""
    response = request(
        api, method, url_path, query=query, body=body, content_type=content_type, timeout=timeout
    )
    return json.loads(response.data) if response.data else None


def watch_lines(
    api: ApiClient, url_path: str, *, query: Query, timeout_seconds: int
) -> Iterator[dict[str, Any]]:
    """A watch the server ends after ``timeout_seconds``: one decoded event per line until it does.
    The client gives up (:class:`NoAnswer`) once that time and its request timeout have passed,
    however the stream trickles. An ``ERROR`` event is raised as :class:`ApiError` with the Status'
    code (410: the version is gone, list again)."""
    seconds = timeout_seconds + api.timeouts.request_seconds
    deadline = min(time.monotonic() + seconds, _DEADLINE.get())
    query = {**query, "watch": True, "timeoutSeconds": timeout_seconds}
    response = api.send("GET", url_path, query=query, timeout=seconds, stream=True)
    what = f"watching {url_path}: not ended within {seconds:g}s"
    try:
        if not 200 <= response.status <= 299:
            response.read()
            raise _error(response)
        pending = b""
        try:
            for chunk in response.stream(65536, decode_content=True):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield _event(line)
                _read_until(response, deadline, what)
        except (TimeoutError, urllib3.exceptions.TimeoutError) as exc:
            raise NoAnswer(what) from exc
        if pending.strip():
            yield _event(pending)
    finally:
        response.close()
        response.release_conn()


def _read_until(response: urllib3.BaseHTTPResponse, deadline: float, what: str) -> None:
    """The next read of ``response`` waits at most until ``deadline`` (the socket's read timeout
    was the whole budget when the watch began; an event arriving now and then must not extend it)."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise NoAnswer(what)
    connection = getattr(response, "connection", None)
    sock = getattr(connection, "sock", None)
    if sock is not None:
        sock.settimeout(left)


def _error(response: urllib3.BaseHTTPResponse) -> ApiError:
    return ApiError(status=response.status, reason=response.reason or "", body=response.data)


def _event(line: bytes) -> dict[str, Any]:
    event: dict[str, Any] = json.loads(line)
    if event.get("type") == "ERROR":
        status = event.get("object") or {}
        raise ApiError(
            status=int(status.get("code") or 500), reason=f"{status.get('reason')}: {status.get('message')}"
        )
    return event


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    raise TypeError(f"not JSON: {type(value).__name__}")
