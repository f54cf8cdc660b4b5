"""Plain REST calls on the process' ``ApiClient``: a method, a URL path, query options — the API
server's JSON back exactly as it sent it.

The ``kubernetes`` client's typed API classes (``CoreV1Api``, ``CustomObjectsApi``, …) are never
touched on these paths: in client 37 each one imports hundreds of pydantic model modules and wraps
every method in a validator (``CoreV1Api`` alone is ~70 MiB of RSS and ~1 s at first touch). The
``ApiClient`` still does what matters — TLS, credentials (a refreshed token too), the connection
pool, timeouts — and a non-2xx answer is the client's own ``ApiException``, so
:mod:`aianalysis.kube.errors` maps it as before.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import quote

from kubernetes.client import ApiClient, ApiException
from kubernetes.client.rest import RESTResponse

Query = Mapping[str, str | int | bool | None]


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
) -> RESTResponse:
    """The response (body read), or ``ApiException`` for a non-2xx answer; connection failures
    are urllib3's / the OS's, as with the typed methods."""
    response = _send(
        api, method, url_path, query=query, body=body, content_type=content_type, timeout=timeout
    )
    response.read()  # type: ignore[no-untyped-call]  # the client is untyped
    if not 200 <= response.status <= 299:
        raise ApiException.from_response(http_resp=response, body=None, data=None)
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
    as ``ApiException`` with the Status' code (410: the version is gone, list again)."""
    response = _send(api, "GET", url_path, query={**query, "watch": True}, timeout=timeout)
    try:
        if not 200 <= response.status <= 299:
            response.read()  # type: ignore[no-untyped-call]  # the client is untyped
            raise ApiException.from_response(http_resp=response, body=None, data=None)
        pending = b""
        for chunk in response.response.stream(65536, decode_content=True):
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if line.strip():
                    yield _event(line)
        if pending.strip():
            yield _event(pending)
    finally:
        response.response.close()
        response.response.release_conn()


def _event(line: bytes) -> dict[str, Any]:
    event: dict[str, Any] = json.loads(line)
    if event.get("type") == "ERROR":
        status = event.get("object") or {}
        raise ApiException(
            status=int(status.get("code") or 500), reason=f"{status.get('reason')}: {status.get('message')}"
        )
    return event


def _send(
    api: ApiClient,
    method: str,
    url_path: str,
    *,
    query: Query | None,
    timeout: float | None,
    body: Any = None,
    content_type: str | None = None,
) -> RESTResponse:
    headers = {"Accept": "application/json"}
    if content_type is not None:
        headers["Content-Type"] = content_type
    params = [
        (key, str(value).lower() if isinstance(value, bool) else str(value))
        for key, value in (query or {}).items()
        if value is not None
    ]
    serialized = api.param_serialize(
        method, url_path, query_params=params, header_params=headers, body=body, auth_settings=["BearerToken"]
    )
    return api.call_api(*serialized, _request_timeout=timeout)
