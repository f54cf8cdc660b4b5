"""``/metrics`` of the running operator, as Prometheus scrapes it: the operator analyses a known set
of incidents with Claude's SDK pointed at the scripted Messages API server, and every series must
equal what actually happened — requests the server received, tokens it billed, answers it had
rejected, workflows in the cluster.

The catalog is cluster-scoped and shared by the whole test session, so these tests use their own
small set of RemediationWorkflows (``mtest-*``, with signal types no other test uses) and count
the catalog relative to what the cluster holds when the operator starts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from prometheus_client import parser

import aianalysis
from tests.e2e.conftest import OperatorProcess, wait_for, wait_terminal
from tests.support import messages_server as ms

SELECTOR = "aianalysis.test/suite=metrics"
OOM, CRASH, UNKNOWN = "MTestOOMKilled", "MTestCrashLoop", "MTestNothingFits"
TARGET_PARAMETERS: list[dict[str, Any]] = [
    {
        "name": "TARGET_NAMESPACE",
        "type": "string",
        "required": True,
        "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
    },
    {
        "name": "TARGET_RESOURCE_KIND",
        "type": "string",
        "required": True,
        "enum": ["Deployment", "StatefulSet"],
    },
    {"name": "TARGET_RESOURCE_NAME", "type": "string", "required": True},
]


def workflow(
    name: str, workflow_id: str, version: str, signal: str, *extra: dict[str, Any]
) -> dict[str, Any]:
    return {
        "apiVersion": "kubernaut.io/v1alpha1",
        "kind": "RemediationWorkflow",
        "metadata": {"name": name, "labels": {"aianalysis.test/suite": "metrics"}},
        "spec": {
            "workflowId": workflow_id,
            "version": version,
            "title": f"{workflow_id} (metrics test)",
            "description": f"Remediates {signal} in the metrics end-to-end test.",
            "labels": {"signalTypes": [signal], "environment": ["production"]},
            "riskLevel": "low",
            "parameters": [*TARGET_PARAMETERS, *extra],
            "execution": {
                "engine": "job",
                "containerImage": f"registry.example/mtest/{workflow_id}@sha256:{'0' * 64}",
            },
        },
    }


MEMORY = {"name": "MEMORY_LIMIT_NEW", "type": "string", "required": True, "pattern": "^[0-9]+(Mi|Gi)$"}
WORKFLOWS = [
    workflow("mtest-raise-memory-v1", "mtest-raise-memory", "1.0.0", OOM, MEMORY),
    workflow(
        "mtest-raise-memory-v2",
        "mtest-raise-memory",
        "2.0.0",
        OOM,
        MEMORY,
        {"name": "ROLLOUT_STRATEGY", "type": "string", "enum": ["rolling", "recreate"], "default": "rolling"},
    ),
    workflow(
        "mtest-restart-v1",
        "mtest-restart-deployment",
        "1.0.0",
        CRASH,
        {"name": "MAX_UNAVAILABLE", "type": "integer", "required": True, "minimum": 1, "maximum": 5},
    ),
]

# ---- a fake SRE: searches the catalog, reads the details, submits what they say ---------------

SUBMIT = ms.SUBMIT_TOOL
FACT = re.compile(r"^- (Signal Type|Namespace|Resource): (\S+)$", re.MULTILINE)
GOOD_VALUES = {"MEMORY_LIMIT_NEW": "1536Mi"}


def incident_facts(body: dict[str, Any]) -> dict[str, str]:
    """Signal type, namespace and Kind/name from the incident prompt (the first user message)."""
    facts = dict(FACT.findall(ms.first_prompt(body)))
    kind, name = facts["Resource"].split("/", 1)
    return {"signal": facts["Signal Type"], "namespace": facts["Namespace"], "kind": kind, "name": name}


def tool_results(body: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """Every ``(tool name, result text, is_error)`` of the conversation so far, in order."""
    names: dict[str, str] = {}
    found: list[tuple[str, str, bool]] = []
    for message in body["messages"]:
        blocks = message["content"] if isinstance(message["content"], list) else []
        for block in blocks:
            if block.get("type") == "tool_use":
                names[block["id"]] = block["name"]
            elif block.get("type") == "tool_result":
                content = block.get("content", "")
                text = content if isinstance(content, str) else "".join(c.get("text", "") for c in content)
                found.append((names[block["tool_use_id"]], text, bool(block.get("is_error"))))
    return found


def parameter_value(parameter: dict[str, Any], facts: dict[str, str]) -> str | int:
    by_name: dict[str, str | int] = {
        "TARGET_NAMESPACE": facts["namespace"],
        "TARGET_RESOURCE_KIND": facts["kind"],
        "TARGET_RESOURCE_NAME": facts["name"],
        **GOOD_VALUES,
    }
    if parameter["name"] in by_name:
        return by_name[parameter["name"]]
    if "enum" in parameter:
        return str(parameter["enum"][0])
    if parameter["type"] == "integer":
        return int(parameter.get("minimum", 1))
    return str(parameter.get("default", "x"))


class FakeSRE:
    """The scripted server's policy. Behaviour per incident (by resource name):

    - ``*-low``: a valid answer with confidence 0.4 (below the 0.7 floor);
    - ``*-fix``: first answer has an invalid ``MEMORY_LIMIT_NEW`` (pattern), the correction is valid;
    - ``*-incomplete``: every answer omits the required ``MEMORY_LIMIT_NEW``;
    - no search hit: no selection, ``no_eligible_workflow``;
    - otherwise a valid answer with confidence 0.9.

    Turn ``t`` of a conversation bills ``100t+7`` input, ``10t`` output, ``50(t-1)`` cache-read
    and (first turn only) 30 cache-write tokens: a total counted from the last turn alone, or
    once per conversation, would not add up.
    """

    def __init__(self) -> None:
        self.replies: list[ms.Reply] = []

    def __call__(self, body: dict[str, Any]) -> ms.Step:
        turn = 1 + sum(1 for m in body["messages"] if m["role"] == "assistant")
        billed = ms.usage(100 * turn + 7, 10 * turn, cache_read=50 * (turn - 1), cache_write=30 * (turn == 1))
        reply = self.respond(body, billed)
        self.replies.append(reply)
        return reply

    def respond(self, body: dict[str, Any], billed: dict[str, int]) -> ms.Reply:
        facts = incident_facts(body)
        results = tool_results(body)
        searches = [text for name, text, _ in results if name == "search_workflow_catalog"]
        details = [text for name, text, _ in results if name == "get_workflow_details"]
        rejected = sum(1 for name, _, error in results if name == SUBMIT and error)
        if not searches:
            query = {"query": f"{facts['signal']} remediation", "signal_type": facts["signal"]}
            return ms.reply_tools(ms.tool_use("search_workflow_catalog", query), usage=billed)
        hits = json.loads(searches[-1])["workflows"]
        if not hits:
            return ms.submit(self.no_fit(), usage=billed)
        if not details:
            found = {"workflow_id": hits[0]["workflow_id"]}
            return ms.reply_tools(ms.tool_use("get_workflow_details", found), usage=billed)
        return ms.submit(self.answer(json.loads(details[-1]), facts, rejected=rejected), usage=billed)

    def answer(self, details: dict[str, Any], facts: dict[str, str], *, rejected: int) -> dict[str, Any]:
        parameters = {p["name"]: parameter_value(p, facts) for p in details["parameters"] if p["required"]}
        scenario = facts["name"].rsplit("-", 1)[-1]
        if scenario == "fix" and rejected == 0:
            parameters["MEMORY_LIMIT_NEW"] = "a lot more"
        if scenario == "incomplete":
            parameters.pop("MEMORY_LIMIT_NEW")
        return {
            "analysis_summary": f"{facts['signal']} on {facts['kind']}/{facts['name']}",
            "root_cause_assessment": "the workload's configuration does not fit its load",
            "rca_severity": "high",
            "selected_workflow": {
                "workflow_id": details["workflow_id"],
                "version": details["version"],
                "confidence": 0.4 if scenario == "low" else 0.9,
                "rationale": details["description"],
                "parameters": parameters,
            },
        }

    @staticmethod
    def no_fit() -> dict[str, Any]:
        return {
            "analysis_summary": "nothing in the catalog handles this signal",
            "root_cause_assessment": "unknown signal",
            "rca_severity": "low",
            "selected_workflow": None,
            "needs_human_review": True,
            "human_review_reason": "no_eligible_workflow",
        }


# ---- fixtures and helpers ---------------------------------------------------------------------


@pytest.fixture
def fake_sre() -> Iterator[tuple[ms.MessagesServer, FakeSRE]]:
    policy = FakeSRE()
    with ms.MessagesServer(policy=policy) as server:
        yield server, policy


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(operator: OperatorProcess) -> Samples:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in parser.text_string_to_metric_families(operator.metrics())
        for sample in family.samples
    }


def sample(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


def series(samples: Samples, name: str) -> dict[frozenset[tuple[str, str]], float]:
    return {labels: v for (n, labels), v in samples.items() if n == name}


def labelled(**labels: str) -> frozenset[tuple[str, str]]:
    return frozenset(labels.items())


def count_workflows(cluster: Any) -> int:
    return len(json.loads(cluster.kubectl("get", "rw", "-o", "json").stdout)["items"])


def catalog_gauge(operator: OperatorProcess) -> float | None:
    return sample(scrape(operator), "aianalysis_catalog_workflows")


def wait_catalog(operator: OperatorProcess, expected: int) -> None:
    wait_for(
        lambda: catalog_gauge(operator) == expected,
        timeout=30,
        what=f"aianalysis_catalog_workflows == {expected} (now {catalog_gauge(operator)})",
        logs=operator.logs,
    )


def incident(name: str, signal: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubernaut.io/v1alpha1",
        "kind": "AIAnalysis",
        "metadata": {"name": name},
        "spec": {
            "signal": {"type": signal, "severity": "high"},
            "resource": {"kind": "Deployment", "name": name, "namespace": namespace},
            "businessContext": {"environment": "production", "priority": "P1", "riskTolerance": "low"},
        },
    }


def apply(cluster: Any, namespace: str | None, *objects: dict[str, Any]) -> None:
    where = ["-n", namespace] if namespace else []
    doc = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})
    cluster.kubectl("apply", *where, "-f", "-", input=doc)


# ---- the tests --------------------------------------------------------------------------------


def test_metrics_count_exactly_what_the_operator_did(
    cluster: Any,
    namespace: str,
    start_operator: Callable[..., OperatorProcess],
    fake_sre: tuple[ms.MessagesServer, FakeSRE],
) -> None:
    server, llm = fake_sre
    cluster.kubectl("delete", "rw", "-l", SELECTOR, "--ignore-not-found")
    operator = start_operator(
        AIANALYSIS_PROVIDER="anthropic",
        ANTHROPIC_API_KEY="test-key",
        AIANALYSIS_ANTHROPIC_BASE_URL=server.base_url,
    )
    before = count_workflows(cluster)
    wait_catalog(operator, before)
    apply(cluster, None, *WORKFLOWS)
    wait_catalog(operator, before + len(WORKFLOWS))

    incidents = [
        incident("mt-oom-ok", OOM, namespace),
        incident("mt-crash-ok", CRASH, namespace),
        incident("mt-oom-fix", OOM, namespace),
        incident("mt-crash-low", CRASH, namespace),
        incident("mt-none", UNKNOWN, namespace),
        incident("mt-oom-incomplete", OOM, namespace),
    ]
    apply(cluster, namespace, *incidents)
    done = {
        a["metadata"]["name"]: a["status"] for a in wait_terminal(cluster, namespace, 6, logs=operator.logs)
    }
    metrics = scrape(operator)

    # What a user sees in kubectl, to be sure the metrics describe the right story.
    assert done["mt-oom-fix"]["selectedWorkflow"]["parameters"]["MEMORY_LIMIT_NEW"] == "1536Mi"
    assert [a["valid"] for a in done["mt-oom-fix"]["validationAttempts"]] == [False, True]
    assert done["mt-oom-incomplete"]["humanReviewReason"] == "parameters_incomplete"

    assert series(metrics, "aianalysis_analyses_total") == {
        labelled(outcome="selected", review_reason="none"): 3,
        labelled(outcome="human_review", review_reason="low_confidence"): 1,
        labelled(outcome="human_review", review_reason="no_eligible_workflow"): 1,
        labelled(outcome="human_review", review_reason="parameters_incomplete"): 1,
    }
    # 3 turns (search, details, submit) x4 incl. low confidence, +1 correction, 2 for no fit, 5 for
    # three rejected answers: 3+3+4+3+2+5.
    assert len(server.requests) == 20
    assert series(metrics, "aianalysis_llm_requests_total") == {
        labelled(provider="anthropic", outcome="ok"): 20,
    }
    assert sample(metrics, "aianalysis_llm_request_duration_seconds_count", provider="anthropic") == 20

    billed = {
        kind: sum(reply.usage[field] for reply in llm.replies)
        for kind, field in [
            ("input", "input_tokens"),
            ("output", "output_tokens"),
            ("cache_read", "cache_read_input_tokens"),
            ("cache_write", "cache_creation_input_tokens"),
        ]
    }
    assert billed == {"input": 4740, "output": 460, "cache_read": 1300, "cache_write": 180}
    assert series(metrics, "aianalysis_llm_tokens_total") == {
        labelled(provider="anthropic", kind=kind): float(total) for kind, total in billed.items()
    }
    # One [parameters] rejection (mt-oom-fix), three [missing_parameter] ones (mt-oom-incomplete).
    assert series(metrics, "aianalysis_validation_failures_total") == {
        labelled(rule="parameters"): 1,
        labelled(rule="missing_parameter"): 3,
    }
    assert sample(metrics, "aianalysis_analysis_duration_seconds_count", provider="anthropic") == 6
    assert sample(metrics, "aianalysis_analyses_in_flight") == 0
    assert sample(metrics, "aianalysis_catalog_workflows") == before + 3 == count_workflows(cluster)
    assert sample(metrics, "aianalysis_build_info", version=aianalysis.__version__) == 1

    cluster.kubectl("delete", "rw", "mtest-restart-v1")
    wait_catalog(operator, before + 2)
    cluster.kubectl("delete", "rw", "-l", SELECTOR)
    wait_catalog(operator, before)


def test_a_provider_outage_counts_each_request_its_tokens_and_the_analysis_once(
    cluster: Any,
    namespace: str,
    start_operator: Callable[..., OperatorProcess],
    fake_sre: tuple[ms.MessagesServer, FakeSRE],
) -> None:
    """The API answers each conversation's first turn, then is overloaded. Three tries allowed, but
    at most two conversations (``max_conversations``, default 2): each one billed call, then a call
    failing after one SDK retry — six HTTP requests, two ``ok`` and two ``unavailable`` calls
    (counted after the SDK's retries), the tokens of both billed turns although no analysis reached
    a decision, and one failed analysis — retries do not count as analyses."""
    server, llm = fake_sre
    server.set_policy(
        lambda body: llm(body) if len(body["messages"]) == 1 else ms.overloaded()  # first turn only
    )
    operator = start_operator(
        AIANALYSIS_PROVIDER="anthropic",
        ANTHROPIC_API_KEY="test-key",
        AIANALYSIS_ANTHROPIC_BASE_URL=server.base_url,
        AIANALYSIS_LLM_MAX_RETRIES="1",
        AIANALYSIS_PROVIDER_RETRY_LIMIT="3",
    )
    apply(cluster, namespace, incident("mt-outage", OOM, namespace))
    [done] = wait_terminal(cluster, namespace, 1, logs=operator.logs)
    metrics = scrape(operator)

    assert done["status"]["phase"] == "Failed" and done["status"]["attempt"] == 2
    assert done["status"]["reason"] == "ProviderUnavailable"
    assert len(server.requests) == 6
    assert series(metrics, "aianalysis_llm_requests_total") == {
        labelled(provider="anthropic", outcome="ok"): 2,
        labelled(provider="anthropic", outcome="unavailable"): 2,
    }
    assert series(metrics, "aianalysis_analyses_total") == {
        labelled(outcome="failed", review_reason="provider_unavailable"): 1,
    }
    # Two first turns at 107 input, 10 output and 30 cache-write tokens each (nothing cache-read).
    assert len(llm.replies) == 2
    assert series(metrics, "aianalysis_llm_tokens_total") == {
        labelled(provider="anthropic", kind="input"): 2 * 107,
        labelled(provider="anthropic", kind="output"): 2 * 10,
        labelled(provider="anthropic", kind="cache_write"): 2 * 30,
    }
    assert sample(metrics, "aianalysis_conversations_restarted_total") == 1
    assert sample(metrics, "aianalysis_analyses_in_flight") == 0


def test_recovery_outcomes_are_counted_once_per_failed_execution(
    cluster: Any, namespace: str, start_operator: Callable[..., OperatorProcess]
) -> None:
    operator = start_operator(AIANALYSIS_PROVIDER="offline")
    apply(cluster, namespace, incident("mt-recover", OOM, namespace))
    wait_terminal(cluster, namespace, 1, logs=operator.logs)
    executions = [("mt-recover-exec-1", "mt-recover"), ("mt-orphan-exec-1", "mt-no-such-analysis")]
    for name, analysis in executions:
        apply(cluster, namespace, execution(name, analysis))
        failed = {"phase": "Failed", "failureDetails": {"reason": "OOMKilled", "exitCode": 137}}
        status_patch = ["--subresource=status", "--type=merge", "-p", json.dumps({"status": failed})]
        cluster.kubectl("patch", "wfe", name, "-n", namespace, *status_patch)

    def handled() -> bool:
        items = json.loads(cluster.kubectl("get", "wfe", "-n", namespace, "-o", "json").stdout)["items"]
        return all(
            any(c["type"] == "RecoveryStarted" for c in (i.get("status") or {}).get("conditions") or [])
            for i in items
        )

    wait_for(handled, timeout=60, what="both executions handled", logs=operator.logs)
    wait_terminal(cluster, namespace, 2, logs=operator.logs)  # the recovery analysis, too
    metrics = scrape(operator)

    assert series(metrics, "aianalysis_recovery_attempts_total") == {
        labelled(outcome="created"): 1,
        labelled(outcome="no_reference"): 1,
    }
    assert sum(series(metrics, "aianalysis_analyses_total").values()) == 2
    assert series(metrics, "aianalysis_llm_requests_total") == {}, "the offline provider calls no API"


def execution(name: str, analysis: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubernaut.io/v1alpha1",
        "kind": "WorkflowExecution",
        "metadata": {"name": name},
        "spec": {
            "analysisRef": analysis,
            "workflowRef": {"workflowId": "mtest-raise-memory", "version": "2.0.0"},
            "parameters": {"MEMORY_LIMIT_NEW": "1536Mi"},
            "targetResource": {"kind": "Deployment", "name": analysis},
        },
    }


def test_metrics_endpoint_serves_the_prometheus_text_format(
    cluster: Any, start_operator: Callable[..., OperatorProcess]
) -> None:
    operator = start_operator(AIANALYSIS_PROVIDER="offline")
    response = httpx.get(f"http://127.0.0.1:{operator.metrics_port}/metrics", timeout=5)

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    names = {family.name for family in parser.text_string_to_metric_families(response.text)}
    assert {"aianalysis_analyses", "aianalysis_llm_requests", "aianalysis_build_info"} <= names
    assert "process_resident_memory_bytes" in response.text
