"""The LLM budget's record in the cluster: the ConfigMap ``aianalysis-llm-budget`` in the operator's
namespace (``AIANALYSIS_LLM_BUDGET_NAMESPACE``), so that what one process counted survives its
restart and a failover to another replica. Only that one object, and only its ``data``, is read or
written (the chart makes it, so that ``helm uninstall`` removes it, and grants get/update on that
name only; without the chart the operator creates it when it writes first).

The record is read with its resourceVersion and written only if it is still at that version (a stale
write is refused by the API server with 409: :meth:`ConfigMapStore.write` says False — read again,
merge, write again).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from aianalysis import kube
from aianalysis.kube import calls, rest

NAME = "aianalysis-llm-budget"
LABELS = {"app.kubernetes.io/name": "aianalysis-operator", "app.kubernetes.io/component": "llm-budget"}
REQUEST_TIMEOUT_SECONDS = 5.0


@dataclasses.dataclass(frozen=True, kw_only=True)
class Record:
    data: dict[str, str]
    resource_version: str | None
    """The version read (None: there is no record yet; writing creates it)."""
    labels: dict[str, str] = dataclasses.field(default_factory=dict)
    annotations: dict[str, str] = dataclasses.field(default_factory=dict)
    """Kept as read: a replace must not strip what made the ConfigMap (the chart's release labels
    and Helm's ownership annotations)."""


class ConfigMapStore:
    def __init__(self, api: kube.ApiClient, namespace: str, name: str = NAME) -> None:
        self._api = api
        self.namespace = namespace
        self.name = name

    async def read(self) -> tuple[dict[str, str], object]:
        """The record as the API server has it (empty, without a version, when there is none)."""
        found: Any = await calls.call(
            f"reading ConfigMap {self.namespace}/{self.name}",
            rest.get_json,
            self._api,
            self._path(self.name),
            timeout=REQUEST_TIMEOUT_SECONDS,
            none_on=calls.NOT_FOUND,
        )
        if found is None:
            record = Record(data={}, resource_version=None)
        else:
            meta = found.get("metadata") or {}
            record = Record(
                data=dict(found.get("data") or {}),
                resource_version=meta.get("resourceVersion"),
                labels=dict(meta.get("labels") or {}),
                annotations=dict(meta.get("annotations") or {}),
            )
        return record.data, record

    async def write(self, data: dict[str, str], version: object) -> bool:
        """``data`` as the record, if the record is still as read in ``version`` (created when that
        read found none); False when another writer came first."""
        assert isinstance(version, Record)
        labels = {**version.labels, **LABELS}
        metadata: dict[str, Any] = {"name": self.name, "namespace": self.namespace, "labels": labels}
        if version.annotations:
            metadata["annotations"] = version.annotations
        if version.resource_version is not None:
            metadata["resourceVersion"] = version.resource_version  # the API server refuses a stale replace
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}
        creating = version.resource_version is None
        done = await calls.call(
            f"writing ConfigMap {self.namespace}/{self.name}",
            rest.send_json,
            self._api,
            "POST" if creating else "PUT",
            self._path(None) if creating else self._path(self.name),
            body,
            timeout=REQUEST_TIMEOUT_SECONDS,
            none_on=calls.CONFLICT,
        )
        return done is not None

    def _path(self, name: str | None) -> str:
        return rest.path("api", "v1", "namespaces", self.namespace, "configmaps", *([name] if name else []))
