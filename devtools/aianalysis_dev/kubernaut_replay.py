"""Replay the correct answers of Kubernaut's recorded analyses through our intake and pipeline.

``python -m aianalysis_dev.kubernaut_replay --mirror GIT_DIR [--only TEXT] [--manifests-only] [--helm PATH]``

Kubernaut's demo repository (``jordigilh/kubernaut-demo-scenarios``) records the analyses a strong
model made of its scenarios (``golden-transcripts/*.json``). For every one that selected a workflow
of the repository's catalog, this command asks: *would our operator accept that answer?* It reads a
local clone (bare or not) at run time — nothing of it is copied into this repository:

- **the catalog**: ``deploy/remediation-workflows/`` imported as they are
  (``aianalysis catalog import --from kubernaut``, as ``kubernaut_eval`` does);
- **the world**: the scenario's manifests in the recorded incident's namespace (its Helm chart
  rendered with ``helm template`` when helm is found), the failure state its injection produces
  where ``kubernaut_eval.FAULTS`` models it, and the one thing a live cluster adds that manifests
  cannot show: the tracking annotation Argo CD (v3, the scenarios' version) writes on each object
  an Application of the scenario syncs. Served read-only from memory (``InMemoryCluster``);
- **the alert**: the recorded alert name and severity, the labels its PrometheusRule sets, the
  incident's namespace and the object the recorded signal named (``pod``, ``deployment``...),
  mapped by the intake (``intake.mapping``), resolved to its workload (``intake.resolve``) with the
  namespace's business context, as the intake creates the AIAnalysis;
- **the answer**: a scripted conversation reads the object the answer names (its RCA), then walks
  Kubernaut's discovery path through our tools (action types → search by the expected workflow's
  action type → details), naming that object to the catalog tools as ``affected_resource`` (asked
  again without it when refused), and submits the recorded workflow on the recorded remediation
  target with the recorded parameters (those the system fills from the target left out), once: no
  correction round. A target the recorded model left ``Unknown`` is submitted as such.

It prints one line per recorded analysis — accepted, or refused with the failed rules and the
first error — and the total.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import dataclasses
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from aianalysis import catalog, resources, settings
from aianalysis.analysis import conversation, pipeline, scope
from aianalysis.catalog import importer
from aianalysis.evaluation import cluster, suite
from aianalysis.intake import mapping, payload, resolve
from aianalysis.kube import kind_table
from aianalysis_dev import kubernaut_eval

ARGO_TRACKING = "argocd.argoproj.io/tracking-id"
ARGO_APPLICATION = ("argoproj.io/v1alpha1", "Application")
CLUSTER_SCOPED = frozenset(k.kind for k in kind_table.KINDS if not k.namespaced)
#: Kinds an alert names with a label of its own (the intake's defaults), by kind.
RESOURCE_LABELS = {rule.kind: rule.label for rule in mapping.DEFAULT_RESOURCE_LABELS}
#: Parameters the system fills from the remediation target: a correct answer leaves them out.
OTHER_NAMESPACE = "is outside the incident's namespace"
SYSTEM_FILLED = ("TARGET_RESOURCE_", "TARGET_NAMESPACE", "TARGET_KIND", "TARGET_NAME")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Recorded:
    """One recorded analysis that selected a workflow of the catalog."""

    name: str
    folder: str
    alert: str
    severity: str
    namespace: str
    signal: tuple[str, str] | None
    """(kind, name) of the object the recorded signal named; None for a namespace-wide alert."""
    workflows: tuple[str, ...]
    """Catalog workflows sharing the recorded execution bundle, the recorded one first."""
    target: dict[str, str] | None
    parameters: dict[str, Any]
    shape: str = "analysis"
    """``audit`` when the recording does not say what the alert named."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Outcome:
    recorded: Recorded
    accepted: bool
    offered: bool
    detail: str
    replayable: bool = True


def records(mirror: kubernaut_eval.Mirror, by_bundle: Mapping[str, list[str]]) -> list[Recorded]:
    """Every recorded analysis with a signal, a namespace and a workflow of the catalog."""
    found = []
    for name, record in mirror.transcripts():
        parsed = _recorded(record, by_bundle, name=name) if isinstance(record, dict) else None
        if parsed is not None and not parsed.namespace:
            # The audit shape records no namespace: the scenario's own.
            home = next((d for d in _manifests(mirror, parsed.folder) if d.get("kind") == "Namespace"), None)
            parsed = dataclasses.replace(parsed, namespace=str(home["metadata"]["name"])) if home else None
        if parsed is not None:
            found.append(parsed)
    return found


def _recorded(record: dict[str, Any], by_bundle: Mapping[str, list[str]], *, name: str) -> Recorded | None:
    """The three shapes the repository holds: ``analysis.signal`` (current), a top-level ``signal``
    object (older) and a top-level ``rootCauseAnalysis`` beside a ``remediationRequest`` (audit)."""
    analysis = _dict(record.get("analysis"))
    chosen = analysis.get("selectedWorkflow")
    request = _dict(record.get("remediationRequest"))
    bundle = str(_dict(chosen).get("executionBundle") or request.get("executionBundle") or "")
    named = str(_dict(chosen).get("workflowName") or "")
    if isinstance(chosen, str):
        bundle = chosen
    workflows = list(by_bundle.get(kubernaut_eval._bundle(bundle), []))
    if named in workflows:
        workflows = [named, *(w for w in workflows if w != named)]
    signal = _dict(analysis.get("signal")) or _dict(record.get("signal"))
    top = _dict(signal.get("targetResource"))
    kind = str(top.get("kind") or signal.get("resourceKind") or "")
    target_name = str(top.get("name") or signal.get("resourceName") or "")
    rca = _dict(analysis.get("rootCauseAnalysis")) or _dict(record.get("rootCauseAnalysis"))
    params = {str(k): v for k, v in _dict(_dict(chosen).get("parameters")).items()}
    target = _dict(rca.get("remediationTarget")) or {
        "kind": params.get("TARGET_RESOURCE_KIND"),
        "name": params.get("TARGET_RESOURCE_NAME"),
    }
    namespaced = str(target.get("kind") or "") not in CLUSTER_SCOPED
    namespace = str(
        top.get("namespace") or signal.get("namespace")
        or (namespaced and (target.get("namespace") or params.get("TARGET_RESOURCE_NAMESPACE"))) or ""
    )  # fmt: skip
    alert = str(signal.get("signalName") or record.get("signalName") or record.get("signal") or "")
    if not workflows or not alert:
        return None
    return Recorded(
        name=name,
        folder=kubernaut_eval.ALIASES.get(
            str(record.get("scenario") or ""), str(record.get("scenario") or "")
        ),
        alert=alert,
        severity=str(signal.get("severity") or "critical").lower(),
        namespace=namespace,
        signal=(kind, target_name) if kind and target_name and kind not in ("Unknown", "Namespace") else None,
        workflows=tuple(workflows),
        target={k: str(v) for k, v in target.items() if k in ("kind", "name", "namespace") and v} or None,
        shape="audit" if not signal else "analysis",
        parameters={k: v for k, v in params.items() if not k.startswith(SYSTEM_FILLED)},
    )


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


# ---- the world -------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class Options:
    live: bool = True
    """Model what a live cluster adds (the failure state, Argo CD's tracking); False: the manifests."""
    helm: str | None = None
    """The helm binary that renders scenarios deployed from a chart (None: those have no objects)."""


def world(mirror: kubernaut_eval.Mirror, rec: Recorded, options: Options) -> dict[str, Any]:
    """The scenario as a live cluster shows it: ``{"cluster": objects, "logs": {...}}``."""
    docs = [*_manifests(mirror, rec.folder), *_chart(mirror, rec.folder, helm=options.helm)]
    spaces = [d["metadata"]["name"] for d in docs if d.get("kind") == "Namespace"]
    home = rec.namespace if rec.namespace in spaces else next(iter(spaces), rec.namespace)
    objects = [
        _placed(d, home=home, namespace=rec.namespace) for d in docs if d.get("kind") in kind_table.BY_KIND
    ]
    objects += [d for d in docs if d.get("kind") == "Secret"]
    objects += [claim for obj in objects for claim in _claims(obj)]
    nodes = {
        name
        for kind, name in (
            rec.signal or ("", ""),
            tuple((rec.target or {}).get(k, "") for k in ("kind", "name")),
        )
        if kind == "Node"
    }
    objects += [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}} for name in sorted(nodes)]
    if not any(o.get("kind") == "Namespace" and o["metadata"]["name"] == rec.namespace for o in objects):
        objects.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": rec.namespace}})
    for app in (d for d in docs if (d.get("apiVersion"), d.get("kind")) == ARGO_APPLICATION):
        placed = copy.deepcopy(app)
        destination = _dict(_dict(placed.get("spec")).get("destination"))
        if destination.get("namespace") not in (home, rec.namespace):
            continue
        destination["namespace"] = rec.namespace  # where the overlay deploys the scenario
        objects.append(placed)
        if options.live:
            _tracked(objects, app=str(app["metadata"]["name"]), namespace=rec.namespace)
    doc: dict[str, Any] = {"cluster": objects, "analysis": {"resource": _incident(rec)}}
    fault = kubernaut_eval.FAULTS.get(rec.folder) if options.live else None
    if fault is not None:
        kubernaut_eval.with_fault(doc, fault)
    return doc


def _incident(rec: Recorded) -> dict[str, str]:
    kind, name = rec.signal or ("Namespace", rec.namespace)
    return {"kind": kind, "name": name, "namespace": rec.namespace}


def _manifests(mirror: kubernaut_eval.Mirror, folder: str) -> Iterator[dict[str, Any]]:
    prefix = f"scenarios/{folder}/manifests/"
    for path in mirror.files:
        if path.startswith(prefix) and path.endswith((".yaml", ".yml")):
            yield from (d for d in mirror.documents(path) if isinstance(d.get("metadata"), dict))


def _chart(mirror: kubernaut_eval.Mirror, folder: str, *, helm: str | None) -> list[dict[str, Any]]:
    """The scenario's Helm chart as ``helm template`` renders it (none without helm)."""
    prefix = f"scenarios/{folder}/chart/"
    files = [p for p in mirror.files if p.startswith(prefix)]
    if not files or helm is None:
        return []
    with tempfile.TemporaryDirectory(prefix="kubernaut-chart-") as tmp:
        for path in files:
            target = Path(tmp) / path[len(prefix) :]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(mirror.show(path))
        done = subprocess.run(
            [helm, "template", folder, tmp], capture_output=True, text=True, check=False, timeout=60
        )
    if done.returncode != 0:
        print(f"helm template {folder}: {done.stderr.strip()[:200]}", file=sys.stderr)
        return []
    return [
        d
        for d in yaml.safe_load_all(done.stdout)
        if isinstance(d, dict) and isinstance(d.get("metadata"), dict)
    ]


def _placed(obj: dict[str, Any], *, home: str, namespace: str) -> dict[str, Any]:
    """In the recorded namespace when the scenario deploys it in its own (the run scripts deploy
    through overlays); objects of other namespaces and cluster-scoped ones stay where they are."""
    placed = copy.deepcopy(obj)
    meta = placed["metadata"]
    if obj.get("kind") == "Namespace":
        if meta.get("name") == home:
            meta["name"] = namespace
    elif kind_table.BY_KIND[str(obj["kind"])].namespaced and meta.get("namespace") in (None, home):
        meta["namespace"] = namespace
    return placed


def _claims(obj: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """The PVCs the StatefulSet controller creates from a claim template (``<claim>-<set>-<ordinal>``)."""
    if obj.get("kind") != "StatefulSet":
        return
    meta, spec = obj["metadata"], _dict(obj.get("spec"))
    for template in spec.get("volumeClaimTemplates") or ():
        claim = _dict(_dict(template).get("metadata")).get("name")
        for ordinal in range(int(spec.get("replicas") or 1)):
            yield {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {
                    "name": f"{claim}-{meta['name']}-{ordinal}",
                    "namespace": meta.get("namespace"),
                    "labels": dict(_dict(_dict(_dict(spec.get("template")).get("metadata")).get("labels"))),
                },
                "spec": _dict(template.get("spec")),
            }


def _tracked(objects: list[dict[str, Any]], *, app: str, namespace: str) -> None:
    """Argo CD v3's tracking annotation (``<app>:<group>/<Kind>:<namespace>/<name>``) on what it syncs."""
    for obj in objects:
        meta = obj["metadata"]
        where = meta.get("namespace") or ""
        if where != namespace and not (obj.get("kind") == "Namespace" and meta.get("name") == namespace):
            continue
        group = str(obj.get("apiVersion") or "").rpartition("/")[0]
        tracking = f"{app}:{group}/{obj['kind']}:{where}/{meta['name']}"
        meta.setdefault("annotations", {}).setdefault(ARGO_TRACKING, tracking)


# ---- the intake ------------------------------------------------------------------------------------


def alert_labels(mirror: kubernaut_eval.Mirror, rec: Recorded) -> dict[str, str]:
    """The labels the alert fires with: its rule's own, the namespace, the object it names."""
    labels = {k: v for k, v in _rule_labels(mirror, rec.folder, rec.alert).items() if "{{" not in v}
    labels.update(
        alertname=rec.alert, severity=labels.get("severity") or rec.severity, namespace=rec.namespace
    )
    if rec.signal is not None and rec.signal[0] in RESOURCE_LABELS:
        labels[RESOURCE_LABELS[rec.signal[0]]] = rec.signal[1]
    return labels


def _rule_labels(mirror: kubernaut_eval.Mirror, folder: str, alert: str) -> dict[str, str]:
    for doc in mirror.documents(f"scenarios/{folder}/manifests/prometheus-rule.yaml"):
        for group in _dict(doc.get("spec")).get("groups") or ():
            for rule in _dict(group).get("rules") or ():
                if _dict(rule).get("alert") == alert:
                    return {str(k): str(v) for k, v in _dict(rule.get("labels")).items()}
    return {}


async def intake(
    labels: dict[str, str], reader: cluster.InMemoryCluster, *, config: mapping.MappingConfig
) -> tuple[resources.AIAnalysisSpec, str] | str:
    """The AIAnalysis spec the intake creates for the alert and its namespace, or why none."""
    alert = payload.Alert.model_validate(
        {"status": "firing", "labels": labels, "startsAt": "2026-01-01T00:00:00Z", "fingerprint": "replay"}
    )
    mapped = mapping.map_alert(alert, common_labels={}, config=config, received="2026-01-01T00:00:05Z")
    if isinstance(mapped, mapping.Unmapped):
        return f"unmapped: {mapped.reason}"
    resolver = resolve.Resolver(cluster_reader=reader)
    workload = await resolver.workload(mapped.target, mapped.signal.labels)
    try:
        business = await resolver.business_context(
            mapped.analysis_namespace, config.business_context_defaults
        )
    except resolve.NamespaceMissingError as exc:
        return f"dropped: {exc}"
    spec = resources.AIAnalysisSpec(
        signal=mapped.signal,
        resource=resources.ResourceRef(kind=workload.kind, name=workload.name, namespace=workload.namespace),
        cluster=mapped.cluster,
        business_context=business,
    )
    return spec, mapped.analysis_namespace


# ---- the conversation ------------------------------------------------------------------------------


class Scripted:
    """A provider whose conversations play one correct answer through the toolbox (no model)."""

    name = "scripted"
    model = "replay"

    def __init__(self, index: catalog.Catalog, rec: Recorded) -> None:
        self._index = index
        self._rec = rec
        self.offered = False
        self.tool_errors: list[str] = []

    def open(
        self, *, system: str, prompt: str, toolbox: conversation.Tools, spec: resources.AIAnalysisSpec
    ) -> _Conversation:
        del system, prompt, spec
        return _Conversation(self, toolbox)

    async def aclose(self) -> None:
        return None

    async def check_model(self) -> str | None:
        return None


class _Conversation:
    def __init__(self, provider: Scripted, toolbox: conversation.Tools) -> None:
        self._provider = provider
        self._toolbox = toolbox
        self._counter = conversation.UsageCounter()
        self._raw: dict[str, Any] | None = None

    @property
    def usage(self) -> resources.LLMUsage:
        return self._counter.snapshot(provider="scripted", model="replay")

    async def answer(self) -> conversation.Submission:
        rec, index = self._provider._rec, self._provider._index
        first = index.get(rec.workflows[0])
        action = first.spec.action_type if first is not None else None
        target = rec.target if scope.names_object(rec.target) else None
        if target is not None:  # the RCA reads the object it blames, then looks for a remedy
            await self._call("get_resource", target)
        named = {"affected_resource": target} if target is not None else {}
        await self._catalog("list_action_types", {}, named)
        found = await self._catalog("search_workflow_catalog", {"action_type": action, "top_k": 10}, named)
        hits = [h.get("workflow_id") for h in _json(found).get("workflows") or ()]
        offered = [w for w in rec.workflows if w in hits]
        self._provider.offered = bool(offered)
        chosen = (offered or list(rec.workflows))[0]
        await self._call("get_workflow_details", {"workflow_id": chosen})
        self._raw = _submission(chosen, rec)
        return conversation.Submission(raw=self._raw)

    async def _catalog(self, name: str, arguments: dict[str, Any], named: dict[str, Any]) -> str:
        """A catalog call for the named target; asked again without it when the tool refuses it (an
        operator that takes no target for its catalog tools, or a target it may not be)."""
        if named:
            outcome = await self._toolbox.call(name, {**arguments, **named})
            self._counter.tool_calls += 1
            if not outcome.is_error:
                return outcome.text
        return await self._call(name, arguments)

    async def correct(self, errors: list[str]) -> conversation.Submission:
        del errors
        return conversation.Submission(raw=self._raw, exhausted=True)

    async def _call(self, name: str, arguments: dict[str, Any]) -> str:
        self._counter.tool_calls += 1
        outcome = await self._toolbox.call(name, {k: v for k, v in arguments.items() if v is not None})
        if outcome.is_error:
            self._provider.tool_errors.append(f"{name}: {outcome.text[:160]}")
        return outcome.text


def _json(text: str) -> dict[str, Any]:
    try:
        return _dict(json.loads(text))
    except ValueError:
        return {}


def _submission(workflow_id: str, rec: Recorded) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "analysis_summary": f"Replayed from Kubernaut's recorded analysis {rec.name}.",
        "root_cause_assessment": "As recorded by the model that investigated the suite.",
        "rca_severity": "critical" if rec.severity == "critical" else "high",
        "selected_workflow": {
            "workflow_id": workflow_id,
            "confidence": 0.9,
            "rationale": "the workflow the recorded analysis selected",
            "parameters": {k: v for k, v in rec.parameters.items() if isinstance(v, (str, int, float, bool))},
        },
    }
    if rec.target is not None:
        answer["affected_resource"] = dict(rec.target)
    return answer


# ---- the run ---------------------------------------------------------------------------------------


async def replay(
    mirror: kubernaut_eval.Mirror, options: Options, *, only: str | None = None
) -> list[Outcome]:
    with tempfile.TemporaryDirectory(prefix="kubernaut-replay-") as tmp:
        source, imported = Path(tmp) / "source", Path(tmp) / "imported"
        source.mkdir()
        paths, by_bundle = kubernaut_eval.workflows(mirror, source)
        importer.import_kubernaut(paths, out=imported)
        index = catalog.load_paths([imported])
    config = settings.from_env({"AIANALYSIS_MAX_VALIDATION_ATTEMPTS": "1"})
    outcomes = []
    for rec in records(mirror, by_bundle):
        if only is None or only in rec.name:
            outcomes.append(await _one(mirror, rec, options, index=index, config=config))
    return outcomes


async def _one(
    mirror: kubernaut_eval.Mirror,
    rec: Recorded,
    options: Options,
    *,
    index: catalog.Catalog,
    config: settings.Settings,
) -> Outcome:
    doc = world(mirror, rec, options)
    missing = _missing_target(doc["cluster"], rec)
    if missing is not None:
        return Outcome(recorded=rec, accepted=False, offered=False, detail=missing, replayable=False)
    logs = {k: suite.PodLog.model_validate(v) for k, v in (doc.get("logs") or {}).items()}
    reader = cluster.InMemoryCluster(doc["cluster"], logs=logs)
    made = await intake(alert_labels(mirror, rec), reader, config=mapping.MappingConfig(namespaces=["*"]))
    if isinstance(made, str):
        return Outcome(recorded=rec, accepted=False, offered=False, detail=made)
    spec, namespace = made
    scoped = scope.own_namespace(spec, namespace=namespace)  # as the reconciler does
    if isinstance(scoped, str):
        return Outcome(recorded=rec, accepted=False, offered=False, detail=scoped)
    spec = scoped
    provider = Scripted(index, rec)
    decision = await pipeline.analyze(
        spec, catalog=index, provider=provider, reader=reader, settings=config, namespace=namespace
    )
    incident = f"{spec.resource.kind}/{spec.resource.name}"
    if decision.selected is not None and decision.selected.workflow_id in rec.workflows:
        chosen = decision.root_cause.affected_resource if decision.root_cause is not None else None
        on = f"{chosen.kind}/{chosen.name}" if chosen is not None else "?"
        review = f", review: {decision.review_reason}" if decision.review_reason else ""
        detail = f"incident {incident} -> {decision.selected.workflow_id} on {on}{review}"
        return Outcome(recorded=rec, accepted=True, offered=provider.offered, detail=detail)
    errors = decision.attempts[-1].errors if decision.attempts else []
    rules = ",".join(decision.failed_rules) or str(decision.review_reason)
    detail = f"incident {incident}: {rules}: {errors[0] if errors else '-'}"
    if decision.failed_rules == ["target_out_of_scope"] and OTHER_NAMESPACE in detail:
        detail = f"by design (an analysis acts in its own namespace; AIANALYSIS_CROSS_NAMESPACE): {detail}"
    if provider.tool_errors:
        detail += " | tool errors: " + "; ".join(provider.tool_errors)
    return Outcome(recorded=rec, accepted=False, offered=provider.offered, detail=detail)


def _missing_target(objects: Sequence[Mapping[str, Any]], rec: Recorded) -> str | None:
    """Why the recorded answer cannot be replayed here: the object it acts on is not among the
    scenario's (the recording is of an older version of the scenario, or of objects its scripts make)."""
    target = rec.target
    if rec.shape == "audit":
        return "not replayable: the recording does not say what the alert named"
    if target is None or target["kind"].casefold() == "unknown":
        return None
    places = (None, target.get("namespace", rec.namespace), rec.namespace)
    if any(
        (o.get("kind"), o["metadata"].get("name")) == (target["kind"], target["name"])
        and o["metadata"].get("namespace") in places
        for o in objects
    ):
        return None
    return f"not replayable: {target['kind']} {target['name']} is not among the scenario's objects"


def find_helm(given: str | None) -> str | None:
    if given:
        return given
    found = shutil.which("helm")
    if found:
        return found
    cached = sorted(Path.home().glob(".cache/aianalysis-operator/helm-*/helm"))
    return str(cached[-1]) if cached else None


def report(outcomes: Sequence[Outcome]) -> str:
    lines = []
    for o in outcomes:
        mark = "accepted" if o.accepted else "REFUSED " if o.replayable else "skipped "
        offered = "" if o.accepted or o.offered or not o.replayable else " [not offered by search]"
        lines.append(f"{mark} {o.recorded.name:58} {o.recorded.workflows[0]:34}{offered} {o.detail}")
    accepted = sum(o.accepted for o in outcomes)
    replayable = sum(o.replayable for o in outcomes)
    by_design = sum(o.detail.startswith("by design") for o in outcomes)
    lines.append(
        f"\naccepted {accepted}/{replayable} replayable recorded answers, {by_design} refused by design "
        f"({len(outcomes) - replayable} of {len(outcomes)} recorded answers not replayable)"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--mirror", type=Path, required=True, help="git dir of kubernaut-demo-scenarios")
    parser.add_argument("--only", help="replay only the recorded analyses whose name contains this")
    parser.add_argument(
        "--manifests-only",
        action="store_true",
        help="the manifests alone: no modelled failure state, no Argo CD tracking annotations",
    )
    parser.add_argument(
        "--helm", help="helm binary for scenarios deployed from a chart (default: PATH, cache)"
    )
    args = parser.parse_args(argv)
    outcomes = asyncio.run(
        replay(
            kubernaut_eval.Mirror(args.mirror),
            Options(live=not args.manifests_only, helm=find_helm(args.helm)),
            only=args.only,
        )
    )
    print(report(outcomes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
