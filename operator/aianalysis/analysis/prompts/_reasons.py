"""Recovery guidance per Kubernetes reason code of a failed WorkflowExecution.

The codes are the structured contract between WorkflowExecution status and the recovery prompt
(``resources.CANONICAL_REASON_CODES``); a test proves every canonical code has its own text. The
seed's texts are kept; ``InvalidImageName`` and ``NodeUnreachable`` (listed by the seed but
without guidance) and ``Completed`` are ours. Clusters invent codes, so an unknown one gets a
generic text that names it.
"""

from __future__ import annotations

from aianalysis.analysis.prompts import _fence

_GUIDANCE: dict[str, tuple[str, str, str]] = {
    # Resource-related failures
    "OOMKilled": (
        "Container exceeded memory limits during remediation",
        "Workflow with lower memory footprint, or scale resources first",
        "Gradual remediation instead of aggressive action",
    ),
    "InsufficientCPU": (
        "Not enough CPU available to execute remediation",
        "Wait for resources, or request resource increase first",
        "Lower-priority workflow that uses less CPU",
    ),
    "InsufficientMemory": (
        "Not enough memory available in cluster",
        "Evict lower-priority workloads first, or use smaller workflow",
        "Remediation that doesn't require additional memory",
    ),
    "Evicted": (
        "Pod was evicted during execution",
        "Resource pressure on node",
        "Workflow with resource requests/limits, or different node",
    ),
    # Scheduling failures
    "FailedScheduling": (
        "Kubernetes scheduler couldn't place the remediation pod",
        "Node affinity issues, resource constraints, or taints",
        "Workflow that can run on different nodes",
    ),
    "Unschedulable": (
        "Pod marked as unschedulable",
        "Check node conditions, tolerations, and affinity rules",
        "Workflow that removes scheduling constraints",
    ),
    # Image-related failures
    "ImagePullBackOff": (
        "Could not pull workflow container image",
        "Image doesn't exist, registry auth, network issues",
        "Workflow with different container image",
    ),
    "ErrImagePull": (
        "Failed to pull container image",
        "Check image name, tag, and registry access",
        "Use cached image or different workflow",
    ),
    "InvalidImageName": (
        "The workflow's container image reference is malformed, so no node could even try to pull it",
        "This is a catalog defect of that workflow version, not a cluster condition; retrying it "
        "cannot succeed and the cluster state was most likely not changed by it",
        "Another workflow, or another version of the same workflow with a valid image",
    ),
    # Execution failures
    "DeadlineExceeded": (
        "Workflow execution exceeded time limit",
        "Task taking longer than expected, or stuck",
        "Workflow with longer timeout, or faster approach",
    ),
    "BackoffLimitExceeded": (
        "Workflow exceeded retry attempts",
        "Persistent failure, requires different approach",
        "Completely different remediation strategy",
    ),
    "Error": (
        "Generic execution error",
        "Check logs for specific error details",
        "Based on error message analysis",
    ),
    "Completed": (
        "The step reported Completed (not a failure code) yet the execution was marked failed",
        "The remediation may have run without fixing the problem: verify whether its change took "
        "effect and whether the original signal persists",
        "A workflow that addresses a different root cause than the one assumed before",
    ),
    # Permission failures
    "Unauthorized": (
        "Workflow lacks required permissions",
        "RBAC configuration, service account permissions",
        "Workflow that doesn't require elevated permissions",
    ),
    "Forbidden": (
        "Action forbidden by security policy",
        "PodSecurityPolicy, NetworkPolicy, or admission controller",
        "Workflow that complies with security policies",
    ),
    # Volume/Storage failures
    "FailedMount": (
        "Could not mount required volume",
        "PVC issues, storage class problems, or capacity",
        "Workflow that doesn't require persistent storage",
    ),
    "FailedAttachVolume": (
        "Could not attach volume to node",
        "Volume already attached elsewhere, or node issues",
        "Workflow that uses different storage approach",
    ),
    # Network failures
    "NetworkNotReady": (
        "Network not available for pod",
        "CNI issues, network policy blocking",
        "Workflow that can work with limited network",
    ),
    # Node failures
    "NodeNotReady": (
        "Node became unavailable during execution",
        "Node health issues, draining, or cordoning",
        "Workflow that can run on different nodes",
    ),
    "NodeUnreachable": (
        "The node running the workflow stopped answering the control plane (network partition or "
        "a hung kubelet); whether the step finished on the node is unknown",
        "Check the Node's conditions and taints (node.kubernetes.io/unreachable) and whether the "
        "target resource was partially changed before contact was lost",
        "Workflow that tolerates re-running on another node (idempotent), after confirming the "
        "current state of the target",
    ),
}


def reason_guidance(code: str) -> str:
    """Bullet points interpreting ``code`` for the recovery prompt; generic for unknown codes."""
    known = _GUIDANCE.get(code)
    if known is None:
        return _generic(code)
    meaning, consider, alternative = known
    return f"  - {meaning}\n  - Consider: {consider}\n  - Alternative: {alternative}\n"


def shown(code: str) -> str:
    """A reason code for the prompt: a known code as is (a closed vocabulary), any other fenced."""
    return code if code in _GUIDANCE else _fence.value(code, label="reason")


def known_codes() -> tuple[str, ...]:
    """Codes with specific guidance (the canonical ones plus ``Completed``)."""
    return tuple(_GUIDANCE)


def _generic(code: str) -> str:
    shown = _fence.value(code, label="reason")
    return (
        f"  - Kubernetes reason: {shown} (no specific guidance exists for this code)\n"
        "  - Investigate the specific failure mode\n"
        "  - Search for workflows that handle this condition\n"
    )
