"""The remediation history section: what ran on this target before, and how it went (the verdict of
the effectiveness assessment), so the LLM does not propose again what did not work."""

from __future__ import annotations

from collections.abc import Sequence

from aianalysis.analysis.prompts import _fence

NOTE = (
    "Earlier executions on this incident's target, newest first, with the verdict of their "
    "effectiveness assessment, then the workflows a person rejected here (not run) and why. A workflow "
    "judged ineffective or rejected here is not run again without a person: prefer another, or say "
    "why the person's objection no longer holds; "
    "if earlier fixes were effective and the incident is back, look for the cause they did not address."
)


def history_section(lines: Sequence[str]) -> str:
    """``## Remediation History`` (empty string when nothing ran on the target recently)."""
    if not lines:
        return ""
    # Workflow ids, versions and names come from WorkflowExecutions a user of the namespace may write.
    body = _fence.fence("\n".join(lines), label="remediation_history")
    return "## Remediation History\n" + NOTE + "\n\n" + body
