"""The one Kubernetes API client of the process (in-cluster service account, else kubeconfig)."""

from __future__ import annotations

from typing import Any

import aianalysis.settings
from aianalysis import errors
from aianalysis.kube import config, rest

#: kopf's watches: the API server ends each after this (kopf then watches again from where it was).
WATCH_SECONDS = 300

#: Parallel status writes and investigation reads run in threads, each blocking call holding one
#: connection while it waits.
CONNECTION_POOL_SIZE = 32


def api_client(
    kubeconfig: str | None = None, *, settings: aianalysis.settings.Settings | None = None
) -> rest.ApiClient:
    """The in-cluster service account's client, else the kubeconfig's, its calls bounded by
    ``settings`` (the defaults when None); :class:`errors.ConfigError` when there is neither."""
    try:
        return rest.ApiClient(
            config.load(kubeconfig), pool_size=CONNECTION_POOL_SIZE, timeouts=timeouts(settings)
        )
    except (config.KubeconfigError, OSError, ValueError) as exc:
        raise errors.ConfigError(f"no Kubernetes API to talk to: {exc}") from exc


def timeouts(settings: aianalysis.settings.Settings | None = None) -> rest.Timeouts:
    """The bounds of every API call, from ``settings`` (the defaults when None)."""
    s = settings or aianalysis.settings.Settings()
    return rest.Timeouts(
        connect_seconds=s.api.connect_timeout_seconds,
        request_seconds=s.api.request_timeout_seconds,
        retry_after_max_seconds=s.api.retry_after_max_seconds,
    )


def configure_kopf(
    kopf_settings: Any, *, settings: aianalysis.settings.Settings, watch_seconds: int = WATCH_SECONDS
) -> None:
    """kopf's own API calls (its lists and watches, its Events) bounded as ours are: the connect
    timeout per attempt, the request timeout per request, and each watch ended by the server after
    ``watch_seconds`` and by kopf's client ``request_seconds`` later. ``kopf_settings`` is the
    ``kopf.OperatorSettings`` a startup handler is given (only the handlers import kopf)."""
    bounds = timeouts(settings)
    kopf_settings.networking.connect_timeout = bounds.connect_seconds
    kopf_settings.networking.request_timeout = bounds.request_seconds
    kopf_settings.watching.connect_timeout = bounds.connect_seconds
    kopf_settings.watching.server_timeout = watch_seconds
    kopf_settings.watching.client_timeout = watch_seconds + bounds.request_seconds


def login_fields(kubeconfig: str | None = None) -> dict[str, Any]:
    """The same credentials for kopf's own API connection, as ``kopf.ConnectionInfo``'s fields (an
    ``on.login`` handler builds it): one source for the whole process, so an exec plugin, a
    ``tokenFile``, a client certificate or a proxy works for kopf too. Loaded afresh on each call:
    kopf calls it at start, after a 401 and when ``expiration`` (an exec credential's) passed —
    the refresh client-go does. A key held in memory goes to kopf as data (kopf writes it to a
    temporary file only while it builds its TLS context)."""
    try:
        connection = config.load(kubeconfig).connection()
    except (config.KubeconfigError, OSError) as exc:
        raise errors.ConfigError(f"no Kubernetes API to talk to: {exc}") from exc
    scheme, _, token = (connection.authorization or "").partition(" ")
    return {
        "server": connection.server,
        "ca_path": connection.ca_file,
        "ca_data": connection.ca_data,
        "insecure": connection.insecure or None,
        "scheme": scheme or None,
        "token": token or None,
        "certificate_path": connection.cert_file,
        "certificate_data": connection.cert_pem,
        "private_key_path": connection.key_file,
        "private_key_data": connection.key_pem,
        "default_namespace": connection.namespace,
        "proxy_url": connection.proxy_url,
        "expiration": connection.expires,
    }


def server_version(api: rest.ApiClient, *, timeout_seconds: float = 5.0) -> str:
    """The API server's version: the cheapest request that proves it answers (blocking)."""
    found = rest.get_json(api, "/version", timeout=timeout_seconds)
    return str(found.get("gitVersion") if isinstance(found, dict) else found)
