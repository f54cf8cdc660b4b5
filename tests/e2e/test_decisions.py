"""A person's decisions on an analysis, end to end on the real control plane with the chart's RBAC
and approval policy: ``aianalysis approve`` is bound to what the approver reviewed (issue 31 #3).

alice may approve (the chart's approver ClusterRole); mallory may create, read and delete
AIAnalyses and WorkflowExecutions in the namespace, not approve.
"""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from typing import Any

from aianalysis.executor import approval
from aianalysis_dev import devcluster
from tests.e2e import test_executor as executor_e2e
from tests.e2e.conftest import ROOT, get
from tests.e2e.test_executor import ALICE, IMAGE, MALLORY, analysed, items, patch_status, workflow

# The executor module's control plane (kube-controller-manager, the chart's RBAC and policy).
jobs_cluster = executor_e2e.jobs_cluster
ns = executor_e2e.ns


def aianalysis(
    cluster: devcluster.DevCluster, user: str, *argv: str, stdin: int | None = None
) -> subprocess.CompletedProcess[str]:
    """The CLI as ``user`` runs it, without a terminal (as a script or CI job does)."""
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig_for(user))}
    return subprocess.run(
        [sys.executable, "-m", "aianalysis", *argv],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=60, check=False,
        stdin=subprocess.DEVNULL if stdin is None else stdin,
    )  # fmt: skip


def may_delete_analyses(cluster: devcluster.DevCluster, namespace: str, user: str) -> None:
    """The namespace's own people may delete its AIAnalyses (mallory, here)."""
    cluster.kubectl(
        "create",
        "role",
        "aia-deleter",
        "-n",
        namespace,
        "--verb=delete",
        "--resource=aianalyses.kubernaut.io",
    )
    cluster.kubectl(
        "create", "rolebinding", "aia-deleters", "-n", namespace, "--role=aia-deleter", f"--user={user}"
    )


def swapped(
    cluster: devcluster.DevCluster, namespace: str, wf: dict[str, Any], *, name: str = "api-oom"
) -> str:
    """mallory deletes the reviewed analysis and creates another under its name, about another
    workload, whose selection (written as the operator would) sets another memory limit; its uid."""
    cluster.kubectl("delete", "aianalysis", name, "-n", namespace, user=MALLORY)
    body = {
        "apiVersion": "kubernaut.io/v1alpha1", "kind": "AIAnalysis",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "signal": {"type": "OOMKilled", "severity": "high"},
            "resource": {"kind": "Deployment", "name": "payments-db", "namespace": namespace},
            "businessContext": {"environment": "production"},
        },
    }  # fmt: skip
    cluster.kubectl("create", "-f", "-", input=json.dumps(body), user=MALLORY)
    reviewed = get(cluster, "aianalyses", name, namespace)
    assert reviewed is not None
    status = {
        "phase": "Completed",
        "completedAt": "2026-11-20T10:00:00Z",
        "rootCause": {
            "summary": "limit below working set", "severity": "high", "signalType": "OOMKilled",
            "affectedResource": {"kind": "Deployment", "name": "payments-db", "namespace": namespace,
                                 "apiVersion": "apps/v1"},
        },
        "selectedWorkflow": {
            "workflowId": wf["spec"]["workflowId"], "version": "1.0.0", "containerImage": IMAGE,
            "confidence": 0.92, "rationale": "limit below working set",
            "parameters": {"TARGET_NAMESPACE": namespace, "MEMORY_LIMIT_NEW": "64Gi"},
            "specDigest": executor_e2e.digest_of(cluster, wf),
        },
    }  # fmt: skip
    patch_status(cluster, "aianalysis", name, namespace, status)
    return str(reviewed["metadata"]["uid"])


def proposal(cluster: devcluster.DevCluster, namespace: str, name: str) -> approval.Proposal:
    """What ``aianalysis show`` shows a reviewer (computed from the object as the API server has it)."""
    found = get(cluster, "aianalyses", name, namespace)
    assert found is not None
    shown = approval.proposal_of(found)
    assert isinstance(shown, approval.Proposal), shown
    return shown


def executions_of_uid(cluster: devcluster.DevCluster, namespace: str, uid: str) -> list[str]:
    return [
        e["metadata"]["name"] for e in items(cluster, "wfe", namespace) if e["spec"].get("analysisUID") == uid
    ]


def test_approve_is_bound_to_the_analysis_reviewed_not_a_same_named_replacement(
    jobs_cluster: devcluster.DevCluster, ns: str
) -> None:
    """Issue 31 #3: alice reviews api-oom; mallory deletes it and creates another api-oom (another
    workload, another memory limit); alice's approval must not go to the replacement."""
    cluster = jobs_cluster
    may_delete_analyses(cluster, ns, MALLORY)
    wf = workflow(cluster)
    analysed(cluster, ns, wf)
    read = get(cluster, "aianalyses", "api-oom", ns)  # what alice read
    assert read is not None

    replacement = swapped(cluster, ns, wf)
    assert replacement != read["metadata"]["uid"]

    # alice approves by name, as she always did, from a script (no terminal)
    by_name = aianalysis(cluster, ALICE, "approve", "api-oom", "-n", ns)
    assert executions_of_uid(cluster, ns, replacement) == [], by_name.stdout
    assert by_name.returncode != 0 and f"aianalysis show api-oom -n {ns}" in by_name.stderr, by_name.stderr

    reviewed = approval.proposal_of(read)
    assert isinstance(reviewed, approval.Proposal) and reviewed.parameters["MEMORY_LIMIT_NEW"] == "1Gi"

    # bound to what she reviewed: refused, and it says why
    bound = aianalysis(
        cluster, ALICE, "approve", "api-oom", "-n", ns, "--uid", reviewed.uid, "--digest", reviewed.digest
    )
    assert bound.returncode == 1 and "not the analysis you reviewed" in bound.stderr, bound.stderr
    assert f"you reviewed {reviewed.uid}" in bound.stderr
    # the old uid with the new selection's digest is refused too (both are checked)
    current = proposal(cluster, ns, "api-oom")
    mixed = aianalysis(
        cluster, ALICE, "approve", "api-oom", "-n", ns, "--uid", current.uid, "--digest", reviewed.digest
    )
    assert mixed.returncode == 1 and "is not the one you reviewed" in mixed.stderr, mixed.stderr
    assert items(cluster, "wfe", ns) == []

    # What `show` prints is what approves: alice reviews the replacement and approves exactly it.
    shown = aianalysis(cluster, ALICE, "show", "api-oom", "-n", ns, "-o", "json")
    assert shown.returncode == 0, shown.stderr
    seen = json.loads(shown.stdout)
    assert (seen["uid"], seen["digest"]) == (current.uid, current.digest)
    assert seen["parameters"]["MEMORY_LIMIT_NEW"] == "64Gi" and seen["target"]["name"] == "payments-db"
    assert seen["commands"]["approve"] == (
        f"aianalysis approve api-oom -n {ns} --uid {current.uid} --digest {current.digest}"
    )
    done = aianalysis(cluster, ALICE, *seen["commands"]["approve"].split()[1:])
    assert done.returncode == 0, done.stderr
    assert executions_of_uid(cluster, ns, replacement) == ["api-oom-exec-1"]
    execution = get(cluster, "wfe", "api-oom-exec-1", ns)
    assert execution is not None
    assert execution["spec"]["approval"]["selectionDigest"] == current.digest
    assert execution["spec"]["approval"]["approvedBy"] == ALICE


def test_override_review_names_the_reason_it_overrides(jobs_cluster: devcluster.DevCluster, ns: str) -> None:
    cluster = jobs_cluster
    wf = workflow(cluster)
    analysed(cluster, ns, wf, name="unsure")
    patch_status(
        cluster, "aianalysis", "unsure", ns, {"needsHumanReview": True, "humanReviewReason": "low_confidence"}
    )
    seen = proposal(cluster, ns, "unsure")
    bound = ["approve", "unsure", "-n", ns, "--uid", seen.uid, "--digest", seen.digest]
    plain = aianalysis(cluster, ALICE, *bound)
    assert plain.returncode == 1 and "--override-review low_confidence" in plain.stderr, plain.stderr
    other = aianalysis(cluster, ALICE, *bound, "--override-review", "previously_ineffective")
    assert other.returncode == 1 and "not for previously_ineffective" in other.stderr, other.stderr
    assert items(cluster, "wfe", ns) == []
    done = aianalysis(cluster, ALICE, *bound, "--override-review", "low_confidence")
    assert done.returncode == 0, done.stderr
    execution = get(cluster, "wfe", "unsure-exec-1", ns)
    assert execution is not None
    assert execution["spec"]["approval"]["overriddenReason"] == "low_confidence"
    assert execution["spec"]["approval"]["overrideReview"] is True


def test_a_dry_run_shows_and_changes_nothing(jobs_cluster: devcluster.DevCluster, ns: str) -> None:
    cluster = jobs_cluster
    analysed(cluster, ns, workflow(cluster))
    seen = proposal(cluster, ns, "api-oom")
    dry = aianalysis(cluster, ALICE, "approve", "api-oom", "-n", ns, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    for shown in (seen.uid, seen.digest, "Deployment", f"{ns}/api", "MEMORY_LIMIT_NEW=1Gi", IMAGE, "0.92"):
        assert shown in dry.stdout, (shown, dry.stdout)
    assert seen.approve_command() in dry.stdout
    assert items(cluster, "wfe", ns) == []


class Terminal:
    """The CLI on a pseudo-terminal, as a person at a shell runs it."""

    def __init__(self, cluster: devcluster.DevCluster, user: str, *argv: str) -> None:
        self.fd, child = pty.openpty()
        env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig_for(user)), "TERM": "dumb"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "aianalysis", *argv],
            stdin=child, stdout=child, stderr=child, env=env, cwd=ROOT, close_fds=True,
        )  # fmt: skip
        os.close(child)
        self.seen = ""

    def wait_for(self, text: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while text not in self.seen:
            left = deadline - time.monotonic()
            assert left > 0, f"no {text!r} on the terminal after {timeout}s:\n{self.seen}"
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                try:
                    self.seen += os.read(self.fd, 4096).decode(errors="replace")
                except OSError:  # the child closed the terminal
                    assert text in self.seen, f"the command ended without {text!r}:\n{self.seen}"
        return self.seen

    def type(self, line: str) -> None:
        os.write(self.fd, (line + "\n").encode())

    def finish(self, timeout: float = 60.0) -> int:
        code = self.proc.wait(timeout=timeout)
        try:
            while chunk := os.read(self.fd, 4096):
                self.seen += chunk.decode(errors="replace")
        except OSError:
            pass
        os.close(self.fd)
        return code


def test_on_a_terminal_approve_shows_the_selection_asks_and_binds_to_what_it_showed(
    jobs_cluster: devcluster.DevCluster, ns: str
) -> None:
    cluster = jobs_cluster
    may_delete_analyses(cluster, ns, MALLORY)
    wf = workflow(cluster)
    analysed(cluster, ns, wf)
    seen = proposal(cluster, ns, "api-oom")

    # Shown, asked, swapped before the answer: the approval is refused, not moved to the replacement.
    term = Terminal(cluster, ALICE, "approve", "api-oom", "-n", ns)
    screen = term.wait_for("[y/N]")
    for shown in (seen.uid, seen.digest, "MEMORY_LIMIT_NEW=1Gi", f"{ns}/api", wf["spec"]["workflowId"]):
        assert shown in screen, (shown, screen)
    replacement = swapped(cluster, ns, wf)
    term.type("y")
    assert term.finish() == 1 and "not the analysis you reviewed" in term.seen, term.seen
    assert items(cluster, "wfe", ns) == []

    # Shown and confirmed: exactly the selection it showed is approved.
    term = Terminal(cluster, ALICE, "approve", "api-oom", "-n", ns)
    term.wait_for("[y/N]")
    term.type("y")
    assert term.finish() == 0, term.seen
    assert executions_of_uid(cluster, ns, replacement) == ["api-oom-exec-1"]
