"""Investigation failures are visible (real kube-apiserver, real SDK against the scripted server):
status records tool calls and errors, and when every cluster read failed the analysis does not
claim an investigated root cause — it asks for review with its own reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from aianalysis import catalog, kube, resources, settings
from aianalysis.analysis import llm, pipeline, status
from aianalysis.kube import api_reader as k8s
from aianalysis_dev import devcluster
from tests.support import messages_server as ms
from tests.support.fake_llm import GoodLLM

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[2]
CATALOG = catalog.load_paths([ROOT / "examples" / "catalog"])


def incident(namespace: str) -> resources.AIAnalysisSpec:
    doc = yaml.safe_load((ROOT / "examples" / "incidents" / "payment-api-oomkilled.yaml").read_text())
    doc["spec"]["resource"]["namespace"] = namespace  # nothing of the incident exists in it
    return resources.AIAnalysisSpec.model_validate(doc["spec"])


class Investigates:
    """Reads the incident's Deployment and one of its pods first, then behaves like ``GoodLLM``."""

    def __init__(self, spec: resources.AIAnalysisSpec) -> None:
        self.target = {"kind": "Deployment", "name": spec.resource.name, "namespace": spec.resource.namespace}
        self.pod = {"kind": "Pod", "name": f"{spec.resource.name}-0", "namespace": spec.resource.namespace}
        self.good = GoodLLM()

    def __call__(self, body: dict[str, Any]) -> ms.Step:
        outputs = ms.tool_outputs(body)
        if not outputs:
            return ms.reply_tools(
                ms.tool_use("get_resource", self.target),
                ms.tool_use("get_resource", self.pod),
                stop_reason="tool_use",
            )
        if len(outputs) == 2:
            return ms.reply_tools(
                ms.tool_use("search_workflow_catalog", {"signal_type": "OOMKilled", "top_k": 5}),
                stop_reason="tool_use",
            )
        return self.good(body)


async def analyse(cluster: devcluster.Cluster, spec: resources.AIAnalysisSpec) -> status.Decision:
    api = kube.api_client(str(cluster.kubeconfig))
    with ms.MessagesServer(policy=Investigates(spec)) as server:
        config = settings.Settings(
            llm=settings.LlmSettings(
                provider="anthropic", api_key="sk-test", anthropic_base_url=server.base_url
            )
        )
        provider = llm.make_provider(config)
        try:
            return await pipeline.analyze(
                spec, catalog=CATALOG, provider=provider, reader=k8s.KubernetesReader(api), settings=config
            )
        finally:
            await provider.aclose()
            api.close()


async def test_when_every_cluster_read_fails_the_analysis_asks_for_review(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    decision = await analyse(cluster, incident(f"{namespace}-nowhere"))

    assert decision.review_reason == "investigation_failed"
    assert decision.llm.cluster_reads == 2 and decision.llm.cluster_read_failures == 2
    assert decision.llm.tool_calls >= 4 and decision.llm.tool_errors >= 2
    assert any("every cluster read failed" in warning for warning in decision.warnings)
    written = status.completed(
        previous=resources.AIAnalysisStatus(phase="Investigating", attempt=1),
        decision=decision,
        now=resources.utcnow(),
        generation=1,
    )
    assert written.needs_human_review and written.reason == "NeedsHumanReview"
    assert written.llm is not None and written.llm.cluster_read_failures == 2


async def test_a_read_that_succeeds_keeps_the_investigated_verdict(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    spec = incident(namespace)
    cluster.kubectl(
        "create", "deployment", spec.resource.name, "-n", namespace, "--image=registry.example/app:1"
    )

    decision = await analyse(cluster, spec)

    assert decision.review_reason != "investigation_failed"
    assert decision.llm.cluster_reads == 2 and decision.llm.cluster_read_failures == 1, (
        "its pod does not exist"
    )


async def test_status_records_every_tool_call_for_kubectl_get_aia_o_yaml(
    cluster: devcluster.Cluster, crds: list[str], namespace: str
) -> None:
    """BR-PLAYBOOK-022: how the decision was reached is in status.investigation, in call order, with
    the arguments, sizes, durations and which calls failed; it survives the API server."""
    spec = incident(namespace)
    cluster.kubectl(
        "create", "deployment", spec.resource.name, "-n", namespace, "--image=registry.example/app:1"
    )
    decision = await analyse(cluster, spec)
    audit = decision.investigation
    assert audit is not None
    tools_called = [call.tool for call in audit.calls]
    assert tools_called[:3] == ["get_resource", "get_resource", "search_workflow_catalog"]
    deployment, pod = audit.calls[0], audit.calls[1]
    assert not deployment.error and pod.error and deployment.result_tokens > pod.result_tokens > 0
    assert deployment.arguments is not None and f'"name":"{spec.resource.name}"' in deployment.arguments
    assert audit.output_tokens >= sum(call.result_tokens for call in audit.calls) - len(audit.calls)
    assert (
        audit.budget_tokens == settings.Settings().investigation.tool_output_budget_tokens
        and not audit.budget_exhausted
    )
    written = status.completed(
        previous=resources.AIAnalysisStatus(phase="Investigating", attempt=1),
        decision=decision,
        now=resources.utcnow(),
        generation=1,
    )
    name = "audited"
    cluster.kubectl(
        "apply",
        "-n",
        namespace,
        "-f",
        "-",
        input=yaml.safe_dump(
            {
                "apiVersion": resources.API_VERSION,
                "kind": "AIAnalysis",
                "metadata": {"name": name},
                "spec": spec.wire(),
            }
        ),
    )
    patch = {"status": written.wire()}
    cluster.kubectl(
        "patch",
        "aianalysis",
        name,
        "-n",
        namespace,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps(patch),
    )
    shown = yaml.safe_load(cluster.kubectl("get", "aia", name, "-n", namespace, "-o", "yaml").stdout)
    assert shown["status"]["investigation"] == written.wire()["investigation"]
