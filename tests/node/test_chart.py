"""The chart installed on the real node, as a user installs it: ``helm install`` with the default
values (only the image named: it is the one ``make image`` built, imported into the node), then two
replicas, then the executor and the intake on, then ``helm uninstall`` — and ``kubectl apply -k
deploy`` the same way. The operator runs from its image in a Pod with the ServiceAccount's projected
token (``kube/config.py``'s in-cluster path); the kubelet runs its probes; the chart's RBAC is all
it has, so a permission the chart forgot shows up as a 403 in its log.

The tests run in order on one release (each step builds on the last, as an install does). What they
measure (operator Pod start → Ready, helm install → first analysis, leader failover) is printed and
written to ``docs/install-on-a-node.md`` by hand.
"""

from __future__ import annotations

import base64
import datetime
import json
import os
import re
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from aianalysis_dev import devcluster, images, reads
from tests.support import analyses, nodes, programs
from tests.support.nodes import apply, get, items, wait_for

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "aianalysis-operator"
RELEASE = "aianalysis-operator"
NAMESPACE = "aianalysis-system"
SELECTOR = f"app.kubernetes.io/instance={RELEASE}"
OPERATOR_PODS = f"{SELECTOR},app.kubernetes.io/component=operator"

#: What the operator logs when the API server refused it (kopf's and ours), in text or JSON.
FORBIDDEN = re.compile(r"Forbidden|\b403\b|forbidden")

HEALTHY = "echo serving; exec sleep 3600"
BAD_RELEASE = "echo 'panic: missing configuration key DATABASE_URL'; exit 1"
"""The api Deployment's two revisions."""

MEASURED: dict[str, float] = {}
"""Seconds, by what was measured; printed at the end of the module."""


# ---- helpers --------------------------------------------------------------------------------------


@pytest.fixture(scope="module", autouse=True)
def report() -> Iterator[None]:
    """What was measured, printed after the module's tests (``-s`` shows it), also when one failed."""
    yield
    print("\nmeasured on the node:\n" + module_summary())


@pytest.fixture(scope="module")
def helm_binary() -> Path:
    return programs.cached_binary("helm", env="AIANALYSIS_HELM_BIN", script="build-helm.sh")


@pytest.fixture(scope="module")
def helm(
    node_cluster: devcluster.NodeCluster, helm_binary: Path, tmp_path_factory: pytest.TempPathFactory
) -> Any:
    home = tmp_path_factory.mktemp("helm-home")
    env = {k: v for k, v in os.environ.items() if k.lower() not in {"http_proxy", "https_proxy", "all_proxy"}}
    env.update(HELM_CACHE_HOME=str(home / "cache"), HELM_CONFIG_HOME=str(home / "config"),
               HELM_DATA_HOME=str(home / "data"), KUBECONFIG=str(node_cluster.kubeconfig))  # fmt: skip

    def run(*args: str, values: dict[str, Any] | None = None) -> str:
        argv = [str(helm_binary), *args, "--namespace", NAMESPACE]
        if values is not None:
            argv += ["--values", "-"]
        result = subprocess.run(
            argv, input=json.dumps(values or {}), capture_output=True, text=True, env=env, timeout=300,
            check=False,
        )  # fmt: skip
        assert result.returncode == 0, f"helm {' '.join(args)}: {result.stderr}"
        return result.stdout

    return run


def local_image(built: images.Built, **more: Any) -> dict[str, Any]:
    """The values that name the image imported into the node. The default ``pullPolicy: Always``
    asks a registry on every start, and a locally built image has none: ``IfNotPresent`` (or
    ``Never``) is what a local image needs (tried with Always: ErrImagePull, the Pod never starts)."""
    repository, _, tag = built.name.rpartition(":")
    return {"image": {"repository": repository, "tag": tag, "pullPolicy": "IfNotPresent"}, **more}


def operator_pods(cluster: devcluster.NodeCluster) -> list[dict[str, Any]]:
    return items(cluster, "pods", NAMESPACE, selector=OPERATOR_PODS)


def ready(pod: dict[str, Any]) -> bool:
    conditions = pod.get("status", {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def timestamp(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def logs(cluster: devcluster.NodeCluster, pod: str) -> str:
    return cluster.kubectl("logs", pod, "-n", NAMESPACE, "-c", "operator", check=False).stdout


def refusals(cluster: devcluster.NodeCluster, pod: str) -> list[str]:
    """The lines of the Pod's log where the API server refused a call."""
    return [line for line in logs(cluster, pod).splitlines() if FORBIDDEN.search(line)]


def python_in(cluster: devcluster.NodeCluster, pod: str, script: str) -> str:
    """What ``python -c script`` prints in the operator container of ``pod``."""
    return cluster.kubectl(
        "exec", pod, "-n", NAMESPACE, "-c", "operator", "--", "python", "-c", script
    ).stdout


def selected(cluster: devcluster.NodeCluster, name: str, namespace: str) -> dict[str, Any] | None:
    analysis = get(cluster, "aianalysis", name, namespace)
    return analysis if analysis.get("status", {}).get("selectedWorkflow") else None


def describe_release(cluster: devcluster.NodeCluster) -> str:
    pods = cluster.kubectl("describe", "pods", "-n", NAMESPACE, check=False).stdout[-5000:]
    log = "\n".join(logs(cluster, p["metadata"]["name"])[-3000:] for p in operator_pods(cluster))
    return f"{pods}\n--- logs ---\n{log}"


# ---- the world the operator works in ----------------------------------------------------------------


@pytest.fixture(scope="module")
def operator_image(node_cluster: devcluster.NodeCluster) -> images.Built:
    built = images.operator_image()
    node_cluster.import_image(built.path)
    return built


@pytest.fixture(scope="module")
def workflows(node_cluster: devcluster.NodeCluster) -> dict[str, images.Built]:
    built = images.workflow_images()
    for image in built.values():
        node_cluster.import_image(image.path)
    return built


def api_deployment(image: str, script: str) -> dict[str, Any]:
    container = {"name": "api", "image": image, "imagePullPolicy": "Never", "command": ["sh", "-c", script]}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "api", "labels": {"app": "api"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "api"}},
            "template": {
                "metadata": {"labels": {"app": "api"}},
                "spec": {"terminationGracePeriodSeconds": 1, "containers": [container]},
            },
        },
    }


@pytest.fixture(scope="module")
def team(node_cluster: devcluster.NodeCluster, busybox: str) -> Iterator[str]:
    """A team's namespace with the Deployment ``api``: revision 1 healthy, revision 2 crash-looping
    (its rollout stalls: the old Pod keeps serving) — a bad release, as it happens."""
    name = f"team-{secrets.token_hex(3)}"
    node_cluster.kubectl("create", "namespace", name)
    wait_for(
        lambda: reads.get(node_cluster, "serviceaccount", "default", name) is not None,
        what="the default ServiceAccount",
    )
    apply(node_cluster, name, api_deployment(busybox, HEALTHY))
    node_cluster.kubectl("rollout", "status", "deployment/api", "-n", name, "--timeout=120s")
    apply(node_cluster, name, api_deployment(busybox, BAD_RELEASE))
    wait_for(
        lambda: any(
            (status.get("restartCount") or 0) >= 2
            for pod in items(node_cluster, "pods", name, selector="app=api")
            for status in pod.get("status", {}).get("containerStatuses") or []
        ),
        what="the new revision's Pod to crash-loop",
        timeout=120,
        describe=nodes.describer(node_cluster, name),
    )
    yield name
    node_cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture(scope="module")
def installed(
    node_cluster: devcluster.NodeCluster,
    helm: Any,
    operator_image: images.Built,
    workflows: dict[str, images.Built],
    team: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Any]:
    """``helm install`` with the default values (the local image named), the pinned example catalog
    applied once its CRDs are there, and an AIAnalysis about ``team``'s crash loop created at once.
    Returns the objects seen before the install (what the uninstall must come back to)."""
    before = snapshot(node_cluster)
    started = time.monotonic()
    helm("install", RELEASE, str(CHART), "--create-namespace", values=local_image(operator_image))
    catalog = images.pinned_catalog(
        ROOT / "examples" / "catalog", tmp_path_factory.mktemp("catalog"), workflows
    )
    for file in catalog:
        node_cluster.kubectl("apply", "-f", str(file))
    apply(node_cluster, team, analyses.crashloop("first", team))
    pod = wait_for(
        lambda: next(iter(p for p in operator_pods(node_cluster) if ready(p)), None),
        what="the operator Pod to be Ready",
        timeout=180,
        describe=lambda: describe_release(node_cluster),
    )
    MEASURED["helm install → operator Pod Ready"] = time.monotonic() - started
    analysis = wait_for(
        lambda: selected(node_cluster, "first", team),
        what="the first analysis' selection",
        timeout=120,
        describe=lambda: describe_release(node_cluster),
    )
    MEASURED["helm install → first analysis selected"] = time.monotonic() - started
    return {"before": before, "pod": pod, "analysis": analysis}


# ---- 0. kubectl apply -k deploy (first: its delete takes the CRDs, then the chart starts afresh) ----


def overlay(directory: Path, built: images.Built) -> Path:
    """deploy/ as the base of an overlay naming the local image, as a user's overlay would."""
    shutil.copytree(ROOT / "deploy", directory / "base")
    repository, _, tag = built.name.rpartition(":")
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": ["../base"],
        "images": [{"name": "ghcr.io/aianalysis-operator/aianalysis-operator", "newName": repository,
                    "newTag": tag}],
        "patches": [{
            "target": {"kind": "Deployment", "name": RELEASE},
            "patch": json.dumps([{"op": "replace", "path": "/spec/template/spec/containers/0/imagePullPolicy",
                                  "value": "IfNotPresent"}]),
        }],
    }  # fmt: skip
    (directory / "local").mkdir()
    (directory / "local" / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    return directory / "local"


def test_kubectl_apply_k_deploy_runs_the_operator_and_delete_k_leaves_nothing(
    node_cluster: devcluster.NodeCluster,
    operator_image: images.Built,
    workflows: dict[str, images.Built],
    team: str,
    tmp_path: Path,
) -> None:
    before = snapshot(node_cluster)
    local = overlay(tmp_path, operator_image)
    node_cluster.kubectl("apply", "--server-side", "-k", str(local))
    for file in images.pinned_catalog(ROOT / "examples" / "catalog", tmp_path / "catalog", workflows):
        node_cluster.kubectl("apply", "-f", str(file))
    apply(node_cluster, team, analyses.crashloop("by-kustomize", team))
    pod = wait_for(
        lambda: next(iter(p for p in operator_pods(node_cluster) if ready(p)), None),
        what="the operator Pod to be Ready",
        timeout=180,
        describe=lambda: describe_release(node_cluster),
    )
    wait_for(
        lambda: selected(node_cluster, "by-kustomize", team),
        what="the analysis' selection",
        timeout=120,
        describe=lambda: describe_release(node_cluster),
    )
    assert refusals(node_cluster, pod["metadata"]["name"]) == []
    node_cluster.kubectl("delete", "-k", str(local), "--wait=true", "--timeout=120s")
    # The CRDs are in deploy/: deleting it deletes them and every analysis with them.
    left = {entry for entry in snapshot(node_cluster) - before if entry[1] != team}
    assert left == set()
    assert node_cluster.kubectl("get", "crd", "aianalyses.kubernaut.io", check=False).returncode != 0


# ---- 1. install with the default values ---------------------------------------------------------------


def test_the_operator_pod_runs_the_image_with_its_projected_service_account_token(
    node_cluster: devcluster.NodeCluster, installed: dict[str, Any], operator_image: images.Built
) -> None:
    pod = get(node_cluster, "pod", installed["pod"]["metadata"]["name"], NAMESPACE)
    (status,) = pod["status"]["containerStatuses"]
    # The kubelet names the image it runs by its repo digest: the node tags each imported image
    # `repo@<manifest digest>` too (`NodeCluster.import_image`), as a registry pull would.
    assert (status["image"], status["imageID"]) == (operator_image.name, operator_image.pinned)
    assert pod["spec"]["serviceAccountName"] == RELEASE
    projected = [
        v for v in pod["spec"]["volumes"] if v.get("projected") and v["name"].startswith("kube-api-access")
    ]
    (volume,) = projected
    sources = volume["projected"]["sources"]
    token = next(s["serviceAccountToken"] for s in sources if "serviceAccountToken" in s)
    assert token["path"] == "token" and token["expirationSeconds"] > 0
    # The operator reads no kubeconfig in the Pod: it says how it reached the API server.
    script = (
        "import os; from aianalysis import kube;"
        " login = kube.config.in_cluster(); c = login.connection();"
        " print(c.server, c.namespace, c.reread_seconds, c.ca_file, os.environ.get('KUBECONFIG'))"
    )
    shown = python_in(node_cluster, pod["metadata"]["name"], script)
    assert shown.split() == [
        "https://10.96.0.1:443",
        NAMESPACE,
        "60.0",
        "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt",
        "None",
    ]


def test_the_root_filesystem_is_read_only_and_only_tmp_is_writable(
    node_cluster: devcluster.NodeCluster, installed: dict[str, Any]
) -> None:
    script = (
        "import errno, sysconfig, tempfile\n"
        "places = {'/': '/', 'site-packages': sysconfig.get_paths()['purelib'], '/tmp': '/tmp'}\n"
        "for name, d in places.items():\n"
        "    try: tempfile.TemporaryFile(dir=d).close(); print(name, 'writable')\n"
        "    except OSError as x: print(name, errno.errorcode[x.errno])"
    )
    shown = python_in(node_cluster, installed["pod"]["metadata"]["name"], script)
    assert shown.splitlines() == ["/ EROFS", "site-packages EROFS", "/tmp writable"]


def test_the_pod_turns_ready_by_the_kubelet_s_readiness_probe(
    node_cluster: devcluster.NodeCluster, installed: dict[str, Any]
) -> None:
    pod = get(node_cluster, "pod", installed["pod"]["metadata"]["name"], NAMESPACE)
    (status,) = pod["status"]["containerStatuses"]
    conditions = {c["type"]: c for c in pod["status"]["conditions"]}
    started = timestamp(status["state"]["running"]["startedAt"])
    became_ready = timestamp(conditions["Ready"]["lastTransitionTime"])
    MEASURED["operator container started → Pod Ready (kubelet timestamps, 1 s resolution)"] = (
        became_ready - started
    ).total_seconds()
    assert (status["ready"], status["started"], status["restartCount"]) == (True, True, 0)
    # The probe really asks the operator: /readyz answers 200 inside the Pod.
    probe = "import urllib.request as u; print(u.urlopen('http://127.0.0.1:8080/readyz').status)"
    shown = python_in(node_cluster, pod["metadata"]["name"], probe)
    assert shown.strip() == "200"


def test_the_first_analysis_selects_a_catalog_workflow_offline(
    node_cluster: devcluster.NodeCluster, installed: dict[str, Any]
) -> None:
    analysis = installed["analysis"]
    chosen = analysis["status"]["selectedWorkflow"]
    listed = node_cluster.kubectl("get", "remediationworkflows", "-o", "json").stdout
    catalog = json.loads(listed)["items"]
    assert chosen["workflowId"] in {w["spec"]["workflowId"] for w in catalog}
    # Only the newest revision fails: a rollback, with the image the pinned catalog names.
    assert (chosen["workflowId"], chosen["parameters"]["TO_REVISION"]) == ("rollback-deployment", "1")
    assert chosen["containerImage"].startswith("aianalysis.local/")


def test_the_operator_was_never_refused_by_the_api_server(
    node_cluster: devcluster.NodeCluster, installed: dict[str, Any]
) -> None:
    """The chart's RBAC is exactly what the operator needs: not one 403 in its log (the log says
    every refused call, kopf's included)."""
    (pod,) = operator_pods(node_cluster)
    log = logs(node_cluster, pod["metadata"]["name"])
    assert log.strip(), "the operator logged nothing"
    assert refusals(node_cluster, pod["metadata"]["name"]) == []


def test_a_permission_the_chart_forgot_would_show_in_the_log(
    node_cluster: devcluster.NodeCluster, installed: dict[str, Any], team: str
) -> None:
    """The check above can fail: without the rule for ``aianalyses/status`` the operator's result
    is refused, and its log says Forbidden. The ClusterRole is put back as the chart made it. (Once
    it was, the analysis was selected 14 s later in one run and not within 2 minutes in another:
    not asserted.)"""
    (pod,) = operator_pods(node_cluster)
    role = json.loads(node_cluster.kubectl("get", "clusterrole", RELEASE, "-o", "json").stdout)
    kept = [r for r in role["rules"] if "aianalyses/status" not in r.get("resources", [])]
    assert len(kept) == len(role["rules"]) - 1
    patch = json.dumps([{"op": "replace", "path": "/rules", "value": kept}])
    node_cluster.kubectl("patch", "clusterrole", RELEASE, "--type=json", "-p", patch)
    try:
        apply(node_cluster, team, analyses.crashloop("unpermitted", team))
        refused = wait_for(
            lambda: refusals(node_cluster, pod["metadata"]["name"]),
            what="the refusal in the operator's log",
            timeout=60,
        )
        assert "aianalyses" in "".join(refused) and not selected(node_cluster, "unpermitted", team)
    finally:
        restore = json.dumps([{"op": "replace", "path": "/rules", "value": role["rules"]}])
        node_cluster.kubectl("patch", "clusterrole", RELEASE, "--type=json", "-p", restore)


# ---- 2. two replicas, one leader ---------------------------------------------------------------------


def lease_holder(cluster: devcluster.NodeCluster) -> str | None:
    found = cluster.kubectl("get", "lease", RELEASE, "-n", NAMESPACE, "-o", "json", check=False)
    if found.returncode != 0:
        return None
    holder: str | None = json.loads(found.stdout)["spec"].get("holderIdentity")
    return holder


def test_two_replicas_elect_one_leader_and_the_standby_takes_over_when_it_is_deleted(
    node_cluster: devcluster.NodeCluster,
    installed: dict[str, Any],
    helm: Any,
    operator_image: images.Built,
    team: str,
) -> None:
    helm("upgrade", RELEASE, str(CHART), values=local_image(operator_image, replicaCount=2))

    def settled() -> tuple[dict[str, Any], dict[str, Any]] | None:
        pods = [p for p in operator_pods(node_cluster) if not p["metadata"].get("deletionTimestamp")]
        running = [p for p in pods if p.get("status", {}).get("phase") == "Running"]
        leaders = [p for p in running if ready(p)]
        if len(pods) != 2 or len(running) != 2 or len(leaders) != 1:
            return None
        (leader,) = leaders
        (standby,) = [p for p in running if p is not leader]
        if lease_holder(node_cluster) != leader["metadata"]["name"]:
            return None
        return leader, standby

    leader, standby = wait_for(
        settled, what="two replicas, one Ready leader holding the lease", timeout=180,
        describe=lambda: describe_release(node_cluster),
    )  # fmt: skip
    # The standby stays unready, and its /readyz says why.
    probe = (
        "import urllib.request as u, urllib.error as e\n"
        "try: u.urlopen('http://127.0.0.1:8080/readyz')\n"
        "except e.HTTPError as x: print(x.code, x.read().decode())"
    )
    shown = python_in(node_cluster, standby["metadata"]["name"], probe)
    assert shown.startswith("503") and "lease" in shown.lower(), shown

    deleted = time.monotonic()
    node_cluster.kubectl("delete", "pod", leader["metadata"]["name"], "-n", NAMESPACE, "--wait=false")

    # The standby, or the Pod the Deployment starts in the leader's place if it asks first (seen on a
    # loaded machine: the replacement started and took the released lease before the standby's retry).
    def new_leader() -> str | None:
        holder = lease_holder(node_cluster)
        return holder if holder and holder != leader["metadata"]["name"] else None

    successor = wait_for(
        new_leader, what="another replica to hold the lease", timeout=60, interval=0.1,
        describe=lambda: describe_release(node_cluster),
    )  # fmt: skip
    MEASURED["leader Pod deleted → another replica holds the lease"] = time.monotonic() - deleted
    apply(node_cluster, team, analyses.crashloop("after-failover", team))
    wait_for(
        lambda: selected(node_cluster, "after-failover", team),
        what="the new leader to analyse", timeout=120,
        describe=lambda: describe_release(node_cluster),
    )  # fmt: skip
    MEASURED["leader Pod deleted → a new analysis selected by the new leader"] = time.monotonic() - deleted
    wait_for(
        lambda: ready(get(node_cluster, "pod", successor, NAMESPACE)),
        what="the new leader to turn Ready", timeout=60,
    )  # fmt: skip
    MEASURED["leader Pod deleted → new leader Pod Ready"] = time.monotonic() - deleted
    for pod in operator_pods(node_cluster):
        assert refusals(node_cluster, pod["metadata"]["name"]) == [], pod["metadata"]["name"]


# ---- 3. executor and intake on ----------------------------------------------------------------------

INTAKE_TOKEN_SECRET = "aianalysis-intake"
RBAC_GROUP = "rbac.authorization.k8s.io"


def workflow_account(cluster: devcluster.NodeCluster, namespace: str, workflow_id: str, version: str) -> str:
    """The ServiceAccount the catalog names for ``workflow_id`` in ``namespace``, bound to the Role
    its example (``examples/workflows/<id>/role.yaml``) needs: what an admin sets up per namespace."""
    listed = json.loads(cluster.kubectl("get", "remediationworkflows", "-o", "json").stdout)["items"]
    (entry,) = [
        w for w in listed if (w["spec"]["workflowId"], w["spec"]["version"]) == (workflow_id, version)
    ]
    account: str = entry["spec"]["execution"]["serviceAccountName"]
    role = yaml.safe_load((ROOT / "examples" / "workflows" / workflow_id / "role.yaml").read_text())
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": account},
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": role["metadata"]["name"]},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    }  # fmt: skip
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account}}
    apply(cluster, namespace, sa, role, binding)
    return account


def test_the_executor_runs_the_workflow_image_as_the_workflow_s_service_account(
    node_cluster: devcluster.NodeCluster,
    installed: dict[str, Any],
    helm: Any,
    operator_image: images.Built,
    workflows: dict[str, images.Built],
    team: str,
) -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": INTAKE_TOKEN_SECRET},
              "stringData": {"token": "intake-" + secrets.token_hex(16)}}  # fmt: skip
    apply(node_cluster, NAMESPACE, secret)
    # Upgrade as the README says: the CRDs first, then the chart.
    node_cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CHART / "crds"))
    values = local_image(
        operator_image,
        replicaCount=2,
        executor={"enabled": True, "namespaces": [team]},
        # Plain HTTP (a development cluster; the Pod below speaks it with nc), alerts for the team only.
        intake={
            "enabled": True,
            "tokenSecret": {"name": INTAKE_TOKEN_SECRET},
            "namespaces": [team],
            "tls": {"allowPlainHttp": True},
        },
    )
    helm("upgrade", RELEASE, str(CHART), values=values)
    executor_pods = f"{SELECTOR},app.kubernetes.io/component=executor"
    wait_for(
        lambda: any(ready(p) for p in items(node_cluster, "pods", NAMESPACE, selector=executor_pods)),
        what="the executor Pod to be Ready", timeout=180, describe=lambda: describe_release(node_cluster),
    )  # fmt: skip
    analysis = get(node_cluster, "aianalysis", "first", team)
    chosen = analysis["status"]["selectedWorkflow"]
    account = workflow_account(node_cluster, team, chosen["workflowId"], chosen["version"])
    cli = str(ROOT / ".venv" / "bin" / "aianalysis")
    as_admin = {**os.environ, "KUBECONFIG": str(node_cluster.kubeconfig)}
    shown = subprocess.run([cli, "show", "first", "-n", team], capture_output=True, text=True, timeout=60,
                           check=True, env=as_admin).stdout  # fmt: skip
    bound = re.search(r"--uid (\S+) --digest (\S+)", shown)
    assert bound, shown  # approve binds to what `show` showed
    approved = subprocess.run(
        [cli, "approve", "first", "-n", team, "--uid", bound[1], "--digest", bound[2]],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "KUBECONFIG": str(node_cluster.kubeconfig)},
    )  # fmt: skip
    assert approved.returncode == 0, approved.stderr

    def finished() -> dict[str, Any] | None:
        for execution in items(node_cluster, "workflowexecutions", team):
            if execution.get("status", {}).get("phase") in {"Completed", "Failed"}:
                return execution
        return None

    execution = wait_for(finished, what="the execution to finish", timeout=240,
                         describe=nodes.describer(node_cluster, team))  # fmt: skip
    (job,) = items(node_cluster, "jobs", team)
    pods = items(node_cluster, "pods", team, selector=f"job-name={job['metadata']['name']}")
    assert pods, "the Job's Pod is gone"
    spec = pods[0]["spec"]
    assert spec["serviceAccountName"] == account
    # The catalog pins the image by digest, and the kubelet runs it so.
    assert spec["containers"][0]["image"] == workflows[chosen["workflowId"]].pinned
    job_log = node_cluster.kubectl("logs", pods[0]["metadata"]["name"], "-n", team, check=False)
    details = execution["status"].get("failureDetails")
    assert execution["status"]["phase"] == "Completed", f"{details}\n{job_log.stdout}{job_log.stderr}"
    # Rolled back for real: the deployment controller brought revision 1's template back.
    (container,) = get(node_cluster, "deployment", "api", team)["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["sh", "-c", HEALTHY]
    for pod in items(node_cluster, "pods", NAMESPACE, selector=SELECTOR):
        assert refusals(node_cluster, pod["metadata"]["name"]) == [], pod["metadata"]["name"]


def test_the_intake_service_is_reachable_from_a_pod(
    node_cluster: devcluster.NodeCluster, installed: dict[str, Any], busybox: str, team: str
) -> None:
    token_data = get(node_cluster, "secret", INTAKE_TOKEN_SECRET, NAMESPACE)["data"]["token"]
    token = base64.b64decode(token_data).decode()
    service = get(node_cluster, "service", f"{RELEASE}-intake", NAMESPACE)
    address, port = service["spec"]["clusterIP"], service["spec"]["ports"][0]["port"]
    alert = {
        "version": "4", "status": "firing", "receiver": "aianalysis",
        "alerts": [{"status": "firing", "labels": {"alertname": "KubeDeploymentReplicasMismatch",
                    "namespace": team, "deployment": "api", "severity": "warning"},
                    "startsAt": datetime.datetime.now(datetime.UTC).isoformat()}],
    }  # fmt: skip
    # An HTTP client, not `printf | nc`: busybox nc half-closes the connection when its stdin ends,
    # and aiohttp (like many servers) then closes it before the answer is written: an empty reply.
    # Alertmanager's client does not half-close. wget -S prints the status line (on stderr).
    url = f"http://{address}:{port}/api/v1/alertmanager"
    command = f'wget -S -O - --header "Authorization: Bearer $TOKEN" --header "Content-Type: application/json" --post-data "$BODY" {url} 2>&1'  # noqa: E501
    env = [{"name": "TOKEN", "value": token}, {"name": "BODY", "value": json.dumps(alert)}]
    sender = nodes.pod("alertmanager", command, image=busybox, container={"env": env})
    apply(node_cluster, team, sender)
    wait_for(
        lambda: get(node_cluster, "pod", "alertmanager", team)["status"].get("phase") in {"Succeeded", "Failed"},  # noqa: E501
        what="the request from a Pod", describe=nodes.describer(node_cluster, team),
    )  # fmt: skip
    answer = node_cluster.kubectl("logs", "alertmanager", "-n", team).stdout
    assert re.search(r"^\s*HTTP/1\.1 20\d ", answer, re.MULTILINE), answer

    def opened() -> bool:
        return any(
            a["spec"]["signal"]["type"] == "ReplicasMismatch" for a in items(node_cluster, "aianalyses", team)
        )

    wait_for(opened, what="the alert's AIAnalysis", timeout=60)


def module_summary() -> str:
    return "\n".join(f"  {what}: {seconds:.1f} s" for what, seconds in MEASURED.items())


# ---- what the uninstall must leave ------------------------------------------------------------------


def crds_documents() -> list[dict[str, Any]]:
    return [
        d for f in sorted((CHART / "crds").glob("*.yaml")) for d in yaml.safe_load_all(f.read_text()) if d
    ]


def snapshot(cluster: devcluster.NodeCluster) -> set[tuple[str, str, str]]:
    """Every object of every listable kind (kind, namespace, name), events and the node's
    heartbeats left out."""
    kinds = cluster.kubectl("api-resources", "--verbs=list", "-o", "name").stdout.split()
    skip = {"events", "events.events.k8s.io", "leases.coordination.k8s.io", "endpointslices.discovery.k8s.io"}
    listed = cluster.kubectl("get", ",".join(k for k in kinds if k not in skip), "-A", "-o", "json").stdout
    found = set()
    for item in json.loads(listed)["items"]:
        meta = item["metadata"]
        found.add((item["kind"], meta.get("namespace", ""), meta["name"]))
    leases = json.loads(cluster.kubectl("get", "leases", "-A", "-o", "json").stdout)["items"]
    found |= {("Lease", m["metadata"]["namespace"], m["metadata"]["name"]) for m in leases
              if m["metadata"]["namespace"] != "kube-node-lease"}  # fmt: skip
    return found


def test_uninstall_leaves_only_the_crds_and_their_objects(
    node_cluster: devcluster.NodeCluster, installed: dict[str, Any], helm: Any, team: str
) -> None:
    helm("uninstall", RELEASE, "--wait", "--timeout", "120s")
    wait_for(lambda: not operator_pods(node_cluster), what="the operator Pods to be gone", timeout=60)
    # What helm keeps by design: the chart's crds/ (the CRDs, and the approval policy that ships
    # beside them) and the objects of those kinds.
    kept = {(doc["kind"], "", doc["metadata"]["name"]) for doc in crds_documents()}
    # The API server registers an APIService per served version of a CRD's group; it goes with the CRDs.
    crds = [doc for doc in crds_documents() if doc["kind"] == "CustomResourceDefinition"]
    kept |= {
        ("APIService", "", f"{v['name']}.{doc['spec']['group']}")
        for doc in crds for v in doc["spec"]["versions"] if v["served"]
    }  # fmt: skip
    # The intake's token Secret is the user's (created before the upgrade, as docs/intake.md says).
    kept.add(("Secret", NAMESPACE, INTAKE_TOKEN_SECRET))
    ours = {"RemediationWorkflow", "AIAnalysis", "WorkflowExecution"}
    left = {
        entry for entry in snapshot(node_cluster) - installed["before"] - kept
        if entry[0] not in ours and entry[1] != team and (entry[0], entry[2]) != ("Namespace", team)
    }  # fmt: skip
    # The release namespace itself (helm install --create-namespace) stays, with what every
    # namespace has: helm does not delete namespaces.
    namespace_own = {("Namespace", "", NAMESPACE), ("ServiceAccount", NAMESPACE, "default"),
                     ("ConfigMap", NAMESPACE, "kube-root-ca.crt")}  # fmt: skip
    assert left - namespace_own == set()
