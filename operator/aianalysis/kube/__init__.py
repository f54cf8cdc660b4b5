"""The one door to the Kubernetes API: the only package that speaks HTTP to the API server.

``client`` opens the process' API client (``rest`` is its transport, ``config`` where the API server is
and who we are); ``objects`` reads and writes our custom objects (status writes bound to uid and
resourceVersion); ``readers``/``api_reader``/``kind_table`` are the read-only cluster reads the
investigation tools use; ``calls`` maps every failure to the project's errors.
"""

from __future__ import annotations

from aianalysis.kube.client import (
    CONNECTION_POOL_SIZE,
    api_client,
    configure_kopf,
    login_fields,
    server_version,
)
from aianalysis.kube.config import current_namespace
from aianalysis.kube.rest import ApiClient

__all__ = [
    "CONNECTION_POOL_SIZE",
    "ApiClient",
    "api_client",
    "configure_kopf",
    "current_namespace",
    "login_fields",
    "server_version",
]
