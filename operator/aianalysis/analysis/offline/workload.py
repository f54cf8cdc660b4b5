"""What a workload object says beyond its status: its pod template and what that references,
its owner, the marks a GitOps controller leaves, a Job's failure, a claim's size.

Pure: objects as the tools returned them in, values out.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from typing import Any

from aianalysis import resources
from aianalysis.analysis.offline import condense

#: A Job's ``Failed`` condition reasons.
JOB_FAILURE_REASONS = frozenset({"BackoffLimitExceeded", "DeadlineExceeded"})
#: The annotation a Deployment and its ReplicaSets carry their revision in.
REVISION = "deployment.kubernetes.io/revision"
_TEMPLATE_FIELDS = ("image", "command", "args", "env", "envFrom", "resources", "volumeMounts")
#: Marks a GitOps controller leaves on what it syncs (Argo CD's tracking annotation and label,
#: Flux's kustomize and helm controllers' labels).
GITOPS_ANNOTATIONS = ("argocd.argoproj.io/tracking-id",)
GITOPS_LABELS = (
    "argocd.argoproj.io/instance",
    "kustomize.toolkit.fluxcd.io/name",
    "helm.toolkit.fluxcd.io/name",
)


def pod_spec(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The pod spec a workload runs (a CronJob's through its job template)."""
    spec = obj.get("spec") or {}
    if obj.get("kind") == "CronJob":
        spec = ((spec.get("jobTemplate") or {}).get("spec")) or {}
    template = (spec.get("template") or {}).get("spec")
    return template if isinstance(template, dict) else None


def needed_sources(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """ConfigMaps and PVCs a pod spec needs to start (optional references left out). Secrets are
    never read, so they are not checked here (their absence shows in the container's state)."""
    found: list[tuple[str, str]] = []

    def add(kind: str, source: Any) -> None:
        if not isinstance(source, dict) or source.get("optional"):
            return
        name = source.get("name" if kind == "ConfigMap" else "claimName")
        if isinstance(name, str) and (kind, name) not in found:
            found.append((kind, name))

    for volume in spec.get("volumes") or ():
        if isinstance(volume, dict):
            add("ConfigMap", volume.get("configMap"))
            add("PersistentVolumeClaim", volume.get("persistentVolumeClaim"))
    for container in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
        if not isinstance(container, dict):
            continue
        for source in container.get("envFrom") or ():
            add("ConfigMap", (source or {}).get("configMapRef"))
        for env in container.get("env") or ():
            add("ConfigMap", ((env or {}).get("valueFrom") or {}).get("configMapKeyRef"))
    return found


def template_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[str, ...]:
    """Which container fields differ between two pod templates (``image of api``, ``command of api``)."""
    before = {c.get("name"): c for c in old.get("containers") or () if isinstance(c, dict)}
    changes = []
    for container in new.get("containers") or ():
        if not isinstance(container, dict):
            continue
        previous = before.get(container.get("name"), {})
        changes += [
            f"{f} of {container.get('name')}" for f in _TEMPLATE_FIELDS if container.get(f) != previous.get(f)
        ]
    if old.get("volumes") != new.get("volumes"):
        changes.append("volumes")
    return tuple(changes)


def controller_of(obj: Any, *, namespace: str | None) -> resources.ResourceRef | None:
    """The controlling owner of an object read from the cluster (else its first owner), if any."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    refs = meta.get("ownerReferences") if isinstance(meta, dict) else None
    if not isinstance(refs, list):
        return None
    owners = [r for r in refs if isinstance(r, dict)]
    owner = next((r for r in owners if r.get("controller")), owners[0] if owners else None)
    if owner is None or not isinstance(owner.get("kind"), str) or not isinstance(owner.get("name"), str):
        return None
    return resources.ResourceRef(kind=owner["kind"], name=owner["name"], namespace=namespace)


def service_account(obj: Mapping[str, Any]) -> str | None:
    """The ServiceAccount a workload's Pods (or a Pod) run as."""
    spec = pod_spec(obj) if obj.get("kind") != "Pod" else obj.get("spec")
    name = (spec or {}).get("serviceAccountName")
    return name if isinstance(name, str) and name else None


def runs_java(obj: Mapping[str, Any]) -> bool:
    """Whether the workload's pod template says JVM (image name, JAVA_* or -Xmx in its env)."""
    template = pod_spec(obj) or {}
    return any(
        condense.container_facts({**c, "env": c.get("env") or ()}, {}).java
        for c in template.get("containers") or ()
    )


def gitops_managed(obj: Any) -> bool:
    """Whether a GitOps controller syncs this object from a repository (its marks say so)."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict):
        return False
    annotations, labels = meta.get("annotations") or {}, meta.get("labels") or {}
    return any(key in annotations for key in GITOPS_ANNOTATIONS) or any(
        key in labels for key in GITOPS_LABELS
    )


def job_failure(obj: Mapping[str, Any] | None) -> str | None:
    if not obj or obj.get("kind") != "Job":
        return None
    conditions = (obj.get("status") or {}).get("conditions") or ()
    failed = next(
        (
            c
            for c in conditions
            if isinstance(c, dict) and c.get("type") == "Failed" and c.get("status") == "True"
        ),
        None,
    )
    return str(failed.get("reason") or "Failed") if failed else None


def job_deadline(obj: Mapping[str, Any] | None) -> int | None:
    """A Job's ``activeDeadlineSeconds``."""
    if not obj or obj.get("kind") != "Job":
        return None
    return condense.integer((obj.get("spec") or {}).get("activeDeadlineSeconds"))


def claim_capacity(obj: Mapping[str, Any]) -> str | None:
    """The provisioned size of a Bound PersistentVolumeClaim (``status.capacity.storage``)."""
    if obj.get("kind") != "PersistentVolumeClaim":
        return None
    status = obj.get("status") or {}
    size = (status.get("capacity") or {}).get("storage")
    return str(size) if status.get("phase") == "Bound" and size else None


def cpu_requests(pod: Mapping[str, Any]) -> int | None:
    """The Pod's summed container CPU requests in millicores (None when a container has none)."""
    total = 0
    for container in (pod.get("spec") or {}).get("containers") or ():
        text = str(((container.get("resources") or {}).get("requests") or {}).get("cpu") or "")
        found = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)(m?)", text)
        if found is None:
            return None
        total += round(float(found[1]) * (1 if found[2] else 1000))
    return total or None


def hours_between(start: Any, end: Any) -> float | None:
    """Hours from one RFC 3339 time to another (None when either is missing or malformed)."""
    try:
        since = datetime.datetime.fromisoformat(str(start).replace("Z", "+00:00"))
        until = datetime.datetime.fromisoformat(str(end).replace("Z", "+00:00"))
    except ValueError:
        return None
    if since.tzinfo is None or until.tzinfo is None:
        return None
    return (until - since).total_seconds() / 3600


def ref_of(obj: Mapping[str, Any], namespace: str | None) -> resources.ResourceRef:
    """A reference to an object read from the cluster (its namespace, else ``namespace``)."""
    meta = obj.get("metadata") or {}
    return resources.ResourceRef(
        kind=str(obj.get("kind")), name=str(meta.get("name")), namespace=meta.get("namespace") or namespace
    )


def kind_and_name(obj: Mapping[str, Any]) -> str:
    """``Kind name``."""
    return f"{obj.get('kind')} {(obj.get('metadata') or {}).get('name')}"


def name_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def settled(pod: Mapping[str, Any]) -> bool:
    """Running, and no container of its spec waiting or terminated (its state's first entry)."""
    status = pod.get("status") or {}
    statuses = {s.get("name"): s for s in status.get("containerStatuses") or () if isinstance(s, dict)}
    for container in (pod.get("spec") or {}).get("containers") or ():
        state = (statuses.get(container.get("name")) or {}).get("state") or {}
        current = next((key for key, detail in state.items() if isinstance(detail, dict)), None)
        if current in ("waiting", "terminated"):
            return False
    return status.get("phase") == "Running"
