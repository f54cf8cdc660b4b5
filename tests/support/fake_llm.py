"""A scripted 'good' LLM for the messages server: it reads the incident prompt, searches the
catalog for the signal type, reads the top workflow's details and submits a valid answer with
parameters taken from the incident. Hooks let a test corrupt chosen answers to exercise the
validator's feedback loop. Deterministic; no model involved."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from tests.support import messages_server as ms

Answer = dict[str, Any]
Corrupt = Callable[[int, Answer], Answer]


def prompt_fact(body: Mapping[str, Any], label: str) -> str | None:
    """A '- Label: value' fact from the first user message (the incident prompt)."""
    text = _first_prompt(body)
    found = re.search(rf"^\s*-\s*\**{re.escape(label)}\**:\s*`?([^`\n]+?)`?\s*$", text, re.MULTILINE)
    return found.group(1).strip() if found else None


def fill(parameters: list[dict[str, Any]], body: Mapping[str, Any]) -> dict[str, Any]:
    """Values a careful SRE would pass: the incident's target, then schema-valid values."""
    resource = prompt_fact(body, "Resource") or "Deployment/app"
    kind, _, name = resource.partition("/")
    namespace = prompt_fact(body, "Namespace") or "default"
    known = {"TARGET_NAMESPACE": namespace, "TARGET_RESOURCE_KIND": kind, "TARGET_RESOURCE_NAME": name}
    values: dict[str, Any] = {}
    for p in parameters:
        pname = p["name"]
        if pname in known and (not p.get("enum") or known[pname] in p["enum"]):
            values[pname] = known[pname]
        elif pname in known and p.get("enum"):
            values[pname] = p["enum"][0]
        elif p.get("required") and p.get("default") is None:
            values[pname] = _example(p)
    return values


def _example(p: Mapping[str, Any]) -> Any:
    if p.get("enum"):
        return p["enum"][0]
    kind = p["type"]
    if kind in ("integer", "number"):
        return int(p.get("minimum") or 1)
    if kind == "boolean":
        return True
    if kind == "array":
        return ["item"]
    pattern = p.get("pattern") or ""
    if "Mi|Gi" in pattern or "Gi|Mi" in pattern:
        return "1Gi"
    return "value"


@dataclasses.dataclass
class GoodLLM:
    """Policy: search → details → submit. ``corrupt(n, answer)`` may alter the n-th submission (1-based)."""

    corrupt: Corrupt | None = None
    delay: float = 0.0
    usage: dict[str, int] = dataclasses.field(default_factory=lambda: ms.usage(1200, 150, cache_read=900))
    submissions: int = 0

    def __call__(self, body: dict[str, Any]) -> ms.Step:
        outputs = ms.tool_outputs(body)
        last = outputs[-1] if outputs else None
        if last is None:
            signal = prompt_fact(body, "Signal Type") or ""
            return self._reply(ms.tool_use("search_workflow_catalog", {"signal_type": signal, "top_k": 5}))
        name, text, is_error = last
        if name == "search_workflow_catalog" and not is_error:
            hits = json.loads(text)["workflows"]
            if not hits:
                return self._submit(body, None)
            return self._reply(ms.tool_use("get_workflow_details", {"workflow_id": hits[0]["workflow_id"]}))
        if name == "get_workflow_details" and not is_error:
            return self._submit(body, json.loads(text))
        if name == "submit_selection" and "repeated_failure" in text:
            untried = [h for h in _search_hits(body) if h["workflow_id"] not in tried_workflows(body)]
            if untried:
                return self._reply(
                    ms.tool_use("get_workflow_details", {"workflow_id": untried[0]["workflow_id"]})
                )
        # other validation feedback (is_error tool_result of submit_selection): resubmit from the details
        details = _last_details(body)
        return self._submit(body, details)

    def _reply(self, block: dict[str, Any]) -> ms.Step:
        return ms.reply_tools(block, stop_reason="tool_use", usage=self.usage, delay=self.delay)

    def _submit(self, body: Mapping[str, Any], details: Mapping[str, Any] | None) -> ms.Step:
        self.submissions += 1
        answer: Answer = {
            "analysis_summary": "Investigated the incident facts.",
            "root_cause_assessment": "The workload exceeded what its configuration allows.",
            "rca_severity": "high",
            "selected_workflow": None,
            "needs_human_review": details is None,
            "human_review_reason": "no_eligible_workflow" if details is None else None,
        }
        if details is not None:
            answer["selected_workflow"] = {
                "workflow_id": details["workflow_id"],
                "version": details["version"],
                "confidence": 0.9,
                "rationale": "best catalog match for the root cause",
                "parameters": fill(details["parameters"], body),
            }
        if is_recovery(body):
            answer["recovery_analysis"] = {
                "previous_attempt_assessment": {
                    "failure_understood": True,
                    "failure_reason_analysis": "the previous workflow failed",
                    "state_changed": False,
                    "current_signal_type": prompt_fact(body, "Signal Type"),
                },
            }
            answer["recovery_strategy"] = {
                "approach": "alternative_workflow",
                "differs_from_previous": True,
                "why_different": "a workflow that has not been tried",
            }
        if self.corrupt is not None:
            answer = self.corrupt(self.submissions, answer)
        return ms.submit(answer, usage=self.usage, delay=self.delay)


_first_prompt = ms.first_prompt


def is_recovery(body: Mapping[str, Any]) -> bool:
    return _first_prompt(body).startswith("# Recovery Analysis Request")


def tried_workflows(body: Mapping[str, Any]) -> set[str]:
    """Workflow ids of the failed attempts listed in a recovery prompt."""
    return set(re.findall(r"^- Workflow ID: `?([a-z0-9-]+)`?$", _first_prompt(body), re.MULTILINE))


def _search_hits(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    for message in body["messages"]:
        if message["role"] != "user" or isinstance(message["content"], str):
            continue
        for block in message["content"]:
            text = ms._result_text(block) if block.get("type") == "tool_result" else ""
            if text.startswith('{"workflows"'):
                hits: list[dict[str, Any]] = json.loads(text)["workflows"]
                return hits
    return []


def _last_details(body: Mapping[str, Any]) -> dict[str, Any] | None:
    for message in reversed(body["messages"]):
        if message["role"] != "user" or isinstance(message["content"], str):
            continue
        for block in message["content"]:
            if block.get("type") == "tool_result" and not block.get("is_error"):
                text = ms._result_text(block)
                with_params = text.startswith("{") and '"parameters"' in text
                if with_params:
                    parsed: dict[str, Any] = json.loads(text)
                    return parsed
    return None
