"""The analyzers table: each rule, from the evidence a cluster shows to the finding an SRE would
state (refined signal, action type, target, values), with the explanation that lands in the
rationale."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from aianalysis import resources
from aianalysis.analysis.llm import analyzers as a
from aianalysis.analysis.llm import evidence

NS = "shop"
DEPLOY = resources.ResourceRef(kind="Deployment", name="api", namespace=NS)


def crash(**overrides: Any) -> a.Container:
    fields: dict[str, Any] = {
        "name": "api",
        "restarts": 6,
        "waiting": "CrashLoopBackOff",
        "last_reason": "Error",
        "last_exit_code": 1,
    }
    return a.Container(**(fields | overrides))


def running(**overrides: Any) -> a.Container:
    return a.Container(**({"name": "api", "ready": True} | overrides))


def pod(name: str, *containers: a.Container, **fields: Any) -> a.Pod:
    return a.Pod(name=name, phase=fields.pop("phase", "Running"), containers=containers, **fields)


def seen(signal: str = "CrashLoopBackOff", **fields: Any) -> a.Evidence:
    incident = fields.pop("incident", DEPLOY)
    return a.Evidence(signal_type=signal, incident=incident, cluster=True, workload=DEPLOY, **fields)


def first(found: a.Evidence) -> a.Finding:
    findings = a.analyze(found)
    assert findings, "no analyzer matched"
    return findings[0]


NODE_READY = {"Ready": "True"}
CLAIM = resources.ResourceRef(kind="PersistentVolumeClaim", name="data-db-0", namespace=NS)
CRONJOB = resources.ResourceRef(kind="CronJob", name="rollup", namespace=NS)

DB_POD = resources.ResourceRef(kind="Pod", name="db-0", namespace=NS)
MULTI_ATTACH = a.Event(
    kind="Pod",
    name="db-0",
    reason="FailedAttachVolume",
    type="Warning",
    message='Multi-Attach error for volume "pvc-1" Volume is already exclusively attached to '
    "one node and can't be attached to another",
)

#: rule name -> (evidence, expected action type, words the explanation must carry, expected values)
CASES: dict[str, tuple[a.Evidence, str | None, tuple[str, ...], dict[str, str]]] = {
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
            rollout=a.Rollout(revision=4, healthy_revisions=frozenset({4}), age_hours=120.0),
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
            attachments=(a.Attachment(volume="pvc-1", node="n9", attached=True, node_exists=False),),
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
            nodes=(a.Node(name="n9", conditions={"Ready": "Unknown"}),),
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
            rollout=a.Rollout(revision=4, failing_revisions=frozenset({4}), healthy_revisions=frozenset({3})),
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
                a.Event(
                    kind="Pod",
                    name="api-1",
                    type="Warning",
                    reason="Unhealthy",
                    message="Readiness probe failed: curl: (28) Connection timed out after 2001 milliseconds",
                ),
            ),
            network_policies=(
                a.NetworkPolicy(name="only-monitoring", denies_ingress=False),
                a.NetworkPolicy(name="deny-everything", selects_all=True, denies_ingress=True),
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
                a.Certificate(
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
            rollout=a.Rollout(
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
            rollout=a.Rollout(revision=7, failing_revisions=frozenset({6, 7})),
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
                a.Node(
                    name="n1",
                    conditions=NODE_READY,
                    taints=(a.Taint(key="maintenance", effect="NoSchedule"),),
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
            nodes=(a.Node(name="n2", conditions=NODE_READY, unschedulable=True),),
        ),
        "UncordonNode",
        ("n2", "cordoned"),
        {"NODE_NAME": "n2"},
    ),
    "pdb-blocks-drain": (
        seen(
            "KubePodDisruptionBudgetAtLimit",
            incident=resources.ResourceRef(kind="PodDisruptionBudget", name="api-pdb", namespace=NS),
            pdb=a.PDB(name="api-pdb", disruptions_allowed=0, current_healthy=2, desired_healthy=2),
            nodes=(a.Node(name="n3", conditions=NODE_READY, unschedulable=True),),
        ),
        "RelaxPDB",
        ("api-pdb", "relaxing"),
        {},
    ),
    "hpa-maxed-cpu": (
        seen(
            "HPAMaxedOut",
            hpa=a.HPA(
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
            rollout=a.Rollout(revision=4, healthy_revisions=frozenset({4}), age_hours=72.0),
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
    "node-not-ready": (
        seen("NodeNotReady", nodes=(a.Node(name="n4", conditions={"Ready": "False"}),)),
        "DrainNode",
        ("n4", "NotReady"),
        {"NODE_NAME": "n4"},
    ),
    "node-unreachable": (
        seen("NodeUnreachable", nodes=(a.Node(name="n5", conditions={"Ready": "Unknown"}),)),
        "DrainNode",
        ("n5", "stopped reporting"),
        {"NODE_NAME": "n5"},
    ),
    "node-disk-pressure": (
        seen(
            "DiskPressure", nodes=(a.Node(name="n6", conditions={"Ready": "True", "DiskPressure": "True"}),)
        ),
        "CleanupNode",
        ("n6", "DiskPressure"),
        {"NODE_NAME": "n6"},
    ),
    "node-memory-pressure": (
        seen(
            "MemoryPressure",
            nodes=(a.Node(name="n7", conditions={"Ready": "True", "MemoryPressure": "True"}),),
            node_usage=(a.NodeUsage(name="n7", memory_mi=30000, memory_percent=100),),
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
        a.Evidence(
            signal_type="PersistentVolumeFillingUp",
            incident=CLAIM,
            cluster=True,
            claim_capacity="200Gi",
            claim_users=(
                a.ClaimUser(
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
        a.Evidence(
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
        a.Evidence(
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
    "job-failed": (
        seen(
            "BackoffLimitExceeded",
            incident=resources.ResourceRef(kind="Job", name="export", namespace=NS),
            job_failure="DeadlineExceeded",
        ),
        None,
        ("DeadlineExceeded",),
        {},
    ),
}


def test_every_rule_of_the_table_has_a_case_here() -> None:
    assert [rule.name for rule in a.RULES] == list(CASES)


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


@pytest.mark.parametrize(
    ("exists", "ready", "said"),
    [
        (True, "Unknown", "Node n9 still exists and stopped reporting (Ready=Unknown)"),
        (True, "False", "Node n9 still exists and is NotReady"),
        (None, None, "whether Node n9 still exists could not be read"),
    ],
)
def test_a_volume_held_by_a_node_that_still_exists_or_may_is_declined_with_why(
    exists: bool | None, ready: str | None, said: str
) -> None:
    found = seen(
        "FailedAttachVolume",
        incident=DB_POD,
        events=(MULTI_ATTACH,),
        attachments=(
            a.Attachment(volume="pvc-1", node="n9", attached=True, node_exists=exists, node_ready=ready),
        ),
    )
    finding = first(found)
    assert finding.rule == "volume-attached-elsewhere"
    assert finding.decline
    assert said in finding.explanation


def test_a_volume_also_attached_to_a_live_node_is_not_force_detached() -> None:
    found = seen(
        "FailedAttachVolume",
        incident=DB_POD,
        events=(MULTI_ATTACH,),
        attachments=(
            a.Attachment(volume="pvc-1", node="gone", node_exists=False),
            a.Attachment(volume="pvc-1", node="n9", node_exists=True, node_ready="Unknown"),
        ),
    )
    assert first(found).rule == "volume-attached-elsewhere"


def test_the_volume_the_multi_attach_error_names_is_the_one_detached() -> None:
    found = seen(
        "FailedAttachVolume",
        incident=DB_POD,
        events=(MULTI_ATTACH,),
        attachments=(
            a.Attachment(volume="pvc-other", node="gone-too", node_exists=False),
            a.Attachment(volume="pvc-1", node="gone", node_exists=False),
        ),
    )
    assert first(found).values["PERSISTENT_VOLUME_NAME"] == "pvc-1"


def test_a_stale_attachment_without_an_attach_error_proves_nothing() -> None:
    found = seen(
        "FailedAttachVolume",
        incident=DB_POD,
        attachments=(a.Attachment(volume="pvc-1", node="gone", node_exists=False),),
    )
    assert all(
        f.rule not in ("volume-attached-to-gone-node", "volume-attached-elsewhere") for f in a.analyze(found)
    )


@pytest.mark.parametrize(
    ("used", "share", "target"),
    [(30000, 100, "5Gi"), (2000, 95, "211Mi"), (2000, 80, None), (2000, 0, None), (None, None, None)],
)
def test_the_memory_to_free_brings_a_pressured_node_back_to_85_percent_of_its_allocatable(
    used: int | None, share: int | None, target: str | None
) -> None:
    usage = (
        ()
        if used is None or share is None
        else (a.NodeUsage(name="n7", memory_mi=used, memory_percent=share),)
    )
    found = seen(
        "MemoryPressure",
        nodes=(a.Node(name="n7", conditions={"MemoryPressure": "True"}),),
        node_usage=(*usage, a.NodeUsage(name="other", memory_mi=9000, memory_percent=120)),
    )
    finding = first(found)
    assert finding.rule == "node-memory-pressure"
    assert finding.values.get("MEMORY_FREE_TARGET") == target
    assert "<" not in finding.explanation, "no placeholder left when the usage is unknown"


@pytest.mark.parametrize(
    ("image", "engine"),
    [
        ("postgres:16", "postgres"),
        ("docker.io/bitnami/postgresql@sha256:0123", "postgresql"),
        ("registry.example/dba/mysql-server:8.4", "mysql"),
        ("mongo", "mongo"),
        ("registry.example/search/indexer:v3", None),
        ("registry.example/postgres-exporter-sidecar/app:1", None),
        ("registry.example/gateway/audit-shipper:2", None),
    ],
)
def test_a_database_is_told_by_its_image_s_repository_name(image: str, engine: str | None) -> None:
    assert a.image_engine(image) == engine


def test_a_filling_volume_of_an_application_is_not_taken_for_a_database_s() -> None:
    found = a.Evidence(
        signal_type="PersistentVolumeFillingUp",
        incident=CLAIM,
        cluster=True,
        claim_capacity="50Gi",
        claim_users=(
            a.ClaimUser(pod="gw-0", container="gw", image="registry.example/gateway:2", mount_path="/logs"),
        ),
    )
    assert first(found).rule == "pvc-filling-up" and first(found).action_type is None


def test_a_crash_loop_without_a_recent_rollout_is_not_blamed_on_the_rollout() -> None:
    found = seen(
        pods=(pod("api-1", crash()),),
        rollout=a.Rollout(revision=1, failing_revisions=frozenset({1})),
    )

    assert [f.rule for f in a.analyze(found)] == []


def test_an_oom_of_a_jvm_asks_the_catalog_for_jvm_workflows() -> None:
    found = seen(
        "OOMKilled",
        java=True,
        pods=(pod("api-1", crash(last_reason="OOMKilled", last_exit_code=137, memory_limit="1536Mi")),),
    )

    finding = first(found)

    assert "jvm" in finding.query
    assert finding.values["MEMORY_LIMIT_NEW"] == "3Gi"
    assert any("JVM" in fact for fact in finding.facts)


def test_an_oom_without_a_known_limit_leaves_the_new_limit_to_a_person() -> None:
    finding = first(seen("OOMKilled", pods=(pod("api-1", crash(last_reason="OOMKilled")),)))

    assert "MEMORY_LIMIT_NEW" not in finding.values
    assert "unknown" in finding.explanation


def test_an_hpa_below_its_cpu_target_is_not_maxed_out_for_cpu() -> None:
    hpa = a.HPA(name="api", max_replicas=10, current_replicas=10, cpu_target=60, cpu_current=30)

    assert [f.rule for f in a.analyze(seen("HPAMaxedOut", hpa=hpa))] == []


def test_the_table_is_extensible_with_rules_of_ones_own() -> None:
    mine = a.Rule(
        name="always-restart",
        signal_type="CrashLoopBackOff",
        action_type="RestartPod",
        query="restart",
        explanation="Restart {workload}.",
        match=lambda found: a.Match(facts=("it crashes",), target=found.workload),
    )

    [finding] = a.analyze(seen(pods=(pod("api-1", crash()),)), rules=[mine])

    assert (finding.rule, finding.explanation) == ("always-restart", f"Restart Deployment {NS}/api.")


@pytest.mark.parametrize(
    ("limit", "raised"),
    [("256Mi", "512Mi"), ("1Gi", "2Gi"), ("1536Mi", "3Gi"), ("300M", "573Mi"), ("x", None)],
)
def test_memory_limits_are_raised_from_the_current_one(limit: str, raised: str | None) -> None:
    assert a.raise_quantity(limit, factor=2.0) == raised


# ---- condensing cluster objects ------------------------------------------------------------------


def test_pod_facts_read_the_last_termination_waiting_reason_and_limits() -> None:
    found = evidence.pod_facts(
        {
            "metadata": {
                "name": "api-1",
                "ownerReferences": [{"kind": "ReplicaSet", "name": "api-7", "controller": True}],
            },
            "spec": {
                "nodeName": "n1",
                "containers": [
                    {
                        "name": "api",
                        "image": "eclipse-temurin:21",
                        "resources": {"limits": {"memory": "512Mi"}},
                    }
                ],
            },
            "status": {
                "phase": "Running",
                "containerStatuses": [
                    {
                        "name": "api",
                        "ready": False,
                        "restartCount": 4,
                        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                        "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137}},
                    }
                ],
            },
        }
    )

    [container] = found.containers
    assert (found.owner, found.node) == ("ReplicaSet/api-7", "n1")
    assert (container.waiting, container.last_reason, container.last_exit_code) == (
        "CrashLoopBackOff",
        "OOMKilled",
        137,
    )
    assert (container.restarts, container.memory_limit, container.java) == (4, "512Mi", True)
    assert found.failing and not found.healthy


def test_template_changes_name_the_fields_a_rollout_changed() -> None:
    old = {"containers": [{"name": "api", "image": "api:1", "command": ["run"]}]}
    new = {"containers": [{"name": "api", "image": "api:2", "command": ["run"]}], "volumes": [{"name": "v"}]}

    assert evidence.template_changes(old, new) == ("image of api", "volumes")


def test_references_list_what_a_pod_needs_to_start_but_not_optional_ones() -> None:
    spec = {
        "volumes": [
            {"name": "cfg", "configMap": {"name": "api-config"}},
            {"name": "opt", "configMap": {"name": "extra", "optional": True}},
            {"name": "data", "persistentVolumeClaim": {"claimName": "api-data"}},
        ],
        "containers": [{"name": "api", "envFrom": [{"configMapRef": {"name": "api-env"}}]}],
    }

    assert evidence.references(spec) == [
        ("ConfigMap", "api-config"),
        ("PersistentVolumeClaim", "api-data"),
        ("ConfigMap", "api-env"),
    ]


def test_a_configuration_error_after_a_template_change_is_blamed_on_the_rollout() -> None:
    changed = a.Rollout(
        revision=4,
        failing_revisions=frozenset({4}),
        healthy_revisions=frozenset({3}),
        changed=("image of api",),
    )
    found = seen(
        pods=(pod("api-1", crash()),),
        rollout=changed,
        config_maps=("api-config",),
        logs=("error: invalid configuration: unknown field tls_mode",),
    )

    assert first(found).rule == "crashloop-after-rollout"


def test_crash_logs_without_a_configuration_error_or_without_a_configmap_prove_nothing() -> None:
    quiet = seen(pods=(pod("api-1", crash()),), config_maps=("api-config",), logs=("listening on :8080",))
    no_config = seen(pods=(pod("api-1", crash()),), logs=("fatal: invalid configuration: unknown field x",))

    assert all(f.rule != "crashloop-configuration-error" for f in a.analyze(quiet))
    assert all(f.rule != "crashloop-configuration-error" for f in a.analyze(no_config))


def test_gitops_marks_are_argo_cd_and_flux_ones() -> None:
    synced = {
        "metadata": {"annotations": {"argocd.argoproj.io/tracking-id": "web:/ConfigMap:shop/api-config"}}
    }
    flux = {"metadata": {"labels": {"kustomize.toolkit.fluxcd.io/name": "apps"}}}
    helm_only = {"metadata": {"labels": {"app.kubernetes.io/managed-by": "Helm"}}}

    assert evidence.gitops_managed(synced) and evidence.gitops_managed(flux)
    assert not evidence.gitops_managed(helm_only) and not evidence.gitops_managed(None)


def test_a_port_moved_by_the_configuration_is_a_configuration_error() -> None:
    refused = a.Event(
        kind="Pod",
        name="api-1",
        type="Warning",
        reason="Unhealthy",
        message='Liveness probe failed: Get "http://10.1.2.3:8080/healthz": dial tcp 10.1.2.3:8080: '
        "connect: connection refused",
    )
    moved = seen(
        pods=(pod("api-1", crash(last_exit_code=137)),),
        config_maps=("api-config",),
        events=(refused,),
        logs=("config loaded", "listening on :8443"),
    )
    same_port = dataclasses.replace(moved, logs=("listening on :8080",))

    finding = first(moved)
    assert finding.rule == "crashloop-configuration-error"
    assert any("8443" in fact and "8080" in fact for fact in finding.facts)
    assert all(f.rule != "crashloop-configuration-error" for f in a.analyze(same_port))


def test_network_policies_are_read_as_what_they_deny() -> None:
    deny_all = {"metadata": {"name": "d"}, "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}}
    allow_web = {
        "metadata": {"name": "w"},
        "spec": {
            "podSelector": {"matchLabels": {"app": "web"}},
            "ingress": [{"from": [{"podSelector": {}}]}],
        },
    }

    assert evidence.network_policy_facts(deny_all) == a.NetworkPolicy(
        name="d", selects_all=True, denies_ingress=True
    )
    assert evidence.network_policy_facts(allow_web) == a.NetworkPolicy(name="w")


def test_a_ready_condition_is_read_from_a_custom_object() -> None:
    issuer = {
        "status": {"conditions": [{"type": "Ready", "status": "False", "message": "keypair not found"}]}
    }

    assert evidence.ready_condition(issuer) == (False, "keypair not found")
    assert evidence.ready_condition({"status": {}}) == (None, "")
    assert evidence.ready_condition(None) == (None, "")


def test_a_bare_forbidden_counts_only_when_the_service_account_is_bound_to_nothing() -> None:
    unready = pod("collector-1", running(ready=False))
    unbound = seen(
        "ReplicasMismatch",
        pods=(unready,),
        service_account="collector",
        account_bound=False,
        logs=("2026-11-24T10:00:00Z FORBIDDEN",),
    )
    bound = dataclasses.replace(unbound, account_bound=True)
    unknown = dataclasses.replace(unbound, account_bound=None)

    finding = first(unbound)
    assert finding.rule == "rbac-denied"
    assert any("no RoleBinding" in fact for fact in finding.facts)
    assert all(f.rule != "rbac-denied" for f in a.analyze(bound))
    assert all(f.rule != "rbac-denied" for f in a.analyze(unknown))


def test_one_failed_run_of_a_cronjob_is_not_yet_a_pattern() -> None:
    found = a.Evidence(
        signal_type="BackoffLimitExceeded",
        incident=CRONJOB,
        cluster=True,
        workload=CRONJOB,
        failed_runs=("BackoffLimitExceeded",),
    )
    assert "cronjob-runs-keep-failing" not in [f.rule for f in a.analyze(found)]


def test_the_control_plane_taint_is_not_one_to_remove_a_cordon_is_the_blocker() -> None:
    found = seen(
        "FailedScheduling",
        pods=(
            pod(
                "api-1",
                phase="Pending",
                unschedulable="0/6 nodes are available: 4 node(s) were unschedulable, 2 node(s) had "
                "untolerated taint {node-role.kubernetes.io/control-plane: }.",
            ),
        ),
        nodes=(a.Node(name="w1", conditions=NODE_READY, unschedulable=True),),
    )
    finding = first(found)
    assert (finding.rule, finding.action_type) == ("pending-cordoned-node", "UncordonNode")


def test_a_jvm_with_a_usual_heap_share_is_oomkilled_at_its_limit_not_mistuned() -> None:
    found = seen(
        "OOMKilled",
        pods=(pod("api-1", crash(last_reason="OOMKilled", memory_limit="1Gi", java=True, heap_percent=75)),),
    )
    assert first(found).rule == "oomkilled-at-limit"


def test_the_heap_share_is_read_from_the_jvm_options() -> None:
    spec = {
        "name": "api",
        "env": [{"name": "JAVA_TOOL_OPTIONS", "value": "-XX:MaxRAMPercentage=60 -XX:MaxRAMPercentage=90.0"}],
    }
    assert evidence._container(spec, {}).heap_percent == 90.0
    assert evidence._container({"name": "api", "args": ["-XX:MaxRAMPercentage=50"]}, {}).heap_percent == 50.0
    assert evidence._container({"name": "api"}, {}).heap_percent is None


def test_pods_pending_for_cpu_name_the_node_pool_of_the_full_nodes() -> None:
    pending = pod("api-1", phase="Pending", unschedulable="0/2 nodes are available: 2 Insufficient cpu.")
    full = (a.Node(name="n1", conditions=NODE_READY, pool="compute"), a.Node(name="n2", pool="compute"))
    finding = first(seen("FailedScheduling", pods=(pending,), nodes=full))
    assert (finding.rule, finding.values) == ("pending-insufficient-resources", {"NODE_POOL": "compute"})
    mixed = (full[0], a.Node(name="n3", pool="gpu"))
    assert first(seen("FailedScheduling", pods=(pending,), nodes=mixed)).values == {}
    node = {"metadata": {"name": "n1", "labels": {"eks.amazonaws.com/nodegroup": "compute"}}}
    assert evidence.node_facts(node).pool == "compute"


def test_a_connection_error_after_a_new_revision_is_the_rollout_s() -> None:
    found = seen(
        pods=(pod("api-2", crash()),),
        rollout=a.Rollout(revision=3, failing_revisions=frozenset({3}), healthy_revisions=frozenset({2})),
        logs=("dial tcp 10.0.0.1:5432: connect: connection refused",),
    )
    assert first(found).rule == "crashloop-after-rollout"
    assert "crashloop-dependency-connection" not in [f.rule for f in a.analyze(found)]


def test_a_healthy_workload_rolled_out_an_hour_ago_is_not_cleared_of_a_new_alert() -> None:
    found = seen(
        "HighErrorRate",
        pods=(pod("api-1", running()),),
        cpu_of_requests=(30,),
        rollout=a.Rollout(revision=5, healthy_revisions=frozenset({5}), age_hours=1.0),
    )
    assert [f.rule for f in a.analyze(found)] == []


def test_saturated_pods_an_hpa_scales_are_left_to_the_hpa_rules() -> None:
    found = seen(
        "HighLatency",
        pods=(pod("api-1", running()),),
        cpu_of_requests=(99,),
        hpa=a.HPA(name="api", max_replicas=10, current_replicas=3),
    )
    assert "cpu-saturated-scale-out" not in [f.rule for f in a.analyze(found)]


def test_cpu_requests_and_times_are_read_from_the_objects() -> None:
    pod_obj = {
        "spec": {
            "containers": [
                {"resources": {"requests": {"cpu": "1"}}},
                {"resources": {"requests": {"cpu": "250m"}}},
            ]
        }
    }
    assert evidence.cpu_requests(pod_obj) == 1250
    assert evidence.cpu_requests({"spec": {"containers": [{"name": "x"}]}}) is None
    assert evidence._hours_between("2026-11-15T12:00:00Z", "2026-11-20T12:00:00Z") == 120.0
    assert evidence._hours_between(None, "2026-11-20T12:00:00Z") is None
