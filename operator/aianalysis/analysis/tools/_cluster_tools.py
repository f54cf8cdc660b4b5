"""The read-only investigation tools: ``get_resource``, ``list_events``, ``get_pod_logs``,
``list_pods_of_owner``.

Everything read from the cluster is redacted (``_redact``), then fenced as untrusted data and
capped at ``max_chars``. Arguments are checked before any read: Secrets and RemediationWorkflows
are refused, a missing namespace defaults to the incident's, and a namespace outside the read
policy (``_policy``) is refused.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aianalysis import resources
from aianalysis.analysis import prompts, redact, scope
from aianalysis.analysis.tools import _args, _columns, _output, _policy, _results
from aianalysis.kube import kind_table, readers

_BUILTIN_GROUPS = frozenset({"", "apps", "batch", "autoscaling", "policy"})
NO_CLUSTER = "no cluster is attached; base your analysis on the incident facts"
MAX_EVENTS = 60


def references(obj: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every ``{kind, name}`` reference in an object's spec (``issuerRef``, ``roleRef``,
    ``scaleTargetRef``, ``targetRef``...), bounded in the nodes visited."""
    return list(_policy.named_references(obj, fields={}))


class ClusterTools:
    def __init__(
        self,
        *,
        reader: readers.ClusterReader,
        incident: resources.ResourceRef,
        max_chars: int,
        returned: set[scope.Key] | None = None,
        policy: _policy.ReadPolicy | None = None,
        reach: _policy.ClusterReach | None = None,
        resolve: Callable[[str], Awaitable[kind_table.Kind]] | None = None,
    ) -> None:
        self._reader = reader
        self._incident = incident
        self._max_chars = max_chars
        self._returned = returned if returned is not None else set()
        self._home = incident.name if incident.kind == "Namespace" else incident.namespace
        self._policy = policy or _policy.ReadPolicy(incident_namespace=self._home, namespaces=("*",))
        self._reach = reach or _policy.ClusterReach(policy=self._policy)
        self._resolve = resolve
        """Resolves kinds beyond the fixed table (custom kinds from discovery); None: table only."""

    async def get_resource(self, args: _args.ResourceArgs) -> _results.ToolResult:
        kind = await self._kind(args.kind)
        namespace = self._namespace(kind, args.namespace)
        if namespace is None and kind.kind != "VolumeAttachment":  # admitted by its volume, once read
            self._admit(kind.kind, args.name)
        if kind_table.BY_KIND.get(kind.kind) is kind:
            raw = await self._reader.get_object(kind=kind.kind, name=args.name, namespace=namespace)
            # Kinds of the Kubernetes API have a schema we know; any other group's (cert-manager,
            # Argo CD...) may hold credentials under any key, so they get the custom-kind redaction.
            builtin = kind.group in _BUILTIN_GROUPS or kind.group.endswith(".k8s.io")
            obj = redact.redact_object(raw) if builtin else redact.redact_custom(raw)
        else:
            obj = redact.redact_custom(
                await self._reader.read(kind=kind, name=args.name, namespace=namespace)
            )
        if namespace is None:
            self._admit(kind.kind, args.name, obj)
        self._returned.add((kind.kind.casefold(), namespace or "", args.name))
        if namespace is not None and namespace == self._home:
            self._returned.update(scope.reference_key(k, n) for k, n in references(obj))
        if namespace is None or namespace == self._home:
            self._reach.note(obj)
        shown = _output.status_first(_output.compact(obj))
        header = (
            f"{kind.kind} {_where(args.name, namespace)} (status first; {_output.COMPACT_NOTE}; "
            f"secret-looking values {redact.REDACTED}):"
        )
        text = _output.fenced(
            header, _output.to_yaml(shown), label=f"{kind.kind}/{args.name}", max_chars=self._max_chars
        )
        return _results.ToolResult(text, data=_results.ObjectResult(body=shown))

    async def list_events(self, args: _args.EventsArgs) -> _results.ToolResult:
        kind = await self._kind(args.kind)
        namespace = self._namespace(kind, args.namespace)
        if namespace is None:
            self._admit(kind.kind, args.name)
        events = await self._reader.list_events(kind=kind.kind, name=args.name, namespace=namespace)
        where = f"{kind.kind} {_where(args.name, namespace)}"
        if not events:
            text = f"No events about {where} (events expire, by default after one hour)."
            return _results.ToolResult(text, data=_results.EventsResult(events=()))
        rows = tuple(_event_row(event) for event in sorted(events, key=_columns.event_time))[-MAX_EVENTS:]
        header = f"{len(events)} event(s) about {where}, oldest first (the most recent {len(rows)} shown):"
        text = _output.fenced(
            header,
            "\n".join(map(_event_line, rows)),
            label=f"events:{kind.kind}/{args.name}",
            max_chars=self._max_chars,
            keep="tail",
        )
        return _results.ToolResult(text, data=_results.EventsResult(events=rows))

    async def get_pod_logs(self, args: _args.LogsArgs) -> _results.ToolResult:
        namespace = self._required_namespace("Pod", args.namespace)
        text = await self._reader.pod_logs(
            name=args.name,
            namespace=namespace,
            container=args.container,
            previous=args.previous,
            tail_lines=args.tail_lines,
        )
        container = f"container {args.container}" if args.container else "the container"
        run = "previous (terminated) run" if args.previous else "current run"
        header = f"Last {args.tail_lines} log lines of {container} of Pod {namespace}/{args.name}, {run}:"
        if not text.strip():
            empty = header + await self._why_no_logs(args.name, namespace)
            return _results.ToolResult(empty, data=_results.LogsResult(lines=()))
        redacted = redact.redact_text(text).rstrip("\n")
        shown = _output.fenced(
            header, redacted, label=f"logs:{args.name}", max_chars=self._max_chars, keep="tail"
        )
        # The lines as the fence shows them: control and invisible characters dropped.
        lines = tuple(prompts.sanitize(redacted).split("\n"))
        return _results.ToolResult(shown, data=_results.LogsResult(lines=lines))

    async def list_pods_of_owner(self, args: _args.OwnerArgs) -> _results.ToolResult:
        kind = _kind(args.kind)
        if kind.kind not in kind_table.OWNER_KINDS:
            raise _args.Refused(
                f"list_pods_of_owner works for {', '.join(kind_table.OWNER_KINDS)}, not {kind.kind}"
            )
        namespace = self._required_namespace(kind.kind, args.namespace)
        pods = await self._reader.list_pods_of_owner(kind=kind.kind, name=args.name, namespace=namespace)
        self._returned.add((kind.kind.casefold(), namespace, args.name))
        self._returned.update(("pod", namespace, _pod_name(pod)) for pod in pods)
        if namespace == self._home:
            for pod in pods:
                self._reach.note(pod)
        where = f"{kind.kind} {namespace}/{args.name}"
        if not pods:
            return _results.ToolResult(
                f"{where} controls no Pods right now.", data=_results.PodsResult(pods=())
            )
        redacted = tuple(redact.redact_object(pod) for pod in sorted(pods, key=_pod_name))
        header = f"{len(pods)} Pod(s) of {where} (use get_resource/get_pod_logs for details):"
        text = _output.fenced(
            header,
            _output.to_yaml([_pod_summary(pod) for pod in redacted]),
            label=f"pods:{kind.kind}/{args.name}",
            max_chars=self._max_chars,
        )
        return _results.ToolResult(text, data=_results.PodsResult(pods=redacted))

    async def _why_no_logs(self, name: str, namespace: str) -> str:
        """Empty logs are ambiguous (the API server answers an unscheduled Pod's log request with an
        empty body): say which case it is, so the LLM does not read silence as health."""
        pod = await self._reader.get_object(kind="Pod", name=name, namespace=namespace)
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        if not spec.get("nodeName"):
            raise readers.Unavailable(
                f"Pod {namespace}/{name} has no logs: it is not scheduled to a node (phase "
                f"{status.get('phase') or 'unknown'}). Its events and conditions say why."
            )
        return " (empty: the container has not written anything to this log)"

    def _admit(self, kind: str, name: str, obj: Mapping[str, Any] | None = None) -> None:
        """Refuse a cluster-scoped object the incident does not concern (``_policy.ClusterReach``)."""
        try:
            self._reach.check(kind, name, obj)
        except _policy.Denied as exc:
            raise _args.Refused(str(exc)) from None

    def _namespace(self, kind: kind_table.Kind, given: str | None) -> str | None:
        """None for cluster-scoped kinds (a namespace the LLM passed is ignored), else the given one
        or the incident's."""
        return self._required_namespace(kind.kind, given) if kind.namespaced else None

    def _required_namespace(self, kind: str, given: str | None) -> str:
        namespace = given or self._home
        if not namespace:
            raise _args.Refused(f"{kind} is namespaced: pass a namespace (the incident names none)")
        try:
            self._policy.check_namespace(namespace)
        except _policy.Denied as exc:
            raise _args.Refused(str(exc)) from None
        return namespace

    async def _kind(self, text: str) -> kind_table.Kind:
        return await self._resolve(text) if self._resolve is not None else _kind(text)


def _kind(text: str) -> kind_table.Kind:
    refusal = kind_table.why_refused(text)
    if refusal:
        raise _args.Refused(refusal)
    kind = kind_table.lookup(text)
    if kind is None:
        raise _args.Refused(f"unsupported kind {text!r}; supported: {', '.join(kind_table.names())}")
    return kind


def _where(name: str, namespace: str | None) -> str:
    return f"{namespace}/{name}" if namespace else name


def _event_row(event: dict[str, Any]) -> _results.EventRow:
    count = event.get("count") or (event.get("series") or {}).get("count") or 1
    source = (event.get("source") or {}).get("component") or event.get("reportingComponent") or "?"
    message = " ".join(str(event.get("message") or "").split())
    return _results.EventRow(
        time=_columns.event_time(event) or "?",
        type=str(event.get("type") or "?"),
        reason=str(event.get("reason") or "?"),
        count=_count(count),
        source=str(source),
        message=prompts.sanitize(redact.redact_text(message)),
    )


def _count(value: object) -> int:
    """An Event's ``count``: an integer from the API server (a hand-written one may be text)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value).strip()
    return int(text) if text.isdigit() else 1


def _event_line(row: _results.EventRow) -> str:
    return f"{row.time} {row.type} {row.reason} (x{row.count}, {row.source}): {row.message}"


def _pod_name(pod: dict[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("name", ""))


def _pod_summary(pod: dict[str, Any]) -> dict[str, Any]:
    metadata, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    owners = [f"{ref.get('kind')}/{ref.get('name')}" for ref in metadata.get("ownerReferences") or ()]
    summary: dict[str, Any] = {"name": metadata.get("name"), "owner": ", ".join(owners) or None}
    summary.update(
        phase=status.get("phase"),
        reason=status.get("reason"),
        message=status.get("message"),
        node=spec.get("nodeName"),
        started=status.get("startTime"),
        conditions=[_condition(c) for c in status.get("conditions") or () if c.get("status") != "True"]
        or None,
        containers=_containers(spec, status),
    )
    return {key: value for key, value in summary.items() if value is not None}


def _condition(condition: dict[str, Any]) -> str:
    reason = f" ({condition['reason']})" if condition.get("reason") else ""
    return f"{condition.get('type')}={condition.get('status')}{reason}"


def _containers(spec: dict[str, Any], status: dict[str, Any]) -> list[dict[str, Any]]:
    statuses = {s.get("name"): s for s in status.get("containerStatuses") or ()}
    out = []
    for container in spec.get("containers") or ():
        state = statuses.get(container.get("name"), {})
        entry: dict[str, Any] = {
            "name": container.get("name"),
            "image": container.get("image"),
            "ready": state.get("ready"),
            "restartCount": state.get("restartCount"),
            "state": _state(state.get("state")),
            "lastState": _state(state.get("lastState")),
            "resources": container.get("resources") or None,
        }
        out.append({key: value for key, value in entry.items() if value is not None})
    return out


def _state(state: dict[str, Any] | None) -> str | None:
    for name, detail in (state or {}).items():
        if not isinstance(detail, dict):
            continue
        parts = [detail.get("reason")]
        if "exitCode" in detail:
            parts.append(f"exit {detail['exitCode']}")
        if detail.get("finishedAt"):
            parts.append(f"at {detail['finishedAt']}")
        described = ", ".join(str(p) for p in parts if p)
        return f"{name} ({described})" if described else name
    return None
