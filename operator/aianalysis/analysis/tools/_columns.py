"""One line per object, like ``kubectl get``: the columns an SRE scans first, per kind.

Pure: objects (already redacted) and ``now`` in, rows out. Kinds without a column set of their
own (custom resources) show their ``Ready``-like condition, or ``status.phase``/``status.health``
when they have one, and their age.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from aianalysis.analysis.tools import _results

Obj = Mapping[str, Any]
Row = list[str]


def age(timestamp: object, now: datetime.datetime) -> str:
    """``kubectl``'s compact age: 45s, 12m, 5h, 3d (``?`` when unknown)."""
    if not isinstance(timestamp, str) or not timestamp:
        return "?"
    try:
        then = datetime.datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return "?"
    seconds = int((now - then).total_seconds())
    for unit, size in (("d", 86_400), ("h", 3600), ("m", 60)):
        if seconds >= 2 * size or (unit == "m" and seconds >= size):
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"


def _meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def _spec(obj: Obj) -> Obj:
    return obj.get("spec") or {}


def _status(obj: Obj) -> Obj:
    return obj.get("status") or {}


def _images(template_spec: Obj) -> str:
    return ",".join(str(c.get("image", "?")) for c in template_spec.get("containers") or ()) or "-"


def _pod(obj: Obj, now: datetime.datetime) -> Row:
    status = _status(obj)
    statuses = list(status.get("containerStatuses") or ())
    ready = sum(1 for s in statuses if s.get("ready"))
    total = len(_spec(obj).get("containers") or ()) or len(statuses)
    restarts = sum(int(s.get("restartCount") or 0) for s in statuses)
    last = _last_termination(statuses)
    return [
        f"{ready}/{total}",
        _pod_state(obj),
        f"{restarts}{f' ({last})' if last else ''}",
        str(_spec(obj).get("nodeName") or "<none>"),
        age(_meta(obj).get("creationTimestamp"), now),
    ]


def _pod_state(obj: Obj) -> str:
    """What ``kubectl get pods`` shows in STATUS: a waiting/terminated reason beats the phase."""
    status = _status(obj)
    if _meta(obj).get("deletionTimestamp"):
        return "Terminating"
    for key in ("initContainerStatuses", "containerStatuses"):
        for container in status.get(key) or ():
            state = container.get("state") or {}
            for name in ("waiting", "terminated"):
                reason = (state.get(name) or {}).get("reason")
                if reason and reason != "Completed":
                    return f"Init:{reason}" if key.startswith("init") else str(reason)
    for condition in status.get("conditions") or ():
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return f"Pending ({condition.get('reason') or 'unschedulable'})"
    return str(status.get("reason") or status.get("phase") or "Unknown")


def _last_termination(statuses: list[Any]) -> str:
    for container in statuses:
        last = (container.get("lastState") or {}).get("terminated") or {}
        if last:
            return f"last {last.get('reason') or 'terminated'}, exit {last.get('exitCode', '?')}"
    return ""


def _deployment(obj: Obj, now: datetime.datetime) -> Row:
    spec, status = _spec(obj), _status(obj)
    template = (spec.get("template") or {}).get("spec") or {}
    return [
        f"{status.get('readyReplicas') or 0}/{spec.get('replicas', 1)}",
        str(status.get("updatedReplicas") or 0),
        str(status.get("availableReplicas") or 0),
        _false_conditions(status) or "-",
        _images(template),
        age(_meta(obj).get("creationTimestamp"), now),
    ]


def _statefulset(obj: Obj, now: datetime.datetime) -> Row:
    spec, status = _spec(obj), _status(obj)
    template = (spec.get("template") or {}).get("spec") or {}
    return [
        f"{status.get('readyReplicas') or 0}/{spec.get('replicas', 1)}",
        _images(template),
        age(_meta(obj).get("creationTimestamp"), now),
    ]


def _daemonset(obj: Obj, now: datetime.datetime) -> Row:
    status = _status(obj)
    template = (_spec(obj).get("template") or {}).get("spec") or {}
    return [
        str(status.get("desiredNumberScheduled") or 0),
        str(status.get("numberReady") or 0),
        str(status.get("updatedNumberScheduled") or 0),
        str(status.get("numberUnavailable") or 0),
        _images(template),
        age(_meta(obj).get("creationTimestamp"), now),
    ]


def _replicaset(obj: Obj, now: datetime.datetime) -> Row:
    spec, status = _spec(obj), _status(obj)
    template = (spec.get("template") or {}).get("spec") or {}
    annotations = _meta(obj).get("annotations") or {}
    return [
        str(spec.get("replicas", 0)),
        str(status.get("readyReplicas") or 0),
        str(annotations.get("deployment.kubernetes.io/revision", "-")),
        _images(template),
        age(_meta(obj).get("creationTimestamp"), now),
    ]


def _node(obj: Obj, now: datetime.datetime) -> Row:
    status = _status(obj)
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or ()}
    ready = {"True": "Ready", "False": "NotReady"}.get(str(conditions.get("Ready")), "Unknown")
    pressure = [t for t, s in conditions.items() if t != "Ready" and s == "True"]
    if _spec(obj).get("unschedulable"):
        ready += ",SchedulingDisabled"
    taints = [f"{t.get('key')}:{t.get('effect')}" for t in _spec(obj).get("taints") or ()]
    allocatable = status.get("allocatable") or {}
    return [
        ready,
        ",".join(pressure) or "-",
        ",".join(taints) or "-",
        f"cpu {allocatable.get('cpu', '?')}, mem {allocatable.get('memory', '?')}",
        age(_meta(obj).get("creationTimestamp"), now),
    ]


def _hpa(obj: Obj, now: datetime.datetime) -> Row:
    spec, status = _spec(obj), _status(obj)
    target = spec.get("scaleTargetRef") or {}
    metrics = []
    for current in status.get("currentMetrics") or ():
        resource = current.get("resource") or {}
        value = (resource.get("current") or {}).get("averageUtilization")
        if value is not None:
            metrics.append(f"{resource.get('name')} {value}%")
    goals = []
    for wanted in spec.get("metrics") or ():
        resource = wanted.get("resource") or {}
        value = (resource.get("target") or {}).get("averageUtilization")
        if value is not None:
            goals.append(f"{resource.get('name')} {value}%")
    return [
        f"{target.get('kind', '?')}/{target.get('name', '?')}",
        f"{', '.join(metrics) or '<unknown>'} / {', '.join(goals) or '-'}",
        f"{spec.get('minReplicas', 1)}-{spec.get('maxReplicas', '?')}",
        str(status.get("currentReplicas", "?")),
        _false_conditions(status, interesting=("ScalingLimited",)) or "-",
        age(_meta(obj).get("creationTimestamp"), now),
    ]


def _pvc(obj: Obj, now: datetime.datetime) -> Row:
    spec, status = _spec(obj), _status(obj)
    requested = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "?")
    return [
        str(status.get("phase") or "?"),
        str(spec.get("volumeName") or "-"),
        str((status.get("capacity") or {}).get("storage") or requested),
        str(spec.get("storageClassName") or "-"),
        age(_meta(obj).get("creationTimestamp"), now),
    ]


def _job(obj: Obj, now: datetime.datetime) -> Row:
    spec, status = _spec(obj), _status(obj)
    return [
        f"{status.get('succeeded') or 0}/{spec.get('completions', 1)}",
        str(status.get("failed") or 0),
        _true_conditions(status) or "Running",
        age(_meta(obj).get("creationTimestamp"), now),
    ]


def _service(obj: Obj, now: datetime.datetime) -> Row:
    spec = _spec(obj)
    ports = [f"{p.get('port')}/{p.get('protocol', 'TCP')}" for p in spec.get("ports") or ()]
    selector = ",".join(f"{k}={v}" for k, v in (spec.get("selector") or {}).items())
    return [
        str(spec.get("type") or "ClusterIP"),
        ",".join(ports) or "-",
        selector or "<none>",
        age(_meta(obj).get("creationTimestamp"), now),
    ]


def _event(obj: Obj, now: datetime.datetime) -> Row:
    involved = obj.get("involvedObject") or {}
    return [
        str(obj.get("type") or "?"),
        str(obj.get("reason") or "?"),
        f"{involved.get('kind', '?')}/{involved.get('name', '?')}",
        f"x{obj.get('count') or 1}",
        " ".join(str(obj.get("message") or "").split())[:200],
    ]


def _generic(obj: Obj, now: datetime.datetime) -> Row:
    status = _status(obj)
    state = [
        _condition_text(c)
        for c in status.get("conditions") or ()
        if c.get("type") in ("Ready", "Available", "Synced", "Healthy", "Succeeded", "Progressing")
    ]
    for key in ("phase", "state"):
        if isinstance(status.get(key), str):
            state.append(f"{key}={status[key]}")
    health = status.get("health")
    if isinstance(health, dict) and health.get("status"):
        state.append(f"health={health['status']}")
    sync = status.get("sync")
    if isinstance(sync, dict) and sync.get("status"):
        state.append(f"sync={sync['status']}")
    return ["; ".join(state) or "-", age(_meta(obj).get("creationTimestamp"), now)]


def _volume_attachment(obj: Obj, now: datetime.datetime) -> Row:
    spec = _spec(obj)
    source = spec.get("source") or {}
    return [
        str(spec.get("attacher") or "-"),
        str(source.get("persistentVolumeName") or "-"),
        str(spec.get("nodeName") or "-"),
        str(bool(_status(obj).get("attached"))).lower(),
        age(_meta(obj).get("creationTimestamp"), now),
    ]


def _condition_text(condition: Obj) -> str:
    reason = condition.get("reason")
    return f"{condition.get('type')}={condition.get('status')}{f' ({reason})' if reason else ''}"


def _false_conditions(status: Obj, *, interesting: tuple[str, ...] = ()) -> str:
    out = []
    for condition in status.get("conditions") or ():
        kind, value = condition.get("type"), condition.get("status")
        if (value == "False" and kind not in interesting) or (value == "True" and kind in interesting):
            out.append(_condition_text(condition))
    return ",".join(out)


def _true_conditions(status: Obj) -> str:
    return ",".join(str(c.get("type")) for c in status.get("conditions") or () if c.get("status") == "True")


_COLUMNS: dict[str, tuple[tuple[str, ...], Callable[[Obj, datetime.datetime], Row]]] = {
    "Pod": (("READY", "STATUS", "RESTARTS", "NODE", "AGE"), _pod),
    "Deployment": (("READY", "UP-TO-DATE", "AVAILABLE", "PROBLEMS", "IMAGES", "AGE"), _deployment),
    "StatefulSet": (("READY", "IMAGES", "AGE"), _statefulset),
    "DaemonSet": (("DESIRED", "READY", "UP-TO-DATE", "UNAVAILABLE", "IMAGES", "AGE"), _daemonset),
    "ReplicaSet": (("DESIRED", "READY", "REVISION", "IMAGES", "AGE"), _replicaset),
    "Node": (("STATUS", "PRESSURE", "TAINTS", "ALLOCATABLE", "AGE"), _node),
    "HorizontalPodAutoscaler": (("REFERENCE", "TARGETS", "MIN-MAX", "REPLICAS", "LIMITED", "AGE"), _hpa),
    "PersistentVolumeClaim": (("STATUS", "VOLUME", "CAPACITY", "STORAGECLASS", "AGE"), _pvc),
    "Job": (("COMPLETIONS", "FAILED", "CONDITIONS", "AGE"), _job),
    "Service": (("TYPE", "PORTS", "SELECTOR", "AGE"), _service),
    "Event": (("TYPE", "REASON", "OBJECT", "COUNT", "MESSAGE"), _event),
    "VolumeAttachment": (("ATTACHER", "PV", "NODE", "ATTACHED", "AGE"), _volume_attachment),
}
_GENERIC = (("STATE", "AGE"), _generic)


def table(kind: str, objects: Sequence[Obj], *, now: datetime.datetime, namespaced_rows: bool) -> list[str]:
    """Header and rows, columns separated by two spaces (NAMESPACE first when rows span namespaces)."""
    columns, row = _COLUMNS.get(kind, _GENERIC)
    head = ["NAMESPACE"] if namespaced_rows else []
    lines = ["  ".join([*head, "NAME", *columns])]
    for obj in objects:
        meta = _meta(obj)
        first = [str(meta.get("namespace") or "-")] if namespaced_rows else []
        lines.append("  ".join([*first, str(meta.get("name") or "?"), *row(obj, now)]))
    return lines


# ---- resource usage (metrics API) -----------------------------------------------------------

_SUFFIX = {
    "n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
}  # fmt: skip
_QUANTITY = re.compile(r"^([0-9.]+(?:[eE][-+]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")

USAGE_HEADERS = {
    "nodes": "NAME  CPU(cores)  CPU%  MEMORY(Mi)  MEMORY%",
    "pods": "NAME  CPU(m)  CPU/LIMIT  MEMORY(Mi)  MEMORY/LIMIT",
}


def quantity(text: object) -> float | None:
    """A Kubernetes quantity (``250m``, ``1.5``, ``128Mi``, ``12345n``) as a number, or None."""
    match = _QUANTITY.match(str(text).strip()) if text is not None else None
    if match is None:
        return None
    return float(match[1]) * _SUFFIX[match[2] or ""]


def usage_rows(
    resource: str, usage: Sequence[Obj], objects: Sequence[Obj], *, sort_by: str
) -> list[_results.UsageRow]:
    """The rows of ``kubectl top``, highest ``sort_by`` first: use, and its share of allocatable
    (nodes) or of the limit (pods)."""
    by_name = {str(_meta(obj).get("name")): obj for obj in objects}
    rows: list[_results.UsageRow] = []
    for entry in usage:
        name = str(_meta(entry).get("name"))
        if resource == "nodes":
            used = entry.get("usage") or {}
            cpu, memory = quantity(used.get("cpu")) or 0.0, quantity(used.get("memory")) or 0.0
            total = _status(by_name.get(name, {})).get("allocatable") or {}
            cpu_total, memory_total = quantity(total.get("cpu")), quantity(total.get("memory"))
        else:
            cpu = memory = 0.0
            for container in entry.get("containers") or ():
                cpu += quantity((container.get("usage") or {}).get("cpu")) or 0.0
                memory += quantity((container.get("usage") or {}).get("memory")) or 0.0
            limits = _pod_limits(by_name.get(name, {}))
            cpu_total, memory_total = limits.get("cpu"), limits.get("memory")
        rows.append(
            _results.UsageRow(
                name=name,
                cpu=cpu,
                cpu_share=_share(cpu, cpu_total),
                memory=memory,
                memory_share=_share(memory, memory_total),
            )
        )
    return sorted(rows, key=lambda row: row.memory if sort_by == "memory" else row.cpu, reverse=True)


def usage_line(resource: str, row: _results.UsageRow) -> str:
    """One line under ``USAGE_HEADERS[resource]``: CPU in cores (nodes) or millicores (pods), memory
    in Mi, shares in whole percent."""
    cpu = f"{row.cpu:.2f}" if resource == "nodes" else f"{row.cpu * 1000:.0f}"
    memory = f"{row.memory / 2**20:.0f}"
    return f"{row.name}  {cpu}  {_percent(row.cpu_share)}  {memory}  {_percent(row.memory_share)}"


def _share(used: float, total: float | None) -> float | None:
    return 100 * used / total if total else None


def _percent(share: float | None) -> str:
    return "-" if share is None else f"{share:.0f}%"


def _pod_limits(pod: Obj) -> dict[str, float | None]:
    """The Pod's summed container limits; None for a resource some container leaves unlimited."""
    out: dict[str, float | None] = {}
    containers = _spec(pod).get("containers") or ()
    for resource in ("cpu", "memory"):
        values = [
            quantity(((c.get("resources") or {}).get("limits") or {}).get(resource)) for c in containers
        ]
        out[resource] = sum(v for v in values if v) if values and all(values) else None
    return out


def event_time(event: Mapping[str, Any]) -> str:
    """An Event's newest timestamp, whichever of its fields the emitter filled ("" when none)."""
    series = event.get("series") or {}
    return str(
        event.get("lastTimestamp")
        or series.get("lastObservedTime")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or (event.get("metadata") or {}).get("creationTimestamp")
        or ""
    )
