"""Least privilege, as installed: the operator runs with exactly the shipped ClusterRole.

A dedicated API server (static-token users are fixed at start) gets the kustomize base applied as
is (``kubectl apply -k deploy``). Its user is named like the operator's ServiceAccount
(``system:serviceaccount:<ns>:<name>``), so the shipped ClusterRoleBinding is what grants it the
ClusterRole — nothing test-made. The operator process then runs the end-to-end scenarios as that
identity.
"""

from __future__ import annotations

import json
import re
import secrets
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from kubernetes import client, config

from aianalysis import kube
from aianalysis.controller import budget_store, llm_budget
from aianalysis.kube import api_reader as k8s_tools
from aianalysis.kube import kind_table, readers
from aianalysis_dev import devcluster, executions
from tests.e2e.conftest import ROOT, OperatorProcess, free_port, get, wait_for, wait_terminal

DEPLOY = ROOT / "deploy"
INCIDENTS = ROOT / "examples" / "incidents"
SELECTABLE = ("node-notready", "ledger-export-deadline-exceeded", "orders-api-crashloop")
"""Example incidents the offline provider answers with a selection."""
# A 403 status code, not the milliseconds of a timestamp such as "05:57:33,403".
PERMISSION_PROBLEMS = re.compile(
    r"forbidden|(?<![,.:\d])\b403\b|not enough permissions|cannot (list|watch|patch)", re.I
)


def _service_account() -> tuple[str, str]:
    """(namespace, name) of the ServiceAccount the shipped ClusterRoleBinding grants the role to."""
    docs = [doc for doc in yaml.safe_load_all((DEPLOY / "rbac.yaml").read_text()) if doc]
    [binding] = [doc for doc in docs if doc["kind"] == "ClusterRoleBinding"]
    [subject] = binding["subjects"]
    assert subject["kind"] == "ServiceAccount"
    return subject["namespace"], subject["name"]


SA_NAMESPACE, SA_NAME = _service_account()
OPERATOR = f"system:serviceaccount:{SA_NAMESPACE}:{SA_NAME}"
"""How the API server names the operator when it authenticates with its ServiceAccount token."""


@pytest.fixture(scope="module")
def installed() -> Iterator[devcluster.DevCluster]:
    groups = ["system:serviceaccounts", f"system:serviceaccounts:{SA_NAMESPACE}"]
    cluster = devcluster.DevCluster(users={OPERATOR: groups}).start()
    try:
        applied = cluster.kubectl("apply", "--server-side", "-k", str(DEPLOY), "-o", "name").stdout.split()
        crds = [name for name in applied if name.startswith("customresourcedefinition")]
        cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", *crds)
        cluster.kubectl("apply", "-f", str(ROOT / "examples" / "catalog"))
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def operator_kubeconfig(installed: devcluster.DevCluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The operator's kubeconfig at a path without ':' (the kubernetes client and KUBECONFIG split
    paths on ':', and the user name is full of them)."""
    path = tmp_path_factory.mktemp("operator") / "kubeconfig.yaml"
    path.write_text(installed.kubeconfig_for(OPERATOR).read_text())
    return path


@pytest.fixture
def ns(installed: devcluster.DevCluster) -> str:
    name = f"rbac-{secrets.token_hex(4)}"
    installed.kubectl("create", "namespace", name)
    return name


def can_i(cluster: devcluster.DevCluster, *args: str) -> bool:
    """``kubectl auth can-i`` with the operator's own credentials."""
    result = cluster.kubectl("auth", "can-i", *args, user=OPERATOR, check=False)
    assert result.stdout.strip() in ("yes", "no"), result.stderr
    return result.stdout.strip() == "yes"


@pytest.mark.parametrize(
    "question",
    [
        "get secrets -n {ns}",
        "list secrets --all-namespaces",
        "watch secrets --all-namespaces",
        "create remediationworkflows.kubernaut.io",
        "patch remediationworkflows.kubernaut.io",
        "delete aianalyses.kubernaut.io -n {ns}",
        "patch aianalyses.kubernaut.io -n {ns}",
        "patch deployments.apps -n {ns}",
        "delete pods -n {ns}",
        "create pods/exec -n {ns}",
        "update nodes",
        "update configmaps -n {ns}",
        "create configmaps -n {ns}",
        f"update configmaps/other-record -n {SA_NAMESPACE}",
        f"delete configmaps/{budget_store.NAME} -n {SA_NAMESPACE}",
        f"create configmaps -n {SA_NAMESPACE}",  # the chart makes the LLM budget record (state.yaml)
    ],
)
def test_the_operator_may_not(installed: devcluster.DevCluster, ns: str, question: str) -> None:
    assert not can_i(installed, *question.format(ns=ns).split())


@pytest.mark.parametrize(
    ("verb", "group", "resource", "expected"),
    [
        ("list", "metrics.k8s.io", "pods", True),  # top, when metrics-server serves the API
        ("list", "metrics.k8s.io", "nodes", True),
        ("list", "cert-manager.io", "certificates", True),  # custom kinds of the allowed groups
        ("get", "argoproj.io", "applications", True),
        ("list", "kustomize.toolkit.fluxcd.io", "kustomizations", True),
        ("patch", "cert-manager.io", "certificates", False),
        ("list", "bitnami.com", "sealedsecrets", False),  # a group outside the allowlist
    ],
)
def test_the_operator_reads_the_allowed_custom_groups_and_the_metrics_api_only(
    installed: devcluster.DevCluster, ns: str, verb: str, group: str, resource: str, expected: bool
) -> None:
    """Asked through a SubjectAccessReview: these groups are not served by the test cluster, which
    ``kubectl auth can-i`` cannot resolve."""
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": OPERATOR,
            "groups": ["system:serviceaccounts", f"system:serviceaccounts:{SA_NAMESPACE}"],
            "resourceAttributes": {"verb": verb, "group": group, "resource": resource, "namespace": ns},
        },
    }
    answer = installed.kubectl("create", "-o", "json", "-f", "-", input=json.dumps(review))
    assert json.loads(answer.stdout)["status"].get("allowed", False) is expected


@pytest.mark.parametrize(
    "question",
    [
        "patch aianalyses.kubernaut.io --subresource=status -n {ns}",
        "patch workflowexecutions.kubernaut.io --subresource=status -n {ns}",
        "create aianalyses.kubernaut.io -n {ns}",
        "watch aianalyses.kubernaut.io --all-namespaces",
        "list remediationworkflows.kubernaut.io",
        "patch remediationworkflows.kubernaut.io --subresource=status",
        "create events -n default",
        "create events -n {ns}",
        "get pods --subresource=log -n {ns}",
        "list customresourcedefinitions.apiextensions.k8s.io",
        "list controllerrevisions.apps -n {ns}",
        f"get configmaps/{budget_store.NAME} -n {SA_NAMESPACE}",
        f"update configmaps/{budget_store.NAME} -n {SA_NAMESPACE}",
    ],
)
def test_the_operator_may(installed: devcluster.DevCluster, ns: str, question: str) -> None:
    assert can_i(installed, *question.format(ns=ns).split())


def test_reading_a_secret_with_the_operators_credentials_is_refused(
    installed: devcluster.DevCluster, operator_kubeconfig: Path, ns: str
) -> None:
    installed.kubectl("create", "secret", "generic", "db", "-n", ns, "--from-literal=password=hunter2")
    with _client(operator_kubeconfig) as api:
        core = client.CoreV1Api(api)
        for call in (
            lambda: core.read_namespaced_secret("db", ns),
            core.list_secret_for_all_namespaces,
        ):
            with pytest.raises(client.ApiException) as refused:
                call()
            assert refused.value.status == 403


async def test_every_investigation_tool_read_is_allowed(
    installed: devcluster.DevCluster, operator_kubeconfig: Path, ns: str
) -> None:
    """A 404 proves the read was authorised (RBAC is checked first); a 403 would mean a missing rule."""
    deployment = _create(installed, ns, _deployment("web"))
    replicaset = _create(installed, ns, _replicaset("web-1", owner=deployment))
    pod = _create(installed, ns, _pod("web-1-a", owner=replicaset))
    with kube.api_client(str(operator_kubeconfig)) as api:
        reader = k8s_tools.KubernetesReader(api)
        for kind in kind_table.KINDS:
            with pytest.raises(readers.Unavailable, match="not found"):
                await reader.get_object(
                    kind=kind.kind, name="does-not-exist", namespace=ns if kind.namespaced else None
                )
        assert (await reader.get_object(kind="Pod", name="web-1-a", namespace=ns))["metadata"]["uid"] == pod[
            "metadata"
        ]["uid"]
        pods = await reader.list_pods_of_owner(kind="Deployment", name="web", namespace=ns)
        assert [p["metadata"]["name"] for p in pods] == ["web-1-a"]
        assert await reader.list_events(kind="Deployment", name="web", namespace=ns) == []
        assert await reader.list_events(kind="Node", name="n1", namespace=None) == []
        # an unscheduled Pod has no log yet: answered (empty), not refused
        logs = await reader.pod_logs(
            name="web-1-a", namespace=ns, container=None, previous=False, tail_lines=10
        )
        assert logs == ""
        # the SRE tools' list reads: one page each, authorised (a 403 would raise Unavailable)
        for kind in (
            kind_table.BY_KIND["Pod"],
            kind_table.BY_KIND["Event"],
            kind_table.BY_KIND["ReplicaSet"],
            kind_table.BY_KIND["Node"],
        ):
            page = await reader.list_page(kind=kind, namespace=ns if kind.namespaced else None, limit=5)
            assert isinstance(page.items, list)
        revisions = kind_table.Kind(
            kind="ControllerRevision",
            group="apps",
            version="v1",
            plural="controllerrevisions",
            namespaced=True,
        )
        assert (await reader.list_page(kind=revisions, namespace=ns, limit=5)).items == []
        assert any(group.group == "apps" for group in await reader.api_groups())


def test_operator_with_the_shipped_role_analyses_recovers_and_logs_no_permission_problem(
    installed: devcluster.DevCluster, operator_kubeconfig: Path, ns: str, tmp_path: Path
) -> None:
    # The example incidents name their own namespaces but are applied into this one: allow the pair,
    # as the shared operator fixture does.
    env = {"AIANALYSIS_PROVIDER": "offline", "AIANALYSIS_CROSS_NAMESPACE": f"{ns}=*"}
    operator = OperatorProcess(kubeconfig=operator_kubeconfig, log_dir=tmp_path, env=env)
    operator.start()
    try:
        for name in SELECTABLE:
            installed.kubectl("apply", "-n", ns, "-f", str(INCIDENTS / f"{name}.yaml"))
        done = wait_terminal(installed, ns, len(SELECTABLE), logs=operator.logs)
        for item in done:
            assert item["status"]["phase"] == "Completed", item["status"]
            assert item["status"]["selectedWorkflow"]["workflowId"], item["status"]

        failed = _fail_execution(installed, ns, analysis=_by_name(done, "orders-api-crashloop"))
        recovery_name = "orders-api-crashloop-recovery-1"
        recovery = wait_for(
            lambda: _terminal(get(installed, "aianalyses", recovery_name, ns)),
            what="the recovery analysis to complete",
            logs=operator.logs,
        )
        assert recovery["spec"]["recovery"]["previousExecutions"][0]["workflowExecutionRef"] == failed
        assert recovery["status"]["phase"] == "Completed"
        execution = wait_for(lambda: _recovery_noted(get(installed, "workflowexecutions", failed, ns)))
        assert execution["status"]["recoveryAnalysisRef"] == recovery_name
        assert not execution["metadata"].get("finalizers"), "kopf removes its finalizer once handled"

        reasons = _event_reasons(installed, ns)
        assert "RecoveryCreated" in reasons, reasons  # events are posted with the operator's own rights
    finally:
        operator.stop()
    assert operator.proc is not None and operator.proc.returncode == 0, operator.logs()
    full_log = "".join(path.read_text(errors="replace") for path in sorted(tmp_path.glob("operator-*.log")))
    problems = [line for line in full_log.splitlines() if PERMISSION_PROBLEMS.search(line)]
    assert problems == []


def test_the_intake_works_with_the_shipped_role(
    installed: devcluster.DevCluster, operator_kubeconfig: Path, ns: str, tmp_path: Path
) -> None:
    """Alert → Pod → ReplicaSet → Deployment → AIAnalysis, with only the operator's own rights."""
    installed.kubectl("label", "namespace", ns, "kubernaut.io/environment=production")
    deployment = _create(installed, ns, _deployment("shop"))
    rs = _create(installed, ns, _replicaset("shop-1", owner=deployment))
    controlled = [{**ref, "controller": True} for ref in _owner(rs)]
    pod = _pod("shop-1-a", owner=rs)
    _create(installed, ns, {**pod, "metadata": {**pod["metadata"], "ownerReferences": controlled}})
    rs_patch = {"metadata": {"ownerReferences": [{**ref, "controller": True} for ref in _owner(deployment)]}}
    installed.kubectl("patch", "replicaset", "shop-1", "-n", ns, "--type=merge", "-p", json.dumps(rs_patch))
    port = free_port()
    allowed = tmp_path / "intake-mapping.yaml"
    allowed.write_text(json.dumps({"namespaces": [ns]}))
    env = {
        "AIANALYSIS_PROVIDER": "offline",
        "AIANALYSIS_INTAKE_PORT": str(port),
        "AIANALYSIS_INTAKE_TOKEN": "t",
        "AIANALYSIS_INTAKE_MAPPING_FILE": str(allowed),
        "AIANALYSIS_INTAKE_ALLOW_PLAIN_HTTP": "true",  # loopback; the rights are the point here
    }
    operator = OperatorProcess(kubeconfig=operator_kubeconfig, log_dir=tmp_path, env=env)
    operator.start()
    try:
        labels = {
            "alertname": "KubePodCrashLooping",
            "namespace": ns,
            "pod": "shop-1-a",
            "severity": "warning",
        }
        payload = {"version": "4", "alerts": [{"status": "firing", "labels": labels, "fingerprint": "f1"}]}
        wait_for(lambda: _listening(port), what="the intake to listen", logs=operator.logs)
        answer = httpx.post(
            f"http://127.0.0.1:{port}/api/v1/alertmanager",
            json=payload,
            headers={"Authorization": "Bearer t"},
        )
        assert answer.status_code == 200 and answer.json()["accepted"] == 1
        [item] = wait_terminal(installed, ns, 1, logs=operator.logs)
        assert item["spec"]["resource"] == {"kind": "Deployment", "name": "shop", "namespace": ns}
        assert item["spec"]["businessContext"]["environment"] == "production"
    finally:
        operator.stop()
    full_log = "".join(path.read_text(errors="replace") for path in sorted(tmp_path.glob("operator-*.log")))
    assert [line for line in full_log.splitlines() if PERMISSION_PROBLEMS.search(line)] == []


# ---- helpers ------------------------------------------------------------------------------------


def _listening(port: int) -> bool:
    """The intake accepts connections (it starts after the catalog is loaded)."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1.0).close()
    except OSError:
        return False
    return True


def _client(kubeconfig: Path) -> Any:
    """An API client authenticating as the operator."""
    return config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]  # kubernetes is untyped


def _event_reasons(cluster: devcluster.DevCluster, ns: str) -> set[str]:
    events = json.loads(cluster.kubectl("get", "events", "-n", ns, "-o", "json").stdout)["items"]
    return {event["reason"] for event in events}


def _by_name(items: list[dict[str, Any]], name: str) -> dict[str, Any]:
    [found] = [item for item in items if item["metadata"]["name"] == name]
    return found


def _terminal(item: dict[str, Any] | None) -> dict[str, Any] | None:
    return item if item and (item.get("status") or {}).get("phase") in ("Completed", "Failed") else None


def _recovery_noted(item: dict[str, Any] | None) -> dict[str, Any] | None:
    conditions = ((item or {}).get("status") or {}).get("conditions") or []
    noted = any(c["type"] == "RecoveryStarted" for c in conditions)
    return item if noted and item and not item["metadata"].get("finalizers") else None


def _fail_execution(cluster: devcluster.DevCluster, ns: str, *, analysis: dict[str, Any]) -> str:
    """A WorkflowExecution of the analysis's selection that failed (what an executor would write)."""
    name = f"{analysis['metadata']['name']}-exec-1"
    executions.fail_execution(
        cluster, ns, analysis=analysis, name=name, reason="DeadlineExceeded",
        message="rollout did not finish within 600s", step_name="rollback", execution_time="10m0s",
    )  # fmt: skip
    return name


def _create(cluster: devcluster.DevCluster, ns: str, body: dict[str, Any]) -> dict[str, Any]:
    created: dict[str, Any] = json.loads(
        cluster.kubectl("create", "-n", ns, "-o", "json", "-f", "-", input=json.dumps(body)).stdout
    )
    return created


def _owner(obj: dict[str, Any]) -> list[dict[str, Any]]:
    meta = obj["metadata"]
    return [{"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": meta["name"], "uid": meta["uid"]}]


_CONTAINERS = [{"name": "app", "image": "registry.example/web:1"}]


def _deployment(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": _CONTAINERS}},
        },
    }


def _replicaset(name: str, *, owner: dict[str, Any]) -> dict[str, Any]:
    labels = owner["spec"]["selector"]["matchLabels"]
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "labels": labels, "ownerReferences": _owner(owner)},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": _CONTAINERS}},
        },
    }


def _pod(name: str, *, owner: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": owner["metadata"]["labels"], "ownerReferences": _owner(owner)},
        "spec": {"containers": _CONTAINERS},
    }


async def test_the_llm_budget_record_is_kept_with_the_shipped_role(
    installed: devcluster.DevCluster, operator_kubeconfig: Path
) -> None:
    """As the operator, with only the shipped rights: the first grant creates the record, the next
    replaces it at the version read, and a new gate (a restart) continues from it."""
    api = kube.api_client(str(operator_kubeconfig))
    limits = llm_budget.Allowance(conversations_per_hour=2)
    try:
        store = budget_store.ConfigMapStore(api, SA_NAMESPACE)
        first = llm_budget.BudgetGate(limits, store=store)
        await first.load()
        for n in (1, 2):
            ticket = llm_budget.Ticket(key=f"rbac-{n}#1", uid=f"rbac-{n}", severity="high", created="")
            assert await first.acquire(ticket, on_wait=_never_waits) is False
        await first.aclose()

        restarted = llm_budget.BudgetGate(limits, store=store)
        await restarted.load()
        assert restarted.ledger.exhausted(restarted.clock.now()) == "conversations"
        await restarted.aclose()
    finally:
        api.close()
    found = installed.kubectl("get", "configmap", budget_store.NAME, "-n", SA_NAMESPACE, "-o", "json")
    assert len(json.loads(json.loads(found.stdout)["data"]["conversations"])) == 2


async def _never_waits(message: str) -> None:
    raise AssertionError(f"the budget was not spent yet: {message}")
