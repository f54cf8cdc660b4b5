"""The one Kubernetes API client of the process (in-cluster service account, else kubeconfig)."""

from __future__ import annotations

from kubernetes import client, config

from aianalysis import errors
from aianalysis.kube import rest

ApiClient = client.ApiClient
"""The type of the process' API client: other packages name it as ``kube.ApiClient``."""

#: Parallel status writes and investigation reads run in threads; the client's default pool (4)
#: would serialise them and log "connection pool is full".
CONNECTION_POOL_SIZE = 32


def api_client(kubeconfig: str | None = None) -> client.ApiClient:
    """The in-cluster service account's client, else the kubeconfig's; :class:`errors.ConfigError`
    when there is neither."""
    try:
        return _api_client(kubeconfig)
    except config.ConfigException as exc:
        raise errors.ConfigError(f"no Kubernetes API to talk to: {exc}") from exc


def _api_client(kubeconfig: str | None) -> client.ApiClient:
    configuration = client.Configuration()
    if kubeconfig is None:
        try:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]  # untyped in the client
        except config.ConfigException:
            config.load_kube_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    else:
        config.load_kube_config(  # type: ignore[no-untyped-call]  # untyped in the client
            config_file=kubeconfig, client_configuration=configuration
        )
    configuration.connection_pool_maxsize = CONNECTION_POOL_SIZE
    return client.ApiClient(configuration)


def current_namespace(kubeconfig: str | None = None) -> str:
    """The namespace of the kubeconfig's current context (``default`` when it names none)."""
    try:
        _, context = config.list_kube_config_contexts(config_file=kubeconfig)  # type: ignore[no-untyped-call]  # untyped in the client
    except (config.ConfigException, OSError):
        return "default"
    return str((context or {}).get("context", {}).get("namespace") or "default")


def server_version(api: client.ApiClient, *, timeout_seconds: float = 5.0) -> str:
    """The API server's version: the cheapest request that proves it answers (blocking)."""
    found = rest.get_json(api, "/version", timeout=timeout_seconds)
    return str(found.get("gitVersion") if isinstance(found, dict) else found)
