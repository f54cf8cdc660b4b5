"""The benchmarks' moving parts: one DevCluster, the operator and the scripted model as
subprocesses, parallel creates, and a watch that timestamps each object's terminal status.

Times are ``time.monotonic()`` in this process. Every figure the benchmarks report is a ratio or
a distribution of runs made side by side in one invocation, never an absolute time compared with
another invocation's.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes import watch

from aianalysis import kube, resources
from aianalysis_dev import devcluster, in_a_pod

ROOT = Path(__file__).resolve().parents[1]
TERMINAL = ("Completed", "Failed")
G, V = resources.GROUP, resources.VERSION
AIA, RW = resources.AIANALYSIS_PLURAL, resources.REMEDIATIONWORKFLOW_PLURAL
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile (``share`` in 0..1) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(share * len(ordered) + 0.5)))
    return ordered[rank - 1]


# ---- CPU accounting ---------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """utime + stime of a live process (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def memory_kib(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak RSS) from /proc/<pid>/status, in KiB."""
    values: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0])
    return values


class CpuMeter:
    """CPU seconds each named process (and this one) spends between ``start`` and ``stop``."""

    def __init__(self, pids: Mapping[str, int]) -> None:
        self.pids = dict(pids)
        self._before: dict[str, float] = {}

    def _sample(self) -> dict[str, float]:
        own = os.times()
        sample = {name: cpu_seconds(pid) for name, pid in self.pids.items()}
        sample["bench"] = own.user + own.system
        return sample

    def start(self) -> None:
        self._before = self._sample()

    def stop(self) -> dict[str, float]:
        after = self._sample()
        return {name: round(after[name] - self._before.get(name, 0.0), 2) for name in after}


# ---- the cluster ------------------------------------------------------------------------------


class Cluster:
    """A DevCluster with our CRDs, plus a client sized for the benchmarks' parallel writes."""

    def __init__(self, dev: devcluster.DevCluster) -> None:
        self.dev = dev
        self.api = kube.api_client(str(dev.kubeconfig))
        """The operator's own client (for the operator's code run in this process)."""
        # The floor and the benches' setup: the typed ``kubernetes`` client, with as many pooled
        # connections as the operator has.
        configuration = k8s.Configuration()
        k8s_config.load_kube_config(config_file=str(dev.kubeconfig), client_configuration=configuration)  # type: ignore[no-untyped-call]  # kubernetes is untyped
        configuration.connection_pool_maxsize = kube.CONNECTION_POOL_SIZE
        self.typed = k8s.ApiClient(configuration)
        self.custom = k8s.CustomObjectsApi(self.typed)
        self.core = k8s.CoreV1Api(self.typed)

    @classmethod
    @contextlib.contextmanager
    def running(cls) -> Iterator[Cluster]:
        with devcluster.DevCluster() as dev:
            devcluster.apply_crds(dev, ROOT / "crds")
            bench = cls(dev)
            try:
                yield bench
            finally:
                bench.api.close()
                bench.typed.close()

    @property
    def kubeconfig(self) -> Path:
        return self.dev.kubeconfig

    def control_plane_pids(self) -> dict[str, int]:
        """kube-apiserver and etcd: the processes whose command line names the cluster's data dir."""
        marker = str(self.dev.data_dir)
        found: dict[str, int] = {}
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            with contextlib.suppress(OSError):
                argv = (proc / "cmdline").read_bytes().split(b"\0")
                if any(marker.encode() in arg for arg in argv):
                    found[Path(argv[0].decode()).name] = int(proc.name)
        return found

    def namespace(self, prefix: str) -> str:
        """A fresh namespace (never deleted: without a controller-manager it would hang Terminating)."""
        name = f"{prefix}-{secrets.token_hex(3)}"
        self.core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=name)))
        return name

    def create(self, body: dict[str, Any], *, namespace: str | None) -> None:
        plural = AIA if body["kind"] == "AIAnalysis" else RW
        if namespace is None:
            self.custom.create_cluster_custom_object(G, V, plural, body)
        else:
            self.custom.create_namespaced_custom_object(G, V, namespace, plural, body)

    def patch_status(self, name: str, *, namespace: str, status: dict[str, Any]) -> None:
        self.custom.patch_namespaced_custom_object_status(G, V, namespace, AIA, name, {"status": status})

    def create_all(
        self, bodies: Iterable[dict[str, Any]], *, namespace: str | None, threads: int
    ) -> dict[str, float]:
        """Create every body on ``threads`` threads; the monotonic time each create started."""
        return parallel(bodies, lambda body: self.create(body, namespace=namespace), threads=threads)

    def ensure(self, bodies: Iterable[dict[str, Any]]) -> None:
        """Create cluster-scoped objects unless they exist already."""
        for body in bodies:
            try:
                self.create(body, namespace=None)
            except k8s.ApiException as exc:
                if exc.status != 409:
                    raise

    def delete_analyses(self, namespace: str) -> None:
        self.custom.delete_collection_namespaced_custom_object(G, V, namespace, AIA)

    def count(self, plural: str) -> int:
        listed = self.custom.list_cluster_custom_object(G, V, plural, limit=1)
        remaining = listed["metadata"].get("remainingItemCount") or 0
        return len(listed["items"]) + int(remaining)


def parallel(
    bodies: Iterable[dict[str, Any]], work: Callable[[dict[str, Any]], None], *, threads: int
) -> dict[str, float]:
    """Run ``work`` on each body on a pool; the monotonic time each one started, by object name."""
    started: dict[str, float] = {}

    def one(body: dict[str, Any]) -> None:
        started[body["metadata"]["name"]] = time.monotonic()
        work(body)

    with concurrent.futures.ThreadPoolExecutor(max_workers=threads) as pool:
        for future in [pool.submit(one, body) for body in bodies]:
            future.result()
    return started


class TerminalWatch:
    """Watches the AIAnalyses of a namespace and records when each first shows a terminal phase.

    Started before the objects exist, from the list's resourceVersion, so no event is missed.
    """

    def __init__(self, cluster: Cluster, namespace: str) -> None:
        self.cluster = cluster
        self.namespace = namespace
        self.terminal: dict[str, float] = {}
        self.investigating: dict[str, float] = {}
        """When each object was first seen ``Investigating`` (the operator picked it up)."""
        self.phases: dict[str, str] = {}
        self.reattempted: set[str] = set()
        """Objects whose status ever showed ``attempt`` >= 2 (analysed more than once)."""
        self._done = threading.Event()
        self._expected = 0
        self._lock = threading.Lock()
        self._stop = False
        listed = cluster.custom.list_namespaced_custom_object(G, V, namespace, AIA, limit=1)
        self._version: str = listed["metadata"]["resourceVersion"]
        self._thread = threading.Thread(target=self._run, name="terminal-watch", daemon=True)

    def __enter__(self) -> TerminalWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop = True
        self._thread.join(10)

    def wait(self, count: int, *, timeout: float) -> dict[str, float]:
        """Block until ``count`` objects were seen terminal; their times by name."""
        with self._lock:
            self._expected = count
            if len(self.terminal) >= count:
                return dict(self.terminal)
            # Re-armed for this count: an earlier wait's "done" must not end this one at once (it
            # did: every step after the first returned before its analyses ran, and the operator
            # was stopped with thousands of them still Pending).
            self._done.clear()
        if not self._done.wait(timeout):
            raise TimeoutError(f"only {len(self.terminal)}/{count} analyses terminal after {timeout:.0f}s")
        return dict(self.terminal)

    def _run(self) -> None:
        while not self._stop:
            try:
                self._follow()
            except k8s.ApiException as exc:
                if exc.status != 410:
                    raise
                # Expired (the API server compacted past our version): list what is there, go on.
                listed = self.cluster.custom.list_namespaced_custom_object(G, V, self.namespace, AIA)
                for obj in listed["items"]:
                    self._see(obj)
                self._version = listed["metadata"]["resourceVersion"]

    def _follow(self) -> None:
        while not self._stop:
            stream = watch.Watch().stream(
                self.cluster.custom.list_namespaced_custom_object,
                G,
                V,
                self.namespace,
                AIA,
                resource_version=self._version,
                timeout_seconds=5,
            )
            for event in stream:
                obj = event["object"]
                self._version = obj["metadata"]["resourceVersion"]
                self._see(obj)
                if self._stop:
                    return

    def _see(self, obj: dict[str, Any]) -> None:
        phase = (obj.get("status") or {}).get("phase")
        name = obj["metadata"]["name"]
        if ((obj.get("status") or {}).get("attempt") or 0) >= 2:
            self.reattempted.add(name)
        if phase == "Investigating":
            self.investigating.setdefault(name, time.monotonic())
        if phase not in TERMINAL or name in self.terminal:
            return
        with self._lock:
            self.terminal[name] = time.monotonic()
            self.phases[name] = phase
            if self._expected and len(self.terminal) >= self._expected:
                self._done.set()


# ---- subprocesses -----------------------------------------------------------------------------


OPERATOR_PYTHON = os.environ.get("AIANALYSIS_OPERATOR_PYTHON") or sys.executable
"""The interpreter the operator runs on: ``make bench`` gives one with the runtime dependencies
alone, as the image installs them (the dev environment adds the typed ``kubernetes`` client, which
kopf imports whenever it is installed: ~25 MiB more). The operator runs on it as in the image's
Pod (``aianalysis_dev.in_a_pod``): a kubeconfig outside a Pod would need the ``kubeconfig`` extra."""


def _python_env(extra: Mapping[str, str]) -> dict[str, str]:
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("AIANALYSIS_", "ANTHROPIC_"))}
    path = os.pathsep.join(p for p in (str(ROOT / "operator"), str(ROOT), inherited.get("PYTHONPATH")) if p)
    return {**inherited, "PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1", **extra}


class Operator:
    """``python -m aianalysis run`` against the cluster, as a user would run it."""

    def __init__(self, cluster: Cluster, *, env: Mapping[str, str], log_dir: Path) -> None:
        self.health_port, self.metrics_port = devcluster.free_ports(2)
        self.service_account = in_a_pod.mount(
            cluster.dev, log_dir / f"serviceaccount-{secrets.token_hex(3)}", namespace="default"
        )
        self.env = _python_env(
            {
                **in_a_pod.environment(cluster.dev),
                "AIANALYSIS_METRICS_PORT": str(self.metrics_port),
                "AIANALYSIS_HEALTH_PORT": str(self.health_port),
                # The benches measure the operator, not the LLM budget that would stop a storm of
                # paid conversations after 30 an hour.
                "AIANALYSIS_LLM_BUDGET_CONVERSATIONS_PER_HOUR": "unlimited",
                "AIANALYSIS_LLM_BUDGET_TOKENS_PER_DAY": "unlimited",
                **env,
            }
        )
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log_file = log_dir / f"operator-{secrets.token_hex(3)}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.started = 0.0
        """Monotonic time the process was started."""

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def __enter__(self) -> Operator:
        self.started = time.monotonic()
        with self.log_file.open("wb") as sink:
            self.proc = subprocess.Popen(
                in_a_pod.argv(OPERATOR_PYTHON, self.service_account, "run"),
                env=self.env,
                stdout=sink,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
                start_new_session=True,
            )
        try:
            self._wait(lambda: self._get(self.health_port, "/healthz") is not None, "healthy", 90)
        except BaseException:
            self.__exit__()  # __exit__ does not run when __enter__ raises: never leave the process behind
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def wait_catalog(self, size: int, *, timeout: float) -> None:
        self._wait(lambda: self.metric("aianalysis_catalog_workflows") >= size, f"{size} workflows", timeout)

    def wait_ready(self, *, timeout: float) -> None:
        self._wait(lambda: self._get(self.health_port, "/readyz") is not None, "ready", timeout)

    def metric(self, name: str) -> float:
        """Sum of a metric's samples (0 when absent)."""
        text = self._get(self.metrics_port, "/metrics") or ""
        return sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith(name) and not line.startswith("#") and line[len(name)] in " {"
        )

    def logs(self, tail: int = 4000) -> str:
        return self.log_file.read_text(errors="replace")[-tail:]

    def _get(self, port: int, path: str) -> str | None:
        with contextlib.suppress(httpx.HTTPError):
            response = httpx.get(f"http://127.0.0.1:{port}{path}", timeout=5)
            if response.status_code == 200:
                return response.text
        return None

    def _wait(self, ready: Callable[[], bool], what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"operator exited with {self.proc.returncode}:\n{self.logs()}")
            if ready():
                return
            time.sleep(0.2)
        raise RuntimeError(f"operator not {what} after {timeout:.0f}s:\n{self.logs()}")


class LlmServer:
    """``python -m bench.llm_server``: the scripted model in its own process."""

    def __init__(self, *, delay: float, dump_first: Path | None = None) -> None:
        self.delay = delay
        self.dump_first = dump_first
        self.proc: subprocess.Popen[str] | None = None
        self.base_url = ""
        self.stats: dict[str, Any] = {}

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def __enter__(self) -> LlmServer:
        argv = [sys.executable, "-m", "bench.llm_server", "--delay", str(self.delay)]
        if self.dump_first is not None:
            argv += ["--dump-first", str(self.dump_first)]
        self.proc = subprocess.Popen(
            argv, env=_python_env({}), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT
        )
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().strip()
        if not self.base_url.startswith("http"):
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError(f"scripted server did not start: {self.base_url!r}")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc is not None and self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        line = self.proc.stdout.readline()
        self.stats = json.loads(line) if line.strip() else {}
        self.proc.wait(30)

    def operator_env(self) -> dict[str, str]:
        return {
            "AIANALYSIS_PROVIDER": "anthropic",
            "ANTHROPIC_API_KEY": "bench-not-a-real-key",
            "ANTHROPIC_BASE_URL": self.base_url,
            "AIANALYSIS_MODEL": "claude-sonnet-4-6",
        }


def apiserver_requests(cluster: Cluster) -> dict[str, int]:
    """``apiserver_request_total`` summed by ``VERB resource[/subresource]``, every resource (the
    operator's reads of workloads, namespaces and executions too; WATCHes are long-lived, not
    per-analysis work, and left out)."""
    text = cluster.dev.kubectl("get", "--raw", "/metrics").stdout
    counts: dict[str, int] = {}
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{") or 'verb="WATCH"' in line:
            continue
        labels = dict(part.split("=", 1) for part in line[line.index("{") + 1 : line.rindex("}")].split(","))
        labels = {k: v.strip('"') for k, v in labels.items()}
        if not labels.get("resource"):  # /metrics, /healthz, /version: not the operator's work
            continue
        key = f"{labels['verb']} {labels['resource']}" + (
            f"/{labels['subresource']}" if labels.get("subresource") else ""
        )
        counts[key] = counts.get(key, 0) + int(float(line.rsplit(" ", 1)[1]))
    return counts
