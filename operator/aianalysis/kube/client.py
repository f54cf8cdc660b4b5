"""The one Kubernetes API client of the process (in-cluster service account, else kubeconfig)."""

from __future__ import annotations

from typing import Any

from aianalysis import errors
from aianalysis.kube import config, rest

#: Parallel status writes and investigation reads run in threads, each blocking call holding one
#: connection while it waits.
CONNECTION_POOL_SIZE = 32


def api_client(kubeconfig: str | None = None) -> rest.ApiClient:
    """The in-cluster service account's client, else the kubeconfig's; :class:`errors.ConfigError`
    when there is neither."""
    try:
        return rest.ApiClient(config.load(kubeconfig), pool_size=CONNECTION_POOL_SIZE)
    except (config.ConfigError, OSError, ValueError) as exc:
        raise errors.ConfigError(f"no Kubernetes API to talk to: {exc}") from exc


def login_fields(kubeconfig: str | None = None) -> dict[str, Any]:
    """The same credentials for kopf's own API connection, as ``kopf.ConnectionInfo``'s fields (an
    ``on.login`` handler builds it): one source for the whole process, so an exec plugin, a
    ``tokenFile`` or a client certificate works for kopf too. Its token is the current one; kopf
    asks again after a 401."""
    try:
        connection = config.load(kubeconfig)
        scheme, _, token = (connection.authorization() or "").partition(" ")
    except (config.ConfigError, OSError) as exc:
        raise errors.ConfigError(f"no Kubernetes API to talk to: {exc}") from exc
    return {
        "server": connection.server,
        "ca_path": connection.ca_file,
        "ca_data": connection.ca_data,
        "insecure": connection.insecure or None,
        "scheme": scheme or None,
        "token": token or None,
        "certificate_path": connection.cert_file,
        "private_key_path": connection.key_file,
        "default_namespace": connection.namespace,
    }


def server_version(api: rest.ApiClient, *, timeout_seconds: float = 5.0) -> str:
    """The API server's version: the cheapest request that proves it answers (blocking)."""
    found = rest.get_json(api, "/version", timeout=timeout_seconds)
    return str(found.get("gitVersion") if isinstance(found, dict) else found)
