"""The typed ``kubernetes`` client for tests that set up or inspect cluster objects around the
operator's own code (which talks through :mod:`aianalysis.kube`, never this client)."""

from __future__ import annotations

import os

import kubernetes

from aianalysis_dev import reads


def client() -> kubernetes.client.ApiClient:
    """An admin client of the session's cluster (``$KUBECONFIG``, set by the ``cluster`` fixture);
    one per kubeconfig, shared."""
    return client_of(os.environ["KUBECONFIG"])


client_of = reads.client_of
