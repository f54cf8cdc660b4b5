"""The one map from the API client's failures to the project's :mod:`aianalysis.errors`.

Every call into the client goes through :func:`call` (or :func:`classify` where the call is already
on a thread): the client's own exceptions never leave this package. The original is chained as the
cause, and the API server's ``Status`` message travels in ``detail``.

* ``errors.ClusterError`` (retryable): no answer (connection refused, reset, timeout), 401 (a token
  being rotated), 408, 409, 429 and every 5xx — these may pass;
* ``errors.ClusterRejectedError``: every other 4xx (400 bad request, 403 forbidden, 404 not found,
  410 gone, 422 a failed precondition or invalid object) — asking again cannot help.

``status`` on both is the HTTP status (0: no answer), so a caller tells "not found" or "exists"
apart without knowing the client.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import urllib3

from aianalysis import errors
from aianalysis.kube import config, rest

#: What the client raises when the API server cannot be reached — or its credentials cannot be had
#: for this request (a token file being replaced, an exec plugin that failed to renew).
UNREACHABLE = (urllib3.exceptions.HTTPError, OSError, config.KubeconfigError)
_RETRYABLE = frozenset({0, 401, 408, 409, 429})
FORBIDDEN, NOT_FOUND, CONFLICT, GONE, INVALID = 403, 404, 409, 410, 422


def classify(exc: BaseException, *, what: str) -> errors.ClusterError | errors.ClusterRejectedError:
    """``exc`` (an ``ApiException`` or a connection failure) as the project's error about ``what``."""
    if isinstance(exc, config.KubeconfigError):
        return errors.ClusterError(f"{what}: no credentials for the API server ({exc})")
    if not isinstance(exc, rest.ApiError):
        return errors.ClusterError(f"{what}: the API server is unreachable ({type(exc).__name__}: {exc})")
    status = int(exc.status or 0)
    detail = status_message(exc)
    if status in _RETRYABLE or status >= 500:
        return errors.ClusterError(f"{what}: {status} {exc.reason}", status=status, detail=detail)
    return errors.ClusterRejectedError(f"{what}: {status} {exc.reason}", status=status, detail=detail)


def blocking(
    what: str, function: Callable[..., Any], *args: Any, none_on: int | None = None, **options: Any
) -> Any:
    """``function(*args, **options)`` (a blocking client call), its failures mapped; None instead
    of the error whose status is ``none_on`` (404: "there is none", 409: "it exists already")."""
    try:
        return function(*args, **options)
    except (rest.ApiError, *UNREACHABLE) as exc:
        mapped = classify(exc, what=what)
        if none_on is not None and mapped.status == none_on:
            return None
        raise mapped from exc


async def call(
    what: str, function: Callable[..., Any], *args: Any, none_on: int | None = None, **options: Any
) -> Any:
    """:func:`blocking` in a thread."""
    return await asyncio.to_thread(blocking, what, function, *args, none_on=none_on, **options)


def status_message(exc: rest.ApiError) -> str:
    """The ``message`` of the API server's ``Status`` body, else the HTTP reason."""
    body = (exc.body or b"").decode("utf-8", errors="replace")
    try:
        found = json.loads(body) if body else {}
    except ValueError:
        found = {}
    if isinstance(found, dict) and found.get("message"):
        return str(found["message"])
    return str(exc.reason or body or "no details")
