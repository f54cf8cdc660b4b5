"""The offline provider's rules: each one, from the evidence a cluster shows to the finding an SRE
would state (refined signal, action type, target, values), with the explanation that lands in the
rationale; their one order; and their documentation, read from their docstrings."""

from __future__ import annotations

import re
import sys
from typing import Any

import pytest

from aianalysis import resources
from aianalysis.analysis.offline import evidence, rule, rules

NS = "shop"
DEPLOY = resources.ResourceRef(kind="Deployment", name="api", namespace=NS)


def crash(**overrides: Any) -> evidence.Container:
    fields: dict[str, Any] = {
        "name": "api",
        "restarts": 6,
        "waiting": "CrashLoopBackOff",
        "last_reason": "Error",
        "last_exit_code": 1,
    }
    return evidence.Container(**(fields | overrides))


def running(**overrides: Any) -> evidence.Container:
    return evidence.Container(**({"name": "api", "ready": True} | overrides))


def pod(name: str, *containers: evidence.Container, **fields: Any) -> evidence.Pod:
    return evidence.Pod(name=name, phase=fields.pop("phase", "Running"), containers=containers, **fields)


def seen(signal: str = "CrashLoopBackOff", **fields: Any) -> evidence.Evidence:
    incident = fields.pop("incident", DEPLOY)
    return evidence.Evidence(signal_type=signal, incident=incident, cluster=True, workload=DEPLOY, **fields)


def first(found: evidence.Evidence) -> rule.Finding:
    findings = rules.findings(found)
    assert findings, "no analyzer matched"
    return findings[0]


NODE_READY = {"Ready": "True"}
CLAIM = resources.ResourceRef(kind="PersistentVolumeClaim", name="data-db-0", namespace=NS)
CRONJOB = resources.ResourceRef(kind="CronJob", name="rollup", namespace=NS)

DB_POD = resources.ResourceRef(kind="Pod", name="db-0", namespace=NS)
MULTI_ATTACH = evidence.Event(
    kind="Pod",
    name="db-0",
    reason="FailedAttachVolume",
    type="Warning",
    message='Multi-Attach error for volume "pvc-1" Volume is already exclusively attached to '
    "one node and can't be attached to another",
)

#: rule name -> (evidence, expected action type, words the explanation must carry, expected values)
CASES: dict[str, tuple[evidence.Evidence, str | None, tuple[str, ...], dict[str, str]]] = {
    "healthy-despite-alert": (
        seen(pods=(pod("api-1", running()), pod("api-2", running()))),
        None,
        ("contradicts", "CrashLoopBackOff"),
        {},
    ),
    "healthy-unchanged-unsaturated": (
        seen(
            "HighErrorRate",
            pods=(pod("api-1", running()), pod("api-2", running())),
            cpu_of_requests=(35, 31),
            rollout=evidence.Rollout(revision=4, healthy_revisions=frozenset({4}), age_hours=120.0),
        ),
        None,
        ("HighErrorRate", "5.0 days", "nothing in the cluster"),
        {},
    ),
    "volume-attached-to-gone-node": (
        seen(
            "FailedAttachVolume",
            incident=DB_POD,
            events=(MULTI_ATTACH,),
            attachments=(evidence.Attachment(volume="pvc-1", node="n9", attached=True, node_exists=False),),
        ),
        "ForceDetachVolume",
        ("pvc-1", "n9", "no longer exists", "force-detaching"),
        {"PERSISTENT_VOLUME_NAME": "pvc-1"},
    ),
    "volume-attached-elsewhere": (
        seen(
            "FailedAttachVolume",
            incident=DB_POD,
            events=(MULTI_ATTACH,),
            nodes=(evidence.Node(name="n9", conditions={"Ready": "Unknown"}),),
        ),
        None,
        ("another node", "force-detaching", "do not show whether that node is gone"),
        {},
    ),
    "oom-alert-but-application-crash": (
        seen("OOMKilled", pods=(pod("api-1", crash()),)),
        None,
        ("OOMKilled", "exit code 1"),
        {},
    ),
    "oomkilled-jvm-heap-share": (
        seen(
            "OOMKilled",
            pods=(
                pod(
                    "api-1",
                    crash(
                        last_reason="OOMKilled",
                        last_exit_code=137,
                        memory_limit="2Gi",
                        java=True,
                        heap_percent=90,
                    ),
                ),
            ),
        ),
        "TuneJVMHeap",
        ("90%", "2Gi", "smaller heap share"),
        {"MAX_RAM_PERCENTAGE": "70"},
    ),
    "oomkilled-at-limit": (
        seen(
            "OOMKilled",
            pods=(pod("api-1", crash(last_reason="OOMKilled", last_exit_code=137, memory_limit="256Mi")),),
        ),
        "IncreaseMemoryLimits",
        ("256Mi", "512Mi"),
        {"MEMORY_LIMIT_NEW": "512Mi", "CONTAINER_NAME": "api"},
    ),
    "crashloop-gitops-configuration-error": (
        seen(
            pods=(pod("api-1", crash()),),
            config_maps=("api-config",),
            gitops=("ConfigMap api-config",),
            logs=('error: config.yaml: unknown field "cache_mode"',),
        ),
        "GitRevertCommit",
        ("api-config", "GitOps", "commit"),
        {"TARGET_CONFIGMAP_NAME": "api-config"},
    ),
    "crashloop-configuration-error": (
        seen(
            pods=(pod("api-1", crash()),),
            rollout=evidence.Rollout(
                revision=4, failing_revisions=frozenset({4}), healthy_revisions=frozenset({3})
            ),
            config_maps=("api-config",),
            logs=(
                "starting api v2.3",
                'fatal: loading /etc/api/config.yaml: unknown directive "invalid_directive"',
            ),
        ),
        "PatchConfiguration",
        ("api-config", "configuration"),
        {"TARGET_CONFIGMAP_NAME": "api-config"},
    ),
    "rbac-denied": (
        seen(
            pods=(pod("api-1", crash()),),
            service_account="api-reader",
            logs=(
                'pods is forbidden: User "system:serviceaccount:shop:api-reader" cannot list resource "pods" '
                'in API group "" in the namespace "shop"',
            ),
        ),
        "RestoreRoleBinding",
        ("denies", "api-reader", "RoleBinding"),
        {"SERVICE_ACCOUNT_NAME": "api-reader"},
    ),
    "network-policy-isolation": (
        seen(
            "ReplicasMismatch",
            pods=(pod("api-1", running(ready=False)),),
            events=(
                evidence.Event(
                    kind="Pod",
                    name="api-1",
                    type="Warning",
                    reason="Unhealthy",
                    message="Readiness probe failed: curl: (28) Connection timed out after 2001 milliseconds",
                ),
            ),
            network_policies=(
                evidence.NetworkPolicy(name="only-monitoring", denies_ingress=False),
                evidence.NetworkPolicy(name="deny-everything", selects_all=True, denies_ingress=True),
            ),
        ),
        "FixNetworkPolicy",
        ("deny-everything", "ingress"),
        {"POLICY_NAME": "deny-everything"},
    ),
    "certificate-not-ready": (
        seen(
            "CertManagerCertNotReady",
            certificates=(
                evidence.Certificate(
                    name="api-tls",
                    ready=False,
                    message="Issuing certificate as Secret does not exist",
                    issuer_kind="ClusterIssuer",
                    issuer_name="internal-ca",
                    issuer_ready=False,
                    issuer_message='Error getting keypair for CA issuer: secret "internal-ca-key" not found',
                ),
            ),
        ),
        "FixCertificate",
        ("api-tls", "ClusterIssuer internal-ca"),
        {"ISSUER_NAME": "internal-ca", "ISSUER_KIND": "ClusterIssuer"},
    ),
    "crashloop-after-rollout": (
        seen(
            pods=(pod("api-new", crash()), pod("api-old", running())),
            rollout=evidence.Rollout(
                revision=8,
                failing_revisions=frozenset({8}),
                healthy_revisions=frozenset({7}),
                changed=("command of api",),
            ),
        ),
        "RollbackDeployment",
        ("revision 8", "rolling back"),
        {"TO_REVISION": "7"},
    ),
    "crashloop-dependency-connection": (
        seen(
            pods=(pod("api-1", crash()),),
            rollout=evidence.Rollout(revision=7, failing_revisions=frozenset({6, 7})),
            logs=("FATAL redis: dial tcp 10.0.3.5:6379: connect: connection refused",),
        ),
        "RestartPods",
        ("cannot connect", "rolling restart"),
        {},
    ),
    "missing-reference": (
        seen(
            "CreateContainerConfigError",
            pods=(
                pod(
                    "api-1",
                    crash(
                        waiting="CreateContainerConfigError",
                        waiting_message='configmap "api-config" not found',
                    ),
                ),
            ),
            missing=(("ConfigMap", "api-config"),),
        ),
        "PatchConfiguration",
        ("ConfigMap api-config", "does not exist"),
        {},
    ),
    "image-tag-missing": (
        seen(
            "ImagePullBackOff",
            pods=(
                pod(
                    "api-1",
                    crash(
                        waiting="ImagePullBackOff",
                        image="registry.example/api:9.9",
                        waiting_message="manifest for registry.example/api:9.9 not found: manifest unknown",
                    ),
                    phase="Pending",
                ),
            ),
        ),
        "RollbackDeployment",
        ("registry.example/api:9.9", "previous image"),
        {"CONTAINER_NAME": "api"},
    ),
    "image-pull-denied": (
        seen(
            "ImagePullBackOff",
            pods=(
                pod(
                    "api-1",
                    crash(
                        waiting="ErrImagePull",
                        image="registry.example/private/api:1.0",
                        waiting_message="failed to authorize: 401 Unauthorized",
                    ),
                    phase="Pending",
                    pull_secrets=("registry-pull",),
                ),
            ),
        ),
        "RefreshImagePullSecret",
        ("pull secret",),
        {"PULL_SECRET_NAME": "registry-pull"},
    ),
    "image-unpullable-after-rollout": (
        seen(
            "ContainerWaiting",
            pods=(
                pod(
                    "api-2",
                    crash(
                        restarts=0,
                        last_reason=None,
                        last_exit_code=None,
                        waiting="ErrImagePull",
                        image="registry.example/api:2.0",
                        waiting_message='failed to pull and unpack image "registry.example/api:2.0": '
                        'failed to resolve image: failed to do request: Head "https://registry.example/v2/'
                        'api/manifests/2.0": dial tcp 10.0.0.9:443: connect: connection refused',
                    ),
                    phase="Pending",
                ),
                pod("api-1", running()),
            ),
            rollout=evidence.Rollout(
                revision=2,
                failing_revisions=frozenset({2}),
                healthy_revisions=frozenset({1}),
                changed=("image of api",),
            ),
        ),
        "RollbackDeployment",
        ("registry.example/api:2.0", "revision 2", "previous image"),
        {"CONTAINER_NAME": "api"},
    ),
    "pending-untolerated-taint": (
        seen(
            "FailedScheduling",
            pods=(
                pod(
                    "api-1",
                    phase="Pending",
                    unschedulable="0/2 nodes are available: 2 node(s) had untolerated taint {maintenance: true}",  # noqa: E501
                ),
            ),
            nodes=(
                evidence.Node(
                    name="n1",
                    conditions=NODE_READY,
                    taints=(evidence.Taint(key="maintenance", effect="NoSchedule"),),
                ),
            ),
        ),
        "RemoveTaint",
        ("maintenance", "removing the taint"),
        {"TAINT_KEY": "maintenance", "NODE_NAME": "n1"},
    ),
    "pending-cordoned-node": (
        seen(
            "FailedScheduling",
            pods=(pod("api-1", phase="Pending"),),
            nodes=(evidence.Node(name="n2", conditions=NODE_READY, unschedulable=True),),
        ),
        "UncordonNode",
        ("n2", "cordoned"),
        {"NODE_NAME": "n2"},
    ),
    "request-exceeds-every-node": (
        seen(
            "Unhealthy",
            pods=(
                pod(
                    "api-1",
                    running(ready=False, requests={"cpu": "64", "memory": "256Mi"}),
                    phase="Pending",
                    unschedulable="0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are "
                    "available: 2 No preemption victims found for incoming pod.",
                ),
            ),
            nodes=(
                evidence.Node(name="n1", conditions=NODE_READY, allocatable={"cpu": "4", "memory": "16Gi"}),
                evidence.Node(
                    name="n2", conditions=NODE_READY, allocatable={"cpu": "3800m", "memory": "16Gi"}
                ),
            ),
        ),
        "LowerResourceRequests",
        ("64 cpu", "the largest node: 4", "adding nodes would not help"),
        {"CPU_REQUEST_NEW": "2"},
    ),
    "pdb-blocks-drain": (
        seen(
            "KubePodDisruptionBudgetAtLimit",
            incident=resources.ResourceRef(kind="PodDisruptionBudget", name="api-pdb", namespace=NS),
            pdb=evidence.PDB(name="api-pdb", disruptions_allowed=0, current_healthy=2, desired_healthy=2),
            nodes=(evidence.Node(name="n3", conditions=NODE_READY, unschedulable=True),),
        ),
        "RelaxPDB",
        ("api-pdb", "relaxing"),
        {},
    ),
    "hpa-maxed-cpu": (
        seen(
            "HPAMaxedOut",
            hpa=evidence.HPA(
                name="api",
                min_replicas=2,
                max_replicas=10,
                current_replicas=10,
                cpu_target=60,
                cpu_current=95,
            ),
        ),
        "PatchHPA",
        ("maxReplicas", "15"),
        {"MAX_REPLICAS_NEW": "15"},
    ),
    "cpu-saturated-scale-out": (
        seen(
            "HighLatency",
            pods=(pod("api-1", running()), pod("api-2", running())),
            cpu_of_requests=(96, 100),
            rollout=evidence.Rollout(revision=4, healthy_revisions=frozenset({4}), age_hours=72.0),
        ),
        "ScaleOut",
        ("whole CPU request", "2 → 4"),
        {"REPLICAS": "4"},
    ),
    "pending-insufficient-resources": (
        seen(
            "FailedScheduling",
            pods=(
                pod("api-1", phase="Pending", unschedulable="0/3 nodes are available: 3 Insufficient cpu."),
            ),
        ),
        "ProvisionNode",
        ("cpu",),
        {},
    ),
    "readiness-probe-times-out": (
        seen(
            "Unhealthy",
            pods=(pod("api-1", running(ready=False, probe_timeouts={"readiness": 1})),),
            events=(
                evidence.Event(
                    kind="Pod",
                    name="api-1",
                    reason="Unhealthy",
                    type="Warning",
                    count=12,
                    message='Readiness probe failed: Get "http://10.244.0.9:8080/ready": context deadline '
                    "exceeded (Client.Timeout exceeded while awaiting headers)",
                ),
            ),
        ),
        "RelaxProbe",
        ("times out after 1s", "5s"),
        {"PROBE": "readiness", "TIMEOUT_SECONDS": "5", "CONTAINER_NAME": "api"},
    ),
    "node-not-ready": (
        seen("NodeNotReady", nodes=(evidence.Node(name="n4", conditions={"Ready": "False"}),)),
        "DrainNode",
        ("n4", "NotReady"),
        {"NODE_NAME": "n4"},
    ),
    "node-unreachable": (
        seen("NodeUnreachable", nodes=(evidence.Node(name="n5", conditions={"Ready": "Unknown"}),)),
        "DrainNode",
        ("n5", "stopped reporting"),
        {"NODE_NAME": "n5"},
    ),
    "node-disk-pressure": (
        seen(
            "DiskPressure",
            nodes=(evidence.Node(name="n6", conditions={"Ready": "True", "DiskPressure": "True"}),),
        ),
        "CleanupNode",
        ("n6", "DiskPressure"),
        {"NODE_NAME": "n6"},
    ),
    "node-memory-pressure": (
        seen(
            "MemoryPressure",
            nodes=(evidence.Node(name="n7", conditions={"Ready": "True", "MemoryPressure": "True"}),),
            node_usage=(evidence.NodeUsage(name="n7", memory_mi=30000, memory_percent=100),),
        ),
        "EvictPods",
        ("n7", "MemoryPressure", "until 5Gi is free"),
        {"NODE_NAME": "n7", "MEMORY_FREE_TARGET": "5Gi"},
    ),
    "evicted-pods": (
        seen(
            "Evicted",
            pods=(pod("api-1", phase="Failed", reason="Evicted", message="The node was low on memory."),),
        ),
        "DeletePod",
        ("evicted", "cleaning"),
        {},
    ),
    "pvc-database-data-filling-up": (
        evidence.Evidence(
            signal_type="PersistentVolumeFillingUp",
            incident=CLAIM,
            cluster=True,
            claim_capacity="200Gi",
            claim_users=(
                evidence.ClaimUser(
                    pod="db-0",
                    container="db",
                    image="registry.example/dba/postgres:16.4",
                    mount_path="/pgdata",
                ),
            ),
        ),
        "ExpandPVC",
        ("postgres", "/pgdata", "deleting files is not the fix"),
        {"NEW_SIZE": "300Gi"},
    ),
    "pvc-filling-up": (
        evidence.Evidence(
            signal_type="PersistentVolumeFillingUp",
            incident=CLAIM,
            cluster=True,
            claim_capacity="200Gi",
        ),
        None,
        ("200Gi", "fills up"),
        {"NEW_SIZE": "300Gi"},
    ),
    "cronjob-runs-keep-failing": (
        evidence.Evidence(
            signal_type="BackoffLimitExceeded",
            incident=CRONJOB,
            cluster=True,
            workload=CRONJOB,
            failed_runs=("BackoffLimitExceeded", "BackoffLimitExceeded", "BackoffLimitExceeded"),
        ),
        "SuspendCronJob",
        ("3 runs", "suspending", "BackoffLimitExceeded"),
        {},
    ),
    "job-past-deadline": (
        seen(
            "BackoffLimitExceeded",
            incident=resources.ResourceRef(kind="Job", name="export", namespace=NS),
            job_failure="DeadlineExceeded",
            job_deadline=600,
            events=(
                evidence.Event(
                    kind="Job",
                    name="export",
                    reason="DeadlineExceeded",
                    type="Warning",
                    message="Job was active longer than specified deadline",
                ),
            ),
        ),
        "RerunJob",
        ("deadline of 600s", "1200s"),
        {"ACTIVE_DEADLINE_SECONDS": "1200"},
    ),
    "job-failed": (
        seen(
            "BackoffLimitExceeded",
            incident=resources.ResourceRef(kind="Job", name="export", namespace=NS),
            job_failure="BackoffLimitExceeded",
        ),
        None,
        ("BackoffLimitExceeded",),
        {},
    ),
}


def test_every_rule_of_the_table_has_a_case_here_in_the_order_they_run() -> None:
    assert [r.name for r in rules.RULES] == list(CASES)


@pytest.mark.parametrize("name", list(CASES))
def test_each_rule_refines_the_evidence_into_a_finding_with_its_explanation(name: str) -> None:
    found, action, words, values = CASES[name]

    finding = first(found)

    assert finding.rule == name
    assert finding.action_type == action
    for word in words:
        assert word.lower() in finding.explanation.lower(), finding.explanation
    assert dict(finding.values).items() >= values.items()
    assert finding.facts, "a finding always names the facts behind it"


def test_red_herrings_decline_with_a_reason_and_real_failures_do_not() -> None:
    assert first(CASES["healthy-despite-alert"][0]).decline
    assert first(CASES["oom-alert-but-application-crash"][0]).decline
    assert first(CASES["volume-attached-elsewhere"][0]).decline
    assert first(CASES["oomkilled-at-limit"][0]).decline is None


def test_the_table_is_extensible_with_rules_of_ones_own() -> None:
    mine = rule.Rule(
        name="always-restart",
        signal_type="CrashLoopBackOff",
        action_type="RestartPod",
        query="restart",
        explanation="Restart {workload}.",
        match=lambda found: rule.Match(facts=("it crashes",), target=found.workload),
    )

    [finding] = rules.findings(seen(pods=(pod("api-1", crash()),)), rules=[mine])

    assert (finding.rule, finding.explanation) == ("always-restart", f"Restart Deployment {NS}/api.")


def test_each_rule_is_documented_in_order_by_what_it_needs_and_concludes() -> None:
    """The rules' reference page is generated from their docstrings: each says what evidence the
    rule needs and whether it selects an action, names none, or declines."""
    documented = list(rules.documented())

    assert [name for name, _ in documented] == list(CASES)
    for name, doc in documented:
        assert "Needs:" in doc, name
        concluded = [word in doc for word in ("Selects", "Declines", "Names no action")]
        assert any(concluded), name
        assert ("Declines" in doc) == bool(next(r for r in rules.RULES if r.name == name).decline), name


def test_a_rule_s_thresholds_are_named_in_its_documentation_as_in_its_module() -> None:
    """A threshold a docstring names (``HEAP_SHARE_MAX``) is a constant of the rule's own module."""
    for r in rules.RULES:
        home = sys.modules[r.match.__module__]
        for named in re.findall(r"``([A-Z][A-Z_]+)``", r.doc):
            assert isinstance(getattr(home, named, None), int | float), (r.name, named)
