"""The investigation tools over an in-memory reader: the read policy (namespaces, custom groups,
secret-like kinds), bounded lists, the per-analysis budget and the audit record."""

from __future__ import annotations

import json
from typing import Any

from aianalysis import settings
from aianalysis.analysis import pipeline, tools
from aianalysis.kube import kind_table
from tests.unit.test_tools import FakeReader, deployment, incident, make_catalog, pod

CERTIFICATE = kind_table.Kind(
    kind="Certificate", group="cert-manager.io", version="v1", plural="certificates", namespaced=True
)
SEALED = kind_table.Kind(
    kind="SealedSecret", group="bitnami.com", version="v1alpha1", plural="sealedsecrets", namespaced=True
)
VAULT = kind_table.Kind(
    kind="VaultToken", group="cert-manager.io", version="v1", plural="vaulttokens", namespaced=True
)


def box(reader: FakeReader, **limits: Any) -> tools.ToolBox:
    return tools.ToolBox(
        spec=incident(), catalog=make_catalog(), reader=reader, max_chars=8000, limits=tools.Limits(**limits)
    )


def many_pods(reader: FakeReader, count: int) -> None:
    for i in range(count):
        reader.add(pod(f"web-{i:03d}"))


async def test_list_resources_shows_rows_and_says_when_more_exist() -> None:
    reader = FakeReader()
    many_pods(reader, 12)
    result = await box(reader).call("list_resources", {"kind": "pods", "limit": 5})
    assert not result.is_error
    assert "5 shown, more not shown: narrow with label_selector or field_selector" in result.text
    assert "web-000  0/1  CrashLoopBackOff  5 (last OOMKilled, exit 137)" in result.text


async def test_a_namespace_outside_the_policy_is_refused_before_any_read() -> None:
    reader = FakeReader()
    result = await box(reader).call("list_resources", {"kind": "Pod", "namespace": "kube-system"})
    assert result.is_error and "outside what this analysis may read (allowed: production" in result.text
    logs = await box(reader).call("get_pod_logs", {"name": "x", "namespace": "kube-system"})
    assert logs.is_error and "kube-system" in logs.text
    assert reader.calls == []
    widened = await box(reader, namespaces=("kube-system",)).call(
        "list_resources", {"kind": "Pod", "namespace": "kube-system"}
    )
    assert not widened.is_error


async def test_find_searches_every_allowed_namespace_by_name() -> None:
    reader = FakeReader()
    reader.add(pod("payment-api-1"))
    other = pod("payment-api-2")
    other["metadata"]["namespace"] = "staging"
    reader.add(other)
    reader.add(pod("unrelated"))
    result = await box(reader, namespaces=("staging",)).call(
        "find_resources", {"kind": "Pod", "name_contains": "payment"}
    )
    assert "in namespaces production, staging (name containing 'payment')" in result.text
    assert "production  payment-api-1" in result.text and "staging  payment-api-2" in result.text
    assert "unrelated" not in result.text


async def test_custom_kinds_come_from_discovery_in_allowed_groups_only() -> None:
    reader = FakeReader()
    reader.custom = [CERTIFICATE, SEALED, VAULT]
    reader.add(
        {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Certificate",
            "metadata": {"name": "shop-tls", "namespace": "production"},
            "spec": {"secretName": "shop-tls", "keystores": {"pkcs12": {"password": "hunter2"}}},
            "status": {"conditions": [{"type": "Ready", "status": "False", "reason": "Failing"}]},
        }
    )
    listing = await box(reader).call("list_custom_kinds", {})
    assert "Certificate (cert-manager.io/v1, namespaced)" in listing.text
    assert "SealedSecret" not in listing.text and "VaultToken" not in listing.text
    rows = await box(reader).call("list_resources", {"kind": "certificates.cert-manager.io"})
    assert "shop-tls  Ready=False (Failing)" in rows.text
    one = await box(reader).call("get_resource", {"kind": "Certificate", "name": "shop-tls"})
    assert "hunter2" not in one.text and "secretName: shop-tls" in one.text
    refused = await box(reader).call("list_resources", {"kind": "SealedSecret"})
    assert refused.is_error and "may hold secrets" in refused.text


async def test_top_says_clearly_when_the_metrics_api_is_not_served() -> None:
    result = await box(FakeReader()).call("top", {"resource": "pods"})
    assert result.is_error and "Resource usage is not available" in result.text


async def test_rollout_history_diffs_the_last_two_revisions() -> None:
    reader = FakeReader()
    reader.add(deployment())
    for revision, image in ((1, "shop:1.0"), (2, "shop:1.1")):
        reader.add(
            {
                "kind": "ReplicaSet",
                "metadata": {
                    "name": f"payment-api-{revision}",
                    "namespace": "production",
                    "annotations": {"deployment.kubernetes.io/revision": str(revision)},
                    "ownerReferences": [{"kind": "Deployment", "name": "payment-api", "uid": "deploy-uid"}],
                },
                "spec": {"template": {"spec": {"containers": [{"name": "app", "image": image}]}}},
            }
        )
    result = await box(reader).call("rollout_history", {"kind": "Deployment", "name": "payment-api"})
    assert result.text.index("revision 2:") < result.text.index("revision 1:")
    assert '~ spec.containers[app].image: "shop:1.0" -&gt; "shop:1.1"' in result.text


async def test_the_budget_caps_investigation_output_and_leaves_the_catalog_usable() -> None:
    reader = FakeReader()
    many_pods(reader, 60)
    toolbox = box(reader, budget_tokens=600)
    first = await toolbox.call("list_resources", {"kind": "Pod", "limit": 60})
    assert len(first.text) <= 600 * 4 and "cut at the tool output limit" in first.text
    spent = await toolbox.call("list_resources", {"kind": "Pod"})
    assert spent.is_error and "tool-output budget of this analysis (600 tokens) is spent" in spent.text
    catalog = await toolbox.call("list_action_types", {})
    assert not catalog.is_error
    audit = toolbox.ledger.audit()
    assert audit.budget_exhausted and audit.budget_tokens == 600
    assert [call.tool for call in audit.calls] == ["list_resources", "list_resources", "list_action_types"]
    assert audit.calls[0].truncated and not audit.calls[0].error and audit.calls[1].error


async def test_the_audit_record_is_bounded_and_redacts_arguments() -> None:
    reader = FakeReader()
    toolbox = box(reader, max_audit_records=2)
    await toolbox.call("list_resources", {"kind": "Pod", "label_selector": "password=hunter2"})
    for _ in range(3):
        await toolbox.call("no_such_tool", {})
    audit = toolbox.ledger.audit()
    assert len(audit.calls) == 2 and audit.calls_not_recorded == 2
    assert audit.calls[0].arguments is not None and "hunter2" not in audit.calls[0].arguments
    assert json.loads(json.dumps(audit.wire()))["calls"][0]["resultTokens"] == audit.calls[0].result_tokens


async def test_bad_arguments_get_a_clear_error_not_a_read() -> None:
    reader = FakeReader()
    toolbox = box(reader)
    huge = await toolbox.call("list_resources", {"kind": "Pod", "limit": 10_000})
    assert huge.is_error and "limit" in huge.text
    unknown = await toolbox.call("rollout_history", {"kind": "CronJob", "name": "x"})
    assert unknown.is_error and "Deployment" in unknown.text
    assert reader.calls == []


def test_the_tool_boxs_default_limits_are_the_settings_defaults() -> None:
    assert tools.Limits() == pipeline.tool_limits(settings.Settings())
