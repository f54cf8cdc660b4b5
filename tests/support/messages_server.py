"""A scripted local server that speaks the Anthropic Messages API (``POST /v1/messages``), so
tests and benchmarks drive the real ``anthropic`` SDK through ``base_url``.

It runs an aiohttp app on ``127.0.0.1:<random port>`` in a background thread with its own event
loop: delays and hangs are ``await``-ed, so hundreds of concurrent conversations never block each
other. Each request is answered by the next queued :data:`Step`; when the queue is empty, by the
``policy`` callable (``request body -> Step``); otherwise with a 400 saying the script ran out.

Like the real API it rejects malformed conversations with 400 ``invalid_request_error`` (a
``tool_use`` without its ``tool_result`` in the next user message, a forced ``tool_choice`` naming
an unknown tool, ``temperature`` together with ``top_p``, more than 4 cache breakpoints), so a
protocol bug in the client fails the test instead of passing silently.

Usage::

    with MessagesServer(reply_tools(tool_use("search_workflow_catalog", {...})), submit({...})) as server:
        config = Settings(llm=Llm(provider="anthropic", api_key="k", anthropic_base_url=server.base_url))
        ...
        assert server.requests[0].body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import json
import re
import threading
import urllib.parse
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any

from aiohttp import web

DEFAULT_MODEL = "claude-sonnet-4-5"
SUBMIT_TOOL = "submit_selection"
MAX_CACHE_BREAKPOINTS = 4

ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    503: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


# ---------------------------------------------------------------------------------------------
# Steps


def usage(
    input_tokens: int = 100, output_tokens: int = 20, *, cache_read: int = 0, cache_write: int = 0
) -> dict[str, int]:
    """A ``usage`` object with the prompt-caching fields."""
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_read_input_tokens": cache_read,
        "cache_creation_input_tokens": cache_write,
    }


@dataclasses.dataclass(frozen=True)
class Reply:
    """A 200 Message. ``model`` defaults to the requested one; ``delay`` seconds before answering."""

    content: list[dict[str, Any]]
    stop_reason: str = "end_turn"
    usage: dict[str, int] = dataclasses.field(default_factory=usage)
    delay: float = 0.0
    model: str | None = None


@dataclasses.dataclass(frozen=True)
class Fail:
    """An error response in the API's JSON shape. By default it carries ``retry-after-ms: 1`` so
    the SDK retries at once (``retry-after: 0`` would fall back to its 0.5 s+ backoff)."""

    status: int
    message: str = "scripted failure"
    error_type: str | None = None
    headers: Mapping[str, str] = dataclasses.field(default_factory=lambda: {"retry-after-ms": "1"})
    delay: float = 0.0


@dataclasses.dataclass(frozen=True)
class Hang:
    """Never answer (for ``seconds``, or until the server stops): triggers the client timeout."""

    seconds: float = 3600.0


@dataclasses.dataclass(frozen=True)
class Raw:
    """Any HTTP answer, verbatim: a proxy's HTML page with status 200, say."""

    status: int = 200
    body: str = "<html><body>gateway says hello</body></html>"
    content_type: str = "text/html"


Step = Reply | Fail | Hang | Raw
Policy = Callable[[dict[str, Any]], Step]


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(name: str, arguments: Mapping[str, Any], *, id: str | None = None) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": id or f"toolu_{uuid.uuid4().hex[:24]}",
        "name": name,
        "input": dict(arguments),
    }


def reply_text(value: str, *, stop_reason: str = "end_turn", **kwargs: Any) -> Reply:
    """The model ends its turn with prose."""
    return Reply([text(value)], stop_reason=stop_reason, **kwargs)


def reply_tools(*blocks: dict[str, Any], preface: str | None = None, **kwargs: Any) -> Reply:
    """The model calls tools (``stop_reason: tool_use``), optionally after some text."""
    content = ([text(preface)] if preface else []) + list(blocks)
    return Reply(content, stop_reason=kwargs.pop("stop_reason", "tool_use"), **kwargs)


def submit(answer: Mapping[str, Any], *, id: str | None = None, **kwargs: Any) -> Reply:
    """The model calls ``submit_selection`` with ``answer``."""
    return reply_tools(tool_use(SUBMIT_TOOL, answer, id=id), **kwargs)


def rate_limited(**kwargs: Any) -> Fail:
    return Fail(429, "Number of request tokens has exceeded your per-minute rate limit", **kwargs)


def overloaded(**kwargs: Any) -> Fail:
    return Fail(529, "Overloaded", **kwargs)


def server_error(**kwargs: Any) -> Fail:
    return Fail(500, "Internal server error", **kwargs)


def unauthorized(**kwargs: Any) -> Fail:
    return Fail(401, "invalid x-api-key", **kwargs)


# ---------------------------------------------------------------------------------------------
# Reading requests


@dataclasses.dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    """Lower-case header names."""
    body: dict[str, Any]

    @property
    def api_key(self) -> str | None:
        """The credential as sent (``x-api-key`` or ``Authorization: Bearer``)."""
        bearer = self.headers.get("authorization", "")
        return self.headers.get("x-api-key") or (bearer.removeprefix("Bearer ") if bearer else None)


def tool_outputs(body: Mapping[str, Any]) -> list[tuple[str, str, bool]]:
    """``(tool name, result text, is_error)`` for the tool results of the last user message, the
    name found through the matching ``tool_use`` id — what a policy needs to react."""
    messages = body.get("messages", [])
    names = {
        block["id"]: block["name"]
        for message in messages
        if message.get("role") == "assistant"
        for block in _blocks(message)
        if block.get("type") == "tool_use"
    }
    last = messages[-1] if messages else {}
    return [
        (names.get(block.get("tool_use_id"), "?"), _result_text(block), bool(block.get("is_error", False)))
        for block in _blocks(last)
        if block.get("type") == "tool_result"
    ]


def first_prompt(body: Mapping[str, Any]) -> str:
    """The first user message (the incident or recovery prompt) as a person reads it: each one-line
    ``<untrusted-data>`` fence around a value replaced by the value (facts parse as ``- Label: value``)."""
    first = body["messages"][0]["content"]
    text = first if isinstance(first, str) else " ".join(b.get("text", "") for b in first)
    return re.sub(r'<untrusted-data label="[^"]*">([^\n<]*?)</untrusted-data>', r"\1", text)


def last_user_text(body: Mapping[str, Any]) -> str:
    """The text blocks (or string content) of the last message."""
    messages = body.get("messages", [])
    if not messages:
        return ""
    return "".join(block.get("text", "") for block in _blocks(messages[-1]) if block.get("type") == "text")


def _blocks(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content", [])
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [block for block in content if isinstance(block, dict)]


def _result_text(block: Mapping[str, Any]) -> str:
    content = block.get("content", "")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


# ---------------------------------------------------------------------------------------------
# Request checks (the subset of the real API's 400s a tool-loop client can trip over)


def problems(body: Any) -> list[str]:
    if not isinstance(body, dict):
        return ["body must be a JSON object"]
    out: list[str] = []
    if not isinstance(body.get("model"), str):
        out.append("model: field required")
    if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
        out.append("max_tokens: must be a positive integer")
    if "temperature" in body and "top_p" in body:
        out.append("temperature and top_p cannot both be specified for this model")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return [*out, "messages: at least one message is required"]
    if messages[0].get("role") != "user":
        out.append("messages: first message must use the user role")
    out += _tool_pairing_problems(messages)
    out += _tool_choice_problems(body)
    breakpoints = _count_cache_control(body.get("system")) + _count_cache_control(body.get("tools"))
    breakpoints += _count_cache_control(messages) + (1 if body.get("cache_control") else 0)
    if breakpoints > MAX_CACHE_BREAKPOINTS:
        out.append(
            f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {breakpoints}."
        )
    return out


def _tool_pairing_problems(messages: list[dict[str, Any]]) -> list[str]:
    out: list[str] = []
    for index, message in enumerate(messages):
        if message.get("role") not in ("user", "assistant"):
            out.append(f"messages.{index}.role: must be user or assistant")
        if message.get("role") != "assistant":
            continue
        ids = [block["id"] for block in _blocks(message) if block.get("type") == "tool_use"]
        if not ids or index + 1 >= len(messages):
            continue
        reply = _blocks(messages[index + 1])
        answered = [block.get("tool_use_id") for block in reply if block.get("type") == "tool_result"]
        missing = [tool_id for tool_id in ids if tool_id not in answered]
        if missing:
            out.append(
                f"messages.{index + 1}: tool_use ids were found without tool_result blocks immediately "
                f"after: {', '.join(missing)}. Each tool_use block must have a corresponding tool_result "
                "block in the next message."
            )
        kinds = [block.get("type") for block in reply]
        first_other = next((i for i, kind in enumerate(kinds) if kind != "tool_result"), len(kinds))
        if "tool_result" in kinds[first_other:]:
            out.append(f"messages.{index + 1}: tool_result blocks must come before any other content")
        unknown = [tool_id for tool_id in answered if tool_id not in ids]
        if unknown:
            out.append(f"messages.{index + 1}: unexpected tool_use_id found in tool_result blocks: {unknown}")
    return out


def _tool_choice_problems(body: Mapping[str, Any]) -> list[str]:
    choice = body.get("tool_choice")
    if not isinstance(choice, dict) or choice.get("type") != "tool":
        return []
    names = [tool.get("name") for tool in body.get("tools") or []]
    if choice.get("name") not in names:
        return [f"tool_choice: tool {choice.get('name')!r} not found in tools"]
    return []


def _count_cache_control(value: Any) -> int:
    if isinstance(value, dict):
        own = 1 if value.get("cache_control") else 0
        return own + sum(
            _count_cache_control(v) for k, v in value.items() if k not in ("cache_control", "input")
        )
    if isinstance(value, list):
        return sum(_count_cache_control(item) for item in value)
    return 0


# ---------------------------------------------------------------------------------------------
# The server


class MessagesServer:
    """Scripted Messages API on ``127.0.0.1``; use as a context manager or ``start()``/``stop()``."""

    def __init__(
        self,
        *steps: Step,
        policy: Policy | None = None,
        check_requests: bool = True,
        retired_models: Collection[str] = (),
        lookup_failures: Sequence[Fail | Hang] = (),
    ) -> None:
        self.retired_models = frozenset(retired_models)
        """Model ids the model check (and any request) is told are unknown: 404 not found."""
        self._lookup_failures: list[Fail | Hang] = list(lookup_failures)
        self._lookups: list[RecordedRequest] = []
        self._steps: list[Step] = list(steps)
        self._policy = policy
        self._check = check_requests
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._ids = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._stopping: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._port = 0
        self.in_flight = 0
        self.max_in_flight = 0
        """Most requests being answered at the same time (for concurrency benchmarks)."""

    # -- script ---------------------------------------------------------------------------------

    def add(self, *steps: Step) -> None:
        """Queue more steps (answered before the policy)."""
        with self._lock:
            self._steps.extend(steps)

    def set_policy(self, policy: Policy | None) -> None:
        with self._lock:
            self._policy = policy

    @property
    def remaining(self) -> int:
        """Queued steps not used yet."""
        with self._lock:
            return len(self._steps)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def model_lookups(self) -> list[RecordedRequest]:
        """The model checks received (answered apart: they never use a scripted step)."""
        with self._lock:
            return list(self._lookups)

    @property
    def base_url(self) -> str:
        if not self._port:
            raise RuntimeError("server not started")
        return f"http://127.0.0.1:{self._port}"

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> MessagesServer:
        ready = threading.Event()
        failure: list[BaseException] = []
        self._thread = threading.Thread(
            target=self._serve, args=(ready, failure), name="messages-server", daemon=True
        )
        self._thread.start()
        ready.wait(10)
        if failure:
            raise failure[0]
        return self

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(15)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(15)
        self._loop = self._thread = None

    def __enter__(self) -> MessagesServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _serve(self, ready: threading.Event, failure: list[BaseException]) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._setup())
        except BaseException as err:  # reported to start()'s caller
            failure.append(err)
            ready.set()
            loop.close()
            return
        ready.set()
        loop.run_forever()
        loop.close()

    async def _setup(self) -> None:
        self._stopping = asyncio.Event()
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        # handler_cancellation: a client that timed out and hung up cancels its hanging handler.
        self._runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=1.0, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self._port = self._runner.addresses[0][1]

    async def _shutdown(self) -> None:
        if self._stopping is not None:
            self._stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()

    # -- requests -------------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body: Any = json.loads(raw) if raw else {}
        except ValueError:
            body = None
        record = RecordedRequest(
            method=request.method,
            path=request.path,
            headers={key.lower(): value for key, value in request.headers.items()},
            body=body if isinstance(body, dict) else {},
        )
        model = self.model_lookup(request, record.body)
        if model is not None:
            with self._lock:
                self._lookups.append(record)
                failure = self._lookup_failures.pop(0) if self._lookup_failures else None
            if failure is not None:
                return await self._answer(failure, record.body)
            return self.model_answer(model)
        with self._lock:
            self._requests.append(record)
        routed = self.route(request, body)
        if isinstance(routed, web.StreamResponse):
            return routed
        body = routed
        found = problems(body) if self._check else []
        if found:
            return self.error(400, "; ".join(found))
        if body.get("model") in self.retired_models:
            return self.retired(body["model"])
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self._answer(self._next_step(body), body)
        finally:
            self.in_flight -= 1

    # -- the wire format (subclasses speak the platforms' dialects) ---------------------------------

    def route(self, request: web.Request, body: Any) -> Any:
        """The Messages API request body (with its ``model``), or the error response for this route."""
        if request.method != "POST" or request.path != "/v1/messages":
            return self.error(404, f"scripted server: no route for {request.method} {request.path}")
        return body

    def model_lookup(self, request: web.Request, body: dict[str, Any]) -> str | None:
        """The model id when this request is a model check (``GET /v1/models/{id}``)."""
        if request.method == "GET" and request.path.startswith("/v1/models/"):
            return urllib.parse.unquote(request.path.removeprefix("/v1/models/"))
        return None

    def model_answer(self, model: str) -> web.Response:
        if model in self.retired_models:
            return self.retired(model)
        return web.json_response(
            {"type": "model", "id": model, "display_name": model, "created_at": "2026-01-01T00:00:00Z"}
        )

    def retired(self, model: str) -> web.Response:
        return self.error(404, f"model: {model}", error_type="not_found_error", headers={})

    def error(
        self,
        status: int,
        message: str,
        *,
        error_type: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> web.Response:
        return _error(status, message, error_type=error_type, headers=headers)

    def _next_step(self, body: dict[str, Any]) -> Step:
        with self._lock:
            if self._steps:
                return self._steps.pop(0)
            policy = self._policy
        if policy is None:
            return Fail(400, f"scripted server: no step left for request #{len(self._requests)}", headers={})
        return policy(body)

    async def _answer(self, step: Step, body: dict[str, Any]) -> web.StreamResponse:
        if isinstance(step, Hang):
            assert self._stopping is not None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), step.seconds)
            return self.error(504, "scripted server: hang ended")
        if isinstance(step, Raw):
            return web.Response(status=step.status, text=step.body, content_type=step.content_type)
        if step.delay:
            await asyncio.sleep(step.delay)
        if isinstance(step, Fail):
            return self.error(step.status, step.message, error_type=step.error_type, headers=step.headers)
        return web.json_response(self._message(step, body), headers={"request-id": _request_id()})

    def _message(self, step: Reply, body: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": f"msg_{next(self._ids):08d}",
            "type": "message",
            "role": "assistant",
            "model": step.model or body.get("model") or DEFAULT_MODEL,
            "content": step.content,
            "stop_reason": step.stop_reason,
            "stop_sequence": None,
            "usage": step.usage,
        }


def _error(
    status: int, message: str, *, error_type: str | None = None, headers: Mapping[str, str] | None = None
) -> web.Response:
    request_id = _request_id()
    payload = {
        "type": "error",
        "error": {"type": error_type or ERROR_TYPES.get(status, "api_error"), "message": message},
        "request_id": request_id,
    }
    return web.json_response(payload, status=status, headers={"request-id": request_id, **(headers or {})})


def _request_id() -> str:
    return f"req_{uuid.uuid4().hex[:24]}"


def run_in_background(*steps: Step, policy: Policy | None = None) -> Iterator[MessagesServer]:
    """Generator for a pytest fixture: ``yield from run_in_background(...)``."""
    with MessagesServer(*steps, policy=policy) as server:
        yield server


__all__ = [
    "Fail",
    "Hang",
    "MessagesServer",
    "Policy",
    "RecordedRequest",
    "Reply",
    "Step",
    "last_user_text",
    "overloaded",
    "problems",
    "rate_limited",
    "reply_text",
    "reply_tools",
    "server_error",
    "submit",
    "text",
    "tool_outputs",
    "tool_use",
    "unauthorized",
    "usage",
]
