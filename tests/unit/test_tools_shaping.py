"""Pure shaping of investigation results: kubectl-like rows, rollout diffs, Prometheus summaries,
the read policy and the redaction of custom resources."""

from __future__ import annotations

import datetime

import pytest

from aianalysis.analysis import redact as _redact
from aianalysis.analysis.tools import _columns, _output, _policy, _promql, _rollout

NOW = datetime.datetime(2026, 11, 20, 12, 0, tzinfo=datetime.UTC)


def test_age_is_compact_like_kubectl() -> None:
    assert _columns.age("2026-11-20T11:59:15Z", NOW) == "45s"
    assert _columns.age("2026-11-20T11:48:00Z", NOW) == "12m"
    assert _columns.age("2026-11-20T07:00:00Z", NOW) == "5h"
    assert _columns.age("2026-11-17T12:00:00Z", NOW) == "3d"
    assert _columns.age(None, NOW) == "?"


def test_pod_row_shows_the_waiting_reason_restarts_and_last_termination() -> None:
    pod = {
        "metadata": {"name": "web-1", "creationTimestamp": "2026-11-20T11:00:00Z"},
        "spec": {"nodeName": "n1", "containers": [{"name": "app"}]},
        "status": {
            "phase": "Running",
            "containerStatuses": [
                {
                    "name": "app",
                    "ready": False,
                    "restartCount": 7,
                    "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                    "lastState": {"terminated": {"reason": "Error", "exitCode": 1}},
                }
            ],
        },
    }
    header, row = _columns.table("Pod", [pod], now=NOW, namespaced_rows=False)
    assert header.split() == ["NAME", "READY", "STATUS", "RESTARTS", "NODE", "AGE"]
    assert row == "web-1  0/1  CrashLoopBackOff  7 (last Error, exit 1)  n1  60m"


def test_node_row_names_pressure_conditions_and_taints() -> None:
    node = {
        "metadata": {"name": "n1"},
        "spec": {"taints": [{"key": "node.kubernetes.io/disk-pressure", "effect": "NoSchedule"}]},
        "status": {
            "conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "DiskPressure", "status": "True"},
                {"type": "MemoryPressure", "status": "False"},
            ],
            "allocatable": {"cpu": "4", "memory": "16Gi"},
        },
    }
    row = _columns.table("Node", [node], now=NOW, namespaced_rows=False)[1]
    assert "Ready  DiskPressure  node.kubernetes.io/disk-pressure:NoSchedule" in row


def test_custom_kinds_show_their_ready_condition_and_argo_health() -> None:
    certificate = {
        "metadata": {"name": "tls"},
        "status": {"conditions": [{"type": "Ready", "status": "False", "reason": "Failed"}]},
    }
    app = {
        "metadata": {"name": "shop"},
        "status": {"health": {"status": "Degraded"}, "sync": {"status": "OutOfSync"}},
    }
    rows = _columns.table("Certificate", [certificate, app], now=NOW, namespaced_rows=False)
    assert "Ready=False (Failed)" in rows[1]
    assert "health=Degraded; sync=OutOfSync" in rows[2]


def test_usage_rows_compare_pod_usage_with_limits() -> None:
    usage = [
        {"metadata": {"name": "web-1"}, "containers": [{"usage": {"cpu": "250000000n", "memory": "120Mi"}}]}
    ]
    pods = [
        {
            "metadata": {"name": "web-1"},
            "spec": {"containers": [{"resources": {"limits": {"cpu": "500m", "memory": "128Mi"}}}]},
        }
    ]
    [row] = _columns.usage_rows("pods", usage, pods, sort_by="memory")
    assert (row.name, row.cpu, row.cpu_share, row.memory, row.memory_share) == (
        "web-1",
        0.25,
        50,
        120 * 2**20,
        93.75,
    )
    assert _columns.usage_line("pods", row) == "web-1  250  50%  120  94%"
    assert _columns.quantity("1.5Gi") == 1.5 * 2**30
    assert _columns.quantity("garbage") is None


def _replica_set(revision: int, image: str, *, memory: str, cause: str | None = None) -> dict[str, object]:
    annotations = {_rollout.REVISION: str(revision)}
    if cause:
        annotations[_rollout.CHANGE_CAUSE] = cause
    return {
        "metadata": {
            "name": f"web-{revision}",
            "annotations": annotations,
            "creationTimestamp": f"2026-11-20T1{revision}:00:00Z",
        },
        "spec": {
            "replicas": 1,
            "template": {
                "metadata": {"labels": {"app": "web", "pod-template-hash": f"h{revision}"}},
                "spec": {
                    "containers": [
                        {"name": "app", "image": image, "resources": {"limits": {"memory": memory}}}
                    ]
                },
            },
        },
    }


def test_rollout_history_lists_revisions_newest_first_and_diffs_the_template() -> None:
    owned = [
        _replica_set(1, "shop:1.0", memory="256Mi"),
        _replica_set(2, "shop:1.1", memory="128Mi", cause="kubectl set image deploy/web app=shop:1.1"),
    ]
    lines, changes = _rollout.history("Deployment", owned, now=NOW)
    assert lines[0].startswith("revision 2: age")
    assert "change-cause: kubectl set image deploy/web app=shop:1.1" in lines[0]
    assert lines[1].startswith("revision 1:")
    assert changes == [
        '~ spec.containers[app].image: "shop:1.0" -> "shop:1.1"',
        '~ spec.containers[app].resources.limits.memory: "256Mi" -> "128Mi"',
    ]


def test_controller_revisions_are_read_from_their_data() -> None:
    def revision(number: int, image: str) -> dict[str, object]:
        template = {"spec": {"containers": [{"name": "db", "image": image}]}, "$patch": "replace"}
        return {
            "metadata": {"name": f"db-{number}"},
            "revision": number,
            "data": {"spec": {"template": template}},
        }

    lines, changes = _rollout.history("StatefulSet", [revision(3, "pg:16"), revision(4, "pg:17")], now=NOW)
    assert [line.split(":")[0] for line in lines] == ["revision 4", "revision 3"]
    assert changes == ['~ spec.containers[db].image: "pg:16" -> "pg:17"']


def test_range_summary_tells_a_leak_from_a_spike() -> None:
    leak = {"metric": {"__name__": "mem", "pod": "a"}, "values": [[i, str(100 + 10 * i)] for i in range(10)]}
    spike = {
        "metric": {"__name__": "mem", "pod": "b"},
        "values": [[i, "100" if i != 4 else "900"] for i in range(10)],
    }
    rows = dict((line.split(":")[0], line) for _, line in _promql.summarise_matrix([leak, spike]))
    assert "rising steadily" in rows['mem{pod="a"}']
    assert "first 100, min 100, max 190, last 190" in rows['mem{pod="a"}']
    assert "spiky" in rows['mem{pod="b"}']


def test_top_keeps_the_highest_series_and_counts_the_rest() -> None:
    rows = [(float(i), f"s{i}") for i in range(30)]
    lines, cut = _promql.top(rows, 5)
    assert lines == ["s29", "s28", "s27", "s26", "s25"] and cut == 25


@pytest.mark.parametrize(
    ("duration", "step", "message"),
    [
        ("30d", None, "longer than the 7d allowed"),
        ("7d", "15s", "use a step of at least 606s"),
        ("1x", None, "not a duration"),
    ],
)
def test_enormous_or_malformed_ranges_are_refused_with_a_fix(
    duration: str, step: str | None, message: str
) -> None:
    with pytest.raises(_promql.BadRequest, match=message):
        _promql.window(duration=duration, step=step, end=1_000_000.0)


def test_default_step_keeps_about_240_points() -> None:
    window = _promql.window(duration="1h", step=None, end=10_000.0)
    assert window.step == 15 and window.points == 241


def test_policy_allows_the_incident_namespace_and_configured_ones() -> None:
    policy = _policy.ReadPolicy(incident_namespace="shop", namespaces=("ingress",))
    policy.check_namespace("shop")
    policy.check_namespace("ingress")
    with pytest.raises(_policy.Denied, match="allowed: shop, ingress"):
        policy.check_namespace("kube-system")
    assert policy.group_allowed("kustomize.toolkit.fluxcd.io")
    assert not policy.group_allowed("bitnami.com")


def test_custom_resources_lose_secret_looking_values_but_keep_references() -> None:
    obj = {
        "kind": "Thing",
        "metadata": {"name": "x"},
        "spec": {
            "auth": {"password": "hunter2", "passwordSecretRef": {"name": "creds", "key": "pw"}},
            "privateKeyPEM": "-----BEGIN",
            "secretName": "tls-cert",
            "url": "https://bob:s3cret@example.com/x",
        },
    }
    spec = _redact.redact_custom(obj)["spec"]
    assert spec["auth"]["password"] == _redact.REDACTED
    assert spec["auth"]["passwordSecretRef"] == {
        "name": "creds",
        "key": _redact.REDACTED,
    }  # over-redaction is fine
    assert spec["privateKeyPEM"] == _redact.REDACTED
    assert spec["secretName"] == "tls-cert"
    assert "s3cret" not in spec["url"]


def test_objects_leave_out_opaque_ids_nulls_and_api_defaults_but_keep_every_chosen_value() -> None:
    deployment = {
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "uid": "0b5c",
            "resourceVersion": "42",
            "ownerReferences": [{"kind": "X", "name": "o", "uid": "9f", "blockOwnerDeletion": True}],
        },
        "status": {"conditions": [{"type": "Available", "status": "True", "lastHeartbeatTime": None}]},
        "spec": {
            "replicas": 3,
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 120,
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
            },
            "template": {
                "spec": {
                    "dnsPolicy": "ClusterFirst",
                    "securityContext": {},
                    "terminationGracePeriodSeconds": 5,
                    "tolerations": [
                        {
                            "key": "node.kubernetes.io/not-ready",
                            "operator": "Exists",
                            "effect": "NoExecute",
                            "tolerationSeconds": 300,
                        },
                        {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"},
                    ],
                    "containers": [
                        {
                            "name": "app",
                            "image": "web:2",
                            "terminationMessagePath": "/dev/termination-log",
                            "terminationMessagePolicy": "FallbackToLogsOnError",
                            "imagePullPolicy": "IfNotPresent",
                        }
                    ],
                }
            },
        },
    }
    out = _output.compact(deployment)

    assert out["metadata"] == {"name": "web", "ownerReferences": [{"kind": "X", "name": "o"}]}
    assert out["status"]["conditions"] == [{"type": "Available", "status": "True"}]
    assert out["spec"]["progressDeadlineSeconds"] == 120 and out["spec"]["replicas"] == 3
    assert "revisionHistoryLimit" not in out["spec"] and "strategy" not in out["spec"]
    pod = out["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == 5
    assert "dnsPolicy" not in pod and "securityContext" not in pod
    assert pod["tolerations"] == [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert pod["containers"] == [
        {
            "name": "app",
            "image": "web:2",
            "terminationMessagePolicy": "FallbackToLogsOnError",
            "imagePullPolicy": "IfNotPresent",
        }
    ]
    assert deployment["metadata"]["uid"] == "0b5c"  # the input is not modified


def test_labels_every_series_shares_are_shown_once() -> None:
    result = [
        {"metric": {"__name__": "up", "job": "shop", "instance": "a:9", "pod": pod}, "value": [0, value]}
        for pod, value in (("p1", "1"), ("p2", "0"))
    ]
    shared = _promql.shared_labels(result)
    assert shared == {"job": "shop", "instance": "a:9"}
    rows = _promql.summarise_vector(result, omit=shared)
    assert sorted(line for _, line in rows) == ['up{pod="p1"} 1', 'up{pod="p2"} 0']
    assert _promql.shared_labels(result[:1]) == {}


def test_a_series_with_one_value_throughout_is_one_number() -> None:
    result = [
        {"metric": {"pod": "a"}, "values": [[0, "6"], [15, "6"], [30, "6"]]},
        {"metric": {"pod": "b"}, "values": [[0, "2"]]},
        {"metric": {"pod": "c"}, "values": [[0, "1"], [15, "3"]]},
    ]
    lines = sorted(line for _, line in _promql.summarise_matrix(result))
    assert lines == [
        '{pod="a"}: 6, flat (3 points)',
        '{pod="b"}: 2 (1 point)',
        '{pod="c"}: first 1, min 1, max 3, last 3, rising steadily (2 points)',
    ]
