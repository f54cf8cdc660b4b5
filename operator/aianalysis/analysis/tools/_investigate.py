"""The investigation tools an SRE reaches for after the single-object reads: ``list_resources``,
``find_resources``, ``rollout_history``, ``list_namespace_events``, ``list_custom_kinds`` and
``top``.

Same rules as ``_cluster_tools``: arguments and the read policy (namespaces, custom groups) are
checked before any read; everything read is redacted, then fenced as untrusted data and capped.
Lists are bounded twice: the API server returns one page of at most ``limit`` objects (we never
follow ``continue``), and the text is capped; a list that was cut says so and how to narrow it.
"""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

from aianalysis import resources
from aianalysis.analysis import redact, scope
from aianalysis.analysis.tools import _args, _columns, _output, _policy, _results, _rollout
from aianalysis.kube import kind_table, readers

EVENT_PAGE = 500
SEARCH_PAGE = 500
METRICS_GROUP = "metrics.k8s.io"
CONTROLLER_REVISION = kind_table.Kind(
    kind="ControllerRevision", group="apps", version="v1", plural="controllerrevisions", namespaced=True
)
NODE_METRICS = kind_table.Kind(
    kind="NodeMetrics", group=METRICS_GROUP, version="v1beta1", plural="nodes", namespaced=False
)
POD_METRICS = kind_table.Kind(
    kind="PodMetrics", group=METRICS_GROUP, version="v1beta1", plural="pods", namespaced=True
)
NO_METRICS = (
    "Resource usage is not available: this cluster does not serve the metrics API (metrics.k8s.io; "
    "metrics-server or a Prometheus adapter is not installed). Use requests/limits from get_resource "
    "or list_pods_of_owner instead"
)

_NOTHING_LISTED = _results.ListResult(items=())


class InvestigationTools:
    def __init__(
        self,
        *,
        reader: readers.ClusterReader,
        policy: _policy.ReadPolicy,
        max_chars: int,
        returned: set[scope.Key],
        reach: _policy.ClusterReach | None = None,
        now: resources.Clock = resources.utcnow,
    ) -> None:
        self._reader = reader
        self._policy = policy
        self._reach = reach or _policy.ClusterReach(policy=policy)
        self._max_chars = max_chars
        self._returned = returned
        self._now = now
        self._groups: list[readers.ServedGroup] | None = None
        self._custom: list[kind_table.Kind] | None = None

    # ---- tools --------------------------------------------------------------------------------

    async def list_resources(self, args: _args.ListArgs) -> _results.ToolResult:
        kind = await self.resolve(args.kind)
        namespace = self._namespace(kind, args.namespace)
        if namespace is None and not kind.namespaced:
            page = await self._concerned_list(
                kind, label_selector=args.label_selector, field_selector=args.field_selector, limit=args.limit
            )
        else:
            page = await self._reader.list_page(
                kind=kind,
                namespace=namespace,
                label_selector=args.label_selector,
                field_selector=args.field_selector,
                limit=args.limit,
            )
            if namespace is None:
                page = self._concerned(kind, page)
        where = f"in namespace {namespace}" if namespace else f"(cluster-scoped{self._only()})"
        filters = _filters(label=args.label_selector, field=args.field_selector)
        if not page.items:
            return _results.ToolResult(
                f"No {kind.plural} {where}{filters}.", data=_results.ListResult(items=())
            )
        return self._table(kind, page, header=f"{kind.kind} objects {where}{filters}", spans=False)

    async def find_resources(self, args: _args.FindArgs) -> _results.ToolResult:
        kind = await self.resolve(args.kind)
        everywhere = not kind.namespaced or self._policy.every_namespace
        namespaces: list[str | None] = [None] if everywhere else [*self._policy.allowed_namespaces()]
        items, more = [], False
        for namespace in namespaces:  # None: one list over the whole cluster
            found = await (
                self._concerned_list(
                    kind,
                    label_selector=args.label_selector,
                    field_selector=args.field_selector,
                    limit=SEARCH_PAGE,
                )
                if not kind.namespaced
                else self._reader.list_page(
                    kind=kind,
                    namespace=namespace,
                    label_selector=args.label_selector,
                    field_selector=args.field_selector,
                    limit=SEARCH_PAGE,
                )
            )
            items.extend(found.items)
            more = more or found.more
        if args.name_contains:
            needle = args.name_contains.lower()
            items = [obj for obj in items if needle in str(_name(obj)).lower()]
        if not kind.namespaced:
            items = [obj for obj in items if self._reach.admits(kind.kind, _name(obj), obj)]
        scope_text = (
            f"cluster-wide{self._only()}"
            if not kind.namespaced
            else "in every namespace"
            if self._policy.every_namespace
            else f"in namespaces {', '.join(self._policy.allowed_namespaces()) or '-'}"
        )
        what = _filters(label=args.label_selector, field=args.field_selector, name=args.name_contains)
        if not items:
            return _results.ToolResult(
                f"No {kind.plural} {scope_text}{what}.", data=_results.ListResult(items=())
            )
        shown = items[: args.limit]
        page = readers.Page(items=shown, more=more or len(items) > len(shown))
        return self._table(
            kind, page, header=f"{kind.kind} objects {scope_text}{what}", spans=kind.namespaced
        )

    async def rollout_history(self, args: _args.RolloutArgs) -> str:
        namespace = self._required_namespace(args.namespace)
        owner = await self._reader.get_object(kind=args.kind, name=args.name, namespace=namespace)
        child = kind_table.BY_KIND["ReplicaSet"] if args.kind == "Deployment" else CONTROLLER_REVISION
        selector = _match_labels((owner.get("spec") or {}).get("selector"))
        page = await self._reader.list_page(
            kind=child, namespace=namespace, label_selector=selector, limit=SEARCH_PAGE
        )
        owned = [redact.redact_object(obj) for obj in page.items if _owned_by(obj, owner)]
        self._returned.add((args.kind.casefold(), namespace, args.name))
        lines, changes = _rollout.history(args.kind, owned, now=self._now())
        state = _rollout_state(owner)
        header = f"Rollout history of {args.kind} {namespace}/{args.name} ({state}), newest first:"
        if not lines:
            return header + " no revisions found (no ReplicaSets or ControllerRevisions owned by it)."
        body = lines + (
            ["", "pod template changes, previous -> newest revision:", *(changes or ["(none)"])]
            if len(lines) > 1
            else []
        )
        return _output.fenced(
            header, "\n".join(body), label=f"rollout:{args.kind}/{args.name}", max_chars=self._max_chars
        )

    async def list_namespace_events(self, args: _args.NamespaceEventsArgs) -> str:
        namespace = self._required_namespace(args.namespace)
        terms = [
            f"type={args.type}" if args.type else "",
            f"reason={args.reason}" if args.reason else "",
            f"involvedObject.kind={args.involved_kind}" if args.involved_kind else "",
        ]
        selector = ",".join(t for t in terms if t) or None
        page = await self._reader.list_page(
            kind=kind_table.BY_KIND["Event"], namespace=namespace, field_selector=selector, limit=EVENT_PAGE
        )
        filters = f" ({selector})" if selector else ""
        if not page.items:
            return f"No events in namespace {namespace}{filters} (events expire, by default after one hour)."
        groups = _dedup(page.items)
        now = self._now()
        lines = [_event_line(group, now) for group in groups[: args.limit]]
        cut = len(groups) - len(lines)
        header = (
            f"{len(groups)} distinct event(s) ({len(page.items)} in all) in namespace {namespace}{filters}, "
            f"newest first, repeats merged"
        )
        if cut or page.more:
            _output.note_truncated()
            header += f"; {cut or 'more'} not shown: filter by type, reason or involved_kind"
        return _output.fenced(
            header + ":", "\n".join(lines), label=f"events:{namespace}", max_chars=self._max_chars
        )

    async def list_custom_kinds(self, args: _args.CustomKindsArgs) -> str:
        kinds = await self._custom_kinds()
        allowed = ", ".join(self._policy.custom_groups) or "none"
        if not kinds:
            return f"This cluster serves no custom kinds in the allowed API groups ({allowed})."
        lines = [
            f"{k.kind} ({k.api_version}, {'namespaced' if k.namespaced else 'cluster-scoped'})" for k in kinds
        ]
        header = (
            f"{len(kinds)} custom kind(s) served in the allowed API groups ({allowed}); read them with "
            "get_resource or list_resources (kind as shown, or kind.group):"
        )
        return _output.fenced(header, "\n".join(lines), label="custom-kinds", max_chars=self._max_chars)

    async def top(self, args: _args.TopArgs) -> _results.ToolResult:
        if not any(g.group == METRICS_GROUP for g in await self._served_groups()):
            raise readers.Unavailable(NO_METRICS)
        if args.resource == "nodes":
            usage = await self._reader.list_page(kind=NODE_METRICS, namespace=None, limit=SEARCH_PAGE)
            objects = await self._reader.list_page(
                kind=kind_table.BY_KIND["Node"], namespace=None, limit=SEARCH_PAGE
            )
            usage = self._concerned(kind_table.BY_KIND["Node"], usage)
            objects = self._concerned(kind_table.BY_KIND["Node"], objects)
            where = f"Nodes{self._only()}"
        else:
            namespace = self._required_namespace(args.namespace)
            usage = await self._reader.list_page(kind=POD_METRICS, namespace=namespace, limit=SEARCH_PAGE)
            objects = await self._reader.list_page(
                kind=kind_table.BY_KIND["Pod"], namespace=namespace, limit=SEARCH_PAGE
            )
            where = f"Pods in namespace {namespace}"
        rows = _columns.usage_rows(args.resource, usage.items, objects.items, sort_by=args.sort_by)
        if not rows:
            text = f"The metrics API has no usage for {where} yet (it reports after about a minute)."
            return _results.ToolResult(text, data=_results.UsageResult(rows=()))
        shown = rows[: args.limit]
        header = f"Resource usage of {where} (metrics API), highest {args.sort_by} first"
        if len(rows) > len(shown) or usage.more:
            _output.note_truncated()
            header += f"; {len(rows) - len(shown)} more not shown"
        lines = [
            _columns.USAGE_HEADERS[args.resource],
            *(_columns.usage_line(args.resource, r) for r in shown),
        ]
        text = _output.fenced(
            header + ":", "\n".join(lines), label=f"top:{args.resource}", max_chars=self._max_chars
        )
        return _results.ToolResult(text, data=_results.UsageResult(rows=tuple(shown)))

    # ---- kinds --------------------------------------------------------------------------------

    async def resolve(self, text: str) -> kind_table.Kind:
        """A built-in kind from the fixed table, else a custom kind served in an allowed group."""
        refusal = kind_table.why_refused(text)
        if refusal:
            raise _args.Refused(refusal)
        kind = kind_table.lookup(text)
        if kind is not None:
            return kind
        wanted = text.strip().lower()
        for custom in await self._custom_kinds():
            names = {
                custom.kind.lower(),
                custom.plural,
                f"{custom.plural}.{custom.group}",
                f"{custom.kind.lower()}.{custom.group}",
            }
            if wanted in names or wanted.split("/")[-1] in names:
                return custom
        if _policy.SECRET_KIND.search(text):
            raise _args.Refused(f"kind {text!r} may hold secrets: it is never read")
        raise _args.Refused(
            f"unknown kind {text!r}: neither a built-in kind ({', '.join(kind_table.names())}) nor a "
            "custom kind this cluster serves in the allowed API groups (list_custom_kinds shows those)"
        )

    async def _served_groups(self) -> list[readers.ServedGroup]:
        if self._groups is None:
            self._groups = await self._reader.api_groups()
        return self._groups

    async def _custom_kinds(self) -> list[kind_table.Kind]:
        if self._custom is None:
            found: list[kind_table.Kind] = []
            for served in await self._served_groups():
                if self._policy.group_allowed(served.group):
                    kinds = await self._reader.group_kinds(group=served.group, version=served.version)
                    found.extend(k for k in kinds if not _policy.SECRET_KIND.search(k.kind))
            self._custom = sorted(found, key=lambda k: (k.group, k.kind))
        return self._custom

    # ---- plumbing -----------------------------------------------------------------------------

    async def _concerned_list(
        self, kind: kind_table.Kind, *, label_selector: str | None, field_selector: str | None, limit: int
    ) -> readers.Page:
        """The cluster-scoped objects of ``kind`` the incident concerns, with the caller's selectors:
        by name when the names are known in advance (``ClusterReach.candidates``), else one page of
        the cluster filtered."""
        names = self._reach.candidates(kind.kind)
        if names is None:
            page = await self._reader.list_page(
                kind=kind, namespace=None, label_selector=label_selector, field_selector=field_selector,
                limit=limit,
            )  # fmt: skip
            return self._concerned(kind, page)
        items: list[dict[str, Any]] = []
        for name in names[:limit]:
            one = await self._reader.list_page(
                kind=kind,
                namespace=None,
                label_selector=label_selector,
                field_selector=",".join(filter(None, (f"metadata.name={name}", field_selector))),
                limit=1,
            )
            items.extend(one.items)
        return self._concerned(kind, readers.Page(items=items, more=len(names) > limit))

    def _concerned(self, kind: kind_table.Kind, page: readers.Page) -> readers.Page:
        """Only the cluster-scoped objects the incident concerns (``_policy.ClusterReach``)."""
        kept = [obj for obj in page.items if self._reach.admits(kind.kind, _name(obj), obj)]
        return dataclasses.replace(page, items=kept, remaining=None)  # others' count is theirs

    def _only(self) -> str:
        return "" if self._policy.every_namespace else ", only those this incident concerns"

    def _table(
        self, kind: kind_table.Kind, page: readers.Page, *, header: str, spans: bool
    ) -> _results.ToolResult:
        custom = kind_table.BY_KIND.get(kind.kind) is not kind
        clean = [(redact.redact_custom if custom else redact.redact_object)(obj) for obj in page.items]
        for obj in clean:
            namespace = str((obj.get("metadata") or {}).get("namespace") or "")
            self._returned.add((kind.kind.casefold(), namespace, _name(obj)))
            if not namespace or namespace == self._policy.incident_namespace:
                self._reach.note(obj)
        lines = _columns.table(kind.kind, clean, now=self._now(), namespaced_rows=spans)
        header += f": {len(clean)} shown"
        if page.more:
            _output.note_truncated()
            remaining = f"{page.remaining} " if page.remaining else ""
            header += (
                f", {remaining}more not shown: narrow with label_selector or field_selector "
                f"(or raise limit, at most {_args.MAX_LIST_ROWS})"
            )
        text = _output.fenced(
            header + ":", "\n".join(lines), label=f"list:{kind.kind}", max_chars=self._max_chars
        )
        return _results.ToolResult(text, data=_results.ListResult(items=tuple(clean)))

    def _namespace(self, kind: kind_table.Kind, given: str | None) -> str | None:
        return self._required_namespace(given) if kind.namespaced else None

    def _required_namespace(self, given: str | None) -> str:
        namespace = given or self._policy.incident_namespace
        if not namespace:
            raise _args.Refused("pass a namespace (the incident names none)")
        try:
            self._policy.check_namespace(namespace)
        except _policy.Denied as exc:
            raise _args.Refused(str(exc)) from None
        return namespace


def _name(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _filters(*, label: str | None = None, field: str | None = None, name: str | None = None) -> str:
    parts = [
        f"label_selector {label}" if label else "",
        f"field_selector {field}" if field else "",
        f"name containing {name!r}" if name else "",
    ]
    text = ", ".join(p for p in parts if p)
    return f" ({text})" if text else ""


def _match_labels(selector: Any) -> str | None:
    labels = (selector or {}).get("matchLabels") if isinstance(selector, dict) else None
    if not isinstance(labels, dict) or not labels:
        return None
    return ",".join(f"{key}={value}" for key, value in sorted(labels.items()))


def _owned_by(obj: dict[str, Any], owner: dict[str, Any]) -> bool:
    """By uid when both sides have one (as the API server does), else by kind and name."""
    uid = (owner.get("metadata") or {}).get("uid")
    name = (owner.get("metadata") or {}).get("name")
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if uid and ref.get("uid"):
            if ref["uid"] == uid:
                return True
        elif ref.get("kind") == owner.get("kind") and ref.get("name") == name:
            return True
    return False


def _rollout_state(owner: dict[str, Any]) -> str:
    metadata, status = owner.get("metadata") or {}, owner.get("status") or {}
    parts = [
        f"generation {metadata.get('generation', '?')}, observed {status.get('observedGeneration', '?')}"
    ]
    for condition in status.get("conditions") or ():
        if condition.get("type") in ("Progressing", "Available"):
            reason = f" ({condition['reason']})" if condition.get("reason") else ""
            parts.append(f"{condition.get('type')}={condition.get('status')}{reason}")
    return ", ".join(parts)


def _dedup(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events merged by (type, reason, object, message): counts summed, newest time kept; newest first."""
    merged: dict[tuple[str, ...], dict[str, Any]] = {}
    for event in events:
        involved = event.get("involvedObject") or {}
        message = " ".join(str(event.get("message") or "").split())
        key = (
            str(event.get("type")),
            str(event.get("reason")),
            f"{involved.get('kind')}/{involved.get('name')}",
            message,
        )
        count = int(event.get("count") or (event.get("series") or {}).get("count") or 1)
        seen = merged.get(key)
        when = _columns.event_time(event)
        if seen is None:
            merged[key] = {"key": key, "count": count, "last": when}
        else:
            seen["count"] += count
            seen["last"] = max(seen["last"], when)
    return sorted(merged.values(), key=lambda group: group["last"], reverse=True)


def _event_line(group: dict[str, Any], now: datetime.datetime) -> str:
    kind, reason, involved, message = group["key"]
    return (
        f"{_columns.age(group['last'], now)} ago {kind} {reason} {involved} (x{group['count']}): "
        f"{redact.redact_text(message)[:300]}"
    )
