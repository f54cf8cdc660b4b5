"""The offline provider: deterministic, network-free, the embedded default when no LLM is
configured. It investigates an incident through the same read-only tools an LLM gets, condenses
what it read into evidence, runs its rules on it, and submits the best eligible catalog workflow
for what the evidence shows — or declines, and says why.

How it reads, from the top:

- :mod:`provider` — the conversation: investigate, analyse, search the catalog, submit, correct;
- :mod:`answers`, :mod:`plan` — the answer's fields; the catalog's hits and the values a
  workflow's parameters take (never guessed);
- :mod:`investigation`, :mod:`listings`, :mod:`reads` — the fixed sequence of tool calls, reading
  each tool's values (``ToolResult.data``), never its text;
- :mod:`rules` — the rules, one module per failure family, in one ordered list (the order is the
  priority); each rule's thresholds beside its code and its docstring its documentation;
- :mod:`rule`, :mod:`condense`, :mod:`workload`, :mod:`evidence` — what a rule is; cluster
  objects condensed into the evidence the rules read.
"""

from __future__ import annotations

from aianalysis.analysis.offline.provider import MODEL_NAME, OfflineConversation, OfflineProvider
from aianalysis.analysis.offline.rules import RULES, documented, findings

__all__ = ["MODEL_NAME", "RULES", "OfflineConversation", "OfflineProvider", "documented", "findings"]
