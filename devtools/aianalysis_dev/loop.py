"""The loop closed on a real node: the example workflows' images on the node, the catalog pinned to
them, and in a namespace the ServiceAccounts the catalog names bound to exactly the Role each
workflow declares (``examples/workflows/<id>/role.yaml``). Then an approved selection runs as a Job
the executor creates, as that ServiceAccount, and really changes the workload.

    workflows = loop.install_workflows(cluster, root=ROOT, dest=tmp)   # images, pinned catalog
    loop.grant(cluster, namespace, workflows)                          # ServiceAccounts + Roles
    loop.grant(cluster, namespace, workflows, without={"kubernaut-workflow-rollout": {"patch"}})

Also the incidents whose fix is judged and that ``aianalysis_dev.incidents`` does not make: a
service that needs more memory at start than its limit (a raise fixes it).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

import yaml

from aianalysis_dev import devcluster, images, incidents, reads

WORKFLOWS = Path("examples") / "workflows"
CATALOG = Path("examples") / "catalog"
TERMINAL = ("Completed", "Failed")
STARTUP_MEMORY = "48M"
"""What the memory-hungry service loads at start: over the incidents' 32Mi limit, under its double."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Workflows:
    """The example workflows as installed on a node."""

    images: Mapping[str, images.Built]
    """workflowId → its image (imported into the node's containerd)."""
    accounts: Mapping[str, str]
    """workflowId → the ServiceAccount its catalog entry runs it as."""
    roles: Mapping[str, dict[str, Any]]
    """workflowId → the Role it needs (``role.yaml``)."""


def install_workflows(
    cluster: devcluster.NodeCluster, *, root: Path, dest: Path, log: Callable[[str], None] | None = None
) -> Workflows:
    """Build (or reuse) the workflow images, import them into the node and apply the example
    catalog with each workflow that has an image pinned to it by digest."""
    built = images.workflow_images(context=root, **({"log": log} if log else {}))
    for image in built.values():
        cluster.import_image(image.path)
    files = images.pinned_catalog(root / CATALOG, dest, built)
    for file in files:
        cluster.kubectl("apply", "-f", str(file))
    accounts: dict[str, str] = {}
    for file in files:
        for doc in yaml.safe_load_all(file.read_text()):
            spec = (doc or {}).get("spec") or {}
            account = (spec.get("execution") or {}).get("serviceAccountName")
            if spec.get("workflowId") in built and account:
                accounts[spec["workflowId"]] = account
    missing = sorted(set(built) - set(accounts))
    if missing:
        raise devcluster.DevClusterError(
            f"catalog entries of {', '.join(missing)} name no serviceAccountName: their Jobs would run "
            "without a token and could not act"
        )
    roles = {wid: yaml.safe_load((root / WORKFLOWS / wid / "role.yaml").read_text()) for wid in built}
    return Workflows(images=built, accounts=accounts, roles=roles)


def grant(
    cluster: devcluster.Cluster,
    namespace: str,
    workflows: Workflows,
    *,
    without: Mapping[str, Collection[str]] | None = None,
) -> None:
    """In ``namespace``: each ServiceAccount the catalog names, and for each workflow its Role bound
    to that account. ``without``: ServiceAccount → verbs left out of every Role bound to it (a
    forgotten permission; several workflows may share an account)."""
    objects: list[dict[str, Any]] = []
    for account in sorted(set(workflows.accounts.values())):
        objects.append({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account}})
    for wid, account in sorted(workflows.accounts.items()):
        role = json.loads(json.dumps(workflows.roles[wid]))
        dropped = set((without or {}).get(account, ()))
        role["rules"] = [
            {**rule, "verbs": [v for v in rule["verbs"] if v not in dropped]}
            for rule in role["rules"]
            if set(rule["verbs"]) - dropped
        ]
        name = role["metadata"]["name"]
        objects.append(role)
        objects.append(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
            }
        )
    incidents.apply(cluster, namespace, *objects)


# --- incidents -------------------------------------------------------------------------------------


def oom_at_startup(cluster: incidents.Kubectl, namespace: str, *, image: str) -> incidents.NodeIncident:
    """A service that loads 48 MiB at start (a cache, a model) under a 32Mi limit: the kernel kills
    the loader at once, every start, and the kubelet reports OOMKilled (exit code 137). Twice the
    limit holds it: the memory workflow's raise fixes it."""
    name = "indexer"
    script = (
        f"echo loading the index; dd if=/dev/zero of=/dev/null bs={STARTUP_MEMORY} count=1 || exit 137; "
        "echo index loaded, serving; exec sleep 3600"
    )
    limit = incidents.MEMORY_LIMIT
    limits = {"resources": {"limits": {"memory": limit}, "requests": {"memory": limit}}}
    incidents.apply(cluster, namespace, incidents.deployment(name, script, image=image, container=limits))
    pod, container = incidents.wait_for_container(
        cluster, namespace, name,
        lambda s: s.get("restartCount", 0) >= 1
        and ((s.get("lastState") or {}).get("terminated") or {}).get("reason") == "OOMKilled",
        what="an OOM kill at start",
    )  # fmt: skip
    return incidents.NodeIncident(
        kind="oomkilled-at-startup",
        namespace=namespace,
        alert=incidents.pod_alert("KubeContainerOOMKilled", pod, container, reason="OOMKilled"),
        workload={"kind": "Deployment", "name": name, "namespace": namespace},
        expect=("oomkill-increase-memory",),
    )


# --- following the loop ----------------------------------------------------------------------------


def ended_analysis(
    cluster: devcluster.Cluster, namespace: str, name: str | None = None, *, timeout: float = 120
) -> dict[str, Any]:
    """The analysis ``name`` (or the namespace's first one) once it is Completed or Failed."""

    def ended() -> dict[str, Any] | None:
        found = (
            [reads.get(cluster, "aianalysis", name, namespace)]
            if name
            else reads.listed(cluster, "aianalyses", namespace)
        )
        done = [a for a in found if a and (a.get("status") or {}).get("phase") in TERMINAL]
        return done[0] if done else None

    analysis: dict[str, Any] = incidents.until(
        ended, what=f"an analysis in {namespace} to end", timeout=timeout
    )
    return analysis


def approve(cluster: devcluster.Cluster, analysis: Mapping[str, Any]) -> tuple[str, str]:
    """``aianalysis approve`` as a person runs it after reading ``aianalysis show`` (the cluster's
    admin is an approver): the command ``show`` prints, bound to the uid and digest shown and
    overriding the review reason shown; (that command, the WorkflowExecution it created)."""
    meta = analysis["metadata"]
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}

    def aianalysis(*args: str) -> str:
        argv = [sys.executable, "-m", "aianalysis", *args]
        result = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, env=env)
        if result.returncode != 0:
            raise devcluster.DevClusterError(f"aianalysis {' '.join(args)} failed: {result.stderr.strip()}")
        return result.stdout

    shown = json.loads(aianalysis("show", meta["name"], "-n", meta["namespace"], "-o", "json"))
    command: str = shown["commands"]["approve"]
    # it prints what it approves, then (last) "workflowexecution/<name> created"
    last = aianalysis(*command.split()[1:]).strip().splitlines()[-1]
    return command, last.split()[0].split("/", 1)[1]


def ended_execution(
    cluster: devcluster.Cluster, namespace: str, name: str, *, timeout: float = 300
) -> dict[str, Any]:
    def ended() -> dict[str, Any] | None:
        found = reads.get(cluster, "workflowexecution", name, namespace)
        return found if found and (found.get("status") or {}).get("phase") in TERMINAL else None

    execution: dict[str, Any] = incidents.until(
        ended, what=f"workflowexecution {name} to end", timeout=timeout
    )
    return execution


def assessed(
    cluster: devcluster.Cluster, namespace: str, name: str, *, timeout: float = 180
) -> dict[str, Any]:
    """The execution's ``status.assessment`` once it holds a verdict."""

    def verdict() -> dict[str, Any] | None:
        found = reads.get(cluster, "workflowexecution", name, namespace) or {}
        assessment = (found.get("status") or {}).get("assessment") or {}
        return assessment if assessment.get("verdict") else None

    assessment: dict[str, Any] = incidents.until(verdict, what=f"the assessment of {name}", timeout=timeout)
    return assessment
