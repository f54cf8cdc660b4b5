"""Probes that fail while the process runs: an endpoint that answers, too slowly for the probe."""

from __future__ import annotations

import re

from aianalysis.analysis.offline import evidence, rule

_READINESS_TIMEOUT = re.compile(
    r"readiness probe failed:.*(context deadline exceeded|Client\.Timeout exceeded|timed out|timeout)",
    re.IGNORECASE,
)
#: The new ``timeoutSeconds``: this many times the one that expires, at least ``PROBE_TIMEOUT_MIN``
#: and at most ``PROBE_TIMEOUT_MAX`` seconds (the probe's own limit in the catalog's workflows).
PROBE_TIMEOUT_FACTOR = 3
PROBE_TIMEOUT_MIN = 5
PROBE_TIMEOUT_MAX = 60


def readiness_probe_times_out(seen: evidence.Evidence) -> rule.Match | None:
    """Containers run but are never Ready because their readiness probe times out: the kubelet
    reports ``Readiness probe failed: ... context deadline exceeded`` (or ``Client.Timeout
    exceeded``, ``timed out``) — the endpoint is there and answers, slower than the probe's
    ``timeoutSeconds`` — and the containers do not crash.

    Needs: the Pods' Unhealthy events, their container states and probe timeouts. Selects RelaxProbe
    on the workload with PROBE ``readiness``, CONTAINER_NAME and TIMEOUT_SECONDS
    ``PROBE_TIMEOUT_FACTOR`` times the current timeout (between ``PROBE_TIMEOUT_MIN`` and
    ``PROBE_TIMEOUT_MAX``). A probe refused or answered with an error is not a timeout: it is left
    to the other rules (a wrong port, a failing dependency)."""
    said = next((m for m in seen.event_messages("Unhealthy") if _READINESS_TIMEOUT.search(m)), None)
    unready = [
        (p, c)
        for p, c in seen.containers
        if p.phase == "Running" and not c.ready and not c.crashing and "readiness" in c.probe_timeouts
    ]
    if said is None or not unready:
        return None
    pod, container = unready[0]
    current = container.probe_timeouts["readiness"]
    raised = min(PROBE_TIMEOUT_MAX, max(PROBE_TIMEOUT_MIN, current * PROBE_TIMEOUT_FACTOR))
    if raised <= current:
        return None
    return rule.Match(
        facts=(
            f"{len({p.name for p, _ in unready})} Pod(s) run without becoming Ready (container "
            f"{container.name} of Pod {pod.name}, {container.restarts} restarts)",
            f"the readiness probe times out: {rule.shorten(said)}",
            f"its timeoutSeconds is {current}",
        ),
        target=seen.workload,
        values={"PROBE": "readiness", "TIMEOUT_SECONDS": str(raised), "CONTAINER_NAME": container.name},
        detail={"container": container.name, "current": str(current), "raised": str(raised)},
    )


READINESS_PROBE_TIMES_OUT = rule.Rule(
    name="readiness-probe-times-out",
    signal_type="ReadinessProbeFailed",
    action_type="RelaxProbe",
    query="readiness probe timeout relax probe timeoutSeconds",
    explanation=(
        "The readiness probe of container {container} of {workload} times out after {current}s while "
        "the container runs: the endpoint answers, more slowly than the probe waits. Raising its "
        "timeout to {raised}s lets the Pods become Ready."
    ),
    match=readiness_probe_times_out,
)
