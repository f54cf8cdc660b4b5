"""The AIAnalysis reconciler against the real kube-apiserver (offline provider, in process): every
write names its object, every failure path ends, paid work is counted and capped, and a status it
cannot read is left alone."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes import client

from aianalysis import kube, metrics, resources, settings
from aianalysis.controller import analysis_reconciler as aianalysis_reconciler
from aianalysis.controller import process
from aianalysis.kube import objects as custom_objects
from aianalysis_dev import devcluster
from tests.support import analyses, newer_crd, typed
from tests.support import messages_server as ms

pytestmark = pytest.mark.cluster

G, V, AIA = resources.GROUP, resources.VERSION, resources.AIANALYSIS_PLURAL


@pytest.fixture
async def runtime(cluster: devcluster.Cluster, crds: list[str]) -> AsyncIterator[process.Runtime]:
    made = process.Runtime.create(
        settings.Settings(
            llm=settings.LlmSettings(provider="offline"),
            analysis=settings.AnalysisSettings(max_concurrent=1),
            retries=settings.RetriesSettings(delay_seconds=0.01),
        ),
        kube.api_client(str(cluster.kubeconfig)),
    )
    made.catalog.upsert("restart-pods-v1", analyses.RESTART_PODS)
    yield made
    await made.aclose()


def custom(runtime: process.Runtime) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(typed.client())


def create(runtime: process.Runtime, namespace: str, name: str, **spec: Any) -> dict[str, Any]:
    body = analyses.crashloop(name, namespace)
    body["spec"].update(spec)
    created: dict[str, Any] = custom(runtime).create_namespaced_custom_object(G, V, namespace, AIA, body)
    return created


def read(runtime: process.Runtime, namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = custom(runtime).get_namespaced_custom_object(G, V, namespace, AIA, name)
    return found


async def no_sleep(_: float) -> None:
    return None


async def test_a_result_never_lands_on_a_new_object_under_the_same_name(
    runtime: process.Runtime, namespace: str
) -> None:
    old = create(runtime, namespace, "same-name")
    custom(runtime).delete_namespaced_custom_object(G, V, namespace, AIA, "same-name")
    new = create(runtime, namespace, "same-name", signal={"type": "OOMKilled", "severity": "low"})
    dropped = metrics.STATUS_WRITES_DROPPED.labels(reason="object_replaced")
    before = dropped._value.get()

    # A write computed for the old object (what a worker still running for it would do):
    written, _ = await custom_objects.write_status(
        runtime.api,
        namespace=namespace,
        plural=AIA,
        name="same-name",
        uid=old["metadata"]["uid"],
        fields={"phase": "Completed", "reason": "WorkflowSelected"},
        current=None,
    )
    # ... and the old object's whole analysis:
    transition = await aianalysis_reconciler.drive(runtime, custom_objects.Ref.of(old))

    assert written is custom_objects.Written.DROPPED and transition is None
    assert dropped._value.get() == before + 1
    assert "status" not in read(runtime, namespace, "same-name"), "the new object was not touched"
    await aianalysis_reconciler.drive(runtime, custom_objects.Ref.of(new))
    mine = read(runtime, namespace, "same-name")["status"]
    assert mine["phase"] == "Completed" and mine["rootCause"]["signalType"] == "OOMKilled", (
        "the new object got its own analysis, from its own spec"
    )


async def test_an_unreadable_status_is_left_alone_and_reported(
    cluster: devcluster.Cluster, runtime: process.Runtime, namespace: str
) -> None:
    created = create(runtime, namespace, "unreadable")
    newer_crd.write_newer_status(
        cluster, kind="aia", name="unreadable", namespace=namespace, phase="Investigating"
    )
    before = read(runtime, namespace, "unreadable")
    unreadable = metrics.UNREADABLE.labels(kind="AIAnalysis")
    count = unreadable._value.get()

    transition = await aianalysis_reconciler.drive(runtime, custom_objects.Ref.of(created))

    after = read(runtime, namespace, "unreadable")
    assert transition is not None and transition.reason == "UnreadableStatus" and transition.type == "Warning"
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"], "left as it is"
    assert unreadable._value.get() == count + 1


async def test_no_conversation_starts_beyond_the_cap(runtime: process.Runtime, namespace: str) -> None:
    created = create(runtime, namespace, "capped")
    custom(runtime).patch_namespaced_custom_object_status(
        G, V, namespace, AIA, "capped", {"status": {"phase": "Investigating", "attempt": 2}}
    )
    restarted = metrics.CONVERSATIONS_RESTARTED._value.get()

    transition = await aianalysis_reconciler.drive(runtime, custom_objects.Ref.of(created))

    st = read(runtime, namespace, "capped")["status"]
    assert transition is not None and st["phase"] == "Failed" and st["reason"] == "ConversationLimit"
    assert st["attempt"] == 2, "no third conversation"
    assert metrics.CONVERSATIONS_RESTARTED._value.get() == restarted


async def test_a_restarted_conversation_is_counted(runtime: process.Runtime, namespace: str) -> None:
    created = create(runtime, namespace, "restarted")
    custom(runtime).patch_namespaced_custom_object_status(
        G, V, namespace, AIA, "restarted", {"status": {"phase": "Investigating", "attempt": 1}}
    )
    restarted = metrics.CONVERSATIONS_RESTARTED._value.get()

    await aianalysis_reconciler.drive(runtime, custom_objects.Ref.of(created))

    st = read(runtime, namespace, "restarted")["status"]
    assert st["phase"] == "Completed" and st["attempt"] == 2, st
    assert metrics.CONVERSATIONS_RESTARTED._value.get() == restarted + 1


async def test_waiting_for_a_slot_is_pending_not_investigating(
    runtime: process.Runtime, namespace: str
) -> None:
    created = create(runtime, namespace, "waits")
    await runtime.semaphore.acquire()  # the only slot is taken
    task = asyncio.create_task(aianalysis_reconciler.drive(runtime, custom_objects.Ref.of(created)))
    try:
        for _ in range(200):
            st = read(runtime, namespace, "waits").get("status") or {}
            if st.get("phase") == "Pending":
                break
            await asyncio.sleep(0.05)
        waiting = metrics.WAITING.labels(reason="concurrency")._value.get()
    finally:
        runtime.semaphore.release()
    await asyncio.wait_for(task, timeout=60)

    ready = next(c for c in st["conditions"] if c["type"] == "Ready")
    assert st["phase"] == "Pending" and st["reason"] == "ConcurrencyLimit" and "attempt" not in st
    assert ready["status"] == "False" and ready["reason"] == "ConcurrencyLimit"
    assert waiting == 1
    done = read(runtime, namespace, "waits")["status"]
    assert done["phase"] == "Completed" and done["attempt"] == 1


REJECT_COMPLETED = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicy",
    "metadata": {"name": "reject-completed-status"},
    "spec": {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": [G],
                    "apiVersions": [V],
                    "operations": ["UPDATE"],
                    "resources": ["aianalyses/status"],
                }
            ]
        },
        "matchConditions": [
            {"name": "labelled", "expression": "'reject-completed' in object.metadata.?labels.orValue({})"}
        ],
        "validations": [
            {
                "expression": "object.?status.?phase.orValue('') != 'Completed'",
                "reason": "Invalid",
                "message": "scripted: this status is refused",
            }
        ],
    },
}


async def test_a_rejected_final_write_ends_failed_with_the_cause(
    cluster: devcluster.Cluster, runtime: process.Runtime, namespace: str
) -> None:
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": f"reject-completed-{namespace}"},
        "spec": {
            "policyName": "reject-completed-status",
            "validationActions": ["Deny"],
            "matchResources": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
            },
        },
    }
    cluster.kubectl("apply", "-f", "-", input=json.dumps(REJECT_COMPLETED))
    cluster.kubectl("apply", "-f", "-", input=json.dumps(binding))
    body = analyses.crashloop("rejected", namespace)
    body["metadata"]["labels"] = {"reject-completed": "yes"}
    created = custom(runtime).create_namespaced_custom_object(G, V, namespace, AIA, body)
    # A policy takes effect asynchronously: wait until it refuses a Completed write (the barrier).
    for _ in range(200):
        try:
            custom(runtime).patch_namespaced_custom_object_status(
                G, V, namespace, AIA, "rejected", {"status": {"phase": "Completed"}}
            )
        except client.ApiException as exc:
            assert exc.status == 422
            break
        custom(runtime).patch_namespaced_custom_object_status(
            G, V, namespace, AIA, "rejected", {"status": {"phase": None}}
        )
        await asyncio.sleep(0.1)

    transition = await asyncio.wait_for(
        aianalysis_reconciler.drive(runtime, custom_objects.Ref.of(created), sleep=no_sleep), timeout=60
    )

    st = read(runtime, namespace, "rejected")["status"]
    assert transition is not None and transition.reason == "StatusRejected"
    assert st["phase"] == "Failed" and st["reason"] == "StatusRejected" and st["attempt"] == 1
    assert "422" in st["message"]


async def test_a_conversation_that_billed_nothing_does_not_count_against_the_cap(
    cluster: devcluster.Cluster, crds: Any, namespace: str
) -> None:
    made = process.Runtime.create(
        settings.Settings(
            llm=settings.LlmSettings(
                provider="anthropic",
                api_key="sk-test",
                anthropic_base_url="http://127.0.0.1:9",  # nothing listens: no response is ever billed
                max_retries=0,
            ),
            retries=settings.RetriesSettings(provider_limit=3, delay_seconds=0.01),
        ),
        kube.api_client(str(cluster.kubeconfig)),
    )
    made.catalog.upsert("restart-pods-v1", analyses.RESTART_PODS)
    try:
        created = create(made, namespace, "unbilled")
        transition = await aianalysis_reconciler.drive(made, custom_objects.Ref.of(created), sleep=no_sleep)
        st = read(made, namespace, "unbilled")["status"]
    finally:
        await made.aclose()

    assert transition is not None and st["phase"] == "Failed" and st["reason"] == "ProviderUnavailable"
    assert st["attempt"] == 1, "three tries, none billed: one conversation"
    assert st["humanReviewReason"] == "provider_unavailable"


@pytest.mark.parametrize(
    "resource",
    [
        {"kind": "Deployment", "name": "coredns", "namespace": "kube-system"},
        {"kind": "Namespace", "name": "kube-system"},  # a Namespace is in itself (issue 31)
        {"kind": "Namespace", "name": "kube-system", "namespace": "<own>"},  # as the intake fills it
    ],
    ids=["deployment", "namespace", "namespace-filled"],
)
async def test_an_analysis_naming_another_namespace_is_refused_without_a_conversation(
    runtime: process.Runtime, namespace: str, resource: dict[str, str]
) -> None:
    """A user who may create AIAnalyses in one namespace cannot make the operator investigate
    kube-system with its own rights (confused deputy), nor its approvers act there: Failed,
    NamespaceNotAllowed, no LLM call."""
    resource = {k: namespace if v == "<own>" else v for k, v in resource.items()}
    created = create(runtime, namespace, "elsewhere", resource=resource)
    started = metrics.CONVERSATIONS_RESTARTED._value.get()

    transition = await aianalysis_reconciler.drive(runtime, custom_objects.Ref.of(created))

    st = read(runtime, namespace, "elsewhere")["status"]
    assert st["phase"] == "Failed" and st["reason"] == "NamespaceNotAllowed", st
    assert "kube-system" in st["message"] and "llm" not in st and not st.get("attempt")
    assert transition is not None and transition.reason == "NamespaceNotAllowed"
    assert metrics.CONVERSATIONS_RESTARTED._value.get() == started


async def test_a_terminal_status_is_written_once_and_never_overwritten(
    runtime: process.Runtime, namespace: str
) -> None:
    """Split brain: another leader completed the analysis with a selection (maybe executing already)
    while this one was still in its conversation. This one's end is dropped, not written over it."""
    created = create(runtime, namespace, "split")
    theirs = {
        "phase": "Completed", "reason": "WorkflowSelected", "completedAt": "2026-11-20T10:00:00Z",
        "selectedWorkflow": {"workflowId": "restart-pods", "version": "1.0.0", "containerImage": "x",
                             "confidence": 0.9, "rationale": "theirs"},
    }  # fmt: skip
    custom(runtime).patch_namespaced_custom_object_status(G, V, namespace, AIA, "split", {"status": theirs})
    before = read(runtime, namespace, "split")
    dropped = metrics.STATUS_WRITES_DROPPED.labels(reason="already_terminal")._value.get()

    run = aianalysis_reconciler._Run(runtime, custom_objects.Ref.of(created))
    transition = await run.fail("ProviderUnavailable", "ours came late", review="provider_unavailable")

    after = read(runtime, namespace, "split")
    assert after["status"] == before["status"], "the first terminal status stays"
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert transition is not None and transition.reason == "AlreadyTerminal"
    assert metrics.STATUS_WRITES_DROPPED.labels(reason="already_terminal")._value.get() == dropped + 1


async def test_an_analysis_past_its_wall_clock_deadline_ends_failed_without_another_conversation(
    cluster: devcluster.Cluster, crds: list[str], namespace: str
) -> None:
    """A provider that answers each request just before the client timeout, again and again: without
    a deadline the conversation holds its slot for retries x timeout. It ends at the deadline."""
    with ms.MessagesServer() as server:
        for _ in range(6):
            server.add(ms.Hang(seconds=5))
        config = settings.Settings(
            llm=settings.LlmSettings(
                provider="anthropic", api_key="k", anthropic_base_url=server.base_url,
                model="claude-sonnet-4-6", timeout_seconds=3, max_retries=4, model_check=False,
            ),
            analysis=settings.AnalysisSettings(deadline_seconds=1.5),
            retries=settings.RetriesSettings(delay_seconds=0.01),
        )  # fmt: skip
        made = process.Runtime.create(config, kube.api_client(str(cluster.kubeconfig)))
        made.catalog.upsert("restart-pods-v1", analyses.RESTART_PODS)
        try:
            created = create(made, namespace, "slow")
            started = asyncio.get_running_loop().time()
            transition = await aianalysis_reconciler.drive(made, custom_objects.Ref.of(created))
            took = asyncio.get_running_loop().time() - started
            st = read(made, namespace, "slow")["status"]
        finally:
            await made.aclose()
    assert st["phase"] == "Failed" and st["reason"] == "AnalysisDeadlineExceeded", st
    assert "1.5 s" in st["message"] and st["attempt"] == 1, "no second paid conversation"
    assert transition is not None and took < 10, took
