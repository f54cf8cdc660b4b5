"""``aianalysis demo``: the whole product on a throw-away local control plane.

Where the machine can run a real node (root, cgroups: ``devcluster.node_unavailable_reason``) the
demo runs there (:mod:`aianalysis_dev.demo_node`: real failures, real fixes, judged); otherwise, or
with ``AIANALYSIS_DEMO_WORLD=simulated``, in the simulated world below, saying why.

Starts etcd + kube-apiserver + kube-controller-manager (the Job controller), installs the CRDs and
the example catalog, creates the workloads the demo's incidents name with the failure state a real
cluster would show (``examples/demo/``, written by :mod:`aianalysis_dev.world` as a kubelet and the
controllers would: crash-looping Pods of a new ReplicaSet, OOM-killed containers, an HPA at its
ceiling, a Node under disk pressure...), runs the operator and the executor as separate processes
(exactly as ``aianalysis run`` and ``aianalysis executor``), creates the incidents, then closes the
loop for one incident: approve → Job → its Pod is OOMKilled → execution Failed (``OOMKilled``) →
recovery analysis → approve the different workflow it chose → Job succeeds → execution Completed.
It ends with ``kubectl get aia`` and a short "what just happened". Nothing is left running.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from aianalysis import errors, settings
from aianalysis_dev import devcluster, loop, reads, world
from aianalysis_dev.incidents import until

NAMESPACE = "demo"
#: The example incident whose execution the demo runs (and fails), to show recovery closing the loop.
DEMO_RECOVERY_INCIDENT = "orders-api-crashloop"
TERMINAL = ("Completed", "Failed")
WORLD_ENV = "AIANALYSIS_DEMO_WORLD"
"""``auto`` (default): the real node where this machine can run one, else the simulated world;
``node`` or ``simulated`` to choose."""


def find_root(start: Path | None = None) -> Path:
    """The project checkout holding ``crds/`` and ``examples/`` (the demo ships their YAML)."""
    candidates = [start or Path.cwd(), Path(__file__).resolve().parents[2]]
    for base in candidates:
        for folder in (base, *base.parents):
            if (folder / "crds").is_dir() and (folder / "examples" / "catalog").is_dir():
                return folder
    raise errors.ConfigError(
        "run the demo from the aianalysis-operator checkout (crds/ and examples/ not found)"
    )


def run(
    *, root: Path | None = None, timeout_seconds: float = 300.0, out: Callable[[str], None] = print
) -> int:
    root = find_root(root)
    choice = os.environ.get(WORLD_ENV, "auto")
    if choice not in ("auto", "node", "simulated"):
        raise errors.ConfigError(f"{WORLD_ENV} takes auto, node or simulated; got {choice!r}")
    # A SIGTERM (``timeout``, a closed terminal) unwinds like Ctrl-C: the operator, the executor
    # and the cluster are stopped by the ``with`` blocks, never left running.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    reason = devcluster.node_unavailable_reason() if choice != "simulated" else None
    if choice != "simulated" and reason is None:
        from aianalysis_dev import demo_node  # noqa: PLC0415 — the node's world only where it runs

        return demo_node.run(root=root, out=out, timeout_seconds=timeout_seconds)
    if choice == "node":
        raise errors.ConfigError(f"{WORLD_ENV}=node, but this machine cannot run a real node: {reason}")
    why = f"this machine cannot run a real node: {reason}" if reason else f"chosen by {WORLD_ENV}=simulated"
    out(f"world: SIMULATED ({why}) — Pod and Job statuses are written as a kubelet would")
    started = time.monotonic()

    def step(text: str) -> None:
        out(f"[{time.monotonic() - started:6.1f}s] {text}")

    step("starting a local control plane (etcd + kube-apiserver + kube-controller-manager, no Docker)")
    with devcluster.DevCluster(controller_manager=True) as cluster:
        step(f"control plane ready at {cluster.server}")
        devcluster.apply_crds(cluster, root / "crds")  # and the approval policy: approvals are checked
        step("CRDs and the approval policy installed")
        cluster.kubectl("apply", "-f", str(root / "examples" / "catalog"))
        count = len(reads.listed(cluster, "remediationworkflows"))
        step(f"example catalog installed: {count} RemediationWorkflows")
        cluster.kubectl("create", "namespace", NAMESPACE)
        with _operator(cluster, root) as log_file, _operator(cluster, root, command="executor") as exec_log:
            step(f"operator running (provider: {_provider()}; log: {log_file})")
            step(f"executor running (runs approved WorkflowExecutions as Jobs; log: {exec_log})")
            incidents = world.load(root / "examples" / "demo", namespace=NAMESPACE)
            with cluster.api_client() as api:
                written = world.stage(api, incidents)
            step(
                f"created the {written} objects the {len(incidents)} incidents name (Deployments, "
                "ReplicaSets, Pods, Nodes, an HPA) with the status a kubelet and controllers would write"
            )
            for incident in incidents:
                cluster.kubectl(
                    "apply", "-n", NAMESPACE, "-f", "-", input=json.dumps(world.analysis(incident))
                )
            step(f"created {len(incidents)} AIAnalyses (the incidents); waiting for the analyses")
            analyses = _wait_terminal(cluster, len(incidents), timeout_seconds, step)
            shown = _close_the_loop(cluster, analyses, timeout_seconds, step)
            out("")
            out(cluster.kubectl("get", "aianalyses", "-n", NAMESPACE).stdout)
            out(cluster.kubectl("get", "workflowexecutions", "-n", NAMESPACE).stdout)
            final = sorted(
                reads.listed(cluster, "aianalyses", NAMESPACE), key=lambda i: i["metadata"]["name"]
            )
            out(summary(final, incidents, recovery=shown))
        step("operator and executor stopped")
    step("control plane stopped; nothing left running")
    return 0


def _exit_on_sigterm(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def _provider() -> str:
    """The provider the operator process will pick (same settings, same environment)."""
    return settings.from_env().llm.provider


@contextlib.contextmanager
def _operator(cluster: devcluster.DevCluster, root: Path, *, command: str = "run") -> Iterator[Path]:
    log_file = Path(tempfile.mkdtemp(prefix="aianalysis-demo-")) / f"{command}.log"
    extra = {
        # The example incidents name their own namespaces and are applied into the demo's one.
        "AIANALYSIS_CROSS_NAMESPACE": f"{NAMESPACE}=*",
        # One local API server sees the approval policy at once: approvals count a second after it.
        "AIANALYSIS_EXECUTOR_APPROVAL_POLICY_MARGIN_SECONDS": "1",
    }
    with operator_process(
        cluster, root=root, log_file=log_file, command=command, inherit=os.environ, extra=extra
    ):
        yield log_file


@contextlib.contextmanager
def operator_process(
    cluster: devcluster.Cluster,
    *,
    root: Path,
    log_file: Path,
    command: str,
    inherit: Mapping[str, str],
    extra: Mapping[str, str],
) -> Iterator[None]:
    """``python -m aianalysis <command>`` (the container's entrypoint) against ``cluster``, logging to
    ``log_file``: ``inherit``'s environment, the ports the OS picks, then ``extra``. Its whole session is
    stopped on leaving."""
    env = {
        **inherit,
        "KUBECONFIG": str(cluster.kubeconfig),
        "AIANALYSIS_METRICS_PORT": "0",
        "AIANALYSIS_HEALTH_PORT": "0",
        **extra,
    }
    with log_file.open("w") as sink:
        proc = subprocess.Popen(  # the real entrypoint, as in the container
            [sys.executable, "-m", "aianalysis", command],
            env=env, stdout=sink, stderr=subprocess.STDOUT, cwd=root, start_new_session=True,
        )  # fmt: skip
        try:
            yield
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _wait_terminal(
    cluster: devcluster.DevCluster, expected: int, timeout: float, step: Callable[[str], None]
) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    reported = -1
    while True:
        items = reads.listed(cluster, "aianalyses", NAMESPACE)
        done = [i for i in items if (i.get("status") or {}).get("phase") in TERMINAL]
        if len(done) != reported:
            reported = len(done)
            step(f"{len(done)}/{expected} analyses finished")
        if len(done) >= expected:
            return sorted(done, key=lambda i: i["metadata"]["name"])
        if time.monotonic() > deadline:
            raise errors.AIAnalysisError(f"only {len(done)}/{expected} analyses finished in {timeout:.0f}s")
        time.sleep(1.0)


def _close_the_loop(
    cluster: devcluster.DevCluster,
    analyses: list[dict[str, Any]],
    timeout: float,
    step: Callable[[str], None],
) -> str | None:
    """approve → Job → Pod OOMKilled → Failed → recovery → approve → Job succeeds → Completed."""
    chosen = next((a for a in analyses if a["metadata"]["name"] == DEMO_RECOVERY_INCIDENT), None)
    if chosen is None or not (chosen.get("status") or {}).get("selectedWorkflow"):
        step(f"{DEMO_RECOVERY_INCIDENT} selected no workflow; skipping the execution demo")
        return None
    name = chosen["metadata"]["name"]
    first = _approve(cluster, chosen, step)
    pod = _wait_pod(cluster, first, timeout)
    _kubelet(cluster, pod, phase="Running", state={"running": {"startedAt": _now()}})
    _kubelet(cluster, pod, phase="Failed", state=_terminated("OOMKilled", 137))
    step(f"pod/{pod} of job/{first}: the (simulated) kubelet reports the container OOMKilled, exit code 137")
    failed = loop.ended_execution(cluster, NAMESPACE, first, timeout=timeout)
    details = failed["status"].get("failureDetails") or {}
    step(
        f"workflowexecution/{first}: {failed['status']['phase']} "
        f"({details.get('reason')}, exit code {details.get('exitCode')})"
    )
    recovery = loop.ended_analysis(cluster, NAMESPACE, f"{name}-recovery-1", timeout=timeout)
    picked = (recovery.get("status") or {}).get("selectedWorkflow")
    if not picked:
        step(
            f"recovery analysis {name}-recovery-1 selected no workflow "
            f"({recovery['status'].get('humanReviewReason')})"
        )
        return str(recovery["metadata"]["name"])
    step(
        f"recovery analysis {name}-recovery-1 chose a different workflow: "
        f"{picked['workflowId']} {picked['version']}"
    )
    second = _approve(cluster, recovery, step)
    pod = _wait_pod(cluster, second, timeout)
    _kubelet(cluster, pod, phase="Running", state={"running": {"startedAt": _now()}})
    _kubelet(cluster, pod, phase="Succeeded", state=_terminated("Completed", 0))
    step(f"pod/{pod} of job/{second}: the (simulated) kubelet reports success")
    done = loop.ended_execution(cluster, NAMESPACE, second, timeout=timeout)
    step(f"workflowexecution/{second}: {done['status']['phase']}")
    return str(recovery["metadata"]["name"])


def _approve(cluster: devcluster.DevCluster, analysis: dict[str, Any], step: Callable[[str], None]) -> str:
    """``aianalysis approve`` as a person runs it after reading ``aianalysis show``; the
    WorkflowExecution it created."""
    command, created = loop.approve(cluster, analysis)
    step(f"$ {command}\n         workflowexecution/{created} created")
    return created


def _wait_pod(cluster: devcluster.DevCluster, execution: str, timeout: float) -> str:
    def pod() -> str | None:
        pods = reads.listed(
            cluster, "pods", NAMESPACE, selector=f"kubernaut.io/workflow-execution={execution}"
        )
        return str(pods[0]["metadata"]["name"]) if pods else None

    return str(until(pod, what=f"the Job controller to create the Pod of {execution}", timeout=timeout))


def _kubelet(cluster: devcluster.DevCluster, pod: str, *, phase: str, state: dict[str, Any]) -> None:
    """What a kubelet would write for the workflow's one container (there is no kubelet here)."""
    container = {
        "name": "workflow",
        "image": "workflow",
        "imageID": "",
        "ready": False,
        "restartCount": 0,
        "state": state,
    }
    status = {"status": {"phase": phase, "containerStatuses": [container]}}
    cluster.kubectl(
        "patch", "pod", pod, "-n", NAMESPACE, "--subresource=status", "--type=merge", "-p", json.dumps(status)
    )


def _terminated(reason: str, code: int) -> dict[str, Any]:
    return {"terminated": {"reason": reason, "exitCode": code, "startedAt": _now(), "finishedAt": _now()}}


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def summary(analyses: list[dict[str, Any]], incidents: list[world.Incident], *, recovery: str | None) -> str:
    """The demo's closing words: what each analysis concluded, checked against what the incident's
    file expects, and the commands to look closer."""
    expected = {i.name: i.expect for i in incidents}
    picked, declined, wrong = [], [], []
    for item in analyses:
        name, st = item["metadata"]["name"], item.get("status") or {}
        selected = (st.get("selectedWorkflow") or {}).get("workflowId")
        expect = expected.get(name)
        if expect is None:
            continue
        if selected and selected in expect.get("workflowIds", []):
            picked.append(f"{name} -> {selected} (confidence {st['selectedWorkflow']['confidence']})")
        elif not selected and not expect.get("workflowIds") and st.get("needsHumanReview"):
            why = (st.get("rootCause") or {}).get("summary", "")
            declined.append(f"{name} ({st.get('humanReviewReason')}): {_first_sentence(why)}")
        else:
            wrong.append(f"{name}: got {selected or st.get('humanReviewReason')}")
    lines = [
        "",
        "What just happened",
        f"  The offline provider (no API key) investigated {len(incidents)} incidents through the read-only",
        "  tools an LLM gets (owner chain, Pods, rollout revisions, events, Nodes, HPA), ran its analyzers",
        "  and picked only what the evidence supports, with parameters read from the cluster:",
        *(f"    + {line}" for line in picked),
        "  Declined, with the reason (a person decides):",
        *(f"    - {line}" for line in declined),
        *(f"    ! unexpected: {line}" for line in wrong),
    ]
    if recovery:
        lines.append(
            f"  {DEMO_RECOVERY_INCIDENT}'s execution then failed (OOMKilled); the recovery analysis "
            f"{recovery} chose a different workflow, which ran."
        )
    lines += [
        "Next",
        f"  kubectl get aia -n {NAMESPACE} {DEMO_RECOVERY_INCIDENT} -o yaml  # rationale, evidence",
        "  aianalysis eval --scenarios examples/demo --catalog examples/catalog  # the same, scored",
        "  ANTHROPIC_API_KEY=... make demo  # the same demo with Claude doing the analyses",
    ]
    return "\n".join(lines)


def _first_sentence(text: str, limit: int = 200) -> str:
    sentence = text.split(". ", maxsplit=1)[0].rstrip(".") + "."
    return sentence if len(sentence) <= limit else sentence[: limit - 3] + "..."
