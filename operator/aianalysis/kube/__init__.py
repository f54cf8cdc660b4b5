"""The one door to the Kubernetes API: the only package that speaks HTTP to the API server.

``client`` opens the process' API client; ``objects`` reads and writes our custom objects (status
writes bound to uid and resourceVersion); ``reader``/``api_reader``/``kinds`` are the read-only
cluster reads the investigation tools use.
"""

from __future__ import annotations

from aianalysis.kube.client import (
    CONNECTION_POOL_SIZE,
    ApiClient,
    api_client,
    configure_kopf,
    current_namespace,
    login_fields,
    server_version,
)

__all__ = [
    "CONNECTION_POOL_SIZE",
    "ApiClient",
    "api_client",
    "configure_kopf",
    "current_namespace",
    "login_fields",
    "server_version",
]
