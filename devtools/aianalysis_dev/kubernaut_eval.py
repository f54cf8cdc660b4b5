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

It prints accuracy (picks Kubernaut expects / scenarios) and one line per scenario. The same
pipeline as ``aianalysis eval`` runs each one.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from aianalysis import catalog, settings
from aianalysis.analysis.llm import offline
from aianalysis.catalog import importer
from aianalysis.evaluation import runner, scenario, scoring

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
    }
)


class Mirror:
    def __init__(self, git_dir: Path) -> None:
        self.git_dir = git_dir
        listed = self._git("ls-tree", "-r", "--name-only", "HEAD")
        self.files = listed.split()

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
    for path in sorted(
        p for p in mirror.files if p.startswith("golden-transcripts/") and p.endswith(".json")
    ):
        try:
            record = json.loads(mirror.show(path))
        except ValueError:
            continue
        doc = _scenario(mirror, record, by_bundle, name=Path(path).stem)
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
            "errorMessage": _rule_text(mirror, folder, alert) or alert,
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
    objects = _manifests(mirror, folder)
    if objects:
        doc["cluster"] = objects
    return doc


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


def _bundle(reference: str) -> str:
    return reference.split("@", maxsplit=1)[0].rsplit("/", 1)[-1]


async def measure(mirror: Mirror) -> list[scoring.RunResult]:
    with tempfile.TemporaryDirectory(prefix="kubernaut-eval-") as tmp:
        source, imported = Path(tmp) / "source", Path(tmp) / "imported"
        source.mkdir()
        paths, by_bundle = workflows(mirror, source)
        importer.import_kubernaut(paths, out=imported)
        index = catalog.load_paths([imported])
        loaded = []
        for doc in incidents(mirror, by_bundle):
            try:
                loaded.append(scenario.parse(doc, path=Path(tmp) / f"{doc['name']}.yaml"))
            except scenario.ScenarioError as exc:
                print(f"skipped {doc['name']}: {exc}", file=sys.stderr)
        return await runner.run_all(
            loaded, index=index, provider=offline.OfflineProvider(), settings=settings.Settings()
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--mirror", type=Path, required=True, help="git dir of kubernaut-demo-scenarios")
    args = parser.parse_args(argv)
    results = asyncio.run(measure(Mirror(args.mirror)))
    for r in results:
        got = r.selected_workflow or f"({r.human_review_reason}; proposed {r.candidate})"
        print(f"{'ok  ' if r.correct else 'miss'} {r.scenario:60} {got}")
    correct = sum(r.correct for r in results)
    print(f"\npicks Kubernaut expects: {correct}/{len(results)} = {correct / max(len(results), 1):.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
