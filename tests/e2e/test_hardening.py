"""The operator process on the real kube-apiserver, against the scripted Messages API: exactly one
analysis per object, every failure path ends, and nothing kopf or a user leaves in an object's
annotations or status can wedge it. Negative assertions wait for a sentinel, never a fixed sleep."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import ROOT, analyses, get, wait_for, wait_terminal
from tests.e2e.test_operator_scripted import anthropic_env, events_for, wait_done
from tests.support import messages_server as ms
from tests.support import newer_crd
from tests.support.fake_llm import GoodLLM


@pytest.fixture
def llm_server() -> Iterator[ms.MessagesServer]:
    with ms.MessagesServer(policy=GoodLLM()) as server:
        yield server


def incident(name: str, *, as_name: str, **spec: Any) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((ROOT / "examples" / "incidents" / f"{name}.yaml").read_text())
    doc["metadata"] = {"name": as_name}
    doc["spec"].update(spec)
    return doc


def create(cluster: Any, namespace: str, doc: dict[str, Any], *, check: bool = True) -> Any:
    return cluster.kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(doc), check=check)


def test_delete_and_recreate_during_an_analysis_gets_its_own_analysis(
    cluster: Any, namespace: str, example_catalog: Any, start_operator: Any, llm_server: ms.MessagesServer
) -> None:
    llm_server.set_policy(GoodLLM(delay=1.5))
    operator = start_operator(**anthropic_env(llm_server))
    create(cluster, namespace, incident("payment-api-oomkilled", as_name="same"))
    wait_for(
        lambda: (
            (get(cluster, "aia", "same", namespace) or {}).get("status", {}).get("phase") == "Investigating"
        ),
        what="the first object Investigating",
        logs=operator.logs,
    )
    cluster.kubectl("delete", "aia", "same", "-n", namespace)
    second = incident("orders-api-crashloop", as_name="same")
    create(cluster, namespace, second)

    done = wait_done(cluster, namespace, "same", operator.logs)

    st = done["status"]
    assert st["phase"] == "Completed" and st["attempt"] == 1
    assert st["rootCause"]["signalType"] == second["spec"]["signal"]["type"], "its own spec, not the first's"
    assert st["rootCause"]["affectedResource"]["name"] == second["spec"]["resource"]["name"]


SPEC_HASH = "aianalysis.kubernaut.io/last-handled-configuration"


def hostile_annotations(doc: dict[str, Any]) -> list[dict[str, str]]:
    """kopf's bookkeeping as a copy (``kubectl get -o yaml`` → rename → create) or an attacker would
    leave it: copied last-handled configuration, garbage, progress delayed to 2099, permanent failure,
    success, naive datetimes, and annotations near the 256 KiB limit."""
    progress = "aianalysis.kubernaut.io/analyze"
    copied = json.dumps({"spec": doc["spec"]}, separators=(",", ":"))
    return [
        {SPEC_HASH: copied},
        {SPEC_HASH: "{not json"},
        {
            progress: json.dumps(
                {"started": "2020-01-01T00:00:00", "delayed": "2099-01-01T00:00:00", "retries": 9}
            )
        },
        {
            progress: json.dumps(
                {"started": "2020-01-01T00:00:00", "stopped": "2020-01-01T00:00:01", "failure": True}
            )
        },
        {
            progress: json.dumps(
                {"started": "2020-01-01T00:00:00", "stopped": "2020-01-01T00:00:01", "success": True}
            )
        },
        {progress: "garbage", "kopf.zalando.org/last-handled-configuration": "][", SPEC_HASH: copied},
        {"aianalysis.kubernaut.io/analyze_resumed": json.dumps({"delayed": "not a date", "purpose": "x"})},
        {"note": "x" * (250 * 1024)},
    ]


def test_hostile_or_copied_kopf_annotations_do_not_wedge_an_analysis(
    cluster: Any, namespace: str, example_catalog: Any, start_operator: Any, llm_server: ms.MessagesServer
) -> None:
    operator = start_operator(**anthropic_env(llm_server))
    template = incident("payment-api-oomkilled", as_name="x")
    sets = hostile_annotations(template)
    for index, hostile in enumerate(sets):
        doc = incident("payment-api-oomkilled", as_name=f"hostile-{index}")
        doc["metadata"]["annotations"] = hostile
        create(cluster, namespace, doc)

    done = wait_terminal(cluster, namespace, len(sets), logs=operator.logs, timeout=240)

    for item in done:
        st = item["status"]
        assert st["phase"] == "Completed" and st["selectedWorkflow"], (item["metadata"]["name"], st)
        assert st["attempt"] == 1
    assert "Traceback" not in operator.logs()


ECHOED = [
    ("signal", "type"),
    ("signal", "alertName"),
    ("signal", "source"),
    ("signal", "errorMessage"),
    ("signal", "description"),
    ("resource", "kind"),
    ("resource", "name"),
    ("resource", "namespace"),
    ("businessContext", "environment"),
    ("businessContext", "businessCategory"),
]


@pytest.mark.parametrize(("section", "field"), ECHOED, ids=[f"{s}.{f}" for s, f in ECHOED])
def test_a_megabyte_in_an_echoed_field_is_refused_with_a_clear_message(
    cluster: Any, namespace: str, crds: Any, section: str, field: str
) -> None:
    doc = incident("payment-api-oomkilled", as_name=f"huge-{section.lower()}-{field.lower()}")
    doc["spec"].setdefault(section, {})[field] = "x" * (1024 * 1024)

    refused = create(cluster, namespace, doc, check=False)

    assert refused.returncode != 0
    assert f"spec.{section}.{field}" in refused.stderr and "Too long" in refused.stderr, refused.stderr[:500]
    assert analyses(cluster, namespace) == [], "nothing was stored that could spin"


def test_an_unreadable_status_is_left_alone_and_reported_once(
    cluster: Any, namespace: str, example_catalog: Any, start_operator: Any, llm_server: ms.MessagesServer
) -> None:
    create(cluster, namespace, incident("payment-api-oomkilled", as_name="unreadable"))
    newer_crd.write_newer_status(
        cluster, kind="aia", name="unreadable", namespace=namespace, phase="Investigating"
    )
    before = get(cluster, "aia", "unreadable", namespace)
    operator = start_operator(**anthropic_env(llm_server))

    # The barrier: the sentinel is created after the unreadable object and analysed after it was seen.
    create(cluster, namespace, incident("orders-api-crashloop", as_name="sentinel"))
    wait_done(cluster, namespace, "sentinel", operator.logs)
    operator.stop()
    operator.start()  # a restart must not report it again or analyse it
    create(cluster, namespace, incident("orders-api-crashloop", as_name="sentinel-2"))
    wait_done(cluster, namespace, "sentinel-2", operator.logs)

    after = get(cluster, "aia", "unreadable", namespace)
    assert before is not None and after is not None
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"], "left as it is"
    warnings = [e for e in events_for(cluster, namespace, "unreadable") if e["reason"] == "UnreadableStatus"]
    assert warnings and warnings[0]["type"] == "Warning"
    assert sum(e.get("count", 1) for e in warnings) == 2, "once per operator process, not per event"
    assert 'aianalysis_unreadable_objects_total{kind="AIAnalysis"} 1.0' in operator.metrics()


def test_an_unreadable_execution_status_is_reported_once_and_no_finalizer_is_added(
    cluster: Any, namespace: str, example_catalog: Any, start_operator: Any, llm_server: ms.MessagesServer
) -> None:
    operator = start_operator(**anthropic_env(llm_server))
    wfe = {
        "apiVersion": "kubernaut.io/v1alpha1",
        "kind": "WorkflowExecution",
        "metadata": {"name": "garbled"},
        "spec": {
            "analysisRef": "whatever",
            "workflowRef": {"workflowId": "restart-pods", "version": "1.0.0"},
        },
    }
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(wfe))
    newer_crd.write_newer_status(
        cluster, kind="workflowexecution", name="garbled", namespace=namespace, phase="Failed"
    )

    def reported() -> list[dict[str, Any]]:
        return [e for e in events_for(cluster, namespace, "garbled") if e["reason"] == "UnreadableStatus"]

    wait_for(reported, what="UnreadableStatus event on the execution", logs=operator.logs)
    # The barrier: a sentinel analysis created afterwards has completed.
    create(cluster, namespace, incident("orders-api-crashloop", as_name="sentinel"))
    wait_done(cluster, namespace, "sentinel", operator.logs)

    item = get(cluster, "workflowexecution", "garbled", namespace)
    assert item is not None and not item["metadata"].get("finalizers"), "no finalizer on another's object"
    assert sum(e.get("count", 1) for e in reported()) == 1, "reported once, not in a loop"
    assert item["status"] == newer_crd.newer_status("Failed"), "left as it is"


def test_an_endpoint_answering_non_json_ends_the_analysis_with_its_own_reason(
    cluster: Any, namespace: str, example_catalog: Any, start_operator: Any, llm_server: ms.MessagesServer
) -> None:
    llm_server.set_policy(lambda _: ms.Raw(status=200))
    operator = start_operator(**anthropic_env(llm_server, AIANALYSIS_PROVIDER_RETRY_LIMIT="3"))
    create(cluster, namespace, incident("payment-api-oomkilled", as_name="garbage-llm"))

    st = wait_done(cluster, namespace, "garbage-llm", operator.logs)["status"]

    assert st["phase"] == "Failed" and st["reason"] == "ProviderBadResponse"
    assert st["humanReviewReason"] == "provider_error"
    assert st["attempt"] == 1, "no response was billed: the three tries count as one conversation"
    assert len(llm_server.requests) == 6, "three tries (the limit), each the request and its one retry"
