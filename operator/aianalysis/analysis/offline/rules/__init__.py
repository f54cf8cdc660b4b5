"""The offline provider's rules, one module per failure family, and the one order they run in.

Every rule runs on the evidence (:func:`analyze`); the first that matches is the finding the
answer rests on, the next ones its contributing factors. So the order below is the priority:
what contradicts the alert first, then the causes a generic remedy would hide (a JVM's heap share
before "more memory", a bad ConfigMap before "roll back"), then the generic ones. Each rule's
thresholds sit beside its code in its family's module; its matcher's docstring says what evidence
it needs, what it selects or declines, and why (:func:`documented`).

To extend: write a matcher and a :class:`rule.Rule` in the family it belongs to, place it in
:data:`RULES`, and give it a case in ``tests/unit/test_offline_rules.py`` (the test fails
without one). ``OfflineProvider(rules=...)`` takes another order or rules of one's own.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from aianalysis.analysis.offline import evidence, rule
from aianalysis.analysis.offline.rules import (
    access,
    configuration,
    crashes,
    health,
    images,
    jobs,
    memory,
    network,
    nodes,
    probes,
    scaling,
    scheduling,
    storage,
)

RULES: tuple[rule.Rule, ...] = (
    # The cluster contradicts the alert: nothing to remediate, whatever else matches.
    health.HEALTHY_DESPITE_ALERT,
    health.HEALTHY_UNCHANGED_UNSATURATED,
    # A volume held by another node: the Pod cannot start, whatever its containers would do.
    storage.VOLUME_ATTACHED_TO_GONE_NODE,
    storage.VOLUME_ATTACHED_ELSEWHERE,
    # Memory: the red herring first, then the JVM's heap share before "more memory".
    memory.OOM_ALERT_BUT_CRASH,
    memory.OOMKILLED_JVM_HEAP_SHARE,
    memory.OOMKILLED_AT_LIMIT,
    # Causes a rollback or a restart would not fix, before the crash-loop remedies.
    configuration.CRASHLOOP_GITOPS_CONFIGURATION_ERROR,
    configuration.CRASHLOOP_CONFIGURATION_ERROR,
    access.RBAC_DENIED,
    network.NETWORK_POLICY_ISOLATION,
    network.CERTIFICATE_NOT_READY,
    # Crash loops: the last rollout, else a dependency.
    crashes.CRASHLOOP_AFTER_ROLLOUT,
    crashes.CRASHLOOP_DEPENDENCY_CONNECTION,
    # Containers that cannot start: a missing reference, an image.
    configuration.MISSING_REFERENCE,
    images.IMAGE_TAG_MISSING,
    images.IMAGE_PULL_DENIED,
    images.IMAGE_UNPULLABLE_AFTER_ROLLOUT,
    # Pods that cannot be placed or moved: a taint or a cordon to lift, a budget that blocks a
    # drain; load an autoscaler or more replicas would take; only then more capacity.
    scheduling.PENDING_UNTOLERATED_TAINT,
    scheduling.PENDING_CORDONED_NODE,
    scheduling.REQUEST_EXCEEDS_EVERY_NODE,
    nodes.PDB_BLOCKS_DRAIN,
    scaling.HPA_MAXED_CPU,
    scaling.CPU_SATURATED_SCALE_OUT,
    scheduling.PENDING_INSUFFICIENT_RESOURCES,
    # Probes that time out while the process runs.
    probes.READINESS_PROBE_TIMES_OUT,
    # Nodes.
    nodes.NODE_NOT_READY,
    nodes.NODE_UNREACHABLE,
    nodes.NODE_DISK_PRESSURE,
    nodes.NODE_MEMORY_PRESSURE,
    nodes.EVICTED_PODS,
    # Storage that fills up: a database's data before any volume.
    storage.PVC_DATABASE_DATA_FILLING_UP,
    storage.PVC_FILLING_UP,
    # Jobs: a pattern of failed runs before one failed Job.
    jobs.CRONJOB_RUNS_KEEP_FAILING,
    jobs.JOB_PAST_DEADLINE,
    jobs.JOB_FAILED,
)
"""The rules in priority order (the first match is the finding)."""


def findings(seen: evidence.Evidence, rules: Sequence[rule.Rule] = RULES) -> list[rule.Finding]:
    """Every finding, in rule order (the first is the analysis' conclusion)."""
    return [finding for r in rules if (finding := r.apply(seen)) is not None]


def documented(rules: Sequence[rule.Rule] = RULES) -> Iterator[tuple[str, str]]:
    """``(name, docstring)`` of each rule, in order: the rules' reference page is generated from it."""
    for r in rules:
        yield r.name, r.doc
