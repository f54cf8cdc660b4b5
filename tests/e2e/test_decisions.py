"""A person's decisions on an analysis, end to end on the real control plane with the chart's RBAC
and approval policy: ``aianalysis approve`` is bound to what the approver reviewed (issue 31 #3);
``aianalysis reject`` is bound the same way, admitted only from an approver in their own name, shown on
the analysis by the operator and seen by the next analysis of the target (issue 33 #3).

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
from pathlib import Path
from typing import Any

import yaml

from aianalysis.executor import approval
from aianalysis_dev import devcluster
from tests.e2e import test_executor as executor_e2e
from tests.e2e.conftest import ROOT, OperatorProcess, get, wait_for
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
    status = executor_e2e.selected(cluster, namespace, wf, target="payments-db", memory_limit="64Gi")
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


# ---- reject (issue 33 #3) ---------------------------------------------------------------------------


def may_write_rejections(cluster: devcluster.DevCluster, namespace: str, user: str) -> None:
    """RBAC alone lets ``user`` create WorkflowRejections: only the admission policy stands between
    them and a rejection in another's name, or one from someone who may not decide."""
    cluster.kubectl(
        "create", "role", "wfr-writer", "-n", namespace, "--verb=create,get,list",
        "--resource=workflowrejections.kubernaut.io",
    )  # fmt: skip
    cluster.kubectl(
        "create", "rolebinding", "wfr-writers", "-n", namespace, "--role=wfr-writer", f"--user={user}"
    )


def rejection(namespace: str, seen: approval.Proposal, *, by: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubernaut.io/v1alpha1", "kind": "WorkflowRejection",
        "metadata": {"name": f"forged-{by}", "namespace": namespace},
        "spec": {
            "analysisRef": seen.name, "analysisUID": seen.uid, "selectionDigest": seen.digest,
            "workflowRef": seen.workflow.wire(), "parameters": dict(seen.parameters),
            "targetResource": seen.target.wire(), "rejectedBy": by, "reason": "no",
        },
    }  # fmt: skip


def test_reject_is_bound_recorded_in_the_rejecters_name_and_only_an_approver_may(
    jobs_cluster: devcluster.DevCluster, ns: str
) -> None:
    cluster = jobs_cluster
    may_delete_analyses(cluster, ns, MALLORY)
    wf = workflow(cluster)
    analysed(cluster, ns, wf)
    read = proposal(cluster, ns, "api-oom")

    # mallory (no approve verb): the CLI is refused by RBAC, and with create on the kind, by the policy,
    # in her own name or in alice's
    denied = aianalysis(
        cluster, MALLORY, "reject", "api-oom", "-n", ns, "--uid", read.uid, "--digest", read.digest,
        "--reason", "not today",
    )  # fmt: skip
    assert denied.returncode == 1 and "forbidden" in denied.stderr.lower(), denied.stderr
    may_write_rejections(cluster, ns, MALLORY)
    for by in (ALICE, MALLORY):
        forged = cluster.kubectl(
            "create", "-f", "-", input=json.dumps(rejection(ns, read, by=by)), user=MALLORY, check=False
        )
        assert forged.returncode != 0, forged.stdout
        expected = "must be the user creating" if by == ALICE else "only a user allowed to approve"
        assert expected in forged.stderr, forged.stderr
    assert items(cluster, "wfr", ns) == []

    # no reason, or no binding from a script: refused
    no_reason = aianalysis(cluster, ALICE, "reject", "api-oom", "-n", ns, "--reason", "  ")
    assert no_reason.returncode == 2 and "--reason" in no_reason.stderr, no_reason.stderr
    unbound = aianalysis(cluster, ALICE, "reject", "api-oom", "-n", ns, "--reason", "too big")
    assert unbound.returncode == 2 and f"aianalysis show api-oom -n {ns}" in unbound.stderr, unbound.stderr

    # the analysis alice read is replaced: her rejection does not move to the new one
    replacement = swapped(cluster, ns, wf)
    moved = aianalysis(
        cluster, ALICE, "reject", "api-oom", "-n", ns, "--uid", read.uid, "--digest", read.digest,
        "--reason", "too big",
    )  # fmt: skip
    assert moved.returncode == 1 and "not the analysis you reviewed" in moved.stderr, moved.stderr
    assert items(cluster, "wfr", ns) == []

    # bound to what she saw: recorded in her name, with her reason; nothing runs
    seen = proposal(cluster, ns, "api-oom")
    done = aianalysis(
        cluster, ALICE, "reject", "api-oom", "-n", ns, "--uid", seen.uid, "--digest", seen.digest,
        "--reason", "64Gi for payments-db is not a fix; the leak is",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [record] = items(cluster, "wfr", ns)
    assert record["spec"]["rejectedBy"] == ALICE and record["spec"]["analysisUID"] == replacement
    assert record["spec"]["selectionDigest"] == seen.digest
    assert record["spec"]["reason"] == "64Gi for payments-db is not a fix; the leak is"
    assert record["metadata"]["ownerReferences"][0]["uid"] == replacement
    assert items(cluster, "wfe", ns) == []

    # once rejected: not approved, not rejected again
    bound = ["-n", ns, "--uid", seen.uid, "--digest", seen.digest]
    approved = aianalysis(cluster, ALICE, "approve", "api-oom", *bound)
    assert approved.returncode == 1 and "was rejected" in approved.stderr and ALICE in approved.stderr
    again = aianalysis(cluster, ALICE, "reject", "api-oom", *bound, "--reason", "twice")
    assert again.returncode == 1 and "rejected already" in again.stderr, again.stderr
    assert items(cluster, "wfe", ns) == [] and len(items(cluster, "wfr", ns)) == 1


def test_an_approved_analysis_is_not_rejected(jobs_cluster: devcluster.DevCluster, ns: str) -> None:
    cluster = jobs_cluster
    analysed(cluster, ns, workflow(cluster))
    seen = proposal(cluster, ns, "api-oom")
    bound = ["-n", ns, "--uid", seen.uid, "--digest", seen.digest]
    assert aianalysis(cluster, ALICE, "approve", "api-oom", *bound).returncode == 0
    late = aianalysis(cluster, ALICE, "reject", "api-oom", *bound, "--reason", "late")
    assert late.returncode == 1 and "approved already (api-oom-exec-1)" in late.stderr, late.stderr
    assert items(cluster, "wfr", ns) == []


def test_the_operator_shows_a_rejection_and_the_next_analysis_of_the_target_sees_it(
    jobs_cluster: devcluster.DevCluster, ns: str, tmp_path: Path
) -> None:
    """The offline provider analyses a crash loop (rollback-deployment); alice rejects it; the
    operator records it on the analysis; the same incident again is not proposed without saying so."""
    cluster = jobs_cluster
    operator = OperatorProcess(
        kubeconfig=cluster.kubeconfig, log_dir=tmp_path, env={"AIANALYSIS_PROVIDER": "offline"},
        argv=[sys.executable, "-m", "aianalysis", "run", "--namespace", ns],
    )  # fmt: skip
    operator.start()
    try:
        incident = yaml.safe_load((ROOT / "examples" / "incidents" / "orders-api-crashloop.yaml").read_text())
        incident["metadata"] = {"name": "crash-1", "namespace": ns}
        incident["spec"]["resource"]["namespace"] = ns
        incident["spec"]["signal"]["labels"]["namespace"] = ns
        cluster.kubectl("create", "-f", "-", input=json.dumps(incident))
        first = wait_for(lambda: done(cluster, ns, "crash-1"), what="crash-1 analysed", logs=operator.logs)
        assert first["status"].get("selectedWorkflow"), first["status"]
        chosen = first["status"]["selectedWorkflow"]["workflowId"]
        seen = proposal(cluster, ns, "crash-1")
        reason = "rolling back loses the schema migration; fix forward"
        rejected = aianalysis(
            cluster, ALICE, "reject", "crash-1", "-n", ns, "--uid", seen.uid, "--digest", seen.digest,
            "--reason", reason,
        )  # fmt: skip
        assert rejected.returncode == 0, rejected.stderr

        def shown() -> dict[str, Any] | None:
            found = get(cluster, "aianalyses", "crash-1", ns)
            return (found or {}).get("status", {}).get("rejection")

        record = wait_for(shown, what="the rejection on the analysis", logs=operator.logs)
        assert record["rejectedBy"] == ALICE and record["reason"] == reason
        assert record["selectionDigest"] == seen.digest and record["workflowRejection"].startswith(
            "crash-1-rejected-"
        )
        events = json.loads(cluster.kubectl("get", "events", "-n", ns, "-o", "json").stdout)["items"]
        assert any(e["reason"] == "Rejected" and ALICE in e["message"] for e in events), events
        wide = cluster.kubectl("get", "aia", "crash-1", "-n", ns, "-o", "wide").stdout
        assert ALICE in wide, wide

        incident["metadata"]["name"] = "crash-2"
        cluster.kubectl("create", "-f", "-", input=json.dumps(incident))
        second = wait_for(lambda: done(cluster, ns, "crash-2"), what="crash-2 analysed", logs=operator.logs)
        st = second["status"]
        assert st["needsHumanReview"] is True and st["humanReviewReason"] == "previously_rejected", st
        assert st["selectedWorkflow"]["workflowId"] == chosen  # shown to a person, saying why
        assert any(ALICE in w and reason in w for w in st.get("warnings") or []), st.get("warnings")
        assert items(cluster, "wfe", ns) == []
    finally:
        operator.stop()


def done(cluster: devcluster.DevCluster, ns: str, name: str) -> dict[str, Any] | None:
    found = get(cluster, "aianalyses", name, ns)
    return found if (found or {}).get("status", {}).get("phase") in ("Completed", "Failed") else None
