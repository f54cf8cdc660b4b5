"""What ``make demo`` shows, on the session's control plane: the demo's incidents with the workloads
they name in the failure state a cluster would report, analysed by the operator with the embedded
default (offline provider) — confident, correct picks, declines that say why, and a recovery that
chooses another workflow after an execution failed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from aianalysis_dev import demo, devcluster, executions, world
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


def test_make_demo_in_the_simulated_world_closes_the_loop_and_leaves_nothing_running(tmp_path: Path) -> None:
    """``aianalysis demo`` as ``make demo`` runs it where no node can run: its own control plane,
    operator and executor; the approved execution fails OOMKilled, the recovery analysis picks
    another workflow, that one is approved and completes, and everything is stopped."""
    env = {
        **{
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("AIANALYSIS_", "ANTHROPIC_", "KUBECONFIG"))
        },
        "AIANALYSIS_DEMO_WORLD": "simulated",
        "AIANALYSIS_K8S_BIN": str(devcluster.find_binaries().dir),
        "TMPDIR": str(tmp_path),  # the logs it keeps for the person who ran it
    }
    argv = [sys.executable, "-m", "aianalysis", "demo", "--timeout", "180"]
    ran = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, timeout=400, check=False)
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-4000:]
    shown = ran.stdout
    assert "world: SIMULATED (chosen by AIANALYSIS_DEMO_WORLD=simulated)" in shown
    assert "workflowexecution/orders-api-crashloop-exec-1: Failed (OOMKilled, exit code 137)" in shown
    assert re.search(
        r"recovery analysis orders-api-crashloop-recovery-1 chose a different workflow: (\S+)", shown
    )
    assert "$ aianalysis approve orders-api-crashloop-recovery-1 -n demo --uid " in shown
    assert "workflowexecution/orders-api-crashloop-recovery-1-exec-1: Completed" in shown
    assert "What just happened" in shown and "unexpected" not in shown
    assert shown.rstrip().endswith("control plane stopped; nothing left running")
