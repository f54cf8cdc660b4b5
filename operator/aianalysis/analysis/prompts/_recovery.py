"""The recovery prompt: every previous attempt, oldest first, then the recovery
instructions, then the incident's fact sections.

Upstream only sent the last attempt; the LLM then re-proposed what had failed two attempts
earlier. Here each attempt gets its own section (original RCA, workflow with version, image,
parameters and rationale, failure details with the reason code and that code's guidance), and the
instructions list every failed workflow/parameters combination explicitly. Everything that came
from an earlier LLM answer or from the execution (summaries, rationales, messages, parameter
values) is fenced: it was derived from untrusted data.
"""

from __future__ import annotations

import json

from aianalysis import resources
from aianalysis.analysis.prompts import _fence, _incident, _reasons

_WARNING = (
    "This is a RECOVERY analysis: {count} previous remediation attempt(s) for this incident were "
    "executed and FAILED. They are listed in chronological order (oldest first). Understand what "
    "was attempted and why it failed before recommending an alternative."
)


def recovery_prompt(spec: resources.AIAnalysisSpec) -> str:
    """The user message of a recovery analysis; ``spec.recovery`` must be set."""
    if spec.recovery is None:
        raise ValueError("recovery_prompt needs spec.recovery")
    executions = spec.recovery.previous_executions
    parts = [
        f"# Recovery Analysis Request (Attempt {spec.recovery.attempt_number})",
        "## Previous Remediation Attempts - CRITICAL CONTEXT\n\n" + _WARNING.format(count=len(executions)),
        *(_attempt(execution, index=i, total=len(executions)) for i, execution in enumerate(executions, 1)),
        _instructions(executions),
        "---\n\n# Original Incident (observable facts)\n\n" + _incident.incident_sections(spec),
    ]
    return "\n\n".join(parts)


def _attempt(execution: resources.PreviousExecution, *, index: int, total: int) -> str:
    ref = _fence.value(execution.workflow_execution_ref, label="workflow_execution_ref")
    return "\n\n".join(
        (
            f"### Attempt {index} of {total} (WorkflowExecution {ref})",
            _original_rca(execution.original_rca, index=index),
            _workflow(execution.selected_workflow, index=index),
            _failure(execution.failure, index=index),
        )
    )


def _original_rca(rca: resources.OriginalRCA, *, index: int) -> str:
    factors = "\n".join(f"- {factor}" for factor in rca.contributing_factors)
    return "\n".join(
        (
            "#### What Was Originally Determined",
            f"- Summary: {_fence.fence(rca.summary, label=f'attempt{index}.rca_summary')}",
            f"- Signal Type (RCA determination): {_value(rca.signal_type, 'signal_type')}",
            f"- Severity: {_value(rca.severity, 'severity')}",
            "- Contributing Factors: "
            + (
                _fence.fence(factors, label=f"attempt{index}.contributing_factors")
                if factors
                else "none recorded"
            ),
        )
    )


def _workflow(workflow: resources.ExecutedWorkflow, *, index: int) -> str:
    rationale = workflow.rationale and _fence.fence(workflow.rationale, label=f"attempt{index}.rationale")
    return "\n".join(
        (
            "#### Workflow Selected and Executed",
            f"- Workflow ID: {_value(workflow.workflow_id, 'workflow_id')}",
            f"- Version: {_value(workflow.version, 'version')}",
            f"- Container Image: {_value(workflow.container_image, 'container_image')}",
            f"- Selection Rationale: {rationale or 'not recorded'}",
            f"- Parameters Used: {_parameters(workflow.parameters, index=index)}",
        )
    )


def _failure(failure: resources.ExecutionFailure, *, index: int) -> str:
    reason = _reasons.shown(failure.reason)
    message = failure.message and _fence.fence(failure.message, label=f"attempt{index}.failure_message")
    step = f"Step {_number(failure.failed_step_index)} - {_value(failure.failed_step_name, 'step_name')}"
    return "\n".join(
        (
            "#### What Failed During Execution",
            f"- Failed Step: {step}",
            f"- Kubernetes Reason: **{reason}**",
            f"- Error Message: {message or 'no message'}",
            f"- Exit Code: {_number(failure.exit_code)}",
            f"- Execution Duration: {_value(failure.execution_time, 'execution_time')} before failure",
            f"- Failed At: {_value(failure.failed_at, 'failed_at')}",
            "",
            f"#### Failure Reason Interpretation ({reason})",
            _reasons.reason_guidance(failure.reason).rstrip("\n"),
        )
    )


def _instructions(executions: list[resources.PreviousExecution]) -> str:
    forbidden = "\n".join(f"   - {combo}" for combo in _forbidden(executions))
    return f"""## Your Recovery Investigation Task

1. **DO NOT** choose a workflow with the same parameters as an attempt that already failed.
   These combinations are forbidden:
{forbidden}
   Another workflow, or the same workflow with different parameters that your investigation
   justifies, is allowed; explain in `recovery_strategy` why it differs.
2. **INVESTIGATE** the CURRENT cluster state, starting from the failure point rather than the
   original signal: check whether a failed step partially executed and changed the state, and
   whether the target resource is now in a different condition.
3. **DETERMINE** whether the signal type has CHANGED: the executions may have altered the cluster
   (example: OOMKilled -> a workflow scaled up -> now InsufficientCPU). Search the catalog with
   the CURRENT signal type, not the original one.
4. **CONSIDER** the failure reasons above and their guidance: search for workflows that handle
   that failure mode, and prefer a less aggressive remediation if the previous one was too
   aggressive. A pattern across several failed attempts is evidence too.
5. **REPORT** your assessment in `recovery_analysis` (previous_attempt_assessment, current_rca)
   and your approach in `recovery_strategy` (approach, differs_from_previous, why_different)."""


def _forbidden(executions: list[resources.PreviousExecution]) -> list[str]:
    seen: list[str] = []
    for execution in executions:
        combo = _combination(execution.selected_workflow)
        if combo not in seen:
            seen.append(combo)
    return seen


def _combination(workflow: resources.ExecutedWorkflow) -> str:
    name = f"{_value(workflow.workflow_id, 'workflow_id')} version {_value(workflow.version, 'version')}"
    if not workflow.parameters:
        return f"{name} with no parameters"
    params = json.dumps(workflow.parameters, sort_keys=True, ensure_ascii=False)
    return f"{name} with parameters {_fence.value(params, label='parameters')}"


def _parameters(parameters: dict[str, str], *, index: int) -> str:
    if not parameters:
        return "none"
    lines = "\n".join(f"{key}={parameters[key]}" for key in sorted(parameters))
    return _fence.fence(lines, label=f"attempt{index}.parameters")


def _value(value: str | None, label: str) -> str:
    return "unknown" if not value else _fence.value(value, label=label)


def _number(value: int | None) -> str:
    return "N/A" if value is None else str(value)
