"""The rules' edges, family by family: what each rule must decline or tell apart, beyond the one
case per rule of ``test_offline_rules.py``."""

from __future__ import annotations

import dataclasses

import pytest

from aianalysis.analysis.offline import condense, evidence, rules
from aianalysis.analysis.offline.rules import memory, storage
from tests.unit.test_offline_rules import (
    CLAIM,
    CRONJOB,
    DB_POD,
    MULTI_ATTACH,
    NODE_READY,
    crash,
    first,
    pod,
    running,
    seen,
)


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
            evidence.Attachment(
                volume="pvc-1", node="n9", attached=True, node_exists=exists, node_ready=ready
            ),
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
            evidence.Attachment(volume="pvc-1", node="gone", node_exists=False),
            evidence.Attachment(volume="pvc-1", node="n9", node_exists=True, node_ready="Unknown"),
        ),
    )
    assert first(found).rule == "volume-attached-elsewhere"


def test_the_volume_the_multi_attach_error_names_is_the_one_detached() -> None:
    found = seen(
        "FailedAttachVolume",
        incident=DB_POD,
        events=(MULTI_ATTACH,),
        attachments=(
            evidence.Attachment(volume="pvc-other", node="gone-too", node_exists=False),
            evidence.Attachment(volume="pvc-1", node="gone", node_exists=False),
        ),
    )
    assert first(found).values["PERSISTENT_VOLUME_NAME"] == "pvc-1"


def test_a_stale_attachment_without_an_attach_error_proves_nothing() -> None:
    found = seen(
        "FailedAttachVolume",
        incident=DB_POD,
        attachments=(evidence.Attachment(volume="pvc-1", node="gone", node_exists=False),),
    )
    assert all(
        f.rule not in ("volume-attached-to-gone-node", "volume-attached-elsewhere")
        for f in rules.findings(found)
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
        else (evidence.NodeUsage(name="n7", memory_mi=used, memory_percent=share),)
    )
    found = seen(
        "MemoryPressure",
        nodes=(evidence.Node(name="n7", conditions={"MemoryPressure": "True"}),),
        node_usage=(*usage, evidence.NodeUsage(name="other", memory_mi=9000, memory_percent=120)),
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
    assert storage.image_engine(image) == engine


def test_a_filling_volume_of_an_application_is_not_taken_for_a_database_s() -> None:
    found = evidence.Evidence(
        signal_type="PersistentVolumeFillingUp",
        incident=CLAIM,
        cluster=True,
        claim_capacity="50Gi",
        claim_users=(
            evidence.ClaimUser(
                pod="gw-0", container="gw", image="registry.example/gateway:2", mount_path="/logs"
            ),
        ),
    )
    assert first(found).rule == "pvc-filling-up" and first(found).action_type is None


def test_a_crash_loop_without_a_recent_rollout_is_not_blamed_on_the_rollout() -> None:
    found = seen(
        pods=(pod("api-1", crash()),),
        rollout=evidence.Rollout(revision=1, failing_revisions=frozenset({1})),
    )

    assert [f.rule for f in rules.findings(found)] == []


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
    hpa = evidence.HPA(name="api", max_replicas=10, current_replicas=10, cpu_target=60, cpu_current=30)

    assert [f.rule for f in rules.findings(seen("HPAMaxedOut", hpa=hpa))] == []


@pytest.mark.parametrize(
    ("limit", "raised"),
    [("256Mi", "512Mi"), ("1Gi", "2Gi"), ("1536Mi", "3Gi"), ("300M", "573Mi"), ("x", None)],
)
def test_memory_limits_are_raised_from_the_current_one(limit: str, raised: str | None) -> None:
    assert memory.raise_quantity(limit, factor=2.0) == raised


def test_a_configuration_error_after_a_template_change_is_blamed_on_the_rollout() -> None:
    changed = evidence.Rollout(
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

    assert all(f.rule != "crashloop-configuration-error" for f in rules.findings(quiet))
    assert all(f.rule != "crashloop-configuration-error" for f in rules.findings(no_config))


def test_a_port_moved_by_the_configuration_is_a_configuration_error() -> None:
    refused = evidence.Event(
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
    assert all(f.rule != "crashloop-configuration-error" for f in rules.findings(same_port))


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
    assert all(f.rule != "rbac-denied" for f in rules.findings(bound))
    assert all(f.rule != "rbac-denied" for f in rules.findings(unknown))


def test_one_failed_run_of_a_cronjob_is_not_yet_a_pattern() -> None:
    found = evidence.Evidence(
        signal_type="BackoffLimitExceeded",
        incident=CRONJOB,
        cluster=True,
        workload=CRONJOB,
        failed_runs=("BackoffLimitExceeded",),
    )
    assert "cronjob-runs-keep-failing" not in [f.rule for f in rules.findings(found)]


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
        nodes=(evidence.Node(name="w1", conditions=NODE_READY, unschedulable=True),),
    )
    finding = first(found)
    assert (finding.rule, finding.action_type) == ("pending-cordoned-node", "UncordonNode")


def test_a_jvm_with_a_usual_heap_share_is_oomkilled_at_its_limit_not_mistuned() -> None:
    found = seen(
        "OOMKilled",
        pods=(pod("api-1", crash(last_reason="OOMKilled", memory_limit="1Gi", java=True, heap_percent=75)),),
    )
    assert first(found).rule == "oomkilled-at-limit"


def test_pods_pending_for_cpu_name_the_node_pool_of_the_full_nodes() -> None:
    pending = pod("api-1", phase="Pending", unschedulable="0/2 nodes are available: 2 Insufficient cpu.")
    full = (
        evidence.Node(name="n1", conditions=NODE_READY, pool="compute"),
        evidence.Node(name="n2", pool="compute"),
    )
    finding = first(seen("FailedScheduling", pods=(pending,), nodes=full))
    assert (finding.rule, finding.values) == ("pending-insufficient-resources", {"NODE_POOL": "compute"})
    mixed = (full[0], evidence.Node(name="n3", pool="gpu"))
    assert first(seen("FailedScheduling", pods=(pending,), nodes=mixed)).values == {}
    node = {"metadata": {"name": "n1", "labels": {"eks.amazonaws.com/nodegroup": "compute"}}}
    assert condense.node_facts(node).pool == "compute"


def test_a_connection_error_after_a_new_revision_is_the_rollout_s() -> None:
    found = seen(
        pods=(pod("api-2", crash()),),
        rollout=evidence.Rollout(
            revision=3, failing_revisions=frozenset({3}), healthy_revisions=frozenset({2})
        ),
        logs=("dial tcp 10.0.0.1:5432: connect: connection refused",),
    )
    assert first(found).rule == "crashloop-after-rollout"
    assert "crashloop-dependency-connection" not in [f.rule for f in rules.findings(found)]


def test_a_healthy_workload_rolled_out_an_hour_ago_is_not_cleared_of_a_new_alert() -> None:
    found = seen(
        "HighErrorRate",
        pods=(pod("api-1", running()),),
        cpu_of_requests=(30,),
        rollout=evidence.Rollout(revision=5, healthy_revisions=frozenset({5}), age_hours=1.0),
    )
    assert [f.rule for f in rules.findings(found)] == []


def test_saturated_pods_an_hpa_scales_are_left_to_the_hpa_rules() -> None:
    found = seen(
        "HighLatency",
        pods=(pod("api-1", running()),),
        cpu_of_requests=(99,),
        hpa=evidence.HPA(name="api", max_replicas=10, current_replicas=3),
    )
    assert "cpu-saturated-scale-out" not in [f.rule for f in rules.findings(found)]
