"""The API server restarts under a running operator (a control-plane upgrade, its Pod moved): the
operator's connections are reset, then refused, its watches end. It must ride through: analyses
created after the restart are picked up and end, and the catalog follows workflows added then."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

from aianalysis_dev import devcluster
from tests.e2e.conftest import ROOT, OperatorProcess, wait_for, wait_terminal

INCIDENTS = sorted((ROOT / "examples" / "incidents").glob("*.yaml"))


def _catalog_size(operator: OperatorProcess) -> float:
    found = re.search(r"^aianalysis_catalog_workflows (\S+)$", operator.metrics(), re.M)
    return float(found.group(1)) if found else -1.0


def _create(cluster: devcluster.DevCluster, namespace: str, incident: Path, name: str) -> None:
    doc: dict[str, Any] = yaml.safe_load(incident.read_text())
    doc["metadata"] = {"name": name}
    cluster.kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(doc))


def test_the_operator_rides_through_an_api_server_restart(tmp_path: Path) -> None:
    with devcluster.DevCluster() as cluster:
        devcluster.apply_crds(cluster, ROOT / "crds")
        cluster.kubectl("apply", "-f", str(ROOT / "examples" / "catalog"))
        workflows = len(json.loads(cluster.kubectl("get", "rw", "-o", "json").stdout)["items"])
        namespace = "restart"
        cluster.kubectl("create", "namespace", namespace)
        operator = OperatorProcess(
            kubeconfig=cluster.kubeconfig,
            log_dir=tmp_path,
            env={"AIANALYSIS_PROVIDER": "offline", "AIANALYSIS_CROSS_NAMESPACE": f"{namespace}=*"},
            argv=[sys.executable, "-m", "aianalysis", "run", "--namespace", namespace],
        )
        operator.start()
        try:
            _create(cluster, namespace, INCIDENTS[0], "before")
            wait_terminal(cluster, namespace, 1, logs=operator.logs)
            wait_for(
                lambda: _catalog_size(operator) == workflows, what="the catalog loaded", logs=operator.logs
            )

            cluster.restart_apiserver()

            for number, incident in enumerate(INCIDENTS[1:4]):
                _create(cluster, namespace, incident, f"after-{number}")
            added = next(yaml.safe_load_all((ROOT / "examples" / "catalog" / "access.yaml").read_text()))
            added["metadata"] = {"name": "added-after-restart"}
            added["spec"]["workflowId"] = "added-after-restart"
            cluster.kubectl("create", "-f", "-", input=json.dumps(added))

            done = wait_terminal(cluster, namespace, 4, logs=operator.logs)
            assert sorted(i["metadata"]["name"] for i in done) == ["after-0", "after-1", "after-2", "before"]
            assert all(i["status"]["phase"] == "Completed" for i in done), [i["status"] for i in done]
            wait_for(
                lambda: _catalog_size(operator) == workflows + 1,
                what="the workflow added after the restart in the catalog",
                logs=operator.logs,
            )
            assert operator.proc is not None and operator.proc.poll() is None, "the operator kept running"
        finally:
            operator.stop()
