"""Kubernaut's demo scenarios replayed for real on the node: their manifests, their own fault
injection, the alert their Prometheus rule fires — and our operator's offline provider on what the
kubelet, the scheduler and the controllers then report.

``python -m aianalysis_dev.kubernaut_node --mirror GIT_DIR [--only crashloop,pending-taint]``
reads a local clone (bare or not) of ``jordigilh/kubernaut-demo-scenarios`` at run time and copies
nothing of it into this repository:

- the catalog is the repository's ``deploy/remediation-workflows/``, imported with
  ``aianalysis catalog import --from kubernaut`` and applied to the node's cluster;
- a scenario's expected workflows are those its recorded analysis selected
  (``kubernaut_eval.incidents``: the same corpus as ``kubernaut_eval``);
- the scenario's manifests (core, apps and policy kinds; its PrometheusRule is read, not applied)
  are applied as written. Their images cannot be pulled here, so stand-ins are built with
  ``aianalysis_dev.oci`` under the very same references: ``demo-http-server`` is busybox's
  ``httpd`` answering 200 on every path the scenarios probe; ``e2e-test-images/busybox`` is busybox;
- their injection script runs as it is (``bash``, our kubectl on ``PATH``), after the workloads are
  available (before them where the scenario's own run does so, as ``pending-taint``);
- when the state the scenario's alert rule fires on is there (awaited with a deadline: restarts, an
  OOM kill, an unschedulable Pod, a stalled rollout, a PodDisruptionBudget at its limit during a
  drain), the alert — the rule's name and severity, the labels kube-state-metrics gives it — is
  posted to the operator's intake, and the analysis is awaited.

Scenarios that cannot run on one node of this machine are named in :data:`UNFITTING` with the
reason. It prints one line per scenario (right, wrong, declined, not run and why) and the total;
it starts its own node (the machine's one node: it waits for the lock) and stops it at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx

from aianalysis.catalog import importer
from aianalysis_dev import devcluster, incidents, kubernaut_eval, oci, reads

ROOT = Path(__file__).resolve().parents[2]
HTTP_SERVER = "quay.io/kubernaut-cicd/demo-http-server:1.0.0"
E2E_BUSYBOX = "registry.k8s.io/e2e-test-images/busybox:1.29-2"
APPLIED_KINDS = frozenset(
    {
        "Namespace", "ConfigMap", "Secret", "Service", "ServiceAccount", "Deployment", "StatefulSet",
        "Job", "PodDisruptionBudget", "ResourceQuota", "LimitRange", "PersistentVolumeClaim",
    }
)  # fmt: skip
"""Kinds of a scenario applied to the node (a PrometheusRule has no CRD here: it is read, not applied)."""
NODE_LABELS = ("kubernaut.ai/managed", "kubernaut.ai/workload-pool")
"""Labels the scenarios' scripts (or their set-up) give the worker node; removed afterwards."""
ANALYSIS_TIMEOUT = 180
FAULT_TIMEOUT = 240


@dataclasses.dataclass(frozen=True, kw_only=True)
class Fit:
    """How a scenario that fits one node is run."""

    inject: str | None
    """Its fault injection script (``scenarios/<name>/<inject>``); None: the fault is in its manifests."""
    inject_first: bool = False
    """The injection runs before the manifests are applied (as the scenario's own run does)."""
    node_labels: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Labels the scenario's set-up gives worker nodes before it runs (its run script does so)."""


FITTING: dict[str, Fit] = {
    "crashloop": Fit(inject="inject-bad-release.sh"),
    "alert-misdirection": Fit(inject="inject-bad-release.sh"),
    "memory-escalation": Fit(inject=None),
    "pending-taint": Fit(inject="inject-taint.sh", inject_first=True),
    "pdb-deadlock": Fit(inject="inject-drain.sh", node_labels={"kubernaut.ai/managed": "true"}),
    "stuck-rollout": Fit(inject="inject-bad-image.sh"),
}

_OPERATORS = "needs an operator or API this cluster does not serve"
UNFITTING: dict[str, str] = {
    "alert-storm": "recorded against a scenario folder that no longer exists",
    "build-failure": f"{_OPERATORS} (OpenShift builds)",
    "cascading-service-failure": "its database image (OpenShift postgresql) has no stand-in here",
    "cert-failure": f"{_OPERATORS} (cert-manager)",
    "crashloop-helm": "installed as a Helm release whose values drive the fault; not replayed yet",
    "cross-namespace-dependency": "its failure is a dependency's in another namespace; not replayed yet",
    "db-connection-saturation": "its database and exporter images have no stand-in here",
    "duplicate-alert-suppression": "its fault is a configuration the real demo server rejects; the stand-in "
    "reads no configuration",
    "etcd-defrag-forecast": "its alert is a forecast from etcd metrics (no Prometheus here)",
    "gitops-drift": f"{_OPERATORS} (Argo CD, a Git server)",
    "hpa-maxed": "needs the metrics API and load (no metrics-server here)",
    "image-pull-failure": "its image is pulled at every start (imagePullPolicy: Always) and every pull "
    "fails on this machine: the healthy state before the fault cannot be reached",
    "network-policy-block": "the node's CNI (bridge) does not enforce NetworkPolicies",
    "operator-health": f"{_OPERATORS} (OLM)",
    "operator-oomkill-informer": "its operator image has no stand-in here",
    "pvc-capacity-forecast": "its alert is a forecast from kubelet volume metrics (no Prometheus here)",
    "rbac-failure": "its stand-in would have to call the API as the real demo server does; not replayed yet",
    "red-herring-noise": "several injected faults whose alerts need metrics; not replayed yet",
    "resource-contention": "its stress image has no stand-in here",
    "route-misconfiguration": f"{_OPERATORS} (OpenShift routes)",
    "scc-violation": f"{_OPERATORS} (OpenShift SCCs)",
    "severity-misdirection": "its database image (OpenShift postgresql) has no stand-in here",
    "slo-burn": "its alert is an error-budget burn rate from request metrics (no Prometheus here)",
    "statefulset-pvc-failure": "needs a storage provisioner (none on the node)",
    "concurrent-cross-namespace": "two namespaces' faults at once; not replayed yet",
    "xns-infra": "its failure is an infrastructure namespace's; not replayed yet",
}


@dataclasses.dataclass(frozen=True, kw_only=True)
class Outcome:
    scenario: str
    alert: str
    expected: tuple[str, ...]
    selected: str | None = None
    review: str | None = None
    error: str | None = None

    @property
    def right(self) -> bool:
        return self.selected in self.expected

    def line(self) -> str:
        head = f"{self.scenario:22} {self.alert:32}"
        expected = f"(expected {', '.join(self.expected)})"
        if self.error:
            return f"error    {head} {self.error}"
        if self.selected is None:
            return f"declined {head} {self.review} {expected}"
        return f"{'right' if self.right else 'wrong':8} {head} {self.selected} {expected}"


# --- stand-in images -------------------------------------------------------------------------------

SERVE = (
    "mkdir -p /tmp/www && for p in index.html healthz readyz livez health ready metrics api; do "
    "echo ok > /tmp/www/$p; done; echo demo-http-server stand-in listening on 8080; "
    "exec httpd -f -p 8080 -h /tmp/www"
)
"""The demo server's stand-in: 200 ``ok`` on the paths its scenarios probe, in the foreground."""


def stand_ins(out: Path, *, busybox: Path) -> list[Path]:
    """The images the fitting scenarios name, built from busybox under the same references."""
    return [
        oci.busybox_image(out / f"stand-in-{n}.tar", busybox=busybox, ref=ref, config=config)
        for n, (ref, config) in enumerate(
            (
                (
                    HTTP_SERVER,
                    oci.Config(entrypoint=["/bin/sh", "-c", SERVE], env={"PATH": oci.DEFAULT_PATH}),
                ),
                (E2E_BUSYBOX, None),
            )
        )
    ]


# --- the state each alert fires on ----------------------------------------------------------------


def _pods(cluster: devcluster.NodeCluster, namespace: str) -> list[dict[str, Any]]:
    return reads.listed(cluster, "pods", namespace)


def _containers(pods: list[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    for pod in pods:
        for status in (pod.get("status") or {}).get("containerStatuses") or ():
            yield pod, status


def _pod_labels(pod: Mapping[str, Any], status: Mapping[str, Any] | None) -> dict[str, str]:
    labels = {"pod": pod["metadata"]["name"]}
    if status is not None:
        labels["container"] = status["name"]
    return labels


def _crash_looping(cluster: devcluster.NodeCluster, namespace: str, _: str) -> dict[str, str] | None:
    return next(
        (
            _pod_labels(p, s)
            for p, s in _containers(_pods(cluster, namespace))
            if s.get("restartCount", 0) >= 2
        ),
        None,
    )


def _oom_killed(cluster: devcluster.NodeCluster, namespace: str, _: str) -> dict[str, str] | None:
    for pod, status in _containers(_pods(cluster, namespace)):
        ended = {
            (status.get(key) or {}).get("terminated", {}).get("reason") for key in ("lastState", "state")
        }
        if "OOMKilled" in ended:
            return _pod_labels(pod, status) | {"reason": "OOMKilled"}
    return None


def _unschedulable(cluster: devcluster.NodeCluster, namespace: str, _: str) -> dict[str, str] | None:
    for pod in _pods(cluster, namespace):
        for condition in (pod.get("status") or {}).get("conditions") or ():
            if condition.get("type") == "PodScheduled" and condition.get("reason") == "Unschedulable":
                return _pod_labels(pod, None)
    return None


def _rollout_stuck(cluster: devcluster.NodeCluster, namespace: str, name: str) -> dict[str, str] | None:
    got = reads.get(cluster, "deployment", name, namespace) or {}
    for condition in (got.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Progressing" and condition.get("status") == "False":
            return {"deployment": name}
    return None


def _budget_at_limit(cluster: devcluster.NodeCluster, namespace: str, name: str) -> dict[str, str] | None:
    budget = reads.get(cluster, "pdb", name, namespace) or {}
    status = budget.get("status") or {}
    node = reads.get(cluster, "node", cluster.node_name) or {}
    draining = bool((node.get("spec") or {}).get("unschedulable"))
    if draining and status.get("disruptionsAllowed") == 0 and status.get("expectedPods", 0) > 0:
        return {"poddisruptionbudget": name}
    return None


FIRES_ON: dict[str, Callable[[devcluster.NodeCluster, str, str], dict[str, str] | None]] = {
    "KubePodCrashLooping": _crash_looping,
    "ContainerOOMKilling": _oom_killed,
    "KubePodNotScheduled": _unschedulable,
    "KubeDeploymentRolloutStuck": _rollout_stuck,
    "KubePodDisruptionBudgetAtLimit": _budget_at_limit,
}
"""Alert name → the state its rule fires on, as the labels kube-state-metrics gives the series."""


# --- one scenario ---------------------------------------------------------------------------------


@dataclasses.dataclass
class Operator:
    process: subprocess.Popen[bytes]
    intake: str
    token: str
    log: Path


@contextlib.contextmanager
def running_operator(cluster: devcluster.NodeCluster, work: Path) -> Iterator[Operator]:
    """The operator (offline provider, intake on), stopped on leaving."""
    intake, health, metrics = devcluster.free_ports(3)
    token = secrets.token_hex(16)
    mapping = work / "intake-mapping.yaml"
    mapping.write_text('namespaces: ["*"]\n')  # the scenarios' namespaces, on a node of our own
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AIANALYSIS_", "ANTHROPIC_"))},
        "KUBECONFIG": str(cluster.kubeconfig),
        "AIANALYSIS_PROVIDER": "offline",
        "AIANALYSIS_INTAKE_PORT": str(intake),
        "AIANALYSIS_INTAKE_TOKEN": token,
        "AIANALYSIS_INTAKE_MAPPING_FILE": str(mapping),
        "AIANALYSIS_INTAKE_ALLOW_PLAIN_HTTP": "true",  # loopback only
        "AIANALYSIS_HEALTH_PORT": str(health),
        "AIANALYSIS_METRICS_PORT": str(metrics),
    }
    log = work / "operator.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "aianalysis", "run"], env=env, stdout=sink, stderr=subprocess.STDOUT,
            cwd=ROOT, start_new_session=True,
        )  # fmt: skip
    try:
        incidents.until(lambda: _healthy(process, health), what="the operator to be healthy", timeout=90)
        yield Operator(
            process=process, intake=f"http://127.0.0.1:{intake}/api/v1/alertmanager", token=token, log=log
        )
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _healthy(process: subprocess.Popen[bytes], port: int) -> bool:
    if process.poll() is not None:
        raise RuntimeError(f"the operator exited with {process.returncode}")
    with contextlib.suppress(httpx.HTTPError):
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200
    return False


def replay(
    cluster: devcluster.NodeCluster,
    mirror: kubernaut_eval.Mirror,
    operator: Operator,
    doc: Mapping[str, Any],
    *,
    folder: str,
    work: Path,
) -> Outcome:
    """Run one scenario: manifests, injection, the alert, the analysis; then undo it."""
    fit = FITTING[folder]
    signal = doc["analysis"]["signal"]
    resource = doc["analysis"]["resource"]
    alert_name = signal["alertName"]
    namespace, name = target_home(_scenario_objects(mirror, folder), resource)
    expected = tuple(doc["expect"]["workflowIds"])
    outcome = Outcome(scenario=folder, alert=alert_name, expected=expected)
    scripts = _extract(mirror, folder, work)
    groups: list[int] = []
    try:
        for key, value in fit.node_labels.items():
            cluster.kubectl("label", "node", cluster.node_name, f"{key}={value}", "--overwrite")
        if fit.inject and fit.inject_first:
            _run_script(cluster, scripts / fit.inject, groups=groups)
        _apply(cluster, mirror, folder)
        if not fit.inject_first:
            for deployment in _deployments(mirror, folder):
                cluster.kubectl(
                    "rollout", "status", f"deployment/{deployment}", "-n", namespace, "--timeout=180s"
                )
        if fit.inject and not fit.inject_first:
            _run_script(cluster, scripts / fit.inject, groups=groups)
        labels = incidents.until(
            lambda: FIRES_ON[alert_name](cluster, namespace, name),
            what=f"the state {alert_name} fires on in {namespace}",
            timeout=FAULT_TIMEOUT,
        )
        rule = _rule_labels(mirror, folder, alert_name)
        alert = incidents.firing_alert(
            alert_name,
            {**rule, "namespace": namespace, **labels},
            summary=signal.get("errorMessage") or alert_name,
            description=signal.get("errorMessage") or alert_name,
        )
        body = incidents.NodeIncident(
            kind=folder, namespace=namespace, alert=alert, workload=resource
        ).payload()
        answer = httpx.post(
            operator.intake, json=body, headers={"Authorization": f"Bearer {operator.token}"}, timeout=10
        )
        if answer.status_code != 200:
            return dataclasses.replace(
                outcome, error=f"the intake answered {answer.status_code}: {answer.text}"
            )
        analysis = incidents.until(
            lambda: _ended(cluster, namespace), what=f"the analysis in {namespace}", timeout=ANALYSIS_TIMEOUT
        )
        status = analysis.get("status") or {}
        selected = (status.get("selectedWorkflow") or {}).get("workflowId")
        return dataclasses.replace(
            outcome, selected=selected, review=status.get("humanReviewReason") or status.get("message")
        )
    except subprocess.CalledProcessError as exc:
        said = str(exc.output or "").strip().splitlines()[-1:] if exc.output else []
        return dataclasses.replace(
            outcome, error=f"{exc.cmd} exited {exc.returncode}: {' '.join(said)}"[:300]
        )
    except (TimeoutError, devcluster.DevClusterError) as exc:
        return dataclasses.replace(outcome, error=str(exc).splitlines()[0][:300])
    finally:
        _end_groups(groups)
        _undo(cluster, namespace)


def target_home(objects: list[dict[str, Any]], recorded: Mapping[str, str]) -> tuple[str, str]:
    """The namespace and name of the recorded target as the scenario's manifests have them now
    (a scenario's namespace was renamed since some recordings): its one Namespace, and the one
    object of the target's kind when the recorded name is not among them."""
    namespaces = [str(o["metadata"]["name"]) for o in objects if o.get("kind") == "Namespace"]
    namespace = namespaces[0] if len(namespaces) == 1 else recorded["namespace"]
    same_kind = [str(o["metadata"]["name"]) for o in objects if o.get("kind") == recorded["kind"]]
    name = recorded["name"] if recorded["name"] in same_kind or len(same_kind) != 1 else same_kind[0]
    return namespace, name


def _extract(mirror: kubernaut_eval.Mirror, folder: str, work: Path) -> Path:
    """The scenario's scripts and manifests, written out to run them (read at run time, kept
    nowhere; the mirror may lack its large recordings, so not the whole folder)."""
    prefix = f"scenarios/{folder}/"
    for path in mirror.files:
        if path.startswith(prefix) and (path.endswith(".sh") or "/manifests/" in path):
            target = work / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(mirror.show(path))
    return work / "scenarios" / folder


def _run_script(cluster: devcluster.NodeCluster, script: Path, *, groups: list[int]) -> None:
    """The scenario's own script, with our kubectl on PATH and the node's kubeconfig. What it leaves
    running in the background (``pdb-deadlock``'s drain) stays in its process group, whose id is
    added to ``groups`` to be ended with the scenario."""
    env = {
        **os.environ,
        "PATH": f"{cluster.binaries.dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "KUBECONFIG": str(cluster.kubeconfig),
    }
    with (script.parent / f"{script.name}.log").open("wb") as log:
        process = subprocess.Popen(
            ["bash", str(script)], env=env, cwd=script.parent, start_new_session=True, stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    groups.append(process.pid)
    if process.wait(timeout=180) != 0:
        output = (script.parent / f"{script.name}.log").read_text(errors="replace")
        raise subprocess.CalledProcessError(process.returncode, script.name, output=output)


def _end_groups(groups: list[int]) -> None:
    for group in groups:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGTERM)


def _scenario_objects(mirror: kubernaut_eval.Mirror, folder: str) -> list[dict[str, Any]]:
    prefix = f"scenarios/{folder}/manifests/"
    return [
        doc
        for path in mirror.files
        if path.startswith(prefix) and path.count("/") == 3 and path.endswith((".yaml", ".yml"))
        for doc in mirror.documents(path)
        if doc.get("kind") in APPLIED_KINDS
    ]


def _apply(cluster: devcluster.NodeCluster, mirror: kubernaut_eval.Mirror, folder: str) -> None:
    objects = _scenario_objects(mirror, folder)
    ordered = sorted(objects, key=lambda o: o.get("kind") != "Namespace")
    cluster.kubectl(
        "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": ordered})
    )


def _deployments(mirror: kubernaut_eval.Mirror, folder: str) -> list[str]:
    return [
        str(o["metadata"]["name"]) for o in _scenario_objects(mirror, folder) if o.get("kind") == "Deployment"
    ]


def _rule_labels(mirror: kubernaut_eval.Mirror, folder: str, alert: str) -> dict[str, str]:
    for doc in mirror.documents(f"scenarios/{folder}/manifests/prometheus-rule.yaml"):
        for group in (doc.get("spec") or {}).get("groups") or ():
            for rule in group.get("rules") or ():
                if rule.get("alert") == alert:
                    return {str(k): str(v) for k, v in (rule.get("labels") or {}).items()}
    return {}


def _ended(cluster: devcluster.NodeCluster, namespace: str) -> dict[str, Any] | None:
    listed = reads.listed(cluster, "aianalyses", namespace)
    done = [a for a in listed if (a.get("status") or {}).get("phase") in ("Completed", "Failed")]
    return done[0] if done else None


def _undo(cluster: devcluster.NodeCluster, namespace: str) -> None:
    """What a scenario changed: its namespace, the node's cordon, taints and labels."""
    cluster.kubectl("uncordon", cluster.node_name, check=False)
    cluster.kubectl("taint", "node", cluster.node_name, "maintenance-", check=False)
    for key in NODE_LABELS:
        cluster.kubectl("label", "node", cluster.node_name, f"{key}-", check=False)
    cluster.kubectl("delete", "namespace", namespace, "--ignore-not-found", "--timeout=120s", check=False)


# --- the run --------------------------------------------------------------------------------------


def measure(
    mirror: kubernaut_eval.Mirror, *, only: set[str] | None = None
) -> tuple[list[Outcome], dict[str, str]]:
    """The outcome of every fitting scenario (of ``only``), and the others with why they did not run."""
    with tempfile.TemporaryDirectory(prefix="kubernaut-node-") as tmp:
        work = Path(tmp)
        source, imported = work / "source", work / "imported"
        source.mkdir()
        paths, by_bundle = kubernaut_eval.workflows(mirror, source)
        importer.import_kubernaut(paths, out=imported)
        docs: dict[str, dict[str, Any]] = {}
        for doc in kubernaut_eval.incidents(mirror, by_bundle):
            folder = kubernaut_eval.ALIASES.get(doc["tags"][1], doc["tags"][1])
            docs.setdefault(folder, doc)
        skipped = {f: UNFITTING.get(f, "not classified yet") for f in docs if f not in FITTING}
        chosen = [f for f in FITTING if f in docs and (only is None or f in only)]
        outcomes: list[Outcome] = []
        cluster = devcluster.NodeCluster().start()
        try:
            devcluster.apply_crds(cluster, ROOT / "crds")
            cluster.kubectl("apply", "-f", str(imported))
            for tar in stand_ins(work, busybox=cluster.node_binaries.busybox):
                cluster.import_image(tar)
            with running_operator(cluster, work) as operator:
                for folder in chosen:
                    scratch = work / folder
                    scratch.mkdir()
                    outcome = replay(cluster, mirror, operator, docs[folder], folder=folder, work=scratch)
                    print(outcome.line(), flush=True)
                    outcomes.append(outcome)
        finally:
            cluster.stop()
        return outcomes, skipped


def report(outcomes: list[Outcome], skipped: Mapping[str, str]) -> str:
    lines = [o.line() for o in outcomes]
    lines += [f"not run  {name:22} {why}" for name, why in sorted(skipped.items())]
    right = sum(o.right for o in outcomes)
    lines.append(
        f"\nright {right}/{len(outcomes)} of the scenarios that fit one node "
        f"({sum(o.selected is None and not o.error for o in outcomes)} declined, "
        f"{sum(bool(o.selected) and not o.right for o in outcomes)} wrong, "
        f"{sum(bool(o.error) for o in outcomes)} errors); {len(skipped)} do not fit"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--mirror", type=Path, required=True, help="git dir of kubernaut-demo-scenarios")
    parser.add_argument("--only", help="comma-separated scenario names (default: every fitting one)")
    args = parser.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    if only and (unknown := only - set(FITTING)):
        parser.error(
            f"not a scenario that fits one node: {', '.join(sorted(unknown))} (fitting: {', '.join(FITTING)})"
        )
    outcomes, skipped = measure(kubernaut_eval.Mirror(args.mirror), only=only)
    print(report(outcomes, skipped))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
