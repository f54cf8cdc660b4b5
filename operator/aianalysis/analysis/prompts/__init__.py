"""Prompt builders (pure): the static system prompt, the incident prompt (four sections), the
recovery prompt with every previous attempt, reason-code guidance, and the
fencing of untrusted text.
"""

from __future__ import annotations

from aianalysis import resources
from aianalysis.analysis.prompts._fence import CLOSE, fence, sanitize
from aianalysis.analysis.prompts._history import history_section
from aianalysis.analysis.prompts._incident import incident_prompt
from aianalysis.analysis.prompts._reasons import reason_guidance
from aianalysis.analysis.prompts._recovery import recovery_prompt
from aianalysis.analysis.prompts._system import SYSTEM_PROMPT


def user_prompt(spec: resources.AIAnalysisSpec) -> str:
    """The first user message: the recovery prompt for recovery analyses, else the incident one."""
    return incident_prompt(spec) if spec.recovery is None else recovery_prompt(spec)


__all__ = [
    "CLOSE",
    "SYSTEM_PROMPT",
    "fence",
    "history_section",
    "incident_prompt",
    "reason_guidance",
    "recovery_prompt",
    "sanitize",
    "user_prompt",
]
