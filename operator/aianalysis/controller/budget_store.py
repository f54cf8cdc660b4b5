"""The LLM budget's record in the cluster: the ConfigMap ``aianalysis-llm-budget`` in the operator's
namespace (``AIANALYSIS_LLM_BUDGET_NAMESPACE``), read and written through :mod:`aianalysis.kube`
(only that one object; the chart grants get/update on that name and create in that namespace)."""

from __future__ import annotations

from aianalysis import kube
from aianalysis.kube import records

NAME = "aianalysis-llm-budget"
LABELS = {"app.kubernetes.io/name": "aianalysis-operator", "app.kubernetes.io/component": "llm-budget"}


class ConfigMapStore:
    def __init__(self, api: kube.ApiClient, namespace: str, name: str = NAME) -> None:
        self._api = api
        self.namespace = namespace
        self.name = name

    async def read(self) -> tuple[dict[str, str], object]:
        found = await records.read(self._api, namespace=self.namespace, name=self.name)
        return found.data, found

    async def write(self, data: dict[str, str], version: object) -> bool:
        assert isinstance(version, records.Record)
        saved = await records.write(
            self._api, namespace=self.namespace, name=self.name, data=data, at=version, labels=LABELS
        )
        return saved is records.Saved.OK
