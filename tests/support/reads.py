"""What ``kubectl get -o json`` prints, read in the test's own process: the tests poll objects every
half second while they wait, and each kubectl started costs ~75 ms of CPU. Resource names resolve
as kubectl resolves them (plural, singular, short name) through the client's ``DynamicClient``,
whose discovery is read again when a name is new (a CRD applied since)."""

from __future__ import annotations

import functools
from typing import Any

from kubernetes import client, dynamic

from tests.support import typed


@functools.cache
def _dynamic(kubeconfig: str) -> Any:
    return dynamic.DynamicClient(typed.client_of(kubeconfig))  # type: ignore[no-untyped-call]  # the client is untyped


def _resource(cluster: Any, kind: str) -> Any:
    return _resolved(str(cluster.kubeconfig), kind)


@functools.cache
def _resolved(kubeconfig: str, kind: str) -> Any:
    """Found once (a search of the discovery costs tens of milliseconds); a name not served yet is
    not cached, and searched again with fresh discovery."""
    resources = _dynamic(kubeconfig).resources
    name = kind.lower()
    for field in ("name", "singular_name", "short_names"):
        found = resources.search(**{field: [name] if field == "short_names" else name})
        found = [r for r in found if "/" not in r.name]  # not a subresource
        if found:
            return found[0]
    raise AssertionError(f"the cluster serves no resource named {kind!r}")


def get(cluster: Any, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
    """The object, or None where ``kubectl get`` fails (not found, refused)."""
    resource = _resource(cluster, kind)
    try:
        found = resource.get(name=name, namespace=namespace if resource.namespaced else None)
    except client.ApiException:
        return None
    got: dict[str, Any] = found.to_dict()
    return got


def listed(
    cluster: Any, kind: str, namespace: str | None = None, *, selector: str = "", fields: str = ""
) -> list[dict[str, Any]]:
    """The objects (of ``namespace``, else all), as ``kubectl get -o json``'s ``items``; ``selector``
    and ``fields`` as kubectl's ``-l`` and ``--field-selector``."""
    resource = _resource(cluster, kind)
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
