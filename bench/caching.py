"""Share of the first Messages API request that prompt caching can reuse across analyses.

Every example incident (``examples/incidents``) goes through the real pipeline in this process
(``pipeline.analyze`` with the Anthropic provider, the example catalog) against the scripted
server, which records the request the SDK actually sent. The API's cache prefix is
``tools → system → messages``; the prefix up to and including the last block-level
``cache_control`` breakpoint (the last tool, the system block) is the same for every incident.
The top-level ``cache_control`` (automatic caching of the conversation so far) is not counted:
it covers the incident itself, which only later turns of the same conversation re-read.

Tokens are approximated as characters / 4 (no Claude tokenizer is available offline): tool
definitions count as their compact JSON, text blocks as their text.
"""

from __future__ import annotations

import asyncio
import json
import statistics
from pathlib import Path
from typing import Any

import yaml
from tests.support import messages_server as ms

from aianalysis import catalog, resources, settings
from aianalysis.analysis import llm, pipeline
from bench import harness, workload

CHARS_PER_TOKEN = 4
MIN_CACHEABLE_TOKENS = 1024
"""Smallest prefix the API caches for Sonnet models; a shorter one is silently not cached."""


def _segments(body: dict[str, Any]) -> list[tuple[int, bool]]:
    """(characters, has a cache breakpoint) of every prompt block, in cache-prefix order."""
    out: list[tuple[int, bool]] = []
    for tool in body.get("tools") or []:
        plain = {k: v for k, v in tool.items() if k != "cache_control"}
        out.append(
            (len(json.dumps(plain, separators=(",", ":"), ensure_ascii=False)), "cache_control" in tool)
        )
    system = body.get("system") or []
    blocks = [{"type": "text", "text": system}] if isinstance(system, str) else system
    out.extend((len(block.get("text", "")), "cache_control" in block) for block in blocks)
    for message in body.get("messages") or []:
        content = message["content"]
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for part in parts:
            size = len(part.get("text") or json.dumps(part, separators=(",", ":"), ensure_ascii=False))
            out.append((size, "cache_control" in part))
    return out


def share(body: dict[str, Any]) -> dict[str, Any]:
    segments = _segments(body)
    total = sum(size for size, _ in segments)
    last = max((i for i, (_, marked) in enumerate(segments) if marked), default=-1)
    prefix = sum(size for size, _ in segments[: last + 1])
    return {
        "prefix_tokens": prefix // CHARS_PER_TOKEN,
        "total_tokens": total // CHARS_PER_TOKEN,
        "share": round(prefix / total, 3) if total else 0.0,
    }


def _incidents() -> list[resources.AIAnalysisSpec]:
    paths = sorted((harness.ROOT / "examples" / "incidents").glob("*.yaml"))
    return [resources.AIAnalysisSpec.model_validate(yaml.safe_load(p.read_text())["spec"]) for p in paths]


async def _first_requests(base_url: str, specs: list[resources.AIAnalysisSpec]) -> None:
    config = settings.Settings(
        llm=settings.LlmSettings(
            provider="anthropic", api_key="bench", anthropic_base_url=base_url, model="claude-sonnet-4-6"
        )
    )
    found = catalog.load_paths([harness.ROOT / "examples" / "catalog"])
    provider = llm.make_provider(config)
    try:
        for spec in specs:
            await pipeline.analyze(spec, catalog=found, provider=provider, reader=None, settings=config)
    finally:
        await provider.aclose()


def run(*, dump: Path | None = None) -> dict[str, Any]:
    specs = _incidents()
    with ms.MessagesServer(policy=workload.Policy(delay=0.0)) as server:
        asyncio.run(_first_requests(server.base_url, specs))
        firsts = [r.body for r in server.requests if len(r.body.get("messages", [])) == 1]
    if dump is not None and firsts:
        dump.write_text(json.dumps(firsts[0], indent=1))
    shares = [share(body) for body in firsts]
    values = [s["share"] for s in shares]
    return {
        "incidents": len(shares),
        "share_min": min(values),
        "share_median": round(statistics.median(values), 3),
        "share_max": max(values),
        "prefix_tokens": shares[0]["prefix_tokens"],
        "total_tokens_median": statistics.median(s["total_tokens"] for s in shares),
        "min_cacheable_tokens": MIN_CACHEABLE_TOKENS,
        "token_estimate": f"characters / {CHARS_PER_TOKEN}",
        "goal_min_share": 0.7,
    }
