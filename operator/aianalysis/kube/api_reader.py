"""``KubernetesReader``: the ``ClusterReader`` over the ``kubernetes`` client.

- Calls are blocking, so each runs in a thread (``asyncio.to_thread``) with a request timeout.
- Objects are fetched with the client's typed methods and ``_preload_content=False``: we get the
  API server's JSON exactly (no ``None``-filled model dumps, no lost unknown fields), and the same
  code works across client versions. Kinds come from the tool box's fixed table or, for
  ``list_page``/``read``, from discovery filtered by the tool box's policy; core Secrets are
  refused here as well, whoever asks.
- Outcomes: data; ``tools.Unavailable`` for definitive answers (404 "not found", 403, 400 "no
  logs"...), shown to the LLM; ``errors.ClusterError`` for failures that may pass (connection,
  429, 5xx).
- ``list_pods_of_owner`` follows ownerReferences by uid (Deployment -> ReplicaSets -> Pods,
  CronJob -> Jobs -> Pods, others directly), using the owner's label selector only to narrow the
  list requests.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from typing import Any

from kubernetes import client

from aianalysis import errors
from aianalysis.kube import errors as kube_errors
from aianalysis.kube import kinds, reader

_APIS: dict[str, Callable[[client.ApiClient], Any]] = {
    "": client.CoreV1Api,
    "apps": client.AppsV1Api,
    "batch": client.BatchV1Api,
    "autoscaling": client.AutoscalingV2Api,
    "networking.k8s.io": client.NetworkingV1Api,
    "policy": client.PolicyV1Api,
    "rbac.authorization.k8s.io": client.RbacAuthorizationV1Api,
}
MAX_LIST_ITEMS = 500
MAX_LOG_BYTES = 512_000


class KubernetesReader:
    def __init__(self, api: client.ApiClient, *, timeout_seconds: float = 15.0) -> None:
        self._api = api
        self._timeout = timeout_seconds

    async def get_object(self, *, kind: str, name: str, namespace: str | None) -> reader.JSONObject:
        spec = _kind(kind)
        what = f"{kind} {namespace}/{name}" if spec.namespaced else f"{kind} {name}"
        return await self._json(what, self._reader_of(spec, namespace), name)

    async def list_events(self, *, kind: str, name: str, namespace: str | None) -> list[reader.JSONObject]:
        core = client.CoreV1Api(self._api)
        selector = f"involvedObject.kind={kind},involvedObject.name={name}"
        if namespace:
            selector += f",involvedObject.namespace={namespace}"
            found = await self._json(
                f"events in {namespace}",
                core.list_namespaced_event,
                namespace,
                field_selector=selector,
                limit=MAX_LIST_ITEMS,
            )
        else:
            found = await self._json(
                "events", core.list_event_for_all_namespaces, field_selector=selector, limit=MAX_LIST_ITEMS
            )
        return list(found.get("items") or [])

    async def pod_logs(
        self, *, name: str, namespace: str, container: str | None, previous: bool, tail_lines: int
    ) -> str:
        core = client.CoreV1Api(self._api)
        options: dict[str, Any] = {
            "previous": previous,
            "tail_lines": tail_lines,
            "limit_bytes": MAX_LOG_BYTES,
        }
        if container:
            options["container"] = container
        what = f"the logs of Pod {namespace}/{name}"
        raw = await self._raw(what, core.read_namespaced_pod_log, name, namespace, **options)
        return raw.decode("utf-8", errors="replace")

    async def list_pods_of_owner(self, *, kind: str, name: str, namespace: str) -> list[reader.JSONObject]:
        owner = await self.get_object(kind=kind, name=name, namespace=namespace)
        uid = owner["metadata"]["uid"]
        selector = label_selector((owner.get("spec") or {}).get("selector"))
        parents = {uid}
        if kind in ("Deployment", "CronJob"):
            middle = "ReplicaSet" if kind == "Deployment" else "Job"
            children = await self._list(middle, namespace, selector)
            parents = {child["metadata"]["uid"] for child in children if _owned_by(child, {uid})}
        pods = await self._list("Pod", namespace, selector)
        return [pod for pod in pods if _owned_by(pod, parents)]

    async def list_objects(
        self, *, kind: str, namespace: str, label_selector: str | None = None
    ) -> list[reader.JSONObject]:
        return await self._list(kind, namespace, label_selector)

    # ---- lists, custom kinds, discovery (the investigation tools) ------------------------------

    async def list_page(
        self,
        *,
        kind: kinds.Kind,
        namespace: str | None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int,
    ) -> reader.Page:
        _not_secrets(kind)
        options: dict[str, Any] = {"limit": max(1, min(limit, MAX_LIST_ITEMS))}
        if label_selector:
            options["label_selector"] = label_selector
        if field_selector:
            options["field_selector"] = field_selector
        what = f"{kind.plural} in {namespace}" if namespace else kind.plural
        try:
            found = await self._json(what, self._lister(kind, namespace), **options)
        except reader.NotFound:  # a collection is never missing: its API is not served
            raise reader.Unavailable(
                f"unknown kind {kind.kind}: this cluster does not serve {kind.plural}.{kind.group or 'core'}"
                f"/{kind.version}",
                status=kube_errors.NOT_FOUND,
            ) from None
        metadata = found.get("metadata") or {}
        remaining = metadata.get("remainingItemCount")
        return reader.Page(
            items=list(found.get("items") or []),
            more=bool(metadata.get("continue")),
            remaining=remaining if isinstance(remaining, int) else None,
        )

    async def read(self, *, kind: kinds.Kind, name: str, namespace: str | None) -> reader.JSONObject:
        _not_secrets(kind)
        what = f"{kind.kind} {namespace}/{name}" if kind.namespaced else f"{kind.kind} {name}"
        return await self._json(what, self._reader_of(kind, namespace), name)

    async def api_groups(self) -> list[reader.ServedGroup]:
        found = await self._json("the API groups", client.ApisApi(self._api).get_api_versions)
        groups = []
        for group in found.get("groups") or ():
            preferred = (group.get("preferredVersion") or {}).get("version")
            if group.get("name") and preferred:
                groups.append(reader.ServedGroup(group=str(group["name"]), version=str(preferred)))
        return groups

    async def group_kinds(self, *, group: str, version: str) -> list[kinds.Kind]:
        custom = client.CustomObjectsApi(self._api)
        found = await self._json(f"the kinds of {group}/{version}", custom.get_api_resources, group, version)
        out = []
        for resource in found.get("resources") or ():
            name, verbs = str(resource.get("name", "")), resource.get("verbs") or ()
            if "/" in name or "list" not in verbs or "get" not in verbs:
                continue  # a subresource, or not readable
            out.append(
                kinds.Kind(
                    kind=str(resource.get("kind")),
                    group=group,
                    version=version,
                    plural=name,
                    namespaced=bool(resource.get("namespaced")),
                    short=tuple(resource.get("shortNames") or ()),
                )
            )
        return out

    def _lister(self, kind: kinds.Kind, namespace: str | None) -> Callable[..., Any]:
        """A callable taking the list options and returning the raw response."""
        if kind.group:
            custom = client.CustomObjectsApi(self._api)
            if kind.namespaced and namespace is not None:
                return lambda **kw: custom.list_namespaced_custom_object(
                    kind.group, kind.version, namespace, kind.plural, **kw
                )
            return lambda **kw: custom.list_cluster_custom_object(kind.group, kind.version, kind.plural, **kw)
        core = client.CoreV1Api(self._api)
        if not kind.namespaced:
            return getattr(core, f"list_{snake(kind.kind)}")  # type: ignore[no-any-return]  # client is untyped
        if namespace is None:
            return getattr(core, f"list_{snake(kind.kind)}_for_all_namespaces")  # type: ignore[no-any-return]
        method = getattr(core, f"list_namespaced_{snake(kind.kind)}")
        return lambda **kw: method(namespace, **kw)

    # ---- plumbing ----------------------------------------------------------------------------

    def _reader_of(self, spec: kinds.Kind, namespace: str | None) -> Callable[..., Any]:
        """A callable taking the object name and returning the raw response."""
        if spec.group not in _APIS:
            custom = client.CustomObjectsApi(self._api)
            if spec.namespaced:
                assert namespace is not None, f"{spec.kind} is namespaced"
                return lambda name, **kw: custom.get_namespaced_custom_object(
                    spec.group, spec.version, namespace, spec.plural, name, **kw
                )
            return lambda name, **kw: custom.get_cluster_custom_object(
                spec.group, spec.version, spec.plural, name, **kw
            )
        api = _APIS[spec.group](self._api)
        if spec.namespaced:
            method = getattr(api, f"read_namespaced_{snake(spec.kind)}")
            return lambda name, **kw: method(name, namespace, **kw)
        return getattr(api, f"read_{snake(spec.kind)}")  # type: ignore[no-any-return]  # client is untyped

    async def _list(self, kind: str, namespace: str, selector: str | None) -> list[reader.JSONObject]:
        spec = _kind(kind)
        method = getattr(_APIS[spec.group](self._api), f"list_namespaced_{snake(kind)}")
        options: dict[str, Any] = {"limit": MAX_LIST_ITEMS}
        if selector:
            options["label_selector"] = selector
        found = await self._json(f"{spec.plural} in {namespace}", method, namespace, **options)
        return list(found.get("items") or [])

    async def _json(
        self, what: str, method: Callable[..., Any], *args: Any, **kwargs: Any
    ) -> reader.JSONObject:
        raw = await self._raw(what, method, *args, **kwargs)
        data = json.loads(raw)
        if not isinstance(data, dict):
            raise errors.ClusterError(f"unexpected answer reading {what}: not a JSON object")
        return data

    async def _raw(self, what: str, method: Callable[..., Any], *args: Any, **kwargs: Any) -> bytes:
        def call() -> bytes:
            try:
                response = method(*args, _preload_content=False, _request_timeout=self._timeout, **kwargs)
                try:
                    return bytes(response.data)
                finally:
                    response.release_conn()
            except (client.ApiException, *kube_errors.UNREACHABLE) as exc:
                raise reader_error(exc, what=what) from exc

        return await asyncio.to_thread(call)


def reader_error(exc: BaseException, *, what: str) -> errors.AIAnalysisError:
    """A failed read, classified by :mod:`kube.errors`, in the reader's terms: a refusal for good is
    ``Unavailable`` (its text is meant for the LLM), anything that may pass ``ClusterError``."""
    found = kube_errors.classify(exc, what=what)
    if isinstance(found, errors.ClusterRejectedError):
        if found.status == kube_errors.NOT_FOUND:
            return reader.NotFound(f"{what} not found", status=found.status)
        if found.status == kube_errors.FORBIDDEN:
            why = found.detail
            return reader.Unavailable(
                f"the operator is not allowed to read {what} (forbidden): {why}", status=found.status
            )
        return reader.Unavailable(f"{what} cannot be read: {found.detail}", status=found.status)
    if found.status is None:
        return errors.ClusterError(f"cannot reach the Kubernetes API reading {what}: {exc}")
    return errors.ClusterError(
        f"the Kubernetes API failed reading {what} (HTTP {found.status}): {found.detail}", status=found.status
    )


def label_selector(selector: dict[str, Any] | None) -> str | None:
    """A LabelSelector object as the ``labelSelector`` query string (None = no narrowing)."""
    if not selector:
        return None
    terms = [f"{key}={value}" for key, value in sorted((selector.get("matchLabels") or {}).items())]
    for expression in selector.get("matchExpressions") or ():
        key, operator, values = (
            expression.get("key"),
            expression.get("operator"),
            expression.get("values") or [],
        )
        if operator == "In":
            terms.append(f"{key} in ({','.join(values)})")
        elif operator == "NotIn":
            terms.append(f"{key} notin ({','.join(values)})")
        elif operator == "Exists":
            terms.append(str(key))
        elif operator == "DoesNotExist":
            terms.append(f"!{key}")
        else:
            return None  # unknown operator: list without narrowing, ownerReferences still decide
    return ",".join(terms) or None


def snake(kind: str) -> str:
    """``StatefulSet`` -> ``stateful_set``: the client's method naming."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", kind).lower()


def _kind(kind: str) -> kinds.Kind:
    spec = kinds.BY_KIND.get(kind)
    if spec is None:
        raise reader.Unavailable(f"kind {kind!r} is not readable")
    return spec


def _not_secrets(kind: kinds.Kind) -> None:
    if not kind.group and kind.plural == "secrets":
        raise reader.Unavailable("Secrets are never read")


def _owned_by(obj: reader.JSONObject, uids: set[str]) -> bool:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    return any(ref.get("uid") in uids for ref in refs)
