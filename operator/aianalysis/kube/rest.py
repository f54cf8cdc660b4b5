"""The process' HTTP client of the API server: a method, a URL path, query options — the API
server's JSON back exactly as it sent it.

One urllib3 pool per client, TLS and credentials from :mod:`aianalysis.kube.config` (a rotated
token is picked up as the kubelet writes it). The ``kubernetes`` Python client is not used: it
brings requests, oauthlib, google-auth, websocket and pydantic-generated models (~25 MiB of RSS
before any call; kopf also imports its models whenever it is installed), for a transport that
is this module. A non-2xx answer raises :class:`ApiError`; connection failures are urllib3's or
the OS's. :mod:`aianalysis.kube.calls` maps both.
"""

from __future__ import annotations

import datetime
import json
import ssl
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import quote, urlencode

import urllib3

from aianalysis.kube import config as config_mod

Query = Mapping[str, str | int | bool | None]


#: As the ``kubernetes`` client had it (urllib3's default): a GET, PUT or DELETE is sent again after
#: a connection failure, or after a 429/503 that says ``Retry-After`` (an API server whose storage
#: is still initialising, API Priority and Fairness shedding load), three times at most; a POST or
#: PATCH never is. The last answer is returned as it is (an :class:`ApiError`); redirects are not
#: followed.
RETRIES = urllib3.Retry(total=3, redirect=False, raise_on_status=False)


class ApiError(Exception):
    """A non-2xx answer: the HTTP ``status``, its ``reason`` and the ``body`` (the API server's
    ``Status`` as bytes, when it sent one)."""

    def __init__(self, *, status: int, reason: str, body: bytes | None = None) -> None:
        super().__init__(f"({status}) {reason}")
        self.status = status
        self.reason = reason
        self.body = body


class ApiClient:
    """The API server of ``connection``: a pool of up to ``pool_size`` connections, shared by the
    threads that call it (each blocking call takes one). A context manager that closes the pool."""

    def __init__(self, connection: config_mod.Connection, *, pool_size: int) -> None:
        self.connection = connection
        self._server = connection.server
        options: dict[str, Any] = {"maxsize": pool_size}
        if connection.server.startswith("https:"):
            context = ssl.create_default_context(cafile=connection.ca_file, cadata=connection.ca_data)
            if connection.insecure:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            if connection.cert_file:
                context.load_cert_chain(connection.cert_file, connection.key_file)
            options["ssl_context"] = context
            if connection.tls_server_name:
                options["server_hostname"] = connection.tls_server_name
        self._pool = urllib3.PoolManager(num_pools=2, **options)

    def send(
        self,
        method: str,
        url_path: str,
        *,
        query: Query | None = None,
        body: bytes | None = None,
        content_type: str | None = None,
        timeout: float | None,
        stream: bool = False,
    ) -> urllib3.BaseHTTPResponse:
        headers = {"Accept": "application/json", "User-Agent": "aianalysis-operator"}
        if content_type is not None:
            headers["Content-Type"] = content_type
        authorization = self.connection.authorization()
        if authorization:
            headers["Authorization"] = authorization
        options = [
            (key, str(value).lower() if isinstance(value, bool) else str(value))
            for key, value in (query or {}).items()
            if value is not None
        ]
        url = self._server + url_path + (f"?{urlencode(options)}" if options else "")
        return self._pool.request(
            method,
            url,
            body=body,
            headers=headers,
            timeout=urllib3.Timeout(total=timeout) if timeout is not None else urllib3.Timeout(connect=30.0),
            preload_content=not stream,
            retries=RETRIES,
        )

    def close(self) -> None:
        self._pool.clear()

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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
    timeout: float | None,
) -> urllib3.BaseHTTPResponse:
    """The response (body read), or :class:`ApiError` for a non-2xx answer; connection failures
    are urllib3's / the OS's."""
    encoded = None if body is None else json.dumps(body, default=_json_default).encode()
    if encoded is not None and content_type is None:
        content_type = "application/json"
    response = api.send(
        method, url_path, query=query, body=encoded, content_type=content_type, timeout=timeout
    )
    if not 200 <= response.status <= 299:
        raise _error(response)
    return response


def get_bytes(api: ApiClient, url_path: str, *, query: Query | None = None, timeout: float | None) -> bytes:
    """GET ``url_path``: the body as sent."""
    return bytes(request(api, "GET", url_path, query=query, timeout=timeout).data or b"")


def get_json(api: ApiClient, url_path: str, *, query: Query | None = None, timeout: float | None) -> Any:
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
    timeout: float | None,
) -> Any:
    """``method`` (POST, PUT, PATCH) with a JSON ``body``: the JSON answer, decoded."""
    response = request(
        api, method, url_path, query=query, body=body, content_type=content_type, timeout=timeout
    )
    return json.loads(response.data) if response.data else None


def watch_lines(
    api: ApiClient, url_path: str, *, query: Query, timeout: float | None
) -> Iterator[dict[str, Any]]:
    """A watch: one decoded event per line until the server ends it. An ``ERROR`` event is raised
    as :class:`ApiError` with the Status' code (410: the version is gone, list again)."""
    response = api.send("GET", url_path, query={**query, "watch": True}, timeout=timeout, stream=True)
    try:
        if not 200 <= response.status <= 299:
            response.read()
            raise _error(response)
        pending = b""
        for chunk in response.stream(65536, decode_content=True):
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if line.strip():
                    yield _event(line)
        if pending.strip():
            yield _event(pending)
    finally:
        response.close()
        response.release_conn()


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
