"""``aianalysis mcp`` as a real process, driven by the official ``mcp`` client over both
transports (stdio, streamable HTTP): the tool list is the operator's catalog tools, the server's
business context is applied to every search and can only be narrowed, and bad calls are tool
errors, never a crash."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import ssl
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from aianalysis import catalog, resources
from aianalysis.analysis import tools
from tests.support import programs

ROOT = Path(__file__).resolve().parents[2]

# Server policy: production, risk tolerance medium.
POLICY = ["--environment", "production", "--risk-tolerance", "medium"]


def workflow(workflow_id: str, *, risk: str, signal: str = "OOMKilled", **labels: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubernaut.io/v1alpha1",
        "kind": "RemediationWorkflow",
        "metadata": {"name": f"{workflow_id}-v1"},
        "spec": {
            "workflowId": workflow_id,
            "version": "1.0.0",
            "title": workflow_id.replace("-", " "),
            "description": f"{workflow_id} remediates {signal}.",
            "labels": {"signalTypes": [signal], **labels},
            "riskLevel": risk,
            "parameters": [{"name": "TARGET_NAMESPACE", "type": "string", "required": True}],
            "execution": {"containerImage": f"registry.example/wf/{workflow_id}@sha256:{'0' * 64}"},
        },
    }


CATALOG = [
    workflow("oom-raise-memory", risk="low"),
    workflow("oom-restart-pods", risk="medium"),
    workflow("oom-scale-out", risk="high"),
    workflow("oom-staging-only", risk="low", environment=["staging"]),
]


@pytest.fixture(scope="module")
def catalog_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mcp") / "catalog.yaml"
    path.write_text("\n---\n".join(json.dumps(doc) for doc in CATALOG))
    return path


free_port = programs.free_port


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("AIANALYSIS_", "ANTHROPIC_"))}


@contextlib.contextmanager
def http_server(
    *args: str, env: dict[str, str] | None = None, scheme: str = "http", verify: ssl.SSLContext | bool = True
) -> Iterator[str]:
    """``aianalysis mcp --transport http`` on a free port; its URL once it answers (``scheme`` https:
    it serves TLS, and the client trusts ``verify``)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "aianalysis", "mcp", "--transport", "http", "--port", str(port), *args],
        env={**clean_env(), **(env or {})},
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"{scheme}://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 60
        while True:  # ready = the port answers HTTP (the positive barrier)
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            with contextlib.suppress(httpx.HTTPError):
                httpx.get(url, timeout=2, verify=verify)
                break
            assert time.monotonic() < deadline, "the MCP HTTP server did not start"
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@contextlib.asynccontextmanager
async def connect(transport: str, *args: str) -> AsyncIterator[Client]:
    """The official client connected to ``aianalysis mcp ARGS`` over ``transport`` (entered and left
    in the test's own task: anyio's cancel scopes do not survive async fixtures)."""
    if transport == "stdio":
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "aianalysis", "mcp", *args], env=clean_env(), cwd=str(ROOT)
        )
        async with Client(params, read_timeout_seconds=60) as connected:
            yield connected
        return
    with http_server(*args) as url:
        async with Client(url, read_timeout_seconds=60) as connected:
            yield connected


@pytest.fixture(params=["stdio", "http"])
def client(
    request: pytest.FixtureRequest, catalog_file: Path
) -> contextlib.AbstractAsyncContextManager[Client]:
    return connect(request.param, "--catalog", str(catalog_file), *POLICY)


async def search(client: Client, **arguments: Any) -> tuple[set[str], dict[str, Any]]:
    result = await client.call_tool("search_workflow_catalog", {"signal_type": "OOMKilled"} | arguments)
    assert not result.is_error, result.content
    payload = json.loads(result.content[0].text)
    return {hit["workflow_id"] for hit in payload["workflows"]}, payload


async def test_lists_exactly_the_operators_catalog_tools(
    client: contextlib.AbstractAsyncContextManager[Client],
) -> None:
    async with client as connected:
        listed = await connected.list_tools()

    box = tools.catalog_toolbox(
        catalog=catalog.Catalog(), business=resources.BusinessContext(), max_chars=8000
    )
    expected = {d["name"]: d for d in box.definitions() if d["name"] in tools.CATALOG_TOOL_NAMES}
    assert [tool.name for tool in listed.tools] == list(expected)
    assert "search_workflow_catalog" in expected and "get_workflow_details" in expected
    assert not {tool.name for tool in listed.tools} & {"get_resource", "get_pod_logs"}, "read-only catalog"
    for tool in listed.tools:
        assert tool.input_schema == expected[tool.name]["input_schema"]
        assert tool.description == expected[tool.name]["description"]


async def test_search_applies_the_servers_policy_and_filters_only_narrow_it(
    client: contextlib.AbstractAsyncContextManager[Client],
) -> None:
    async with client as connected:
        await _search_narrows_only(connected)


async def _search_narrows_only(client: Client) -> None:
    found, _ = await search(client)
    assert found == {"oom-raise-memory", "oom-restart-pods"}, "high risk and staging-only are never offered"

    narrowed, _ = await search(client, risk_tolerance="low")
    assert narrowed == {"oom-raise-memory"}

    widened, _ = await search(client, risk_tolerance="high")
    assert widened == {"oom-raise-memory", "oom-restart-pods"}, "risk_tolerance=high must not widen"

    other_env, payload = await search(client, environment="staging")
    assert other_env == set(), "the server's environment cannot be swapped for another"
    assert "environment" in payload["note"]


async def test_details_of_unknown_or_excluded_workflows_are_tool_errors(
    client: contextlib.AbstractAsyncContextManager[Client],
) -> None:
    async with client as connected:
        await _bad_calls_are_tool_errors(connected)


async def _bad_calls_are_tool_errors(client: Client) -> None:
    for workflow_id in ("no-such-workflow", "oom-scale-out"):
        result = await client.call_tool("get_workflow_details", {"workflow_id": workflow_id})
        assert result.is_error
        assert "is not available" in result.content[0].text

    bad = await client.call_tool("get_workflow_details", {"workflow": "oom-raise-memory"})
    assert bad.is_error and "invalid arguments" in bad.content[0].text

    cluster_tool = await client.call_tool("get_pod_logs", {"name": "x"})
    assert cluster_tool.is_error and "unknown tool" in cluster_tool.content[0].text

    # The server is still there and answers with the schema the LLM gets.
    good = await client.call_tool("get_workflow_details", {"workflow_id": "oom-raise-memory"})
    assert not good.is_error
    details = json.loads(good.content[0].text)
    assert details["workflow_id"] == "oom-raise-memory"
    assert [p["name"] for p in details["parameters"]] == ["TARGET_NAMESPACE"]
    assert "risk_level" not in details and "container_image" not in json.dumps(details)


# ---- without --catalog: the cluster's RemediationWorkflows, list then watch ---------------------


@pytest.mark.cluster
async def test_without_a_catalog_it_serves_the_cluster_and_follows_its_changes(
    cluster: Any, crds: Any
) -> None:
    signal = f"McpSignal{secrets.token_hex(3)}"
    first = workflow(f"mcp-first-{signal.lower()}", risk="low", signal=signal)
    second = workflow(f"mcp-second-{signal.lower()}", risk="low", signal=signal)
    cluster.kubectl("apply", "-f", "-", input=json.dumps(first))
    try:
        async with connect("stdio", *POLICY) as client:
            found, _ = await search(client, signal_type=signal)
            assert found == {first["spec"]["workflowId"]}, "listed at startup"

            cluster.kubectl("apply", "-f", "-", input=json.dumps(second))
            deadline = time.monotonic() + 30
            while found != {first["spec"]["workflowId"], second["spec"]["workflowId"]}:
                assert time.monotonic() < deadline, f"the watch never delivered the new workflow: {found}"
                await anyio.sleep(0.2)
                found, _ = await search(client, signal_type=signal)
    finally:
        for doc in (first, second):
            cluster.kubectl("delete", "rw", doc["metadata"]["name"], "--ignore-not-found", check=False)


INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "t", "version": "1"}},
}  # fmt: skip
ACCEPT = {"Accept": "application/json, text/event-stream"}


def test_the_http_server_requires_its_token_when_one_is_set(catalog_file: Path) -> None:
    with http_server("--catalog", str(catalog_file), env={"AIANALYSIS_MCP_TOKEN": "s3cret-token"}) as url:
        anonymous = httpx.post(url, json=INITIALIZE, headers=ACCEPT, timeout=10)
        wrong = httpx.post(
            url, json=INITIALIZE, headers={**ACCEPT, "Authorization": "Bearer nope"}, timeout=10
        )
        right = httpx.post(
            url, json=INITIALIZE, headers={**ACCEPT, "Authorization": "Bearer s3cret-token"}, timeout=10
        )
    assert (anonymous.status_code, wrong.status_code) == (401, 401)
    assert right.status_code == 200, right.text


def test_a_non_loopback_bind_without_a_token_is_refused(catalog_file: Path) -> None:
    refused = subprocess.run(
        [sys.executable, "-m", "aianalysis", "mcp", "--transport", "http", "--host", "0.0.0.0",
         "--port", str(free_port()), "--catalog", str(catalog_file)],
        env=clean_env(), cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert refused.returncode == 1 and "AIANALYSIS_MCP_TOKEN" in refused.stderr
