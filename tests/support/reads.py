"""What ``kubectl get -o json`` prints, read in the test's own process: the tests poll objects every
half second while they wait, and each kubectl started costs ~75 ms of CPU (a third of the suite's
kubectl time on a 2-core machine). Resource names resolve as kubectl resolves them (plural,
singular, short name, kind), from the API server's discovery, read again when a name is new (a CRD
applied since)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any


@dataclasses.dataclass(frozen=True)
class Resource:
    prefix: str  # /api/v1 or /apis/<group>/<version>
    plural: str
    namespaced: bool


@dataclasses.dataclass
class _Reader:
    api: Any
    names: dict[str, Resource] = dataclasses.field(default_factory=dict)

    def raw(self, path: str, **query: str) -> tuple[int, Any]:
        method, url, headers, _, _ = self.api.param_serialize(
            "GET",
            path,
            query_params=list(query.items()),
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        response = self.api.call_api(method, url, header_params=headers)
        if response.status != 200:
            return response.status, None
        return 200, json.loads(response.read())

    def discover(self) -> None:
        prefixes = ["/api/v1"]
        _, groups = self.raw("/apis")
        prefixes += [f"/apis/{g['preferredVersion']['groupVersion']}" for g in groups["groups"]]
        for prefix in prefixes:
            _, listing = self.raw(prefix)
            for r in (listing or {}).get("resources", []):
                if "/" in r["name"]:  # a subresource
                    continue
                resource = Resource(prefix, r["name"], r["namespaced"])
                for name in (r["name"], r.get("singularName"), r["kind"].lower(), *r.get("shortNames", [])):
                    if name:
                        self.names.setdefault(name, resource)

    def resource(self, name: str) -> Resource:
        if name.lower() not in self.names:
            self.discover()
        return self.names[name.lower()]

    def path(self, kind: str, namespace: str | None) -> str:
        r = self.resource(kind)
        where = f"/namespaces/{namespace}" if r.namespaced and namespace else ""
        return f"{r.prefix}{where}/{r.plural}"


_readers: dict[str, _Reader] = {}


def _reader(cluster: Any) -> _Reader:
    key = str(cluster.kubeconfig)
    if key not in _readers:
        _readers[key] = _Reader(cluster.api_client())
    return _readers[key]


def get(cluster: Any, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
    """The object, or None where ``kubectl get`` fails (not found, refused)."""
    reader = _reader(cluster)
    status, found = reader.raw(f"{reader.path(kind, namespace)}/{name}")
    return found if status == 200 else None


def listed(
    cluster: Any, kind: str, namespace: str | None = None, *, selector: str = "", fields: str = ""
) -> list[dict[str, Any]]:
    """The objects (of ``namespace``, else all), as ``kubectl get -o json``'s ``items``; ``selector``
    and ``fields`` as kubectl's ``-l`` and ``--field-selector``."""
    reader = _reader(cluster)
    query = {k: v for k, v in (("labelSelector", selector), ("fieldSelector", fields)) if v}
    status, found = reader.raw(reader.path(kind, namespace), **query)
    if status != 200:
        raise AssertionError(f"listing {kind} in {namespace or 'all namespaces'} failed: HTTP {status}")
    items: list[dict[str, Any]] = found["items"]
    for item in items:  # as kubectl prints them
        item.setdefault("apiVersion", found["apiVersion"])
        item.setdefault("kind", found["kind"].removesuffix("List"))
    return items
