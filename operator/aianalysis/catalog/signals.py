"""Signal normalization: common Prometheus / kube-state-metrics alert names → the signal types
workflows and prompts speak of. Applied by the intake when it maps an alert, and again at analysis
time, so an AIAnalysis written by hand or by another pipeline with ``signal.type:
KubePodCrashLooping`` is searched as ``CrashLoopBackOff``. Pure.

Extend it with ``AIANALYSIS_SIGNAL_TYPES`` (``AlertName=SignalType`` pairs, comma-separated; the
operator) or the intake mapping file's ``signalTypes`` (the intake); entries there win.
"""

from __future__ import annotations

from collections.abc import Mapping

DEFAULT_SIGNAL_TYPES: dict[str, str] = {
    "KubePodCrashLooping": "CrashLoopBackOff",
    "KubePodNotReady": "Unhealthy",
    "KubeContainerWaiting": "ContainerWaiting",
    "KubeContainerOOMKilled": "OOMKilled",
    "KubePodOOMKilled": "OOMKilled",
    "KubeDeploymentRolloutStuck": "RolloutStuck",
    "KubeDeploymentGenerationMismatch": "RolloutStuck",
    "KubeDeploymentReplicasMismatch": "ReplicasMismatch",
    "KubeStatefulSetReplicasMismatch": "ReplicasMismatch",
    "KubeStatefulSetUpdateNotRolledOut": "RolloutStuck",
    "KubeDaemonSetRolloutStuck": "RolloutStuck",
    "KubeDaemonSetNotScheduled": "FailedScheduling",
    "KubeJobFailed": "BackoffLimitExceeded",
    "KubeJobNotCompleted": "DeadlineExceeded",
    "KubePersistentVolumeFillingUp": "PersistentVolumeFillingUp",
    "KubePersistentVolumeInodesFillingUp": "PersistentVolumeFillingUp",
    "KubePersistentVolumeErrors": "FailedMount",
    "KubeNodeNotReady": "NodeNotReady",
    "KubeNodeUnreachable": "NodeUnreachable",
    "KubeNodeReadinessFlapping": "NodeNotReady",
    "KubeletTooManyPods": "FailedScheduling",
    "NodeFilesystemSpaceFillingUp": "NodeDiskPressure",
    "NodeFilesystemAlmostOutOfSpace": "NodeDiskPressure",
    "KubeHpaMaxedOut": "HPAMaxedOut",
    "KubeHpaReplicasMismatch": "HPAReplicasMismatch",
    "KubePodDisruptionBudgetAtLimit": "PDBAtLimit",
    "KubePodDisruptionBudgetLimit": "PDBAtLimit",
    "KubeQuotaExceeded": "QuotaExceeded",
    "KubeQuotaFullyUsed": "QuotaExceeded",
    "KubeClientCertificateExpiration": "CertificateExpiring",
    "CPUThrottlingHigh": "CPUThrottling",
    "TargetDown": "TargetDown",
}


def normalize(signal_type: str, *, alert_name: str | None, table: Mapping[str, str]) -> str:
    """The signal type to search by: ``signal_type`` itself unless it (or, when it merely repeats
    the alert name, the alert name) is a listed alert name."""
    if signal_type in table:
        return table[signal_type]
    if alert_name and signal_type in (alert_name, "Unknown") and alert_name in table:
        return table[alert_name]
    return signal_type


def parse_pairs(entries: tuple[str, ...]) -> dict[str, str]:
    """``("AlertA=TypeA", ...)`` as a table (settings are checked to be ``=`` pairs)."""
    table: dict[str, str] = {}
    for entry in entries:
        alert, _, signal_type = entry.partition("=")
        if alert.strip() and signal_type.strip():
            table[alert.strip()] = signal_type.strip()
    return table


__all__ = ["DEFAULT_SIGNAL_TYPES", "normalize", "parse_pairs"]
