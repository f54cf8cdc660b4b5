"""What the tools returned, accounted: the per-analysis budget of investigation output and the
bounded audit record of every call that lands in ``status.investigation``.

Tokens are estimated as characters / 4 (no tokenizer offline; the same method as ``make bench``).
The budget counts only investigation tools (cluster, Prometheus): the catalog tools stay usable
after an exhausted investigation, so the LLM can still select a workflow.
"""

from __future__ import annotations

import json

from aianalysis import resources
from aianalysis.analysis import redact

CHARS_PER_TOKEN = 4
MIN_USEFUL_CHARS = 400
"""Below this much budget left, an investigation call is refused rather than answered uselessly."""


def tokens(chars: int) -> int:
    return -(-chars // CHARS_PER_TOKEN)


class Ledger:
    def __init__(self, *, budget_tokens: int, max_records: int) -> None:
        self.budget_tokens = budget_tokens
        self.max_records = min(max_records, resources.MAX_AUDIT_RECORDS)
        self.spent_chars = 0
        """Output of investigation calls (what the budget counts)."""
        self.total_chars = 0
        """Output of every call, catalog tools and errors included."""
        self.records: list[resources.ToolCallRecord] = []
        self.not_recorded = 0
        self.exhausted = False

    def remaining_chars(self) -> int:
        return max(self.budget_tokens * CHARS_PER_TOKEN - self.spent_chars, 0)

    def can_investigate(self) -> bool:
        if self.remaining_chars() < MIN_USEFUL_CHARS:
            self.exhausted = True
        return not self.exhausted

    def spent_message(self) -> str:
        return (
            f"the tool-output budget of this analysis ({self.budget_tokens:,} tokens) is spent: no more "
            "investigation reads. Conclude from the evidence you have, then use the catalog tools."
        )

    def record(
        self,
        *,
        tool: str,
        arguments: object,
        text: str,
        seconds: float,
        truncated: bool,
        error: bool,
        investigates: bool,
    ) -> None:
        self.total_chars += len(text)
        if investigates:
            self.spent_chars += len(text)
        if len(self.records) >= self.max_records:
            self.not_recorded += 1
            return
        self.records.append(
            resources.ToolCallRecord(
                tool=tool[:64],
                arguments=_arguments(arguments),
                result_chars=len(text),
                result_tokens=tokens(len(text)),
                duration_ms=max(int(seconds * 1000), 0),
                truncated=truncated,
                error=error,
            )
        )

    def audit(self) -> resources.InvestigationAudit:
        return resources.InvestigationAudit(
            calls=list(self.records),
            calls_not_recorded=self.not_recorded,
            output_tokens=tokens(self.total_chars),
            budget_tokens=self.budget_tokens,
            budget_exhausted=self.exhausted,
        )


def _arguments(arguments: object) -> str | None:
    if arguments in (None, {}):
        return None
    try:
        text = json.dumps(
            _clean(arguments), separators=(",", ":"), ensure_ascii=False, sort_keys=True, default=str
        )
    except (TypeError, ValueError):
        text = redact.redact_text(repr(arguments))
    limit = resources.MAX_AUDIT_ARGUMENT_CHARS
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _clean(node: object) -> object:
    """Each string redacted on its own (a ``password=...`` selector inside a JSON value too)."""
    if isinstance(node, dict):
        return {
            key: redact.REDACTED
            if redact.is_secret_name(str(key)) and isinstance(value, str)
            else _clean(value)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_clean(item) for item in node]
    return redact.redact_text(node) if isinstance(node, str) else node
