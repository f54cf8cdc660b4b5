"""The scripted Messages API server itself: it must answer like the real API (shapes, errors,
400s for malformed conversations), or the provider tests prove nothing."""

from __future__ import annotations

import concurrent.futures
import contextlib
import time
from typing import Any

import httpx

from tests.support import messages_server as ms

REQUEST: dict[str, Any] = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}


def post(server: ms.MessagesServer, body: dict[str, Any], *, timeout: float = 5.0) -> httpx.Response:
    return httpx.post(
        f"{server.base_url}/v1/messages", json=body, headers={"x-api-key": "k"}, timeout=timeout
    )


def test_reply_has_the_messages_api_shape() -> None:
    with ms.MessagesServer(
        ms.submit({"a": 1}, id="toolu_1", usage=ms.usage(5, 6, cache_read=7, cache_write=8))
    ) as server:
        response = post(server, REQUEST)

    body = response.json()
    assert response.status_code == 200
    assert body["type"] == "message" and body["role"] == "assistant" and body["id"].startswith("msg_")
    assert body["model"] == "m"
    assert body["stop_reason"] == "tool_use"
    assert body["content"] == [
        {"type": "tool_use", "id": "toolu_1", "name": "submit_selection", "input": {"a": 1}}
    ]
    assert body["usage"] == {
        "input_tokens": 5,
        "output_tokens": 6,
        "cache_read_input_tokens": 7,
        "cache_creation_input_tokens": 8,
    }
    assert server.requests[0].api_key == "k"


def test_error_step_uses_the_api_error_shape_and_fast_retry_header() -> None:
    with ms.MessagesServer(ms.overloaded()) as server:
        response = post(server, REQUEST)

    assert response.status_code == 529
    assert response.json()["type"] == "error"
    assert response.json()["error"]["type"] == "overloaded_error"
    assert response.headers["retry-after-ms"] == "1"


def test_missing_tool_result_is_rejected_like_the_real_api() -> None:
    body = REQUEST | {
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [ms.tool_use("search", {}, id="toolu_a")]},
            {"role": "user", "content": [{"type": "text", "text": "go on"}]},
        ]
    }
    with ms.MessagesServer(ms.reply_text("unused")) as server:
        response = post(server, body)

    assert response.status_code == 400
    assert "toolu_a" in response.json()["error"]["message"]
    assert server.remaining == 1


def test_temperature_with_top_p_and_unknown_forced_tool_are_rejected() -> None:
    body = REQUEST | {
        "temperature": 0.2,
        "top_p": 0.9,
        "tool_choice": {"type": "tool", "name": "nope"},
        "tools": [],
    }

    found = ms.problems(body)

    assert any("temperature and top_p" in problem for problem in found)
    assert any("'nope' not found" in problem for problem in found)


def test_exhausted_script_answers_400_and_policy_takes_over_when_set() -> None:
    with ms.MessagesServer() as server:
        first = post(server, REQUEST)
        server.set_policy(lambda body: ms.reply_text(f"you said {ms.last_user_text(body)}"))
        second = post(server, REQUEST)

    assert first.status_code == 400 and "no step left" in first.json()["error"]["message"]
    assert second.json()["content"] == [{"type": "text", "text": "you said hi"}]


def test_delays_do_not_block_other_requests() -> None:
    # Each answer waits long enough that ten clients reach the server before the first one is
    # answered even on a loaded machine (0.5 s was not: 7 of 10 arrived in time at load 18).
    server = ms.MessagesServer(policy=lambda body: ms.reply_text("ok", delay=5.0))
    with server, concurrent.futures.ThreadPoolExecutor(10) as pool:
        codes = list(pool.map(lambda _: post(server, REQUEST, timeout=30.0).status_code, range(10)))

    assert codes == [200] * 10
    assert server.max_in_flight == 10  # all ten were being answered at once


def test_hang_ends_when_the_server_stops() -> None:
    server = ms.MessagesServer(ms.Hang()).start()
    with contextlib.suppress(httpx.TimeoutException):
        post(server, REQUEST, timeout=0.2)
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 5.0  # not the hour the step asked for
