"""``aianalysis demo`` on a real node: real failures, real fixes, judged.

A control plane and one real worker node (kubelet, containerd, runc, CNI, kube-proxy; no Docker),
the example workflows' images imported into it and the catalog pinned to them, the operator (offline
provider, Alertmanager intake on) and the executor as the processes ``aianalysis run`` and
``aianalysis executor`` are. Three incidents are made the way they happen in production
(``aianalysis_dev.incidents``): a release that crash-loops, a service whose start needs more memory
than its limit, and the same bad release where the rollback workflow's ServiceAccount misses one
permission. Their alerts go through the intake; each selection is approved with ``aianalysis
approve``; the executor's Jobs run the workflows' images as their ServiceAccounts; the deployment
controller rolls back, the raised limit lets the service start, the assessment judges the Pods;
the Job that is refused fails ``Forbidden`` and recovery analyses it. It ends with the ``kubectl
get`` tables. Nothing is left running.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import secrets
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from aianalysis_dev import demo, devcluster, incidents, loop, oci, reads

WINDOW_SECONDS = "20"
"""The assessment's stabilization window here (300 s by default): long enough for a crash to show."""
BUSINESS = (
    "kubernaut.io/environment=staging",
    "kubernaut.io/priority=P2",
    "kubernaut.io/risk-tolerance=medium",
)


def run(*, root: Path, out: Callable[[str], None], timeout_seconds: float) -> int:
    started = time.monotonic()

    def step(text: str) -> None:
        out(f"[{time.monotonic() - started:6.1f}s] {text}")

    step("world: a REAL node — kubelet, containerd, runc, CNI and kube-proxy on this machine (no Docker)")
    with devcluster.NodeCluster() as cluster:
        waited = cluster.timings.get("lock_wait", 0.0)
        step(
            f"control plane and node {cluster.node_name} Ready at {cluster.server} "
            f"(kubelet {devcluster.K8S_VERSION}, containerd {devcluster.CONTAINERD_VERSION})"
            + (f"; {waited:.0f}s of it waiting for another run's node" if waited >= 1 else "")
        )
        work = Path(tempfile.mkdtemp(prefix="aianalysis-demo-"))
        busybox = _busybox(cluster, work)
        devcluster.apply_crds(cluster, root / "crds")  # and the approval policy the executor requires
        workflows = loop.install_workflows(cluster, root=root, dest=work / "catalog", log=lambda _: None)
        step(
            f"CRDs, approval policy, example catalog; {len(workflows.images)} workflow images imported "
            f"({', '.join(sorted(workflows.images))}) and pinned by digest in the catalog"
        )
        (port,), token = devcluster.free_ports(1), secrets.token_hex(16)
        env = {
            "AIANALYSIS_PROVIDER": "offline",
            "AIANALYSIS_INTAKE_PORT": str(port),
            "AIANALYSIS_INTAKE_TOKEN": token,
            "AIANALYSIS_ASSESSMENT_WINDOW_SECONDS": WINDOW_SECONDS,
        }
        with _process(cluster, root, work, "run", env), _process(cluster, root, work, "executor", {}):
            step("operator (offline provider, Alertmanager intake) and executor running")
            made = _incidents(cluster, workflows, busybox, step)
            intake = f"http://127.0.0.1:{port}/api/v1/alertmanager"
            for incident in made.values():
                _post(intake, token, incident.payload())
            step(f"posted the {len(made)} alerts to the intake, as Alertmanager would")
            story = _close_the_loops(cluster, made, step, timeout_seconds)
            out("")
            for args in (
                ("get", "deployments,replicasets,pods", "-n", "shop", "-o", "wide"),
                ("get", "deployments,pods", "-n", "search"),
                ("get", "jobs,pods", "-A", "-l", "app.kubernetes.io/managed-by=aianalysis-executor"),
                ("get", "aianalyses", "-A"),
                ("get", "workflowexecutions", "-A"),
            ):
                out(f"$ kubectl {' '.join(args)}")
                out(cluster.kubectl(*args).stdout)
            out("\n".join(story))
        step("operator and executor stopped")
    step("node and control plane stopped; nothing left running")
    return 0


def _incidents(
    cluster: devcluster.NodeCluster, workflows: loop.Workflows, image: str, step: Callable[[str], None]
) -> dict[str, incidents.NodeIncident]:
    """The three incidents, made at once (each waits for its failure to be real)."""
    makers = {
        "shop": incidents.crashloop_after_rollout,
        "search": loop.oom_at_startup,
        "billing": incidents.crashloop_after_rollout,
    }
    for namespace in makers:
        cluster.kubectl("create", "namespace", namespace)
        cluster.kubectl("label", "namespace", namespace, *BUSINESS)
        incidents.until(
            _has_default_account(cluster, namespace), what=f"the default account of {namespace}", timeout=60
        )
    loop.grant(cluster, "shop", workflows)
    loop.grant(cluster, "search", workflows)
    loop.grant(cluster, "billing", workflows, without={"kubernaut-workflow-rollout": {"patch"}})
    step(
        "namespaces shop, search, billing: the ServiceAccounts the catalog names, each bound to the Role "
        "its workflow declares (in billing the rollout account's Roles miss 'patch')"
    )
    with concurrent.futures.ThreadPoolExecutor(len(makers)) as pool:
        futures = {ns: pool.submit(make, cluster, ns, image=image) for ns, make in makers.items()}
        made = {ns: future.result() for ns, future in futures.items()}
    step(
        "real failures, reported by the kubelet: shop/worker and billing/worker crash-loop after a rollout "
        "(the old revision still serves), search/indexer is OOMKilled at every start (limit 32Mi)"
    )
    return made


def _close_the_loops(
    cluster: devcluster.NodeCluster,
    made: dict[str, incidents.NodeIncident],
    step: Callable[[str], None],
    timeout: float,
) -> list[str]:
    story = ["", "What just happened (world: real node)"]
    executions: dict[str, str] = {}
    for namespace in made:
        analysis = loop.ended_analysis(cluster, namespace, timeout=timeout)
        selected = (analysis.get("status") or {}).get("selectedWorkflow") or {}
        step(
            f"{namespace}/{analysis['metadata']['name']}: selected {selected.get('workflowId')} "
            f"{selected.get('version')} (confidence {selected.get('confidence')}) "
            f"{selected.get('parameters')}"
        )
        command, name = loop.approve(cluster, analysis)
        step(f"$ {command}\n           workflowexecution/{name} created")
        executions[namespace] = name
    for namespace, name in executions.items():
        execution = loop.ended_execution(cluster, namespace, name, timeout=timeout)
        st = execution["status"]
        (pod,) = reads.listed(cluster, "pods", namespace, selector=f"kubernaut.io/workflow-execution={name}")
        spec = pod["spec"]
        ran = f"job/{name} ran {spec['containers'][0]['image']} as {spec.get('serviceAccountName')}"
        if st["phase"] == "Failed":
            details = st["failureDetails"]
            step(f"{namespace}: {ran} → Failed ({details['reason']}): {_refusal(details['message'])}")
            original = execution["spec"]["analysisRef"]
            recovery = loop.ended_analysis(cluster, namespace, f"{original}-recovery-1", timeout=timeout)
            rst = recovery["status"]
            picked = (rst.get("selectedWorkflow") or {}).get("workflowId")
            strategy = (rst.get("recoveryStrategy") or {}).get("approach") or rst.get("humanReviewReason")
            step(
                f"{namespace}: recovery analysis {recovery['metadata']['name']}: "
                f"{picked or 'no workflow'} ({strategy})"
            )
            story.append(
                f"  - {namespace}: the rollback's ServiceAccount lacks 'patch' → the API server refused it "
                f"({details['reason']}); recovery {recovery['metadata']['name']} → {picked or strategy}"
            )
            continue
        step(f"{namespace}: {ran} → {st['phase']}")
        assessment = loop.assessed(cluster, namespace, name, timeout=timeout)
        step(
            f"{namespace}: assessment after {WINDOW_SECONDS}s: {assessment['verdict']} "
            f"({assessment.get('message', '')})"
        )
        fix = execution["spec"]["workflowRef"]["workflowId"]
        story.append(f"  - {namespace}: {made[namespace].kind} → {fix} → {assessment['verdict']}")
    story += [
        "  Every Pod, Job and ReplicaSet above was run and reported by the node's kubelet and the cluster's",
        "  controllers; nothing wrote a status on their behalf.",
    ]
    return story


def _refusal(message: str) -> str:
    """The API server's words in a failed workflow's message (kubectl prints warnings first)."""
    said = [line for line in message.splitlines() if "forbidden" in line.lower()]
    return (said[-1] if said else message)[:240]


def _has_default_account(cluster: devcluster.Cluster, namespace: str) -> Callable[[], bool]:
    return lambda: reads.get(cluster, "serviceaccount", "default", namespace) is not None


def _busybox(cluster: devcluster.NodeCluster, work: Path) -> str:
    tar = oci.busybox_image(work / "busybox.tar", busybox=cluster.node_binaries.busybox)
    (ref,) = cluster.import_image(tar)
    return ref


def _process(
    cluster: devcluster.Cluster, root: Path, work: Path, command: str, extra: dict[str, str]
) -> contextlib.AbstractContextManager[None]:
    inherit = {k: v for k, v in os.environ.items() if not k.startswith(("AIANALYSIS_", "ANTHROPIC_"))}
    return demo.operator_process(
        cluster, root=root, log_file=work / f"{command}.log", command=command, inherit=inherit, extra=extra
    )


def _post(url: str, token: str, payload: dict[str, Any]) -> None:
    """Post to the intake once it listens (the operator process may still be starting)."""

    def posted() -> bool:
        try:
            answer = httpx.post(url, json=payload, headers={"Authorization": f"Bearer {token}"}, timeout=10)
        except httpx.TransportError:
            return False
        if answer.status_code != 200:
            raise devcluster.DevClusterError(f"the intake answered {answer.status_code}: {answer.text}")
        return True

    incidents.until(posted, what="the intake to take the alert", timeout=60)
