"""Cluster objects condensed into evidence: what the rules read of a Pod, a Node, a policy, a
custom object's Ready condition, and of a workload's template, references and marks."""

from __future__ import annotations

from aianalysis.analysis.offline import condense, evidence, workload


def test_pod_facts_read_the_last_termination_waiting_reason_and_limits() -> None:
    found = condense.pod_facts(
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

    assert workload.template_changes(old, new) == ("image of api", "volumes")


def test_references_list_what_a_pod_needs_to_start_but_not_optional_ones() -> None:
    spec = {
        "volumes": [
            {"name": "cfg", "configMap": {"name": "api-config"}},
            {"name": "opt", "configMap": {"name": "extra", "optional": True}},
            {"name": "data", "persistentVolumeClaim": {"claimName": "api-data"}},
        ],
        "containers": [{"name": "api", "envFrom": [{"configMapRef": {"name": "api-env"}}]}],
    }

    assert workload.needed_sources(spec) == [
        ("ConfigMap", "api-config"),
        ("PersistentVolumeClaim", "api-data"),
        ("ConfigMap", "api-env"),
    ]


def test_gitops_marks_are_argo_cd_and_flux_ones() -> None:
    synced = {
        "metadata": {"annotations": {"argocd.argoproj.io/tracking-id": "web:/ConfigMap:shop/api-config"}}
    }
    flux = {"metadata": {"labels": {"kustomize.toolkit.fluxcd.io/name": "apps"}}}
    helm_only = {"metadata": {"labels": {"app.kubernetes.io/managed-by": "Helm"}}}

    assert workload.gitops_managed(synced) and workload.gitops_managed(flux)
    assert not workload.gitops_managed(helm_only) and not workload.gitops_managed(None)


def test_network_policies_are_read_as_what_they_deny() -> None:
    deny_all = {"metadata": {"name": "d"}, "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}}
    allow_web = {
        "metadata": {"name": "w"},
        "spec": {
            "podSelector": {"matchLabels": {"app": "web"}},
            "ingress": [{"from": [{"podSelector": {}}]}],
        },
    }

    assert condense.network_policy_facts(deny_all) == evidence.NetworkPolicy(
        name="d", selects_all=True, denies_ingress=True
    )
    assert condense.network_policy_facts(allow_web) == evidence.NetworkPolicy(name="w")


def test_a_ready_condition_is_read_from_a_custom_object() -> None:
    issuer = {
        "status": {"conditions": [{"type": "Ready", "status": "False", "message": "keypair not found"}]}
    }

    assert condense.ready_condition(issuer) == (False, "keypair not found")
    assert condense.ready_condition({"status": {}}) == (None, "")
    assert condense.ready_condition(None) == (None, "")


def test_the_heap_share_is_read_from_the_jvm_options() -> None:
    spec = {
        "name": "api",
        "env": [{"name": "JAVA_TOOL_OPTIONS", "value": "-XX:MaxRAMPercentage=60 -XX:MaxRAMPercentage=90.0"}],
    }
    assert condense.container_facts(spec, {}).heap_percent == 90.0
    assert (
        condense.container_facts({"name": "api", "args": ["-XX:MaxRAMPercentage=50"]}, {}).heap_percent
        == 50.0
    )
    assert condense.container_facts({"name": "api"}, {}).heap_percent is None


def test_cpu_requests_and_times_are_read_from_the_objects() -> None:
    pod_obj = {
        "spec": {
            "containers": [
                {"resources": {"requests": {"cpu": "1"}}},
                {"resources": {"requests": {"cpu": "250m"}}},
            ]
        }
    }
    assert workload.cpu_requests(pod_obj) == 1250
    assert workload.cpu_requests({"spec": {"containers": [{"name": "x"}]}}) is None
    assert workload.hours_between("2026-11-15T12:00:00Z", "2026-11-20T12:00:00Z") == 120.0
    assert workload.hours_between(None, "2026-11-20T12:00:00Z") is None
