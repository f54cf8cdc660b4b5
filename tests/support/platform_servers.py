"""Scripted local servers for the platforms' wire formats, so tests drive the real SDK clients
(``AsyncAnthropicBedrock``, ``AsyncAnthropicVertex``, ``openai.AsyncOpenAI``) over HTTP.

They are :class:`messages_server.MessagesServer` with another dialect: the same scripted steps
(``submit(...)``, ``reply_tools(tool_use(...))``, ``Fail``, ``Hang``) are answered in each
platform's shape, and each checks what its platform checks:

- :class:`BedrockServer`: ``POST /model/{model}/invoke``; verifies the SigV4 signature against the
  test's AWS credentials (a wrong or missing one is a 403, as on AWS); errors as
  ``{"message"}`` with ``x-amzn-ErrorType``. A one-token request is the model check.
- :class:`VertexServer`: ``POST /projects/{p}/locations/{r}/publishers/anthropic/models/{m}:rawPredict``
  with ``Authorization: Bearer <token>``; the model check is ``count-tokens:rawPredict``; errors in
  Google's ``{"error": {code, message, status}}``.
- :class:`ChatCompletionsServer`: OpenAI-compatible ``POST /v1/chat/completions`` with tool calls
  (a ``tool_use`` whose input is a string is sent as those raw argument characters: malformed
  JSON on purpose); ``GET /v1/models`` lists ``served_models``.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from aiohttp import web
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from tests.support import messages_server as ms

AWS_TYPES = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}
GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


# ---------------------------------------------------------------------------------------------
# Bedrock


class BedrockServer(ms.MessagesServer):
    def __init__(self, *steps: ms.Step, access_key: str, secret_key: str, region: str, **kwargs: Any) -> None:
        super().__init__(*steps, **kwargs)
        self.credentials = Credentials(access_key, secret_key)
        self.region = region
        self.signature_failures = 0

    def model_lookup(self, request: web.Request, body: dict[str, Any]) -> str | None:
        model = _invoked_model(request)
        return model if model is not None and body.get("max_tokens") == 1 else None

    def model_answer(self, model: str) -> web.Response:
        if model in self.retired_models:
            return self.retired(model)
        return web.json_response(self._message(ms.reply_text("pong"), {"model": model}))

    def retired(self, model: str) -> web.Response:
        return self.error(404, "This model version has reached the end of its life.", headers={})

    def route(self, request: web.Request, body: Any) -> Any:
        model = _invoked_model(request)
        if request.method != "POST" or model is None:
            return self.error(404, f"no route for {request.method} {request.path}")
        if (
            not isinstance(body, dict)
            or "model" in body
            or not isinstance(body.get("anthropic_version"), str)
        ):
            return self.error(400, "Malformed input request: anthropic_version required, model not allowed")
        return {**body, "model": model}

    def error(
        self,
        status: int,
        message: str,
        *,
        error_type: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> web.Response:
        amzn = AWS_TYPES.get(status, "InternalServerException")
        return web.json_response(
            {"message": message},
            status=status,
            headers={
                "x-amzn-ErrorType": f"{amzn}:http://internal.amazon.com/coral/com.amazon.bedrock/",
                **(headers or {}),
            },
        )

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if not self._signed(request, await request.read()):  # aiohttp keeps the body for the next read
            self.signature_failures += 1
            return self.error(
                403, "The request signature we calculated does not match the signature you provided."
            )
        return await super()._handle(request)

    def _signed(self, request: web.Request, raw: bytes) -> bool:
        """Recompute the SigV4 signature over the headers the client says it signed."""
        authorization = request.headers.get("Authorization", "")
        found = re.fullmatch(
            r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/bedrock/aws4_request, "
            r"SignedHeaders=([^,]+), Signature=([0-9a-f]{64})",
            authorization,
        )
        if not found or found.group(1) != self.credentials.access_key or found.group(3) != self.region:
            return False
        signed = found.group(4).split(";")
        headers = {name: request.headers.get(name, "") for name in signed}
        aws = AWSRequest(method=request.method, url=str(request.url), headers=headers, data=raw)
        aws.context["timestamp"] = request.headers.get("X-Amz-Date", "")
        signer = SigV4Auth(self.credentials, "bedrock", self.region)
        canonical = signer.canonical_request(aws)
        expected = signer.signature(signer.string_to_sign(aws, canonical), aws)
        return expected == found.group(5)


def _invoked_model(request: web.Request) -> str | None:
    found = re.fullmatch(r"/model/([^/]+)/invoke", request.path)
    return found.group(1) if found else None


# ---------------------------------------------------------------------------------------------
# Vertex


class VertexServer(ms.MessagesServer):
    def __init__(self, *steps: ms.Step, token: str, project: str, region: str, **kwargs: Any) -> None:
        super().__init__(*steps, **kwargs)
        self.token, self.project, self.region = token, project, region
        self._prefix = f"/projects/{project}/locations/{region}/publishers/anthropic/models/"

    def model_lookup(self, request: web.Request, body: dict[str, Any]) -> str | None:
        path = self._prefix + "count-tokens:rawPredict"
        if request.method == "POST" and request.path == path and self._authorized(request):
            return str(body.get("model", ""))
        return None

    def model_answer(self, model: str) -> web.Response:
        if model in self.retired_models:
            return self.retired(model)
        return web.json_response({"input_tokens": 8})

    def retired(self, model: str) -> web.Response:
        return self.error(404, f"Publisher Model `{self._prefix}{model}` was not found.", headers={})

    def route(self, request: web.Request, body: Any) -> Any:
        if not self._authorized(request):
            return self.error(401, "Request had invalid authentication credentials.")
        found = re.fullmatch(re.escape(self._prefix) + r"([^/:]+):rawPredict", request.path)
        if request.method != "POST" or not found:
            return self.error(404, f"no route for {request.method} {request.path}")
        if (
            not isinstance(body, dict)
            or "model" in body
            or not isinstance(body.get("anthropic_version"), str)
        ):
            return self.error(400, "anthropic_version required; model belongs in the URL")
        return {**body, "model": found.group(1)}

    def error(
        self,
        status: int,
        message: str,
        *,
        error_type: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> web.Response:
        payload = {
            "error": {"code": status, "message": message, "status": GOOGLE_STATUS.get(status, "UNKNOWN")}
        }
        return web.json_response(payload, status=status, headers=dict(headers or {}))

    def _authorized(self, request: web.Request) -> bool:
        return request.headers.get("Authorization") == f"Bearer {self.token}"


# ---------------------------------------------------------------------------------------------
# OpenAI-compatible Chat Completions

FINISH = {"tool_use": "tool_calls", "end_turn": "stop", "max_tokens": "length", "stop_sequence": "stop"}


class ChatCompletionsServer(ms.MessagesServer):
    def __init__(
        self, *steps: ms.Step, served_models: Sequence[str] = ("local-model",), **kwargs: Any
    ) -> None:
        super().__init__(*steps, check_requests=False, **kwargs)  # chat_problems replaces the Messages checks
        self.served_models = list(served_models)

    @property
    def base_url(self) -> str:
        return super().base_url + "/v1"

    def model_lookup(self, request: web.Request, body: dict[str, Any]) -> str | None:
        return "" if request.method == "GET" and request.path == "/v1/models" else None

    def _next_step(self, body: dict[str, Any]) -> ms.Step:
        """Policies read the conversation as a Messages API body (see :func:`as_messages_body`), so
        one fake model (``tests.support.fake_llm``, the eval tests' SRE) drives every provider."""
        return super()._next_step(as_messages_body(body))

    def model_answer(self, model: str) -> web.Response:
        data = [
            {"id": name, "object": "model", "created": 0, "owned_by": "local"} for name in self.served_models
        ]
        return web.json_response({"object": "list", "data": data})

    def retired(self, model: str) -> web.Response:
        return self.error(404, f"The model `{model}` does not exist.", error_type="model_not_found")

    def route(self, request: web.Request, body: Any) -> Any:
        if request.method != "POST" or request.path != "/v1/chat/completions":
            return self.error(404, f"no route for {request.method} {request.path}")
        found = chat_problems(body)
        if found:
            return self.error(400, "; ".join(found))
        return body

    def error(
        self,
        status: int,
        message: str,
        *,
        error_type: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> web.Response:
        payload = {"error": {"message": message, "type": error_type or "invalid_request_error", "code": None}}
        return web.json_response(payload, status=status, headers=dict(headers or {}))

    def _message(self, step: ms.Reply, body: dict[str, Any]) -> dict[str, Any]:
        text = "".join(block["text"] for block in step.content if block["type"] == "text") or None
        calls = [
            {
                "id": f"call_{uuid.uuid4().hex[:20]}",
                "type": "function",
                "function": {"name": block["name"], "arguments": _arguments(block["input"])},
            }
            for block in step.content
            if block["type"] == "tool_use"
        ]
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if calls:
            message["tool_calls"] = calls
        cached = step.usage.get("cache_read_input_tokens", 0)
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:20]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": step.model or body.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": FINISH[step.stop_reason]}],
            "usage": {
                "prompt_tokens": step.usage["input_tokens"] + cached,
                "completion_tokens": step.usage["output_tokens"],
                "total_tokens": step.usage["input_tokens"] + cached + step.usage["output_tokens"],
                "prompt_tokens_details": {"cached_tokens": cached},
            },
        }


def _arguments(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def as_messages_body(body: dict[str, Any]) -> dict[str, Any]:
    """A chat completions body in the Messages API's shape: system apart, tool calls as
    ``tool_use`` blocks, consecutive tool messages as one user turn of ``tool_result`` blocks."""
    messages: list[dict[str, Any]] = []
    for message in body.get("messages", []):
        role = message.get("role")
        if role == "system":
            continue
        if role == "tool":
            text = str(message.get("content", ""))
            block = {
                "type": "tool_result",
                "tool_use_id": message.get("tool_call_id"),
                "content": text.removeprefix("ERROR: "),
                "is_error": text.startswith("ERROR: "),
            }
            if messages and messages[-1]["role"] == "user" and isinstance(messages[-1]["content"], list):
                messages[-1]["content"].append(block)
            else:
                messages.append({"role": "user", "content": [block]})
            continue
        if role == "assistant":
            blocks: list[dict[str, Any]] = (
                [{"type": "text", "text": message["content"]}] if message.get("content") else []
            )
            for call in message.get("tool_calls") or []:
                try:
                    arguments = json.loads(call["function"]["arguments"] or "{}")
                except ValueError:
                    arguments = {}
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call["id"],
                        "name": call["function"]["name"],
                        "input": arguments,
                    }
                )
            messages.append({"role": "assistant", "content": blocks})
            continue
        messages.append({"role": "user", "content": message.get("content", "")})
    return {**body, "messages": messages}


def chat_problems(body: Any) -> list[str]:
    """The 400s an OpenAI-compatible server gives a tool-loop client that gets the protocol wrong."""
    if not isinstance(body, dict):
        return ["body must be a JSON object"]
    out: list[str] = []
    if not isinstance(body.get("model"), str):
        out.append("model: field required")
    if "max_tokens" in body and (not isinstance(body["max_tokens"], int) or body["max_tokens"] < 1):
        out.append("max_tokens must be a positive integer")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return [*out, "messages: at least one message is required"]
    pending: list[str] = []
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            if message.get("tool_call_id") not in pending:
                out.append(f"messages[{index}]: tool message answers no pending tool call")
            else:
                pending.remove(message["tool_call_id"])
            continue
        if pending:
            out.append(
                f"messages[{index}]: an assistant message with 'tool_calls' must be followed by tool "
                f"messages responding to each 'tool_call_id'; missing: {', '.join(pending)}"
            )
            pending = []
        if role == "assistant":
            pending = [call["id"] for call in message.get("tool_calls") or []]
    names = [tool["function"]["name"] for tool in body.get("tools") or []]
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("function", {}).get("name") not in names:
        out.append(f"tool_choice names an unknown function {choice!r}")
    return out
