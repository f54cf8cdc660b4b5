"""The typed ``kubernetes`` client for tests that set up or inspect cluster objects around the
operator's own code (which talks through :mod:`aianalysis.kube`, never this client)."""

from __future__ import annotations

import functools
import os

import kubernetes


def client() -> kubernetes.client.ApiClient:
    """An admin client of the session's cluster (``$KUBECONFIG``, set by the ``cluster`` fixture);
    one per kubeconfig, shared."""
    return client_of(os.environ["KUBECONFIG"])


@functools.cache
def client_of(kubeconfig: str) -> kubernetes.client.ApiClient:
    """An admin client of the cluster ``kubeconfig`` names; one per kubeconfig, shared."""
    return kubernetes.config.new_client_from_config(config_file=kubeconfig)  # type: ignore[no-untyped-call]  # kubernetes is untyped
