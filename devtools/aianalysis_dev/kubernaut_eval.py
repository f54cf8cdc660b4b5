"""Measure the offline provider on incidents derived from Kubernaut's public demo scenarios.

``python -m aianalysis_dev.kubernaut_eval --mirror GIT_DIR`` reads a local clone (bare or not) of
``jordigilh/kubernaut-demo-scenarios`` at run time — nothing of it is copied into this repository:

- the catalog: every ``RemediationWorkflow`` under ``deploy/remediation-workflows/``, converted with
  ``aianalysis catalog import --from kubernaut`` (so this also measures the importer);
- the incidents: each recorded analysis (``golden-transcripts/*.json``) with a signal, a target and
  a selected workflow becomes one scenario: the alert's name as the signal type, its severity,
  environment and priority, the target as the incident's resource, and the alert rule's own
  summary (``scenarios/<name>/manifests/prometheus-rule.yaml``) as the error message;
- the cluster: the scenario's manifests (Namespace, Deployments, HPAs, PDBs, NetworkPolicies...),
  as deployed before the fault is injected — the fault itself is a shell script, so the failure
  state is not there; the offline provider sees the workloads and their surroundings only;
- the expectation: the workflow(s) whose execution bundle Kubernaut's analysis selected.

With ``--faults`` the failure state each scenario's fault injection produces is modelled too, in
our own words (:data:`FAULTS`: a crash loop after a rollout, OOM kills at the limit, an image tag
that does not exist, a refused pull, a ConfigMap given an invalid directive and a restart, a
Node tainted out of reach, a drain blocked by a PodDisruptionBudget): ReplicaSets, Pods, Nodes
and statuses as a kubelet and the controllers would report them, with the crashed run's log line,
so the analyzers have evidence to read. Only the scenarios whose fault is one of those get it.

It prints accuracy (picks Kubernaut expects / scenarios) and one line per suite. The same
pipeline as ``aianalysis eval`` runs each one.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import copy
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from aianalysis import catalog, settings
from aianalysis.analysis import offline
from aianalysis.catalog import importer
from aianalysis.evaluation import runner, scoring, suite

SEVERITY = {"critical": "critical", "high": "high", "warning": "medium", "info": "low", "medium": "medium"}
CLUSTER_KINDS = frozenset(
    {
        "Namespace",
        "Deployment",
        "StatefulSet",
        "DaemonSet",
        "Service",
        "ConfigMap",
        "HorizontalPodAutoscaler",
        "PodDisruptionBudget",
        "NetworkPolicy",
        "PersistentVolumeClaim",
        "Certificate",
        "Issuer",
        "ClusterIssuer",
        "ServiceAccount",
        "Role",
        "RoleBinding",
    }
)
CLUSTER_SCOPED = frozenset({"ClusterIssuer", "Node"})


class Mirror:
    def __init__(self, git_dir: Path) -> None:
        self.git_dir = git_dir
        listed = self._git("ls-tree", "-r", "--name-only", "HEAD")
        self.files = listed.split()

    def transcripts(self) -> Iterator[tuple[str, Any]]:
        """(name, parsed JSON) of every recorded analysis (``golden-transcripts/*.json``)."""
        for path in sorted(
            p for p in self.files if p.startswith("golden-transcripts/") and p.endswith(".json")
        ):
            try:
                yield Path(path).stem, json.loads(self.show(path))
            except ValueError:
                continue

    def show(self, path: str) -> str:
        return self._git("show", f"HEAD:{path}")

    def documents(self, path: str) -> Iterator[dict[str, Any]]:
        try:
            for doc in yaml.safe_load_all(self.show(path)):
                if isinstance(doc, dict):
                    yield doc
        except yaml.YAMLError:
            return

    def _git(self, *args: str) -> str:
        done = subprocess.run(
            ["git", "--git-dir", str(self.git_dir), *args],
            capture_output=True,
            text=True,
            check=False,
        )
        return done.stdout


def workflows(mirror: Mirror, into: Path) -> tuple[list[Path], dict[str, list[str]]]:
    """The catalog files written under ``into``, and execution bundle → workflow names."""
    paths = []
    by_bundle: dict[str, list[str]] = collections.defaultdict(list)
    for path in mirror.files:
        if not (path.startswith("deploy/remediation-workflows/") and path.endswith(".yaml")):
            continue
        docs = [d for d in mirror.documents(path) if d.get("kind") == "RemediationWorkflow"]
        for doc in docs:
            bundle = str(((doc.get("spec") or {}).get("execution") or {}).get("bundle") or "")
            by_bundle[_bundle(bundle)].append(str(doc["metadata"]["name"]))
            target = into / f"{doc['metadata']['name']}.yaml"
            target.write_text(yaml.safe_dump(doc, sort_keys=False))
            paths.append(target)
    return paths, by_bundle


def incidents(mirror: Mirror, by_bundle: dict[str, list[str]]) -> list[dict[str, Any]]:
    """Scenario documents (``aianalysis eval`` format) from the recorded analyses."""
    out = []
    seen: set[str] = set()
    for name, record in mirror.transcripts():
        doc = _scenario(mirror, record, by_bundle, name=name)
        if doc is not None and doc["name"] not in seen:
            seen.add(doc["name"])
            out.append(doc)
    return out


def _scenario(
    mirror: Mirror, record: Any, by_bundle: dict[str, list[str]], *, name: str
) -> dict[str, Any] | None:
    analysis = record.get("analysis") if isinstance(record, dict) else None
    signal = analysis.get("signal") if isinstance(analysis, dict) else None
    selected = analysis.get("selectedWorkflow") if isinstance(analysis, dict) else None
    if not isinstance(signal, dict) or not isinstance(selected, dict):
        return None
    target = signal.get("targetResource") or {}
    expected = by_bundle.get(_bundle(str(selected.get("executionBundle") or "")))
    alert = signal.get("signalName")
    if not expected or not alert or not target.get("kind") or target.get("kind") == "Unknown":
        return None
    folder = str(record.get("scenario") or "")
    environment = str(signal.get("environment") or "production").lower()
    spec = {
        "signal": {
            "type": alert,
            "severity": SEVERITY.get(str(signal.get("severity") or "high").lower(), "high"),
            "alertName": alert,
            "source": "prometheus-alertmanager",
            "errorMessage": _rule_text(mirror, ALIASES.get(folder, folder), alert) or alert,
        },
        "resource": {k: target[k] for k in ("kind", "name", "namespace") if target.get(k)},
        "businessContext": {
            "environment": environment
            if environment in ("production", "staging", "development")
            else "production",
            "priority": str(signal.get("businessPriority") or "P2"),
            "riskTolerance": "high",
        },
    }
    doc: dict[str, Any] = {
        "name": f"kn-{name}"[:128],
        "description": f"Derived from Kubernaut demo scenario {folder} ({alert}).",
        "tags": ["kubernaut", folder or "unknown"],
        "analysis": spec,
        "expect": {"workflowIds": sorted(expected)},
    }
    objects = [
        _placed(o, spec["resource"].get("namespace")) for o in _manifests(mirror, ALIASES.get(folder, folder))
    ]
    if objects:
        doc["cluster"] = objects
    return doc


#: Recorded analyses whose scenario name differs from the folder of its manifests.
ALIASES = {
    "rollout": "stuck-rollout",
    "taint": "pending-taint",
    "pdb": "pdb-deadlock",
    "slo": "slo-burn",
    "rbac": "rbac-failure",
    "scc": "scc-violation",
    "route": "route-misconfiguration",
    "statefulset": "statefulset-pvc-failure",
    "gitops": "gitops-drift",
    "mesh-failure": "mesh-routing-failure",
    "cascade": "cascading-service-failure",
    "db-saturation": "db-connection-saturation",
    "team-alpha": "concurrent-cross-namespace",
    "team-beta": "concurrent-cross-namespace",
    "operator": "operator-health",
    "build": "build-failure",
}


def _placed(obj: dict[str, Any], namespace: str | None) -> dict[str, Any]:
    """The manifest as deployed for the recorded incident: in the incident's namespace (the
    scenarios' run scripts deploy their manifests there through an overlay)."""
    if not namespace:
        return obj
    meta = dict(obj.get("metadata") or {})
    if obj.get("kind") == "Namespace":
        meta["name"] = namespace
    elif obj.get("kind") in CLUSTER_SCOPED:
        return obj
    else:
        meta["namespace"] = namespace
    return {**obj, "metadata": meta}


def _rule_text(mirror: Mirror, folder: str, alert: str) -> str | None:
    for doc in mirror.documents(f"scenarios/{folder}/manifests/prometheus-rule.yaml"):
        for group in (doc.get("spec") or {}).get("groups") or ():
            for rule in group.get("rules") or ():
                if rule.get("alert") == alert:
                    notes = rule.get("annotations") or {}
                    text = " ".join(str(notes.get(k) or "") for k in ("summary", "description"))
                    return " ".join(text.split()) or None
    return None


def _manifests(mirror: Mirror, folder: str) -> list[dict[str, Any]]:
    prefix = f"scenarios/{folder}/manifests/"
    objects = []
    for path in mirror.files:
        if path.startswith(prefix) and path.endswith(".yaml"):
            for doc in mirror.documents(path):
                meta = doc.get("metadata")
                if doc.get("kind") in CLUSTER_KINDS and isinstance(meta, dict) and meta.get("name"):
                    objects.append(doc)
    return objects


#: Scenario folder → the failure its injection script produces (modelled here, not copied).
FAULTS = {
    "crashloop": "crash_after_rollout",
    "alert-misdirection": "crash_after_rollout",
    "memory-escalation": "oom",
    "operator-oomkill-informer": "oom",
    "resource-contention": "oom",
    "stuck-rollout": "tag_missing",
    "rollout": "tag_missing",
    "image-pull-failure": "pull_denied",
    "concurrent-cross-namespace": "config_crash",
    "pending-taint": "taint",
    "pdb-deadlock": "drain",
    "gitops-drift": "gitops_port",
    "network-policy-block": "netpol",
    "cert-failure": "cert_issuer",
    "rbac-failure": "rbac_revoked",
}


def with_fault(doc: dict[str, Any], fault: str) -> None:
    """Add the failing ReplicaSet(s) and Pod(s) of ``fault`` for the incident's workload."""
    objects = doc.get("cluster") or []
    resource = doc["analysis"]["resource"]
    deployments = [o for o in objects if o.get("kind") == "Deployment"]
    workload = next((d for d in deployments if d["metadata"]["name"] == resource["name"]), None)
    workload = workload or (deployments[0] if deployments else None)
    if workload is None:
        return
    if fault == "drain":
        _drain(doc, objects)
        return
    if fault == "cert_issuer":
        _broken_issuer(objects)
        return
    name = workload["metadata"]["name"]
    template = ((workload.get("spec") or {}).get("template") or {}).get("spec") or {}
    containers = [dict(c) for c in template.get("containers") or () if isinstance(c, dict)]
    if not containers:
        return
    pod_name = resource["name"] if resource.get("kind") == "Pod" else f"{name}-7d4f9b8c6-kq2xz"
    first = containers[0]
    old_spec = {**template, "containers": containers}
    revision = 1
    new_spec = old_spec
    state: dict[str, Any]
    if fault == "crash_after_rollout":
        revision = 2
        new_spec = {**template, "containers": [{**first, "command": ["sh", "-c", "exit 1"]}, *containers[1:]]}
        state = _crashing("Error", 1, 6)
    elif fault == "tag_missing":
        revision = 2
        image = str(first.get("image") or "app").rsplit(":", 1)[0] + ":does-not-exist"
        new_spec = {**template, "containers": [{**first, "image": image}, *containers[1:]]}
        message = f'Back-off pulling image "{image}": manifest unknown: not found'
        state = {"state": {"waiting": {"reason": "ImagePullBackOff", "message": message}}, "restartCount": 0}
    else:
        revision, state = _same_template(fault, doc, objects, pod_name, namespace=resource.get("namespace"))
    workload.setdefault("metadata", {}).setdefault("annotations", {})[REVISION] = str(revision)
    failing = _pod(pod_name, f"{name}-r{revision}", new_spec, state)
    if fault == "taint":
        _unscheduled(failing)
    objects += [_replicaset(name, revision, new_spec), failing]
    if revision == 2:
        objects += [
            _replicaset(name, 1, old_spec),
            _pod(f"{name}-r1-healthy", f"{name}-r1", old_spec, dict(READY)),
        ]
    doc["cluster"] = objects


REVISION = "deployment.kubernetes.io/revision"
REFUSED_PULL = "failed to pull and unpack image: failed to authorize: 401 Unauthorized"


TAINTED_NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "worker-1"},
    "spec": {"taints": [{"key": "maintenance", "value": "scheduled", "effect": "NoSchedule"}]},
    "status": {"conditions": [{"type": "Ready", "status": "True"}]},
}


def _unscheduled(pod: dict[str, Any]) -> None:
    """The Pod as the scheduler leaves it when no Node tolerates it."""
    message = (
        "0/2 nodes are available: 1 node(s) had untolerated taint {maintenance: scheduled}, 1 node(s) "
        "had untolerated taint {node-role.kubernetes.io/control-plane: }."
    )
    pod["spec"].pop("nodeName", None)
    pod["status"] = {
        "phase": "Pending",
        "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
        ],
    }


def _gitops_port(
    doc: dict[str, Any], objects: list[dict[str, Any]], pod_name: str, *, namespace: str | None
) -> dict[str, Any]:
    for obj in (o for o in objects if o.get("kind") in ("ConfigMap", "Deployment")):
        meta = obj.setdefault("metadata", {})
        group = "apps" if obj["kind"] == "Deployment" else ""
        tracking = f"web-frontend:{group}/{obj['kind']}:{namespace}/{meta['name']}"
        meta.setdefault("annotations", {})["argocd.argoproj.io/tracking-id"] = tracking
        if obj["kind"] == "ConfigMap":
            obj["data"] = {
                k: str(v).replace("port: 8080", "port: 8443") for k, v in (obj.get("data") or {}).items()
            }
    refused = (
        'Liveness probe failed: Get "http://10.244.1.7:8080/healthz": dial tcp 10.244.1.7:8080: '
        "connect: connection refused"
    )
    for index, (reason, message) in enumerate(
        [("Unhealthy", refused), ("Killing", "Container failed liveness probe, will be restarted")]
    ):
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": f"{pod_name}.{index}", "namespace": namespace},
                "involvedObject": {"kind": "Pod", "name": pod_name, "namespace": namespace},
                "type": "Warning",
                "reason": reason,
                "message": message,
                "count": 9,
                "lastTimestamp": "2026-01-01T00:05:00Z",
            }
        )
    doc.setdefault("logs", {})[pod_name] = {
        "current": "",
        "previous": "loaded configuration from /etc/demo-http-server/config.yaml\nlistening on :8443\n",
    }
    return _crashing("Error", 137, 5)


def _same_template(
    fault: str, doc: dict[str, Any], objects: list[dict[str, Any]], pod_name: str, *, namespace: str | None
) -> tuple[int, dict[str, Any]]:
    """The revision and the failing container's status of a fault that leaves the pod template's
    containers as they are (a restart at most: revision 2)."""
    if fault == "oom":
        return 1, _crashing("OOMKilled", 137, 4)
    if fault == "config_crash":
        # The ConfigMap gets a directive the server rejects, then a restart.
        return 2, _config_crash(doc, objects, pod_name)
    if fault == "gitops_port":
        # A commit moves the server's port in the ConfigMap Argo CD syncs, with a restart; the
        # liveness probe still knocks on the old port, so the kubelet kills the container.
        return 2, _gitops_port(doc, objects, pod_name, namespace=namespace)
    if fault == "netpol":
        # The policy that admitted the web traffic is gone; the deny-all one stays; the traffic
        # generator's readiness probe (a request to the web tier) times out.
        return 1, _isolated(objects, pod_name, namespace=namespace)
    if fault == "rbac_revoked":
        # The workload's RoleBinding is deleted: its `kubectl get pods` loop prints FORBIDDEN and
        # its readiness probe (`kubectl auth can-i list pods`) answers "no".
        return 1, _revoked(doc, objects, pod_name, namespace=namespace)
    if fault == "taint":
        # The only worker Node is tainted NoSchedule; new Pods stay Pending on no Node.
        objects.append(copy.deepcopy(TAINTED_NODE))
        return 1, {"state": {"waiting": {"reason": "ContainerCreating"}}, "restartCount": 0}
    return 1, {"state": {"waiting": {"reason": "ErrImagePull", "message": REFUSED_PULL}}, "restartCount": 0}


def _revoked(
    doc: dict[str, Any], objects: list[dict[str, Any]], pod_name: str, *, namespace: str | None
) -> dict[str, Any]:
    objects[:] = [o for o in objects if o.get("kind") != "RoleBinding"]
    objects.append(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{pod_name}.unhealthy", "namespace": namespace},
            "involvedObject": {"kind": "Pod", "name": pod_name, "namespace": namespace},
            "type": "Warning",
            "reason": "Unhealthy",
            "message": "Readiness probe failed: no",
            "count": 30,
            "lastTimestamp": "2026-01-01T00:05:00Z",
        }
    )
    lines = [f"Thu Jan  1 00:0{minute}:00 UTC 2026 FORBIDDEN" for minute in range(3)]
    doc.setdefault("logs", {})[pod_name] = {"current": "\n".join(lines) + "\n"}
    return {"state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}, "ready": False, "restartCount": 0}


def _deny_all(objects: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next(
        (
            o
            for o in objects
            if o.get("kind") == "NetworkPolicy"
            and not ((o.get("spec") or {}).get("podSelector") or {})
            and not (o.get("spec") or {}).get("ingress")
        ),
        None,
    )


def _isolated(objects: list[dict[str, Any]], pod_name: str, *, namespace: str | None) -> dict[str, Any]:
    kept = _deny_all(objects)
    objects[:] = [o for o in objects if o.get("kind") != "NetworkPolicy" or o is kept]
    objects.append(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{pod_name}.unhealthy", "namespace": namespace},
            "involvedObject": {"kind": "Pod", "name": pod_name, "namespace": namespace},
            "type": "Warning",
            "reason": "Unhealthy",
            "message": "Readiness probe failed: curl: (28) Connection timed out after 2001 milliseconds",
            "count": 20,
            "lastTimestamp": "2026-01-01T00:05:00Z",
        }
    )
    return {"state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}, "ready": False, "restartCount": 0}


def _config_crash(doc: dict[str, Any], objects: list[dict[str, Any]], pod_name: str) -> dict[str, Any]:
    for config in (o for o in objects if o.get("kind") == "ConfigMap"):
        config["data"] = {k: f"{v}invalid_directive: true\n" for k, v in (config.get("data") or {}).items()}
    doc.setdefault("logs", {})[pod_name] = {
        "current": "",
        "previous": 'loading configuration\nerror: config.yaml: unknown field "invalid_directive"\n',
    }
    return _crashing("Error", 1, 5)


def _broken_issuer(objects: list[dict[str, Any]]) -> None:
    """The CA Secret behind the ClusterIssuer is deleted and the Certificate re-issued: both
    report Ready=False, as cert-manager writes it."""
    for obj in objects:
        if obj.get("kind") == "ClusterIssuer":
            secret = ((obj.get("spec") or {}).get("ca") or {}).get("secretName", "ca-key-pair")
            obj["status"] = {
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "False",
                        "reason": "ErrGetKeyPair",
                        "message": f'Error getting keypair for CA issuer: secrets "{secret}" not found',
                    }
                ]
            }
        elif obj.get("kind") == "Certificate":
            obj["status"] = {
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "False",
                        "reason": "DoesNotExist",
                        "message": "Issuing certificate as Secret does not exist",
                    }
                ]
            }


def _drain(doc: dict[str, Any], objects: list[dict[str, Any]]) -> None:
    """A drain of the Node running the PDB's Pods: the Node cordoned, the budget at its limit."""
    objects.append(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "worker-1"},
            "spec": {"unschedulable": True},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        }
    )
    for pdb in (o for o in objects if o.get("kind") == "PodDisruptionBudget"):
        wanted = int((pdb.get("spec") or {}).get("minAvailable") or 1)
        pdb["status"] = {"disruptionsAllowed": 0, "currentHealthy": wanted, "desiredHealthy": wanted}
    for deployment in (o for o in objects if o.get("kind") == "Deployment"):
        name = deployment["metadata"]["name"]
        template = ((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}
        if not template.get("containers"):
            continue
        objects.append(_replicaset(name, 1, template))
        ready = {
            "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
            "ready": True,
            "restartCount": 0,
        }
        for index in range(int((deployment.get("spec") or {}).get("replicas") or 1)):
            objects.append(_pod(f"{name}-r1-{index}", f"{name}-r1", template, ready))
    doc["cluster"] = objects


def _replicaset(owner: str, revision: int, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{owner}-r{revision}",
            "annotations": {REVISION: str(revision)},
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": owner, "controller": True}
            ],
        },
        "spec": {"template": {"spec": spec}},
    }


def _pod(name: str, owner: str, spec: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    first = spec["containers"][0]
    status = {"name": first.get("name"), "ready": False, **state}
    phase = "Pending" if "ImagePull" in str(state) or "ErrImagePull" in str(state) else "Running"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner, "controller": True}
            ],
        },
        "spec": {**spec, "nodeName": "worker-1"},
        "status": {"phase": phase, "containerStatuses": [status]},
    }


READY = {"state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}, "ready": True, "restartCount": 0}


def _crashing(reason: str, code: int, restarts: int) -> dict[str, Any]:
    """A container status in CrashLoopBackOff after its last run ended with ``reason``."""
    return {
        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
        "lastState": _ended(reason, code),
        "restartCount": restarts,
    }


def _ended(reason: str, code: int) -> dict[str, Any]:
    return {"terminated": {"reason": reason, "exitCode": code, "finishedAt": "2026-01-01T00:00:00Z"}}


def _bundle(reference: str) -> str:
    return reference.split("@", maxsplit=1)[0].rsplit("/", 1)[-1]


async def measure(mirror: Mirror, *, faults: bool = False) -> list[scoring.RunResult]:
    with tempfile.TemporaryDirectory(prefix="kubernaut-eval-") as tmp:
        source, imported = Path(tmp) / "source", Path(tmp) / "imported"
        source.mkdir()
        paths, by_bundle = workflows(mirror, source)
        importer.import_kubernaut(paths, out=imported)
        index = catalog.load_paths([imported])
        loaded = []
        for doc in incidents(mirror, by_bundle):
            fault = FAULTS.get(ALIASES.get(doc["tags"][1], doc["tags"][1])) if faults else None
            if fault is not None:
                with_fault(doc, fault)
            try:
                loaded.append(suite.parse(doc, path=Path(tmp) / f"{doc['name']}.yaml"))
            except suite.ScenarioError as exc:
                print(f"skipped {doc['name']}: {exc}", file=sys.stderr)
        return await runner.run_all(
            loaded, index=index, provider=offline.OfflineProvider(), settings=settings.Settings()
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--mirror", type=Path, required=True, help="git dir of kubernaut-demo-scenarios")
    parser.add_argument("--faults", action="store_true", help="model the injected failure state (FAULTS)")
    args = parser.parse_args(argv)
    results = asyncio.run(measure(Mirror(args.mirror), faults=args.faults))
    for r in results:
        got = r.selected_workflow or f"({r.human_review_reason}; proposed {r.candidate})"
        print(f"{'ok  ' if r.correct else 'miss'} {r.scenario:60} {got}")
    correct = sum(r.correct for r in results)
    print(f"\npicks Kubernaut expects: {correct}/{len(results)} = {correct / max(len(results), 1):.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
