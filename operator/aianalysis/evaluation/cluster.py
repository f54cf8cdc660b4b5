"""An in-memory ``tools.ClusterReader`` serving a scenario's objects, events and pod logs, so an
LLM can investigate an incident without a cluster.

It answers the way the API server would, as far as the investigation tools can tell: objects are
copies (nothing the tools do leaks into the next run), a missing object is a 404 (``readers.NotFound``)
with the reader's wording, Events are matched on ``involvedObject``, pods of an owner are found
through ``ownerReferences`` (Deployment → ReplicaSets → Pods, CronJob → Jobs → Pods), and a log
request for a Pod with several containers needs the container name.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from aianalysis.analysis import tools
from aianalysis.evaluation import suite
from aianalysis.kube import kind_table, readers

_MIDDLE_OWNER = {"Deployment": "ReplicaSet", "CronJob": "Job"}


class InMemoryCluster:
    """Read-only view of fixed objects; the same instance may serve concurrent conversations."""

    def __init__(
        self, objects: Iterable[Mapping[str, Any]], *, logs: Mapping[str, suite.PodLog] | None = None
    ) -> None:
        self._objects = [copy.deepcopy(dict(obj)) for obj in objects]
        self._logs = dict(logs or {})

    @classmethod
    def of(cls, scenario: suite.Scenario) -> InMemoryCluster | None:
        """The scenario's cluster, or None when it has none (the tools then say so)."""
        if scenario.cluster is None:
            return None
        return cls(scenario.cluster, logs=scenario.logs)

    async def get_object(self, *, kind: str, name: str, namespace: str | None) -> tools.JSONObject:
        found = self._find(kind, name, namespace)
        if found is None:
            where = f"{namespace}/{name}" if namespace else name
            raise readers.NotFound(f"{kind} {where} not found", status=404)
        return copy.deepcopy(found)

    async def list_events(self, *, kind: str, name: str, namespace: str | None) -> list[tools.JSONObject]:
        return [copy.deepcopy(event) for event in self._objects if _about(event, kind, name, namespace)]

    async def pod_logs(
        self, *, name: str, namespace: str, container: str | None, previous: bool, tail_lines: int
    ) -> str:
        pod = self._find("Pod", name, namespace)
        if pod is None:
            raise tools.Unavailable(f"the logs of Pod {namespace}/{name} not found")
        chosen = _container(pod, container)
        log = self._logs.get(f"{name}/{chosen}")
        if log is None:
            log = self._logs.get(name, suite.PodLog())
        if previous and log.previous is None:
            raise tools.Unavailable(
                f"the logs of Pod {namespace}/{name} cannot be read: previous terminated container "
                f'"{chosen}" in pod "{name}" not found'
            )
        text = log.previous if previous and log.previous is not None else log.current
        return "\n".join(text.splitlines()[-tail_lines:])

    async def list_pods_of_owner(self, *, kind: str, name: str, namespace: str) -> list[tools.JSONObject]:
        owner = await self.get_object(kind=kind, name=name, namespace=namespace)
        parents = [owner]
        middle = _MIDDLE_OWNER.get(kind)
        if middle is not None:
            parents += [obj for obj in self._in(namespace, middle) if _owned_by(obj, [owner])]
        return [copy.deepcopy(pod) for pod in self._in(namespace, "Pod") if _owned_by(pod, parents)]

    async def list_objects(self, *, kind: str, namespace: str) -> list[tools.JSONObject]:
        return [copy.deepcopy(obj) for obj in self._in(namespace, kind)]

    async def list_page(
        self,
        *,
        kind: kind_table.Kind,
        namespace: str | None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int,
    ) -> readers.Page:
        """Equality selectors (``a=b``, ``a!=b``, comma-separated) on labels and on dotted fields."""
        labels = _terms(label_selector)
        fields = _terms(field_selector)
        found = [
            obj
            for obj in self._objects
            if obj["kind"] == kind.kind
            and (namespace is None or obj["metadata"].get("namespace") == namespace)
            and all(_matches((obj["metadata"].get("labels") or {}).get(k), op, v) for k, op, v in labels)
            and all(_matches(_field(obj, k), op, v) for k, op, v in fields)
        ]
        return readers.Page(items=[copy.deepcopy(obj) for obj in found[:limit]], more=len(found) > limit)

    async def read(self, *, kind: kind_table.Kind, name: str, namespace: str | None) -> tools.JSONObject:
        return await self.get_object(kind=kind.kind, name=name, namespace=namespace)

    async def api_groups(self) -> list[readers.ServedGroup]:
        versions = {
            str(obj.get("apiVersion", "")) for obj in self._objects if "/" in str(obj.get("apiVersion", ""))
        }
        return [readers.ServedGroup(group=v.split("/")[0], version=v.split("/")[1]) for v in sorted(versions)]

    async def group_kinds(self, *, group: str, version: str) -> list[kind_table.Kind]:
        seen = {
            (str(obj["kind"]), bool(obj["metadata"].get("namespace")))
            for obj in self._objects
            if obj.get("apiVersion") == f"{group}/{version}"
        }
        return [
            kind_table.Kind(
                kind=kind, group=group, version=version, plural=kind.lower() + "s", namespaced=namespaced
            )
            for kind, namespaced in sorted(seen)
        ]

    def _find(self, kind: str, name: str, namespace: str | None) -> dict[str, Any] | None:
        return next(
            (
                obj
                for obj in self._objects
                if obj["kind"] == kind
                and obj["metadata"]["name"] == name
                and obj["metadata"].get("namespace") == namespace
            ),
            None,
        )

    def _in(self, namespace: str, kind: str) -> list[dict[str, Any]]:
        return [o for o in self._objects if o["kind"] == kind and o["metadata"].get("namespace") == namespace]


def _terms(selector: str | None) -> list[tuple[str, str, str]]:
    out = []
    for term in (selector or "").split(","):
        if not term.strip():
            continue
        key, op, value = term.partition("!=") if "!=" in term else term.partition("=")
        if not op:
            raise tools.Unavailable(
                f"unable to parse requirement {term!r}: only a=b and a!=b are supported here"
            )
        out.append((key.strip(), op, value.strip().lstrip("=")))
    return out


def _matches(actual: object, op: str, value: str) -> bool:
    equal = str(actual) == value if actual is not None else value == ""
    return equal if op != "!=" else not equal


def _field(obj: Mapping[str, Any], path: str) -> object:
    node: Any = obj
    for part in path.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    return node


def _about(event: Mapping[str, Any], kind: str, name: str, namespace: str | None) -> bool:
    if event.get("kind") != "Event":
        return False
    involved = event.get("involvedObject") or event.get("regarding") or {}
    if involved.get("kind") != kind or involved.get("name") != name:
        return False
    return namespace is None or involved.get("namespace", event["metadata"].get("namespace")) == namespace


def _container(pod: Mapping[str, Any], requested: str | None) -> str:
    names = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or () if c.get("name")]
    pod_name = pod["metadata"]["name"]
    if requested is not None:
        if names and requested not in names:
            raise tools.Unavailable(f"container {requested} is not valid for pod {pod_name}")
        return requested
    if len(names) > 1:
        raise tools.Unavailable(
            f"a container name must be specified for pod {pod_name}, choose one of: [{' '.join(names)}]"
        )
    return names[0] if names else ""


def _owned_by(obj: Mapping[str, Any], owners: Sequence[Mapping[str, Any]]) -> bool:
    """By uid when both sides have one (as the API server does), else by kind and name: scenario
    authors rarely write uids."""
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    return any(_refers_to(ref, owner) for ref in refs for owner in owners)


def _refers_to(ref: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    uid = owner["metadata"].get("uid")
    if uid and ref.get("uid"):
        return bool(ref["uid"] == uid)
    return bool(ref.get("kind") == owner["kind"] and ref.get("name") == owner["metadata"]["name"])
