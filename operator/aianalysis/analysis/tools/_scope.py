"""Read-only cluster reads behind the remediation-target rule: what surrounds the incident's
resource (``gather_scope``) and the facts detected on a target (``detect_facts``, see ``analysis.facts``).

Both tolerate failures: a read the API server refuses or that fails leaves that part unknown
(an object not added to the scope, a fact left ``None``) and never fails the analysis. Unknown
scope makes the target check stricter, unknown facts never satisfy a workflow's requirement.

What the incident concerns (``Scope.related``), found from its resource:
- its owner chain in both directions (Pod → ReplicaSet → Deployment, CronJob → Job → Pod) and the
  Pods of the topmost controller;
- the Nodes those Pods run on;
- what the Pod template references: ConfigMaps and Secrets (volumes, projected volumes, env,
  envFrom, image pull secrets — Secrets by name only, never read), PVCs, the ServiceAccount,
  and the RoleBindings in the namespace that bind that ServiceAccount;
- what selects or scales it: Services and NetworkPolicies whose selector selects its Pods,
  PodDisruptionBudgets that select them, HPAs whose ``scaleTargetRef`` is in the chain;
- when the incident's resource is itself a selector or a scaler (a PDB, an HPA, a Service, a
  NetworkPolicy), the workloads it selects or scales, and what surrounds them as above;
- the cert-manager Certificates that issue a Secret the Pods reference (their ``secretName``);
- what the incident's own object and those Certificates name in their spec (any ``{kind, name}``
  reference of a kind in the table: a Certificate's ``issuerRef`` → its ClusterIssuer or Issuer,
  a RoleBinding's Role), in the incident's namespace or cluster-scoped. Read here, by the scope
  itself, so a cluster-scoped object the incident leads to is in scope whether or not the
  conversation read the object that references it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from aianalysis import catalog, errors, resources
from aianalysis.analysis import facts, scope
from aianalysis.analysis.tools import _cluster_tools
from aianalysis.kube import kind_table, readers

MAX_PODS = 50
MAX_REFERENCES = 64
selects = facts.selects


async def gather_scope(reader: readers.ClusterReader | None, incident: resources.ResourceRef) -> scope.Scope:
    """The incident's scope (see the module rules); without a reader, the no-cluster scope."""
    table = facts.target_kinds()
    if reader is None:
        return scope.Scope.of(incident, cluster=False, kinds=table)
    base = scope.Scope.of(incident, cluster=True, kinds=table)
    related: dict[scope.Key, str] = {}
    starts = await facts.workload_starts(reader, base.incident)
    chain = starts[0] if starts else []  # the owner chain; then a start per selected workload
    for workload in (start[0] for start in starts[1:]):
        _add(related, facts.named_ref(workload, kind=str(workload.get("kind"))))
    for start in starts:
        await _surroundings(reader, start, related)
    home = base.home
    if chain and home is not None:
        _referenced(chain[0], home, related)
        await _certificates(reader, home, related)
    related.pop(base.incident.key, None)
    concerned = facts.concerned_workload(starts)
    return scope.Scope.of(incident, cluster=True, kinds=table, related=related, workload=concerned)


async def detect_facts(
    reader: readers.ClusterReader | None,
    target: scope.ObjectRef,
    *,
    workload: scope.ObjectRef | None = None,
) -> catalog.TargetFacts:
    """The facts on ``target`` (and on the incident's ``workload`` when the target runs no Pods)."""
    return await facts.detect(reader, target, workload=workload)


async def _surroundings(
    reader: readers.ClusterReader, chain: list[readers.JSONObject], related: dict[scope.Key, str]
) -> None:
    pods = await _pods_below(reader, chain)
    for obj, kind in [*((o, str(o.get("kind") or "")) for o in chain), *((pod, "Pod") for pod in pods)]:
        _add(related, facts.named_ref(obj, kind=kind))
        for ref in facts.owner_refs(obj):
            _add(related, ref)
    templates = [t for t in (facts.pod_template(obj) for obj in (*chain, *pods)) if t is not None]
    namespaces = [(o.get("metadata") or {}).get("namespace") for o in chain]
    namespace = next((str(ns) for ns in namespaces if ns), None)
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            _add(related, scope.ObjectRef(kind="Node", name=str(node), api_version="v1"))
    if namespace is None or not templates:
        return
    accounts: set[str] = set()
    for template in templates:
        for ref in list(_template_references(template, namespace))[:MAX_REFERENCES]:
            _add(related, ref)
            if ref.kind == "ServiceAccount":
                accounts.add(ref.name)
    await _selecting(reader, chain, templates, namespace, related)
    await _bindings(reader, accounts, namespace, related)


def _template_references(template: Mapping[str, Any], namespace: str) -> Iterator[scope.ObjectRef]:
    """ConfigMaps, Secrets (by name), PVCs and the ServiceAccount a Pod template references."""
    spec = template.get("spec") or {}

    def named(kind: str, name: object) -> scope.ObjectRef | None:
        return (
            scope.ObjectRef(kind=kind, name=str(name), namespace=namespace, api_version="v1")
            if name
            else None
        )

    found: list[scope.ObjectRef | None] = [
        named("ServiceAccount", spec.get("serviceAccountName") or "default")
    ]
    found.extend(named("Secret", s.get("name")) for s in spec.get("imagePullSecrets") or ())
    for volume in spec.get("volumes") or ():
        found.append(named("ConfigMap", (volume.get("configMap") or {}).get("name")))
        found.append(named("Secret", (volume.get("secret") or {}).get("secretName")))
        found.append(
            named("PersistentVolumeClaim", (volume.get("persistentVolumeClaim") or {}).get("claimName"))
        )
        for source in (volume.get("projected") or {}).get("sources") or ():
            found.append(named("ConfigMap", (source.get("configMap") or {}).get("name")))
            found.append(named("Secret", (source.get("secret") or {}).get("name")))
    for container in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
        for source in container.get("envFrom") or ():
            found.append(named("ConfigMap", (source.get("configMapRef") or {}).get("name")))
            found.append(named("Secret", (source.get("secretRef") or {}).get("name")))
        for env in container.get("env") or ():
            value_from = env.get("valueFrom") or {}
            found.append(named("ConfigMap", (value_from.get("configMapKeyRef") or {}).get("name")))
            found.append(named("Secret", (value_from.get("secretKeyRef") or {}).get("name")))
    yield from (ref for ref in found if ref is not None)


async def _selecting(
    reader: readers.ClusterReader,
    chain: Sequence[Mapping[str, Any]],
    templates: Sequence[Mapping[str, Any]],
    namespace: str,
    related: dict[scope.Key, str],
) -> None:
    """Services, NetworkPolicies and PDBs selecting the Pods; HPAs scaling a chain object."""
    labels = [(t.get("metadata") or {}).get("labels") or {} for t in templates]
    for kind, path in facts.SELECTORS.items():
        for obj in await facts.listed(reader, kind, namespace):
            selector = facts.at(obj, path)
            if kind == "Service":
                selector = {"matchLabels": selector} if selector else None
            if any(selects(selector, pod_labels) for pod_labels in labels):
                _add(related, facts.named_ref(obj, kind=kind))
    owners = {(obj.get("kind"), (obj.get("metadata") or {}).get("name")) for obj in chain}
    for hpa in await facts.listed(reader, "HorizontalPodAutoscaler", namespace):
        ref = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
        if (ref.get("kind"), ref.get("name")) in owners:
            _add(related, facts.named_ref(hpa, kind="HorizontalPodAutoscaler"))


#: Objects Kubernetes makes in every namespace: never what a remediation of the namespace is about.
_EVERY_NAMESPACE = frozenset({("ConfigMap", "kube-root-ca.crt"), ("ServiceAccount", "default")})


async def infer_target(
    reader: readers.ClusterReader | None, where: scope.Scope, *, components: Sequence[str] | None
) -> scope.Inference:
    """The candidates for the target of an answer that named none (``scope`` module rules): the
    objects of the kinds ``components`` names that the incident concerns — those around it, or for
    an incident about a whole Namespace, that namespace's (listed now, read-only)."""
    wanted = _component_kinds(components)
    found: dict[scope.Key, scope.ObjectRef] = {}
    for key in where.related:
        if key[0] in wanted:
            found[key] = scope.ObjectRef(
                kind=wanted[key[0]].kind,
                name=key[2],
                namespace=key[1] or None,
                api_version=wanted[key[0]].api_version,
            )
    home = where.home
    if reader is not None and home is not None and where.incident.kind == "Namespace":
        for known in (k for k in wanted.values() if k.namespaced):
            for obj in await facts.listed(reader, known.kind, home):
                ref = facts.named_ref(obj, kind=known.kind)
                if (ref.kind, ref.name) not in _EVERY_NAMESPACE:
                    found.setdefault(ref.key, ref)
    return scope.Inference(
        kinds=tuple(sorted({k.kind for k in wanted.values()})),
        candidates=tuple(sorted(found.values(), key=lambda ref: ref.key)),
    )


def _component_kinds(components: Sequence[str] | None) -> dict[str, kind_table.Kind]:
    """The kinds of the table a workflow's ``labels.component`` names (``*`` names none: any kind
    fits, there is nothing to infer), by casefolded kind."""
    named = (entry.strip().rpartition("/")[2] for entry in components or () if entry.strip() != "*")
    found = (kind_table.lookup(kind) for kind in named if kind)
    return {kind.kind.casefold(): kind for kind in found if kind is not None and kind.kind != "Namespace"}


async def _certificates(reader: readers.ClusterReader, namespace: str, related: dict[scope.Key, str]) -> None:
    """The Certificates issuing a Secret already in scope (cert-manager writes the Secret their
    ``secretName`` names), and what they reference."""
    secrets = {name for kind, where, name in related if kind == "secret" and where == namespace}
    if not secrets:
        return
    for certificate in await facts.listed(reader, "Certificate", namespace):
        if (certificate.get("spec") or {}).get("secretName") in secrets:
            _add(related, facts.named_ref(certificate, kind="Certificate"))
            _referenced(certificate, namespace, related)


def _referenced(obj: Mapping[str, Any], namespace: str, related: dict[scope.Key, str]) -> None:
    """The objects of known kinds ``obj`` names in its spec: namespaced ones in ``obj``'s namespace
    (a reference never leaves it), cluster-scoped ones as they are."""
    for kind, name in _cluster_tools.references(obj)[:MAX_REFERENCES]:
        known = kind_table.BY_KIND.get(kind)
        if known is None or known.kind == "Namespace":
            continue
        where = namespace if known.namespaced else None
        _add(
            related,
            scope.ObjectRef(kind=known.kind, name=name, namespace=where, api_version=known.api_version),
        )


async def _bindings(
    reader: readers.ClusterReader, accounts: set[str], namespace: str, related: dict[scope.Key, str]
) -> None:
    if not accounts:
        return
    for binding in await facts.listed(reader, "RoleBinding", namespace):
        for subject in binding.get("subjects") or ():
            if (
                subject.get("kind") == "ServiceAccount"
                and subject.get("name") in accounts
                and (subject.get("namespace") or namespace) == namespace
            ):
                _add(related, facts.named_ref(binding, kind="RoleBinding"))


async def _pods_below(
    reader: readers.ClusterReader, chain: Sequence[readers.JSONObject]
) -> list[readers.JSONObject]:
    """The Pods of the topmost controller in the chain (the incident's own Pod when it is one)."""
    pods = [obj for obj in chain if obj.get("kind") == "Pod"]
    for obj in reversed(chain):
        kind, meta = obj.get("kind"), obj.get("metadata") or {}
        if kind in kind_table.OWNER_KINDS and meta.get("namespace"):
            try:
                found = await reader.list_pods_of_owner(
                    kind=str(kind), name=meta["name"], namespace=meta["namespace"]
                )
            except (readers.Unavailable, errors.ClusterError):
                continue
            return [*pods, *found[:MAX_PODS]]
    return pods


def _add(related: dict[scope.Key, str], ref: scope.ObjectRef) -> None:
    if ref.kind and ref.name:
        related.setdefault(ref.key, ref.describe())
