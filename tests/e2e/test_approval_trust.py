"""Which approvals the executor trusts, on the real control plane with the chart's own RBAC and the
approval policy as it ships (issue 31, findings 1 and 2). alice approves in the test's namespace;
mallory may create AIAnalyses and WorkflowExecutions there, never approve.

- An approval is trusted only when the execution provably went through the shipped approval policy:
  created after the policy and its binding, with the shipped content, came into force (server-set
  timestamps), never one written while no policy (or a weakened one) was in force.
- A Namespace target is the analysis' own namespace unless the cross-namespace allowlist pairs them;
  approving it needs ``approve`` in that namespace too.

Its own API server: the policy's absence is part of the story, so no other module's tests share it.
"""

from __future__ import annotations

import datetime
import json
import secrets
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from aianalysis import resources
from aianalysis_dev import devcluster
from tests.e2e.conftest import ROOT, OperatorProcess, get, starter, wait_for
from tests.e2e.test_executor import (
    ALICE,
    CHART,
    EXECUTOR,
    IMAGE,
    INSTALL_NAMESPACE,
    MALLORY,
    PLACEHOLDER,
    RELEASE,
    accept,
    analysed,
    approve,
    digest_of,
    executed_condition,
    helm_bin,
    items,
    patch_status,
    refused,
    serving,
    workflow,
)
from tests.support import approval_policy

MARGIN_SECONDS = 2
"""The executor's propagation margin in these tests (one API server: the policy is in force at once)."""
POLICY_KINDS = approval_policy.KINDS
APPROVER = f"{RELEASE}-approver"
CAROL = "carol"
"""An approver cluster-wide (a ClusterRoleBinding of the chart's approver role)."""


def executor_objects() -> list[dict[str, Any]]:
    """The chart's executor objects with autoExecute on (its role may then create and approve), as
    `helm template` renders them."""
    rendered = subprocess.run(
        [str(helm_bin()), "template", RELEASE, str(CHART), "--namespace", INSTALL_NAMESPACE,
         "--set", "executor.enabled=true", "--set", f"executor.namespaces={{{PLACEHOLDER}}}",
         "--set", "executor.autoExecute.enabled=true"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    kinds = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
    return [
        d
        for d in yaml.safe_load_all(rendered)
        if d
        and d["kind"] in kinds
        and ("executor" in d["metadata"]["name"] or d["metadata"]["name"] == APPROVER)
    ]


def as_list(docs: list[dict[str, Any]]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})


@pytest.fixture(scope="module")
def trust_cluster() -> Iterator[devcluster.DevCluster]:
    """A default install: the CRDs as shipped (``kubectl apply -f crds/``), the executor off."""
    groups = ["system:serviceaccounts", f"system:serviceaccounts:{INSTALL_NAMESPACE}"]
    users = {EXECUTOR: groups, ALICE: [], MALLORY: [], CAROL: []}
    cluster = devcluster.DevCluster(users=users).start()
    try:
        devcluster.apply_crds(cluster, ROOT / "crds")
        cluster.kubectl("create", "namespace", INSTALL_NAMESPACE)
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def ns(trust_cluster: devcluster.DevCluster) -> str:
    name = f"tr-{secrets.token_hex(4)}"
    trust_cluster.kubectl("create", "namespace", name)
    serving(trust_cluster, name)
    return name


@pytest.fixture
def start_executor(
    trust_cluster: devcluster.DevCluster, ns: str, tmp_path: Path
) -> Iterator[Callable[..., OperatorProcess]]:
    kubeconfig = tmp_path / "executor-kubeconfig.yaml"
    kubeconfig.write_text(trust_cluster.kubeconfig_for(EXECUTOR).read_text())

    def make(started: list[OperatorProcess], env: dict[str, str]) -> OperatorProcess:
        argv = [sys.executable, "-m", "aianalysis", "executor", "--namespace", ns]
        return OperatorProcess(
            kubeconfig=kubeconfig,
            log_dir=tmp_path / f"executor-{len(started)}",
            env={"AIANALYSIS_EXECUTOR_APPROVAL_POLICY_MARGIN_SECONDS": str(MARGIN_SECONDS), **env},
            argv=argv,
        )

    yield from starter(make)


# ---- the admin's steps ---------------------------------------------------------------------------


def enable_executor(cluster: devcluster.DevCluster) -> None:
    """What an admin does to turn the executor on: the chart's executor objects (`helm upgrade
    --set executor.enabled=true`), and the CRDs first, as the README says (`kubectl apply -f crds/`)."""
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(ROOT / "crds"))
    objects = [
        o
        for o in executor_objects()
        if not (o["kind"] == "RoleBinding" and o["metadata"].get("namespace") == PLACEHOLDER)
    ]
    cluster.kubectl("apply", "-f", "-", input=as_list(objects))


def remove_policy(cluster: devcluster.DevCluster) -> None:
    for doc in approval_policy.shipped():
        kind = doc["kind"].lower()
        cluster.kubectl("delete", kind, doc["metadata"]["name"], "--ignore-not-found", "--wait=true")


def weaken_policy(cluster: devcluster.DevCluster) -> None:
    """The same-named policy, still failing closed and denying, that checks nothing."""
    [policy] = [d for d in approval_policy.shipped() if d["kind"] == "ValidatingAdmissionPolicy"]
    weak = json.loads(json.dumps(policy))
    weak["spec"]["validations"] = [{"expression": "true", "message": "anything goes"}]
    weak["spec"].pop("variables", None)
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=json.dumps(weak))


def restore_policy(cluster: devcluster.DevCluster) -> None:
    cluster.kubectl(
        "apply", "--server-side", "--force-conflicts", "-f", "-", input=as_list(approval_policy.shipped())
    )


def settled(cluster: devcluster.DevCluster) -> None:
    """Until approvals made now count for the executor (its margin past the policy's last change)."""
    approval_policy.wait_in_force(cluster, margin_seconds=MARGIN_SECONDS)


# ---- what mallory and alice do ---------------------------------------------------------------------


def acting_on(cluster: devcluster.DevCluster, kind: str, *, signal: str) -> dict[str, Any]:
    """A catalog workflow for ``signal`` that acts on objects of ``kind`` (the target's name fills
    TARGET_RESOURCE_NAME)."""
    wid = f"{kind.lower()}-fix-{secrets.token_hex(3)}"
    body = {
        "apiVersion": "kubernaut.io/v1alpha1", "kind": "RemediationWorkflow",
        "metadata": {"name": f"{wid}-v1"},
        "spec": {
            "workflowId": wid, "version": "1.0.0", "title": f"Fix a {kind}", "description": "Fixes it.",
            "riskLevel": "low", "labels": {"signalTypes": [signal], "component": [kind]},
            "parameters": [{"name": "TARGET_RESOURCE_NAME", "type": "string", "required": True}],
            "execution": {"engine": "job", "containerImage": IMAGE, "serviceAccountName": "wf-fixer"},
        },
    }  # fmt: skip
    cluster.kubectl("apply", "-f", "-", input=json.dumps(body))
    accept(cluster, body["metadata"]["name"])
    return body


def selected(
    cluster: devcluster.DevCluster, ns: str, wf: dict[str, Any], *, name: str, kind: str, target: str
) -> None:
    """mallory's AIAnalysis in ``ns`` about ``kind`` ``target``, completed with ``wf`` selected for it
    (the status written as an operator that took the object for one of the analysis' namespace would)."""
    signal = wf["spec"]["labels"]["signalTypes"][0]
    resource = {"kind": kind, "name": target, **({"namespace": ns} if kind == "Namespace" else {})}
    body = {
        "apiVersion": "kubernaut.io/v1alpha1", "kind": "AIAnalysis",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"signal": {"type": signal, "severity": "high"}, "resource": resource,
                 "businessContext": {"environment": "production"}},
    }  # fmt: skip
    cluster.kubectl("apply", "-f", "-", input=json.dumps(body), user=MALLORY)
    status = {
        "phase": "Completed", "completedAt": now(),
        "rootCause": {
            "summary": "it broke", "severity": "high", "signalType": signal,
            "affectedResource": {"kind": kind, "name": target, "apiVersion": "v1"},
        },
        "selectedWorkflow": {
            "workflowId": wf["spec"]["workflowId"], "version": "1.0.0", "containerImage": IMAGE,
            "confidence": 0.95, "rationale": "it broke",
            "parameters": {"TARGET_RESOURCE_NAME": target}, "specDigest": digest_of(cluster, wf),
        },
    }  # fmt: skip
    patch_status(cluster, "aianalysis", name, ns, status)


def forged(cluster: devcluster.DevCluster, ns: str, *, analysis: str, name: str) -> dict[str, Any]:
    """mallory's WorkflowExecution: the analysis' selection reproduced exactly, with an approval in
    alice's name that overrides any review."""
    subject = get(cluster, "aianalyses", analysis, ns)
    assert subject is not None
    chosen = subject["status"]["selectedWorkflow"]
    affected = subject["status"]["rootCause"]["affectedResource"]
    target = {k: affected[k] for k in ("kind", "name", "namespace") if affected.get(k)}
    ref = {
        "workflowId": chosen["workflowId"],
        "version": chosen["version"],
        "specDigest": chosen["specDigest"],
    }
    digest = resources.selection_digest(
        analysis_uid=subject["metadata"]["uid"],
        workflow=resources.WorkflowRef.model_validate(ref),
        parameters=chosen["parameters"],
        target=resources.ResourceRef.model_validate(target),
    )
    return {
        "apiVersion": "kubernaut.io/v1alpha1", "kind": "WorkflowExecution",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "analysisRef": analysis, "analysisUID": subject["metadata"]["uid"], "workflowRef": ref,
            "parameters": chosen["parameters"], "targetResource": target,
            "approval": {"mode": "Manual", "approvedBy": ALICE, "selectionDigest": digest,
                         "overrideReview": True},
        },
    }  # fmt: skip


def create_as(
    cluster: devcluster.DevCluster, user: str, body: dict[str, Any]
) -> subprocess.CompletedProcess[str]:
    return cluster.kubectl("create", "-f", "-", input=json.dumps(body), user=user, check=False)


def denied_by_policy(result: subprocess.CompletedProcess[str]) -> bool:
    return result.returncode != 0 and "ValidatingAdmissionPolicy" in result.stderr


def job_of(cluster: devcluster.DevCluster, ns: str, execution: str) -> dict[str, Any] | None:
    return get(cluster, "jobs", execution, ns)


def events_about(cluster: devcluster.DevCluster, ns: str, name: str) -> list[dict[str, Any]]:
    return [
        e for e in items(cluster, "events", ns)
        if (e.get("involvedObject") or {}).get("name") == name
    ]  # fmt: skip


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---- finding 1: an approval from before the policy -------------------------------------------------


def test_every_install_path_ships_the_approval_policy() -> None:
    """`kubectl apply -f crds/`, the chart (executor off: its default) and `kubectl apply -k deploy`
    all carry the approval policy and its binding, exactly as shipped."""
    wanted = sorted(
        (d["kind"], d["metadata"]["name"], json.dumps(d["spec"], sort_keys=True))
        for d in approval_policy.shipped()
    )

    names = {name for _, name, _ in wanted}  # the rejection policy ships beside it

    def policy_in(docs: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
        return sorted(
            (d["kind"], d["metadata"]["name"], json.dumps(d["spec"], sort_keys=True))
            for d in docs if d and d.get("kind") in POLICY_KINDS and d["metadata"]["name"] in names
        )  # fmt: skip

    crds = [d for p in sorted((ROOT / "crds").glob("*.yaml")) for d in yaml.safe_load_all(p.read_text())]
    chart = subprocess.run(
        [str(helm_bin()), "template", RELEASE, str(CHART), "-n", INSTALL_NAMESPACE, "--include-crds"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    kustomized = [
        d for p in sorted((ROOT / "deploy").rglob("*.yaml")) for d in yaml.safe_load_all(p.read_text())
    ]
    listed = yaml.safe_load((ROOT / "deploy" / "kustomization.yaml").read_text())["resources"]
    deployed = [
        d for r in listed for d in yaml.safe_load_all((ROOT / "deploy" / r).read_text())
    ]  # what `kubectl apply -k deploy` applies
    assert policy_in(crds) == wanted
    assert policy_in(list(yaml.safe_load_all(chart))) == wanted
    assert policy_in(deployed) == wanted and policy_in(kustomized) == wanted


def test_a_default_install_denies_a_forged_approval_at_once(
    trust_cluster: devcluster.DevCluster, ns: str
) -> None:
    cluster = trust_cluster
    wf = workflow(cluster)
    analysed(cluster, ns, wf)
    attempt = create_as(cluster, MALLORY, forged(cluster, ns, analysis="api-oom", name="forged"))
    assert denied_by_policy(attempt), attempt.stderr or attempt.stdout
    assert items(cluster, "wfe", ns) == []


def test_an_approval_written_while_no_policy_was_in_force_is_refused_later(
    trust_cluster: devcluster.DevCluster, ns: str, start_executor: Callable[..., OperatorProcess]
) -> None:
    """The reported attack: no policy (an older install, or an admin removed it) → mallory forges an
    approval in alice's name → the admin enables the executor (policy back) → nothing of hers runs,
    while alice's own approval afterwards does."""
    cluster = trust_cluster
    wf = workflow(cluster)
    analysed(cluster, ns, wf, name="api-oom")
    analysed(cluster, ns, wf, name="api-oom-2")
    remove_policy(cluster)
    try:
        forgery = forged(cluster, ns, analysis="api-oom", name="forged")
        wait_for(  # once the API server no longer sees the policy, nothing checks approvals
            lambda: create_as(cluster, MALLORY, forgery).returncode == 0, what="the forgery to be accepted"
        )
    finally:
        enable_executor(cluster)
    again = forged(cluster, ns, analysis="api-oom", name="again")
    wait_for(lambda: denied_by_policy(create_as(cluster, MALLORY, again)), what="the policy to deny it now")
    settled(cluster)
    executor = start_executor()

    done = wait_for(
        lambda: refused(cluster, ns, "forged"), what="the refusal", logs=executor.logs, timeout=60
    )

    condition = executed_condition(done)
    assert condition["reason"] == "NotApproved", condition
    assert "before the approval policy" in condition["message"], condition
    assert any(e["reason"] == "NotApproved" for e in events_about(cluster, ns, "forged"))
    assert approve(cluster, ns, "api-oom-2").returncode == 0  # alice, after the policy: runs
    wait_for(lambda: job_of(cluster, ns, "api-oom-2-exec-1"), what="alice's Job", logs=executor.logs)
    assert job_of(cluster, ns, "forged") is None
    assert [j["metadata"]["name"] for j in items(cluster, "jobs", ns)] == ["api-oom-2-exec-1"]


def test_an_approval_admitted_by_a_weakened_policy_is_refused_also_after_it_is_restored(
    trust_cluster: devcluster.DevCluster, ns: str, start_executor: Callable[..., OperatorProcess]
) -> None:
    """A same-named policy that fails closed and denies, but checks nothing: the executor trusts its
    content, not its name — and an approval it let through stays untrusted once the shipped content
    is back (in place: same object, a later change)."""
    cluster = trust_cluster
    wf = workflow(cluster)
    for name in ("api-1", "api-2", "api-3"):
        analysed(cluster, ns, wf, name=name)
    enable_executor(cluster)
    weaken_policy(cluster)
    try:
        executor = start_executor()
        first = forged(cluster, ns, analysis="api-1", name="forged-1")
        wait_for(  # once the API server sees the weakened policy, it lets the forgery through
            lambda: create_as(cluster, MALLORY, first).returncode == 0, what="the forgery to be accepted"
        )
        done = wait_for(
            lambda: refused(cluster, ns, "forged-1"), what="the refusal", logs=executor.logs, timeout=60
        )
        condition = executed_condition(done)
        assert condition["reason"] == "NotApproved" and "not the shipped" in condition["message"], condition
        executor.stop()
        second = create_as(cluster, MALLORY, forged(cluster, ns, analysis="api-2", name="forged-2"))
        assert second.returncode == 0, second.stderr
    finally:
        restore_policy(cluster)
    settled(cluster)
    executor = start_executor()

    done = wait_for(
        lambda: refused(cluster, ns, "forged-2"), what="the refusal", logs=executor.logs, timeout=60
    )

    condition = executed_condition(done)
    assert condition["reason"] == "NotApproved" and "before the approval policy" in condition["message"]
    assert approve(cluster, ns, "api-3").returncode == 0
    wait_for(lambda: job_of(cluster, ns, "api-3-exec-1"), what="alice's Job", logs=executor.logs)
    assert [j["metadata"]["name"] for j in items(cluster, "jobs", ns)] == ["api-3-exec-1"]


# ---- finding 2: a Namespace incident ---------------------------------------------------------------


def test_a_namespace_target_is_not_the_analysis_own_namespace_for_approvers_or_the_executor(
    trust_cluster: devcluster.DevCluster, ns: str, start_executor: Callable[..., OperatorProcess]
) -> None:
    """An analysis in ns about `Namespace kube-system`, its selection as an operator that took it for
    the analysis' own namespace wrote it: alice (approver in ns only) cannot approve it; an approval
    by someone who may approve everywhere is refused by the executor (no cross-namespace pair)."""
    cluster = trust_cluster
    enable_executor(cluster)
    settled(cluster)
    nswf = acting_on(cluster, "Namespace", signal="ResourceQuotaExceeded")
    selected(cluster, ns, nswf, name="quota", kind="Namespace", target="kube-system")
    selected(cluster, ns, nswf, name="own-quota", kind="Namespace", target=ns)
    executor = start_executor()

    by_alice = approve(cluster, ns, "quota")
    assert by_alice.returncode == 1 and "refused the approval" in by_alice.stderr, by_alice.stdout
    by_admin = approve(cluster, ns, "quota", user="admin")
    assert by_admin.returncode == 0, by_admin.stderr
    done = wait_for(
        lambda: refused(cluster, ns, "quota-exec-1"), what="the refusal", logs=executor.logs, timeout=60
    )
    condition = executed_condition(done)
    assert condition["reason"] == "NamespaceNotAllowed" and "kube-system" in condition["message"], condition

    assert approve(cluster, ns, "own-quota").returncode == 0  # its own namespace: runs
    job = wait_for(lambda: job_of(cluster, ns, "own-quota-exec-1"), what="the Job", logs=executor.logs)
    env = {e["name"]: e["value"] for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["TARGET_RESOURCE_NAME"] == ns
    assert [j["metadata"]["name"] for j in items(cluster, "jobs", ns)] == ["own-quota-exec-1"]


def test_auto_execute_never_runs_a_namespace_target_outside_the_analysis_namespace(
    trust_cluster: devcluster.DevCluster, ns: str, start_executor: Callable[..., OperatorProcess]
) -> None:
    cluster = trust_cluster
    enable_executor(cluster)
    settled(cluster)
    cluster.kubectl("label", "namespace", ns, "kubernaut.io/auto-execute=true")
    nswf = acting_on(cluster, "Namespace", signal="ResourceQuotaExceeded")
    executor = start_executor(
        AIANALYSIS_EXECUTOR_AUTO_EXECUTE="true", AIANALYSIS_EXECUTOR_AUTO_EXECUTE_NAMESPACES=ns
    )
    selected(cluster, ns, nswf, name="quota", kind="Namespace", target="kube-system")
    selected(cluster, ns, nswf, name="own-quota", kind="Namespace", target=ns)

    wait_for(lambda: job_of(cluster, ns, "own-quota-exec-1"), what="the barrier's Job", logs=executor.logs)

    assert [e["metadata"]["name"] for e in items(cluster, "wfe", ns)] == ["own-quota-exec-1"]
    # The executor declined it itself: it never asked the API server, whose policy would deny it too.
    assert "autoExecute of quota postponed" not in executor.logs(), executor.logs()
    assert [j["metadata"]["name"] for j in items(cluster, "jobs", ns)] == ["own-quota-exec-1"]


def test_a_cluster_scoped_target_needs_an_approver_of_the_cluster(
    trust_cluster: devcluster.DevCluster, ns: str
) -> None:
    """A Node belongs to no namespace: approving what runs on it is for someone who may approve
    cluster-wide, not any approver of the namespace the analysis happens to be in."""
    cluster = trust_cluster
    enable_executor(cluster)
    cluster.kubectl(
        "create", "clusterrolebinding", f"{CAROL}-approves", f"--clusterrole={APPROVER}", f"--user={CAROL}",
        check=False,  # there already: the module's cluster is shared
    )  # fmt: skip
    wf = acting_on(cluster, "Node", signal="DiskPressure")
    selected(cluster, ns, wf, name="disk", kind="Node", target="worker-1")

    by_alice = approve(cluster, ns, "disk")
    assert by_alice.returncode == 1 and "refused the approval" in by_alice.stderr, by_alice.stderr
    as_alice = create_as(cluster, ALICE, forged(cluster, ns, analysis="disk", name="by-alice"))  # the reason
    assert denied_by_policy(as_alice) and "cluster-wide" in as_alice.stderr, as_alice.stderr
    by_carol = approve(cluster, ns, "disk", user=CAROL)
    assert by_carol.returncode == 0, by_carol.stderr
    assert [e["spec"]["approval"]["approvedBy"] for e in items(cluster, "wfe", ns)] == [CAROL]
