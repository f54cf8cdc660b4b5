"""Memory: containers the kernel OOM-killed, and alerts that say so when the containers crash
for another reason.
"""

from __future__ import annotations

import math

from aianalysis.analysis.offline import evidence, rule

#: Exit code of a container killed by SIGKILL (the OOM killer, or the kubelet after a failed probe).
SIGKILL_EXIT = 137
#: A JVM heap share (MaxRAMPercentage) above this leaves too little of the container limit for
#: metaspace, threads and direct buffers; HEAP_SHARE_SAFE is the share a tuning asks for.
HEAP_SHARE_MAX = 80
HEAP_SHARE_SAFE = 70
#: How much an OOM-killed container's memory limit is raised.
MEMORY_RAISE_FACTOR = 2.0


def oom_alert_but_crash(seen: evidence.Evidence) -> rule.Match | None:
    """The alert says OOMKilled, but containers of the workload crash with another reason (an
    application error, its exit code) and none was OOM-killed.

    Needs: the Pods' container statuses. Declines (a red herring): raising memory would not help; a
    person should look at the crash. It comes before the OOM rules."""
    if seen.signal_type != "OOMKilled":
        return None
    crashing = rule.crashing(seen)
    if not crashing or any(c.last_reason == "OOMKilled" for _, c in seen.containers):
        return None
    _, container = crashing[0]
    return rule.Match(
        facts=(
            f"container {container.name} exits with {container.last_reason or 'an error'} (exit code "
            f"{container.last_exit_code}), not OOMKilled",
            "no container of the workload was OOMKilled",
        ),
        target=seen.workload,
        detail={"reason": container.last_reason or "Error", "code": str(container.last_exit_code)},
    )


OOM_ALERT_BUT_CRASH = rule.Rule(
    name="oom-alert-but-application-crash",
    signal_type="CrashLoopBackOff",
    action_type=None,
    query="",
    explanation=(
        "The alert reports OOMKilled, but the containers of {workload} exit with {reason} (exit code "
        "{code}) and none was OOM-killed: raising memory would not help. A person should look at the "
        "crash."
    ),
    match=oom_alert_but_crash,
    decline="the evidence contradicts the alert (red herring): the containers crash, they are not OOMKilled",
)


def oom_heap_share(seen: evidence.Evidence) -> rule.Match | None:
    """A container OOM-killed while its JVM may give the heap more than ``HEAP_SHARE_MAX`` percent of
    the container limit (``-XX:MaxRAMPercentage`` in its environment or arguments).

    Needs: the Pods' container statuses and specs. Selects TuneJVMHeap on the workload with
    MAX_RAM_PERCENTAGE ``HEAP_SHARE_SAFE``: metaspace, threads and buffers do not fit beside such a
    heap, and more memory would be eaten by the same share. It comes before ``oomkilled-at-limit``."""
    killed = [
        (p, c)
        for p, c in seen.containers
        if c.last_reason == "OOMKilled" and c.heap_percent is not None and c.heap_percent > HEAP_SHARE_MAX
    ]
    if not killed:
        return None
    pod, container = max(killed, key=lambda pc: pc[1].restarts)
    share = f"{container.heap_percent:g}"
    facts = (
        f"container {container.name} of Pod {pod.name} was OOMKilled (exit code "
        f"{container.last_exit_code if container.last_exit_code is not None else SIGKILL_EXIT}), "
        f"{container.restarts} restarts",
        f"its JVM may use {share}% of the memory limit ({container.memory_limit or 'unknown'}) for the heap "
        f"(-XX:MaxRAMPercentage={share}), above {HEAP_SHARE_MAX}%",
    )
    return rule.Match(
        facts=facts,
        target=seen.workload,
        values={"MAX_RAM_PERCENTAGE": str(HEAP_SHARE_SAFE)},
        detail={"container": container.name, "share": share, "limit": container.memory_limit or "its limit"},
    )


OOMKILLED_JVM_HEAP_SHARE = rule.Rule(
    name="oomkilled-jvm-heap-share",
    signal_type="OOMKilled",
    action_type="TuneJVMHeap",
    query="JVM heap share MaxRAMPercentage smaller heap restart",
    explanation=(
        "Container {container} of {workload} runs a JVM whose heap may take {share}% of {limit}: the "
        "kernel kills it when heap and non-heap memory together pass the limit. A smaller heap share "
        "under the same limit fixes it; more memory would be taken by the same share."
    ),
    match=oom_heap_share,
)


def oom_at_limit(seen: evidence.Evidence) -> rule.Match | None:
    """A container OOM-killed (its last termination says OOMKilled).

    Needs: the Pods' container statuses and memory limits. Selects IncreaseMemoryLimits on the
    workload with CONTAINER_NAME and, when the limit is known, MEMORY_LIMIT_NEW
    ``MEMORY_RAISE_FACTOR`` times it (an unknown limit leaves the new one to a person). A JVM adds
    "jvm java heap" to the catalog query."""
    killed = [(p, c) for p, c in seen.containers if c.last_reason == "OOMKilled"]
    if not killed:
        return None
    pod, container = max(killed, key=lambda pc: pc[1].restarts)
    facts = [_killed(pod, container)]
    values: dict[str, str] = {"CONTAINER_NAME": container.name}
    detail = {"container": container.name, "limit": container.memory_limit or "unknown"}
    if container.memory_limit:
        facts.append(f"its memory limit is {container.memory_limit}: usage reached the limit")
        raised = raise_quantity(container.memory_limit, factor=MEMORY_RAISE_FACTOR)
        if raised:
            values["MEMORY_LIMIT_NEW"] = raised
            detail["new_limit"] = raised
    if len({p.name for p, _ in killed}) > 1:
        facts.append(f"{len({p.name for p, _ in killed})} Pods were OOMKilled, not one")
    java = container.java or seen.java
    if java:
        facts.append("the container runs a JVM")
    return rule.Match(
        facts=tuple(facts),
        target=seen.workload,
        values=values,
        detail=detail,
        query="jvm java heap" if java else "",
    )


OOMKILLED_AT_LIMIT = rule.Rule(
    name="oomkilled-at-limit",
    signal_type="OOMKilled",
    action_type="IncreaseMemoryLimits",
    query="OOMKilled increase memory limit",
    explanation=(
        "Container {container} of {workload} was OOM-killed at its memory limit ({limit}); raising the "
        "limit to {new_limit} gives it room."
    ),
    match=oom_at_limit,
)


def _killed(pod: evidence.Pod, container: evidence.Container) -> str:
    """The OOM kill as a fact. Exit code 0 means the kernel killed a child process (the cgroup
    counts the kill) and the main process went on and exited normally: the kubelet still reports
    OOMKilled."""
    where = f"container {container.name} of Pod {pod.name}"
    if container.last_exit_code == 0:
        return (
            f"a process of {where} was OOMKilled (reason OOMKilled; the main process went on and "
            f"exited 0), {container.restarts} restarts"
        )
    code = container.last_exit_code if container.last_exit_code is not None else SIGKILL_EXIT
    return f"{where} was OOMKilled (exit code {code}), {container.restarts} restarts"


def raise_quantity(text: str, *, factor: float) -> str | None:
    """A memory quantity raised by ``factor``, in Mi (or Gi when whole), e.g. ``256Mi`` → ``512Mi``."""
    size = rule.quantity_bytes(text)
    if size is None or size <= 0:
        return None
    mebibytes = math.ceil(size * factor / 2**20)
    return f"{mebibytes // 1024}Gi" if mebibytes % 1024 == 0 else f"{mebibytes}Mi"
