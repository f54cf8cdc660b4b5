"""``aianalysis mcp``: the workflow catalog as an MCP server, for other agents.

It serves exactly the catalog tools the operator's LLM gets — the names, descriptions and input
schemas ``tools.ToolBox`` defines (``tools.CATALOG_TOOL_NAMES``), dispatched through a ToolBox — so
argument validation, the business-context policy, output limits and the refusal for unknown or
excluded workflows are the operator's own code path, not a copy.

Policy: the business context (environment, priority, business category, risk tolerance) is fixed
when the server starts (``--environment`` ...; risk tolerance ``low`` unless configured) and applied
to every call; a caller's business filters can only narrow it, never widen it, as for the LLM.

Read-only: the catalog comes from files (``--catalog``) or from the cluster's RemediationWorkflows
with the operator's list-then-watch (``catalog.sync``); no other object, and never a Secret.
Transports: stdio (the default, for local MCP clients) and streamable HTTP.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hmac
import ipaddress
import logging
from collections.abc import Iterator
from typing import Any, Literal

import anyio
from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

import aianalysis
import aianalysis.catalog
from aianalysis import errors, resources
from aianalysis.analysis import tools
from aianalysis.kit import serving

log = logging.getLogger(__name__)

SERVER_NAME = "aianalysis-catalog"
HTTP_PATH = "/mcp"
Transport = Literal["stdio", "http"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class ServerOptions:
    business: resources.BusinessContext
    """The fixed policy of every search (callers can only narrow it)."""
    max_chars: int = 8000
    """Cap on one tool answer, as for the operator's LLM."""


def instructions(business: resources.BusinessContext) -> str:
    b = business
    return (
        "Remediation workflow catalog of aianalysis-operator. Search with search_workflow_catalog, then read "
        "a workflow's parameter schema with get_workflow_details. Every result is limited to workflows "
        f"eligible for this server's business context (environment={b.environment or 'unset'}, "
        f"priority={b.priority or 'unset'}, business_category={b.business_category or 'unset'}, "
        f"risk_tolerance={b.risk_tolerance}); business filters in a call can only narrow it."
    )


def build(index: aianalysis.catalog.Catalog, options: ServerOptions) -> Server[Any]:
    """The MCP server over ``index`` (which may keep changing: every call reads it afresh)."""
    definitions = {
        d["name"]: d
        for d in tools.catalog_toolbox(
            catalog=index, business=options.business, max_chars=options.max_chars
        ).definitions()
        if d["name"] in tools.CATALOG_TOOL_NAMES
    }
    listed = types.ListToolsResult(
        tools=[
            types.Tool(name=name, description=d["description"], input_schema=d["input_schema"])
            for name, d in definitions.items()
        ]
    )

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return listed

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name not in definitions:
            return _result(f"unknown tool {params.name!r}; available tools: {', '.join(definitions)}", True)
        # One toolbox per call: nothing a caller did earlier (what it was shown) leaks into the next.
        box = tools.catalog_toolbox(catalog=index, business=options.business, max_chars=options.max_chars)
        outcome = await box.call(params.name, params.arguments or {})
        return _result(outcome.text, outcome.is_error)

    return Server(
        SERVER_NAME,
        version=aianalysis.__version__,
        instructions=instructions(options.business),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _result(text: str, is_error: bool) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error)


async def serve_stdio(server: Server[Any]) -> None:
    """Until the client closes stdin."""
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


@dataclasses.dataclass(frozen=True, kw_only=True)
class Tls:
    """The PEM certificate (chain) and key files to serve HTTPS with."""

    cert_file: str
    key_file: str


async def serve_http(
    server: Server[Any], *, host: str, port: int, token: str | None = None, tls: Tls | None = None
) -> None:
    """Streamable HTTP on ``http(s)://host:port/mcp`` until interrupted; with ``token``, every request
    must carry ``Authorization: Bearer <token>`` (else 401)."""
    import uvicorn  # noqa: PLC0415  # the HTTP server only for this transport

    app: Any = server.streamable_http_app(streamable_http_path=HTTP_PATH, host=host)
    if token:
        app = _Bearer(app, token)
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", lifespan="on",
        ssl_certfile=tls.cert_file if tls else None, ssl_keyfile=tls.key_file if tls else None,
    )  # fmt: skip
    await uvicorn.Server(config).serve()


class _Bearer:
    """ASGI middleware: HTTP requests without the bearer token get 401 (constant-time compare)."""

    def __init__(self, app: Any, token: str) -> None:
        self._app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"www-authenticate", b"Bearer"), (b"content-type", b"text/plain")],
                    }
                )
                await send({"type": "http.response.body", "body": b"a bearer token is required\n"})
                return
        await self._app(scope, receive, send)


def loopback(host: str) -> bool:
    """Pure: ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve_tools(
    index: aianalysis.catalog.Catalog,
    options: ServerOptions,
    *,
    transport: Transport,
    host: str,
    port: int,
    token: str | None = None,
    tls: Tls | None = None,
    allow_plain_http: bool = False,
) -> None:
    """Serve until interrupted. Over HTTP beyond loopback a token is required, and the token only
    over TLS (``tls``) unless ``allow_plain_http``: a bearer token in the clear is anyone's."""
    if transport == "http" and not token and not loopback(host):
        raise errors.ConfigError(
            f"aianalysis mcp: refusing to serve on {host} without a token: set AIANALYSIS_MCP_TOKEN "
            "(clients send 'Authorization: Bearer <token>') or listen on 127.0.0.1"
        )
    if transport == "http" and tls is None and not loopback(host) and not allow_plain_http:
        raise errors.ConfigError(
            f"aianalysis mcp: refusing to take the bearer token over plain HTTP on {host}: set "
            "AIANALYSIS_MCP_TLS_CERT_FILE and AIANALYSIS_MCP_TLS_KEY_FILE, listen on 127.0.0.1, or set "
            "AIANALYSIS_MCP_ALLOW_PLAIN_HTTP=true for a development setup"
        )
    if tls is not None:  # a bad file is told now, not as a traceback from the server's start
        serving.server_tls(cert_file=tls.cert_file, key_file=tls.key_file, what="aianalysis mcp")
    server = build(index, options)
    if transport == "stdio":
        anyio.run(serve_stdio, server)
    else:
        scheme = "https" if tls else "http"
        log.warning(
            "aianalysis mcp: serving %d catalog entries on %s://%s:%d%s",
            len(index),
            scheme,
            host,
            port,
            HTTP_PATH,
        )
        anyio.run(lambda: serve_http(server, host=host, port=port, token=token, tls=tls))


@contextlib.contextmanager
def cluster_catalog() -> Iterator[aianalysis.catalog.Catalog]:
    """The cluster's RemediationWorkflows (one LIST, then a WATCH that keeps the catalog current)."""
    from aianalysis import kube  # noqa: PLC0415  # the API client: cluster mode only
    from aianalysis.catalog import gate, sync  # noqa: PLC0415

    index = aianalysis.catalog.Catalog()
    try:
        api = kube.api_client()
    except errors.ConfigError as exc:
        raise errors.ConfigError(
            f"no cluster to read the catalog from ({exc}); pass --catalog PATH"
        ) from None
    syncing = sync.CatalogSync(api=api, catalog=index, reporter=gate.ReadOnlyReporter())
    try:
        try:
            syncing.load()
        except errors.AIAnalysisError as exc:
            raise errors.ClusterError(f"cannot list RemediationWorkflows: {exc}") from None
        syncing.start()
        yield index
    finally:
        syncing.stop()
        api.close()
