"""What ``kubectl get -o json`` prints, read in the caller's own process.

Tests, the demo and the incident makers poll objects every half second while they wait for a
kubelet or a controller, and each kubectl started costs ~75 ms of CPU (a read here ~2 ms). Resource
names resolve as kubectl resolves them (plural, singular, short name) through the client's
``DynamicClient``, whose discovery is read again when a name is new (a CRD applied since).
"""

from __future__ import annotations

import functools
import hashlib
import tempfile
from pathlib import Path
from typing import Any, Protocol

import kubernetes
from kubernetes import dynamic


class HasKubeconfig(Protocol):
    """Any test cluster (``devcluster.Cluster``): reads go to its admin kubeconfig."""

    @property
    def kubeconfig(self) -> Path: ...


@functools.cache
def client_of(kubeconfig: str) -> kubernetes.client.ApiClient:
    """An admin client of the cluster ``kubeconfig`` names; one per kubeconfig, shared."""
    api: kubernetes.client.ApiClient = kubernetes.config.new_client_from_config(config_file=kubeconfig)  # type: ignore[no-untyped-call]  # kubernetes is untyped
    return api


def get(cluster: HasKubeconfig, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
    """The object, or None where ``kubectl get`` fails (not found, refused)."""
    resource = _resolved(str(cluster.kubeconfig), kind)
    try:
        found = resource.get(name=name, namespace=namespace if resource.namespaced else None)
    except kubernetes.client.ApiException:
        return None
    got: dict[str, Any] = found.to_dict()
    return got


def listed(
    cluster: HasKubeconfig, kind: str, namespace: str | None = None, *, selector: str = "", fields: str = ""
) -> list[dict[str, Any]]:
    """The objects (of ``namespace``, else all), as ``kubectl get -o json``'s ``items``; ``selector``
    and ``fields`` as kubectl's ``-l`` and ``--field-selector``."""
    resource = _resolved(str(cluster.kubeconfig), kind)
    found = resource.get(
        namespace=namespace if resource.namespaced else None,
        label_selector=selector or None,
        field_selector=fields or None,
    ).to_dict()
    items: list[dict[str, Any]] = found["items"]
    for item in items:  # as kubectl prints them
        item.setdefault("apiVersion", found["apiVersion"])
        item.setdefault("kind", found["kind"].removesuffix("List"))
    return items


@functools.cache
def _dynamic(kubeconfig: str) -> Any:
    # Its discovery cache in this process' own directory: the default file, named after the API
    # server's address, would hand a later cluster on the same port this one's resources.
    cache = Path(_cache_dir().name) / f"{hashlib.sha256(kubeconfig.encode()).hexdigest()[:16]}.json"
    return dynamic.DynamicClient(client_of(kubeconfig), cache_file=str(cache))  # type: ignore[no-untyped-call]  # the client is untyped


@functools.cache
def _cache_dir() -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix="aianalysis-discovery-")  # removed when the process exits


@functools.cache
def _resolved(kubeconfig: str, kind: str) -> Any:
    """Found once (a search of the discovery costs tens of milliseconds); a name not served yet is
    not cached (the exception), and searched again with fresh discovery."""
    resources = _dynamic(kubeconfig).resources
    name = kind.lower()
    for field in ("name", "singular_name", "short_names"):
        found = resources.search(**{field: [name] if field == "short_names" else name})
        found = [r for r in found if "/" not in r.name]  # not a subresource
        if found:
            return found[0]
    raise LookupError(f"the cluster serves no resource named {kind!r}")
