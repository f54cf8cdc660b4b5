"""The example workflows' images (examples/workflows/, ``images.workflow_images()``) really act.

Each image runs as a runtime would start it (its entrypoint, user 65532, a read-only root) with the
parameters the executor would pass as environment variables, against a real control plane where
kube-controller-manager's deployment and replicaset controllers make the ReplicaSets of every
revision. Its kubectl authenticates as a user holding exactly the workflow's ``role.yaml`` in the
test's namespace, so a permission the Role forgot fails the test, and nothing outside that namespace
can be touched. There is no node here: Deployments have 0 replicas (a rollout completes without
Pods), and an evicted Pod's status is written by the test as the kubelet would (on the real node,
later, the kubelet does).
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import re
import secrets
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from aianalysis_dev import devcluster, images, oci
from tests.support import programs

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / "examples" / "workflows"
CATALOG = ROOT / "examples" / "catalog"
IDS = images.workflow_ids(ROOT)
#: kubectl in the image waits at most this long for a rollout the test expects to finish at once.
RUN_TIMEOUT_S = 120


def user_of(workflow: str) -> str:
    return f"workflow-{workflow}"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[devcluster.DevCluster]:
    """A control plane of its own with the controllers that turn a Deployment's revisions into
    ReplicaSets (the session's has none: other tests' Deployments must stay as they are)."""
    running = devcluster.DevCluster(users={user_of(w): () for w in IDS}).start()
    work = tmp_path_factory.mktemp("kcm")
    port = programs.free_port()
    argv = [
        str(running.binaries.kube_controller_manager), f"--kubeconfig={running.kubeconfig}",
        f"--authentication-kubeconfig={running.kubeconfig}",
        f"--authorization-kubeconfig={running.kubeconfig}",
        "--controllers=deployment,replicaset", "--leader-elect=false", "--bind-address=127.0.0.1",
        f"--secure-port={port}", f"--cert-dir={work / 'cert'}",
    ]  # fmt: skip
    with (work / "kcm.log").open("wb") as log:
        kcm = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while not healthy(f"https://127.0.0.1:{port}/healthz"):
            assert kcm.poll() is None, (work / "kcm.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "kube-controller-manager not healthy after 60 s"
            time.sleep(0.2)
        yield running
    finally:
        kcm.terminate()
        kcm.wait(timeout=30)
        running.stop()


def healthy(url: str) -> bool:
    try:
        return httpx.get(url, verify=False, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.fixture(scope="module")
def built() -> dict[str, images.Built]:
    return images.workflow_images()


@dataclasses.dataclass(frozen=True)
class Workflow:
    id: str
    image: oci.Image
    rootfs: Path


@pytest.fixture(scope="module")
def unpacked(built: dict[str, images.Built], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Workflow]:
    out = {}
    for workflow, image in built.items():
        rootfs = tmp_path_factory.mktemp(workflow)
        out[workflow] = Workflow(workflow, oci.unpack(image.path, rootfs), rootfs)
    return out


@pytest.fixture
def ns(cluster: devcluster.DevCluster) -> str:
    name = f"wf-{secrets.token_hex(4)}"
    cluster.kubectl("create", "namespace", name)
    return name


Runner = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def run_workflow(cluster: devcluster.DevCluster, unpacked: dict[str, Workflow], tmp_path: Path) -> Runner:
    """``run_workflow(id, namespace, **parameters)``: the image's entrypoint as the workflow's user,
    after binding its Role in ``namespace`` (``role_in``: another namespace, or None for none)."""

    def run(
        workflow: str, namespace: str, *, role_in: str | None = "", **parameters: str
    ) -> subprocess.CompletedProcess[str]:
        user = user_of(workflow)
        bound = namespace if role_in == "" else role_in
        if bound:
            role = yaml.safe_load((WORKFLOWS / workflow / "role.yaml").read_text())
            name = role["metadata"]["name"]
            binding = {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
            }  # fmt: skip
            cluster.kubectl("apply", "-n", bound, "-f", "-", input=yaml.safe_dump_all([role, binding]))
        kubeconfig = tmp_path / f"kubeconfig-{workflow}"
        kubeconfig.write_text(
            cluster.kubectl("config", "view", "--raw", "--flatten", "--minify", user=user).stdout
        )
        found = unpacked[workflow]
        container = images.Container.of_image(
            found.image,
            found.rootfs,
            env={**parameters, "KUBECONFIG": "/tmp/kube/config"},
            binds={"/tmp/kube/config": images.Bind(source=kubeconfig)},
        )
        argv = container.argv(found.image.runtime["Entrypoint"])
        return subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)

    return run


def get(cluster: devcluster.DevCluster, namespace: str, what: str) -> dict[str, Any]:
    return json.loads(cluster.kubectl("get", "-n", namespace, what, "-o", "json").stdout)  # type: ignore[no-any-return]


def deployment(
    name: str,
    *,
    containers: list[dict[str, Any]],
    strategy: dict[str, Any] | None = None,
    paused: bool = False,
) -> str:
    spec: dict[str, Any] = {
        "paused": paused,  # paused from the start: the controller makes no ReplicaSet
        "replicas": 0,  # no node here: a rollout of no Pods completes as soon as its ReplicaSet exists
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": containers}},
    }
    if strategy:
        spec["strategy"] = strategy
    return yaml.safe_dump(
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": spec}
    )


def rolled_out(cluster: devcluster.DevCluster, namespace: str, name: str) -> None:
    cluster.kubectl("rollout", "status", "-n", namespace, f"deployment/{name}", "--timeout=60s")


def create(
    cluster: devcluster.DevCluster,
    namespace: str,
    name: str,
    *,
    containers: list[dict[str, Any]] | None = None,
    strategy: dict[str, Any] | None = None,
) -> None:
    """A Deployment, once the deployment controller has made its first ReplicaSet."""
    containers = containers or [{"name": name, "image": f"example/{name}:1"}]
    manifest = deployment(name, containers=containers, strategy=strategy)
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input=manifest)
    rolled_out(cluster, namespace, name)


def two_revisions(cluster: devcluster.DevCluster, namespace: str, name: str) -> None:
    """``name`` at revision 2 (image ``example/<name>:2``) after revision 1 (``:1``)."""
    create(cluster, namespace, name)
    cluster.kubectl("set", "image", "-n", namespace, f"deployment/{name}", f"{name}=example/{name}:2")
    rolled_out(cluster, namespace, name)


def image_of(cluster: devcluster.DevCluster, namespace: str, name: str) -> str:
    return str(
        get(cluster, namespace, f"deployment/{name}")["spec"]["template"]["spec"]["containers"][0]["image"]
    )


def failed(result: subprocess.CompletedProcess[str], message: str) -> None:
    assert result.returncode == 1, result.stdout + result.stderr
    assert re.search(message, result.stderr), result.stderr


# ---- the images ------------------------------------------------------------------------------------


def test_each_image_runs_its_script_as_a_non_root_user_and_is_pinned_by_digest(
    built: dict[str, images.Built], unpacked: dict[str, Workflow]
) -> None:
    catalog_ids = {
        doc["spec"]["workflowId"]
        for path in CATALOG.glob("*.yaml")
        for doc in yaml.safe_load_all(path.read_text())
        if doc
    }
    assert set(built) == set(IDS) and set(IDS) <= catalog_ids
    for workflow, image in built.items():
        found = unpacked[workflow].image
        assert (found.name, found.digest) == (image.name, image.digest)
        assert image.pinned == f"aianalysis.local/workflows/{workflow}@{found.digest}"
        assert found.runtime["User"] == "65532:65532" and found.runtime["Entrypoint"] == ["/workflow/run.sh"]
        script = unpacked[workflow].rootfs / "workflow" / "run.sh"
        assert script.read_bytes() == (WORKFLOWS / workflow / "run.sh").read_bytes()
    shared = {unpacked[w].image.manifest["layers"][0]["digest"] for w in IDS}
    assert len(shared) == 1, "busybox and kubectl are one layer, stored once on a node"


def test_each_script_reads_exactly_the_parameters_its_catalog_entries_declare() -> None:
    declared: dict[str, set[str]] = {}
    for path in CATALOG.glob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc["spec"]["workflowId"] in IDS:
                names = {p["name"] for p in doc["spec"].get("parameters", [])}
                declared.setdefault(doc["spec"]["workflowId"], set()).update(names)
    for workflow in IDS:
        script = (WORKFLOWS / workflow / "run.sh").read_text()
        read = set(re.findall(r"^param [a-z_]+ ([A-Z_]+)", script, flags=re.M))
        assert read == declared[workflow], workflow


def test_pinned_catalog_references_each_image_by_its_digest_and_is_accepted(
    cluster: devcluster.DevCluster, built: dict[str, images.Built], tmp_path: Path
) -> None:
    devcluster.apply_crds(cluster, ROOT / "crds")
    written = images.pinned_catalog(CATALOG, tmp_path, built)
    assert sorted(p.name for p in written) == sorted(p.name for p in CATALOG.glob("*.yaml"))
    refs = {}
    for path in written:
        for doc in yaml.safe_load_all(path.read_text()):
            refs[doc["metadata"]["name"]] = (
                doc["spec"]["workflowId"],
                doc["spec"]["execution"]["containerImage"],
            )
    for workflow_id, image in refs.values():
        if workflow_id in built:
            assert image == built[workflow_id].pinned
        else:  # the others keep the catalog's own reference
            assert not image.startswith("aianalysis.local/")
    cluster.kubectl("apply", "--dry-run=server", "-f", str(tmp_path))


# ---- what they do ----------------------------------------------------------------------------------


def test_rollback_returns_the_deployment_to_its_previous_revision(
    cluster: devcluster.DevCluster, ns: str, run_workflow: Runner
) -> None:
    two_revisions(cluster, ns, "web")

    result = run_workflow(
        "rollback-deployment",
        ns,
        TARGET_NAMESPACE=ns,
        TARGET_RESOURCE_KIND="Deployment",
        TARGET_RESOURCE_NAME="web",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "rolled back Deployment" in result.stdout
    assert image_of(cluster, ns, "web") == "example/web:1"
    revisions = {
        rs["spec"]["template"]["spec"]["containers"][0]["image"]: rs["metadata"]["annotations"][
            "deployment.kubernetes.io/revision"
        ]
        for rs in get(cluster, ns, "replicasets")["items"]
    }
    assert revisions == {"example/web:1": "3", "example/web:2": "2"}, "the controller brought revision 1 back"

    again = run_workflow(
        "rollback-deployment", ns, TARGET_NAMESPACE=ns, TARGET_RESOURCE_KIND="Deployment",
        TARGET_RESOURCE_NAME="web", TO_REVISION="3",
    )  # fmt: skip
    failed(again, "nothing to roll back")
    assert image_of(cluster, ns, "web") == "example/web:1"


def test_rollback_refuses_bad_input_and_what_it_cannot_do_and_changes_nothing(
    cluster: devcluster.DevCluster, ns: str, run_workflow: Runner
) -> None:
    two_revisions(cluster, ns, "web")
    target = {"TARGET_NAMESPACE": ns, "TARGET_RESOURCE_KIND": "Deployment", "TARGET_RESOURCE_NAME": "web"}
    cases = [
        (
            {**target, "TARGET_NAMESPACE": f"{ns}; kubectl delete ns {ns}"},
            "TARGET_NAMESPACE must be a DNS label",
        ),
        ({**target, "TARGET_RESOURCE_KIND": "Pod"}, "TARGET_RESOURCE_KIND must be one of"),
        ({**target, "TARGET_RESOURCE_NAME": "web\nother"}, "TARGET_RESOURCE_NAME must be an object name"),
        ({**target, "TO_REVISION": "-1"}, "TO_REVISION must be a whole number"),
        ({**target, "ROLLOUT_TIMEOUT_SECONDS": "5"}, r"out of range \[60, 3600\]"),
        ({**target, "PAUSE_CANARY": "true"}, "does not manage Argo Rollouts or Flagger canaries"),
        ({**target, "TARGET_RESOURCE_NAME": "absent"}, 'deployments.apps "absent" not found'),
        (
            {k: v for k, v in target.items() if k != "TARGET_RESOURCE_NAME"},
            "parameter TARGET_RESOURCE_NAME is required",
        ),
    ]
    for parameters, message in cases:
        failed(run_workflow("rollback-deployment", ns, **parameters), message)
    assert image_of(cluster, ns, "web") == "example/web:2"


def test_a_workflow_acts_only_where_its_role_is_bound(
    cluster: devcluster.DevCluster, ns: str, run_workflow: Runner
) -> None:
    other = f"{ns}-other"
    cluster.kubectl("create", "namespace", other)
    for namespace in (ns, other):
        two_revisions(cluster, namespace, "web")
    result = run_workflow(
        "rollback-deployment", other, role_in=ns,
        TARGET_NAMESPACE=other, TARGET_RESOURCE_KIND="Deployment", TARGET_RESOURCE_NAME="web",
    )  # fmt: skip
    failed(result, "forbidden")
    assert image_of(cluster, other, "web") == image_of(cluster, ns, "web") == "example/web:2"


def test_restart_rolls_a_new_pod_template_and_can_skip_waiting(
    cluster: devcluster.DevCluster, ns: str, run_workflow: Runner
) -> None:
    create(cluster, ns, "web")
    result = run_workflow(
        "restart-pods", ns, TARGET_NAMESPACE=ns, TARGET_RESOURCE_KIND="Deployment", TARGET_RESOURCE_NAME="web"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    web = get(cluster, ns, "deployment/web")
    assert "kubectl.kubernetes.io/restartedAt" in web["spec"]["template"]["metadata"]["annotations"]
    assert web["status"]["observedGeneration"] == web["metadata"]["generation"] == 2, "waited for the rollout"
    assert len(get(cluster, ns, "replicasets")["items"]) == 2

    template = {
        "metadata": {"labels": {"app": "agent"}},
        "spec": {"containers": [{"name": "a", "image": "a:1"}]},
    }
    daemonset = {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": template},
    }  # fmt: skip
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=yaml.safe_dump(daemonset))
    result = run_workflow(
        "restart-pods", ns, TARGET_NAMESPACE=ns, TARGET_RESOURCE_KIND="DaemonSet",
        TARGET_RESOURCE_NAME="agent", WAIT_READY="false",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    agent = get(cluster, ns, "daemonset/agent")["spec"]["template"]["metadata"]
    assert "kubectl.kubernetes.io/restartedAt" in agent["annotations"]
    failed(
        run_workflow("restart-pods", ns, TARGET_NAMESPACE=ns, TARGET_RESOURCE_KIND="DaemonSet",
                     TARGET_RESOURCE_NAME="agent", WAIT_READY="yes"),
        "WAIT_READY must be one of: true false",
    )  # fmt: skip


def resources_of(cluster: devcluster.DevCluster, namespace: str, name: str) -> dict[str, Any]:
    containers = get(cluster, namespace, f"deployment/{name}")["spec"]["template"]["spec"]["containers"]
    return {c["name"]: c.get("resources", {}) for c in containers}


def test_memory_workflow_raises_the_limit_of_the_named_container_only(
    cluster: devcluster.DevCluster, ns: str, run_workflow: Runner
) -> None:
    containers = [
        {
            "name": "app",
            "image": "example/app:1",
            "resources": {"limits": {"memory": "128Mi"}, "requests": {"memory": "64Mi"}},
        },
        {"name": "proxy", "image": "example/proxy:1", "resources": {"limits": {"memory": "64Mi"}}},
    ]
    create(cluster, ns, "api", containers=containers)
    target = {"TARGET_NAMESPACE": ns, "TARGET_RESOURCE_KIND": "Deployment", "TARGET_RESOURCE_NAME": "api"}

    failed(
        run_workflow("oomkill-increase-memory", ns, **target, MEMORY_LIMIT_NEW="256Mi"),
        "CONTAINER_NAME is required",
    )
    failed(
        run_workflow("oomkill-increase-memory", ns, **target, MEMORY_LIMIT_NEW="96Mi", CONTAINER_NAME="app"),
        r"not above the current limit \(128Mi\)",
    )
    failed(
        run_workflow(
            "oomkill-increase-memory", ns, **target, MEMORY_LIMIT_NEW="256Mi", MEMORY_REQUEST_NEW="1Gi"
        ),
        "above MEMORY_LIMIT_NEW",
    )
    failed(
        run_workflow("oomkill-increase-memory", ns, **target, MEMORY_LIMIT_NEW="2G"),
        "must look like 512Mi or 2Gi",
    )
    failed(
        run_workflow("oomkill-increase-memory", ns, **target, MEMORY_LIMIT_NEW="256Mi", CONTAINER_NAME="db"),
        "has no container 'db'",
    )
    assert resources_of(cluster, ns, "api")["app"]["limits"] == {"memory": "128Mi"}

    result = run_workflow(
        "oomkill-increase-memory",
        ns,
        **target,
        MEMORY_LIMIT_NEW="256Mi",
        MEMORY_REQUEST_NEW="192Mi",
        CONTAINER_NAME="app",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert resources_of(cluster, ns, "api") == {
        "app": {"limits": {"memory": "256Mi"}, "requests": {"memory": "192Mi"}},
        "proxy": {"limits": {"memory": "64Mi"}},
    }
    web = get(cluster, ns, "deployment/api")
    assert web["status"]["observedGeneration"] == web["metadata"]["generation"], "waited for the rollout"


def test_memory_workflow_takes_the_only_container_and_can_roll_out_by_recreate_once(
    cluster: devcluster.DevCluster, ns: str, run_workflow: Runner
) -> None:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 2, "maxUnavailable": 0}}
    containers = [{"name": "worker", "image": "example/worker:1", "resources": {"limits": {"memory": "1Gi"}}}]
    create(cluster, ns, "worker", containers=containers, strategy=strategy)
    result = run_workflow(
        "oomkill-increase-memory", ns, TARGET_NAMESPACE=ns, TARGET_RESOURCE_KIND="Deployment",
        TARGET_RESOURCE_NAME="worker", MEMORY_LIMIT_NEW="2Gi", ROLLOUT_STRATEGY="recreate",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert resources_of(cluster, ns, "worker") == {"worker": {"limits": {"memory": "2Gi"}}}
    assert get(cluster, ns, "deployment/worker")["spec"]["strategy"] == strategy, "the strategy is restored"
    fields = json.loads(
        cluster.kubectl("get", "-n", ns, "deployment/worker", "--show-managed-fields", "-o", "json").stdout
    )
    managers = {entry["manager"] for entry in fields["metadata"]["managedFields"]}
    assert "kubectl-patch" in managers, "the Recreate switch and its undo went through the API"


# ---- evicted Pods ----------------------------------------------------------------------------------


def evicted_pod(
    cluster: devcluster.DevCluster,
    namespace: str,
    name: str,
    *,
    ago: datetime.timedelta,
    owner: dict[str, Any] | None,
    reason: str = "Evicted",
) -> None:
    """A Pod the kubelet evicted ``ago`` (its status written here: there is no kubelet), owned by
    ``owner`` (added once it is Failed, as no ReplicaSet adopts a terminal Pod)."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"containers": [{"name": "c", "image": "example/c:1"}]}}  # fmt: skip
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(pod))
    when = (datetime.datetime.now(datetime.UTC) - ago).strftime("%Y-%m-%dT%H:%M:%SZ")
    status = {"phase": "Failed", "reason": reason, "message": "The node was low on resource: memory.",
              "conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet",
                              "lastTransitionTime": when}]}  # fmt: skip
    cluster.kubectl(
        "patch",
        "-n",
        namespace,
        f"pod/{name}",
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": status}),
    )
    if owner:
        ref = {"apiVersion": "apps/v1", "kind": owner["kind"], "name": owner["metadata"]["name"],
               "uid": owner["metadata"]["uid"], "controller": True}  # fmt: skip
        cluster.kubectl(
            "patch",
            "-n",
            namespace,
            f"pod/{name}",
            "--type=merge",
            "-p",
            json.dumps({"metadata": {"ownerReferences": [ref]}}),
        )


def pods(cluster: devcluster.DevCluster, namespace: str) -> set[str]:
    return {p["metadata"]["name"] for p in get(cluster, namespace, "pods")["items"]}


def replicaset_of(cluster: devcluster.DevCluster, namespace: str, deployment_name: str) -> dict[str, Any]:
    [rs] = [rs for rs in get(cluster, namespace, "replicasets")["items"]
            if rs["metadata"]["ownerReferences"][0]["name"] == deployment_name]  # fmt: skip
    return rs


def test_cleanup_deletes_the_evicted_pods_of_the_workload_then_of_the_namespace_never_the_young_ones(
    cluster: devcluster.DevCluster, ns: str, run_workflow: Runner
) -> None:
    other = f"{ns}-other"
    cluster.kubectl("create", "namespace", other)
    for name in ("web", "api"):
        create(cluster, ns, name)
    web, api = replicaset_of(cluster, ns, "web"), replicaset_of(cluster, ns, "api")
    hours, now = datetime.timedelta(hours=2), datetime.timedelta(0)
    evicted_pod(cluster, ns, "web-old", ago=hours, owner=web)
    evicted_pod(cluster, ns, "web-young", ago=now, owner=web)
    evicted_pod(cluster, ns, "web-crashed", ago=hours, owner=web, reason="Error")
    evicted_pod(cluster, ns, "api-old", ago=hours, owner=api)
    evicted_pod(cluster, ns, "lone-old", ago=hours, owner=None)
    evicted_pod(cluster, other, "web-old", ago=hours, owner=None)
    everything = {"web-old", "web-young", "web-crashed", "api-old", "lone-old"}
    assert pods(cluster, ns) == everything

    result = run_workflow(
        "evicted-pods-cleanup",
        ns,
        TARGET_NAMESPACE=ns,
        TARGET_RESOURCE_KIND="Deployment",
        TARGET_RESOURCE_NAME="web",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert pods(cluster, ns) == everything - {"web-old"}
    assert (
        "deleted 1 evicted Pods" in result.stdout
        and "kept 1 evicted less than 10 minutes ago" in result.stdout
    )

    idle = deployment("idle", containers=[{"name": "c", "image": "example/c:1"}], paused=True)
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=idle)  # a workload without ReplicaSets
    result = run_workflow(
        "evicted-pods-cleanup", ns, TARGET_NAMESPACE=ns, TARGET_RESOURCE_KIND="Deployment",
        TARGET_RESOURCE_NAME="idle", MIN_AGE_MINUTES="0",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert pods(cluster, ns) == everything - {"web-old"}, "a Pod without a controller is no workload's"

    result = run_workflow("evicted-pods-cleanup", ns, TARGET_NAMESPACE=ns)
    assert result.returncode == 0, result.stdout + result.stderr
    assert pods(cluster, ns) == {"web-young", "web-crashed"}

    result = run_workflow("evicted-pods-cleanup", ns, TARGET_NAMESPACE=ns, MIN_AGE_MINUTES="0")
    assert result.returncode == 0, result.stdout + result.stderr
    assert pods(cluster, ns) == {"web-crashed"}, "a Pod that failed for another reason is not evicted"
    assert pods(cluster, other) == {"web-old"}, "another namespace is never touched"

    failed(
        run_workflow("evicted-pods-cleanup", ns, TARGET_NAMESPACE=ns, TARGET_RESOURCE_NAME="web"),
        "go together",
    )
    failed(
        run_workflow("evicted-pods-cleanup", ns, TARGET_NAMESPACE=ns, TARGET_RESOURCE_KIND="Deployment",
                     TARGET_RESOURCE_NAME="gone"),
        'deployments.apps "gone" not found',
    )  # fmt: skip
    failed(run_workflow("evicted-pods-cleanup", other, role_in=None, TARGET_NAMESPACE=other), "forbidden")
    assert pods(cluster, other) == {"web-old"}
