"""Configuration: a process that rejects the configuration it reads, and objects a workload
references that do not exist.

The configuration rules come before the rollout rule and never fall back to the alert's crash-loop
workflows (``alert_remedies=False``): neither a rollback of an unchanged template nor a restart
fixes a bad ConfigMap.
"""

from __future__ import annotations

import dataclasses
import re

from aianalysis.analysis.offline import evidence, rule

_CONFIG_ERROR = re.compile(
    r"(config|configuration|settings|\.ya?ml|\.json|\.toml|\.ini|\.conf)\b.{0,80}"
    r"(invalid|unknown|unrecognized|unexpected|malformed|cannot parse|failed to parse|parse error|"
    r"syntax error|missing required|not allowed)"
    r"|(invalid|unknown|unrecognized|unexpected|malformed)\s+"
    r"(directive|field|key|option|setting|parameter)",
    re.IGNORECASE,
)
_LISTENING = re.compile(r"\blisten(?:ing)?\b\D{0,30}?(?:port\s*|:)(\d{2,5})\b", re.IGNORECASE)
_PROBE_REFUSED = re.compile(
    r"(liveness|readiness|startup) probe failed:.*?:(\d{2,5})\b.*connection refused", re.IGNORECASE
)


def crash_on_configuration(seen: evidence.Evidence) -> rule.Match | None:
    """A crash loop (not OOM) whose last log lines say the process rejects its configuration — or
    whose probes are refused on another port than the one it says it listens on — while its Pods
    read a ConfigMap and no container field of the pod template changed in the last revision.

    Needs: the crashing container's log (its previous run, else the current one), the Pods' events,
    the ConfigMaps the Pods read, and the rollout's template changes. Selects PatchConfiguration on
    the workload with TARGET_CONFIGMAP_NAME (and CONFIGMAP_NAME): a restart picked up a changed
    ConfigMap, and a rollback of the unchanged template would not fix it. A changed template leaves
    the crash to ``crashloop-after-rollout``."""
    crashing = [(p, c) for p, c in rule.crashing(seen) if c.last_reason != "OOMKilled"]
    if not crashing or not seen.config_maps:
        return None
    if seen.rollout is not None and seen.rollout.changed:
        return None
    said = next((line for line in seen.logs if _CONFIG_ERROR.search(line)), None) or _port_moved(seen)
    if said is None:
        return None
    _, container = crashing[0]
    config_map = seen.config_maps[0]
    facts = [
        f"container {container.name} crash-loops ({container.restarts} restarts, last exit "
        f"{container.last_reason or 'an error'})",
        f"its last run logged a configuration error: {rule.shorten(said)}",
        f"the Pods read ConfigMap {config_map}",
    ]
    if seen.rollout is not None and seen.rollout.revision and seen.rollout.revision > 1:
        facts.append("no container field of the pod template changed in the last revision")
    return rule.Match(
        facts=tuple(facts),
        target=seen.workload,
        values={"TARGET_CONFIGMAP_NAME": config_map, "CONFIGMAP_NAME": config_map},
        detail={"configmap": config_map},
    )


CRASHLOOP_CONFIGURATION_ERROR = rule.Rule(
    name="crashloop-configuration-error",
    signal_type="ConfigurationError",
    action_type="PatchConfiguration",
    query="CrashLoopBackOff invalid configuration ConfigMap fix config",
    explanation=(
        "{workload} crash-loops because its process rejects the configuration it reads from ConfigMap "
        "{configmap}; the pod template did not change, so fixing the configuration (not a rollback of "
        "the template) restores it."
    ),
    match=crash_on_configuration,
    alert_remedies=False,
)


def _port_moved(seen: evidence.Evidence) -> str | None:
    """The probes knock on one port while the process says it listens on another: the port
    came from the configuration (the template's probes did not move)."""
    probes = [m for e in seen.events if (m := _PROBE_REFUSED.search(e.message))]
    listening = [m for line in seen.logs if (m := _LISTENING.search(line))]
    if not probes or not listening or probes[0].group(2) == listening[-1].group(1):
        return None
    return (
        f"the process listens on port {listening[-1].group(1)} while its {probes[0].group(1).lower()} "
        f"probe is refused on port {probes[0].group(2)}"
    )


def crash_on_synced_configuration(seen: evidence.Evidence) -> rule.Match | None:
    """A configuration error as ``crashloop-configuration-error`` finds it, in a ConfigMap a GitOps
    controller syncs from a repository (Argo CD's or Flux's marks on it).

    Needs: what ``crashloop-configuration-error`` needs, and the ConfigMap's labels and annotations.
    Selects GitRevertCommit on the workload with TARGET_CONFIGMAP_NAME: the bad change is a commit,
    and a patch in the cluster would be synced away. It comes before the in-cluster fix."""
    found = crash_on_configuration(seen)
    config_map = found.values.get("TARGET_CONFIGMAP_NAME") if found else None
    if found is None or config_map is None or f"ConfigMap {config_map}" not in seen.gitops:
        return None
    return dataclasses.replace(
        found,
        facts=(*found.facts, f"ConfigMap {config_map} is synced by a GitOps controller from a repository"),
    )


CRASHLOOP_GITOPS_CONFIGURATION_ERROR = rule.Rule(
    name="crashloop-gitops-configuration-error",
    signal_type="ConfigurationError",
    action_type="GitRevertCommit",
    query="CrashLoopBackOff GitOps configuration revert commit repository",
    explanation=(
        "{workload} crash-loops because its process rejects the configuration in ConfigMap {configmap}, "
        "which a GitOps controller syncs from a repository: the bad change is a commit, and a patch in "
        "the cluster would be synced away; reverting the commit restores it."
    ),
    match=crash_on_synced_configuration,
    alert_remedies=False,
)


def missing_reference(seen: evidence.Evidence) -> rule.Match | None:
    """The workload references a ConfigMap or PersistentVolumeClaim that does not exist, or a
    container cannot be created because something it needs was not found
    (``CreateContainerConfigError``).

    Needs: the Pods' container statuses and the objects their spec references, read one by one
    (Secrets are never read: a missing Secret shows only in the container's message). Selects
    PatchConfiguration on the workload: the object must be restored or the reference fixed."""
    config = [(p, c) for p, c in seen.containers if c.waiting in evidence.CONFIG_WAITING]
    missing = [f"{kind} {name}" for kind, name in seen.missing]
    messages = [c.waiting_message for _, c in config if "not found" in c.waiting_message]
    if not missing and not messages:
        return None
    facts = [f"referenced but missing: {', '.join(missing)}"] if missing else []
    facts += [f"container {c.name} cannot start: {c.waiting}" for _, c in config[:1]]
    facts += [m for m in messages[:1] if m not in facts]
    return rule.Match(
        facts=tuple(facts),
        target=seen.workload,
        detail={"missing": ", ".join(missing) or messages[0]},
    )


MISSING_REFERENCE = rule.Rule(
    name="missing-reference",
    signal_type="CreateContainerConfigError",
    action_type="PatchConfiguration",
    query="missing ConfigMap configuration reference",
    explanation=(
        "{workload} cannot start its containers because {missing} does not exist; the object must be "
        "restored or the reference fixed."
    ),
    match=missing_reference,
)
