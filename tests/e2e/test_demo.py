"""What ``make demo`` shows, on the session's control plane: the demo's incidents with the workloads
they name in the failure state a cluster would report, analysed by the operator with the embedded
default (offline provider) — confident, correct picks, declines that say why, and a recovery that
chooses another workflow after an execution failed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aianalysis_dev import demo, executions, world
from tests.e2e.conftest import ROOT, get, wait_for, wait_terminal

DEMO = ROOT / "examples" / "demo"


def test_the_demo_ends_with_confident_correct_picks_reasoned_declines_and_a_recovery(
    cluster: Any, namespace: str, example_catalog: list[dict[str, Any]], start_operator: Any, tmp_path: Path
) -> None:
    incidents = world.load(DEMO, namespace=namespace)
    with cluster.api_client() as api:
        world.stage(api, incidents)
    operator = start_operator(AIANALYSIS_PROVIDER="offline")
    for incident in incidents:
        cluster.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(world.analysis(incident)))

    done = {
        a["metadata"]["name"]: a
        for a in wait_terminal(cluster, namespace, len(incidents), logs=operator.logs)
    }

    picks = declines = 0
    for incident in incidents:
        st = done[incident.name]["status"]
        selected = st.get("selectedWorkflow")
        if incident.expect["workflowIds"]:
            assert selected and selected["workflowId"] in incident.expect["workflowIds"], (incident.name, st)
            assert selected["confidence"] >= 0.7 and not st.get("needsHumanReview"), (incident.name, st)
            assert "Evidence:" in selected["rationale"]
            picks += 1
        else:
            assert selected is None and st["humanReviewReason"] in incident.expect["expectReview"], st
            assert st["rootCause"]["summary"], "a decline says why"
            declines += 1
    assert picks >= 6 and declines == 2
    assert (
        done["image-resizer-oomkilled"]["status"]["selectedWorkflow"]["parameters"]["MEMORY_LIMIT_NEW"]
        == "512Mi"
    )

    table = cluster.kubectl("get", "aia", "-n", namespace).stdout
    assert "rollback-deployment" in table and "inconclusive" in table and "no_eligible_workflow" in table

    crash = done["orders-api-crashloop"]
    executions.fail_execution(
        cluster,
        namespace,
        analysis=crash,
        name="orders-exec-1",
        reason="OOMKilled",
        message="rollback job killed",
    )
    recovery = wait_for(
        lambda: (
            (r := get(cluster, "aianalysis", "orders-api-crashloop-recovery-1", namespace))
            and (r.get("status") or {}).get("phase") in ("Completed", "Failed")
            and r
        ),
        what="the recovery analysis",
        logs=operator.logs,
    )
    chosen = recovery["status"].get("selectedWorkflow")
    assert chosen and chosen["workflowId"] != "rollback-deployment", recovery["status"]

    words = demo.summary(list(done.values()), incidents, recovery="orders-api-crashloop-recovery-1")
    assert "What just happened" in words and "unexpected" not in words
    assert "risk_tolerance=low" in words and "OOM-killed" in words
