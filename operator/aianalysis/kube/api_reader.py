"""``KubernetesReader``: the ``ClusterReader`` over the API server (:mod:`aianalysis.kube.rest`).

- Calls are blocking, so each runs in a thread (``asyncio.to_thread``) with a request timeout.
- Objects are fetched as plain REST calls (:mod:`aianalysis.kube.rest`, never the client's typed
  API classes, which cost ~90 MiB to import): we get the API server's JSON exactly (no
  ``None``-filled model dumps, no lost unknown fields), and the same code works across client
  versions. Kinds come from the tool box's fixed table or, for
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
from typing import Any

from aianalysis import errors
from aianalysis.kube import calls, kind_table, readers, rest

MAX_LIST_ITEMS = 500
MAX_LOG_BYTES = 512_000
_KUBELET_NOTICE = re.compile(r"unable to retrieve container logs for [a-z0-9]+://[0-9a-f]+")


def kubelet_notice(text: str) -> bool:
    """Whether a log request's answer is the kubelet saying it has no log, not the process' output:
    when the container of the requested run was removed (a crash loop's previous run while the
    last one shows ``terminated``), the API server answers 200 with ``unable to retrieve container
    logs for containerd://<id>`` as the body."""
    return _KUBELET_NOTICE.fullmatch(text.strip()) is not None


class KubernetesReader:
    def __init__(self, api: rest.ApiClient, *, timeout_seconds: float = 15.0) -> None:
        self._api = api
        self._timeout = timeout_seconds

    async def get_object(self, *, kind: str, name: str, namespace: str | None) -> readers.JSONObject:
        spec = _kind(kind)
        what = f"{kind} {namespace}/{name}" if spec.namespaced else f"{kind} {name}"
        return await self._json(what, _object_path(spec, name, namespace))

    async def list_events(self, *, kind: str, name: str, namespace: str | None) -> list[readers.JSONObject]:
        selector = f"involvedObject.kind={kind},involvedObject.name={name}"
        if namespace:
            selector += f",involvedObject.namespace={namespace}"
        found = await self._json(
            f"events in {namespace}" if namespace else "events",
            _collection_path(_EVENTS, namespace or None),
            {"fieldSelector": selector, "limit": MAX_LIST_ITEMS},
        )
        return list(found.get("items") or [])

    async def pod_logs(
        self, *, name: str, namespace: str, container: str | None, previous: bool, tail_lines: int
    ) -> str:
        options: dict[str, Any] = {
            "previous": previous,
            "tailLines": tail_lines,
            "limitBytes": MAX_LOG_BYTES,
            "container": container or None,
        }
        what = f"the logs of Pod {namespace}/{name}"
        raw = await self._raw(what, _object_path(_POD, name, namespace) + "/log", options)
        text = raw.decode("utf-8", errors="replace")
        if kubelet_notice(text):
            run = "the previous run" if previous else "this run"
            raise readers.Unavailable(
                f"{what}: the log of {run} is gone (the kubelet answered {text.strip()!r} instead of a log: "
                "the container was removed)" + (", read the current run's instead" if previous else "")
            )
        return text

    async def list_pods_of_owner(self, *, kind: str, name: str, namespace: str) -> list[readers.JSONObject]:
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
    ) -> list[readers.JSONObject]:
        return await self._list(kind, namespace, label_selector)

    # ---- lists, custom kinds, discovery (the investigation tools) ------------------------------

    async def list_page(
        self,
        *,
        kind: kind_table.Kind,
        namespace: str | None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int,
    ) -> readers.Page:
        _not_secrets(kind)
        options: dict[str, Any] = {
            "limit": max(1, min(limit, MAX_LIST_ITEMS)),
            "labelSelector": label_selector or None,
            "fieldSelector": field_selector or None,
        }
        what = f"{kind.plural} in {namespace}" if namespace else kind.plural
        try:
            found = await self._json(what, _collection_path(kind, namespace), options)
        except readers.NotFound:  # a collection is never missing: its API is not served
            raise readers.Unavailable(
                f"unknown kind {kind.kind}: this cluster does not serve {kind.plural}.{kind.group or 'core'}"
                f"/{kind.version}",
                status=calls.NOT_FOUND,
            ) from None
        metadata = found.get("metadata") or {}
        remaining = metadata.get("remainingItemCount")
        return readers.Page(
            items=list(found.get("items") or []),
            more=bool(metadata.get("continue")),
            remaining=remaining if isinstance(remaining, int) else None,
        )

    async def read(self, *, kind: kind_table.Kind, name: str, namespace: str | None) -> readers.JSONObject:
        _not_secrets(kind)
        what = f"{kind.kind} {namespace}/{name}" if kind.namespaced else f"{kind.kind} {name}"
        return await self._json(what, _object_path(kind, name, namespace))

    async def api_groups(self) -> list[readers.ServedGroup]:
        found = await self._json("the API groups", "/apis")
        groups = []
        for group in found.get("groups") or ():
            preferred = (group.get("preferredVersion") or {}).get("version")
            if group.get("name") and preferred:
                groups.append(readers.ServedGroup(group=str(group["name"]), version=str(preferred)))
        return groups

    async def group_kinds(self, *, group: str, version: str) -> list[kind_table.Kind]:
        found = await self._json(f"the kinds of {group}/{version}", rest.path("apis", group, version))
        out = []
        for resource in found.get("resources") or ():
            name, verbs = str(resource.get("name", "")), resource.get("verbs") or ()
            if "/" in name or "list" not in verbs or "get" not in verbs:
                continue  # a subresource, or not readable
            out.append(
                kind_table.Kind(
                    kind=str(resource.get("kind")),
                    group=group,
                    version=version,
                    plural=name,
                    namespaced=bool(resource.get("namespaced")),
                    short=tuple(resource.get("shortNames") or ()),
                )
            )
        return out

    # ---- plumbing ----------------------------------------------------------------------------

    async def _list(self, kind: str, namespace: str, selector: str | None) -> list[readers.JSONObject]:
        spec = _kind(kind)
        options: dict[str, Any] = {"limit": MAX_LIST_ITEMS, "labelSelector": selector or None}
        found = await self._json(f"{spec.plural} in {namespace}", _collection_path(spec, namespace), options)
        return list(found.get("items") or [])

    async def _json(self, what: str, url_path: str, query: rest.Query | None = None) -> readers.JSONObject:
        raw = await self._raw(what, url_path, query)
        data = json.loads(raw)
        if not isinstance(data, dict):
            raise errors.ClusterError(f"unexpected answer reading {what}: not a JSON object")
        return data

    async def _raw(self, what: str, url_path: str, query: rest.Query | None = None) -> bytes:
        def call() -> bytes:
            try:
                return rest.get_bytes(self._api, url_path, query=query, timeout=self._timeout)
            except (rest.ApiError, *calls.UNREACHABLE) as exc:
                raise reader_error(exc, what=what) from exc

        return await asyncio.to_thread(call)


def reader_error(exc: BaseException, *, what: str) -> errors.AIAnalysisError:
    """A failed read, classified by :mod:`kube.calls`, in the reader's terms: a refusal for good is
    ``Unavailable`` (its text is meant for the LLM), anything that may pass ``ClusterError``."""
    found = calls.classify(exc, what=what)
    if isinstance(found, errors.ClusterRejectedError):
        if found.status == calls.NOT_FOUND:
            return readers.NotFound(f"{what} not found", status=found.status)
        if found.status == calls.FORBIDDEN:
            why = found.detail
            return readers.Unavailable(
                f"the operator is not allowed to read {what} (forbidden): {why}", status=found.status
            )
        return readers.Unavailable(f"{what} cannot be read: {found.detail}", status=found.status)
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


_POD = kind_table.BY_KIND["Pod"]
_EVENTS = kind_table.Kind(kind="Event", group="", version="v1", plural="events", namespaced=True)


def _collection_path(kind: kind_table.Kind, namespace: str | None) -> str:
    """The kind's collection: of one namespace, else of all (cluster-scoped kinds: the only one)."""
    base = ("apis", kind.group, kind.version) if kind.group else ("api", kind.version)
    if kind.namespaced and namespace is not None:
        return rest.path(*base, "namespaces", namespace, kind.plural)
    return rest.path(*base, kind.plural)


def _object_path(kind: kind_table.Kind, name: str, namespace: str | None) -> str:
    if kind.namespaced and namespace is None:
        raise readers.Unavailable(f"{kind.kind} {name}: a namespaced kind needs a namespace")
    return _collection_path(kind, namespace) + rest.path(name)


def _kind(kind: str) -> kind_table.Kind:
    spec = kind_table.BY_KIND.get(kind)
    if spec is None:
        raise readers.Unavailable(f"kind {kind!r} is not readable")
    return spec


def _not_secrets(kind: kind_table.Kind) -> None:
    if not kind.group and kind.plural == "secrets":
        raise readers.Unavailable("Secrets are never read")


def _owned_by(obj: readers.JSONObject, uids: set[str]) -> bool:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    return any(ref.get("uid") in uids for ref in refs)
