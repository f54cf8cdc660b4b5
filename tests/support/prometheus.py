"""A real Prometheus server (Debian's package unpacked by hack/build-prometheus.sh, or a Go build)
on loopback only, scraping a tiny exporter the test runs in-process, with one alerting rule."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.support import programs

ROOT = Path(__file__).resolve().parents[2]


def binary() -> Path:
    """``$AIANALYSIS_PROMETHEUS_BIN/prometheus``, else unpacked (or reused) by the hack script."""
    return programs.cached_binary("prometheus", env="AIANALYSIS_PROMETHEUS_BIN", script="build-prometheus.sh")


free_port = programs.free_port


class Exporter:
    """``/metrics`` in the text format: a gauge per pod that the test sets, and ``wide`` series of
    a counter (to make results huge). Served from a thread on 127.0.0.1."""

    def __init__(self, *, wide: int = 0, namespace: str | None = None) -> None:
        self.values: dict[str, float] = {}
        self.wide = wide
        self.namespace = namespace
        """A ``namespace`` label on the pod gauge and the counter (as kube-state-metrics and
        cAdvisor series carry one)."""
        self.extra: list[str] = []
        """More lines in the text format (other metrics), served as they are."""
        self.scrapes = 0
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                exporter.scrapes += 1
                body = exporter.render().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def render(self) -> str:
        ns = f'namespace="{self.namespace}",' if self.namespace else ""
        lines = ["# TYPE shop_memory_bytes gauge"]
        lines += [
            f'shop_memory_bytes{{{ns}pod="{pod}"}} {value}' for pod, value in sorted(self.values.items())
        ]
        lines.append("# TYPE shop_requests_total counter")
        lines += [f'shop_requests_total{{{ns}path="/item/{i}"}} {i}' for i in range(self.wide)]
        return "\n".join([*lines, *self.extra]) + "\n"

    def __enter__(self) -> Exporter:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


RULES = {
    "groups": [
        {
            "name": "shop",
            "rules": [
                {
                    "alert": "ShopMemoryHigh",
                    "expr": "shop_memory_bytes > 100",
                    "labels": {"severity": "critical"},
                    "annotations": {"summary": "Pod {{ $labels.pod }} uses {{ $value }} bytes"},
                },
                {"record": "shop:memory:sum", "expr": "sum(shop_memory_bytes)"},
            ],
        }
    ]
}


class Prometheus(programs.Program):
    name = "prometheus"

    def __init__(self, workdir: Path, *, targets: list[str], rules: dict[str, Any] | None = None) -> None:
        super().__init__(workdir)
        (workdir / "rules.yml").write_text(yaml.safe_dump(rules or RULES))
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(workdir / "rules.yml")],
            "scrape_configs": [{"job_name": "shop", "static_configs": [{"targets": targets}]}],
        }
        self.config_file = workdir / "prometheus.yml"
        self.config_file.write_text(yaml.safe_dump(config))

    def start(self, timeout: float = 60.0) -> Prometheus:
        argv = [
            str(binary()),
            f"--config.file={self.config_file}",
            f"--storage.tsdb.path={self.workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--log.level=warn",
        ]
        self.launch(argv, timeout)
        return self

    def query(self, promql: str, at: float | None = None) -> list[dict[str, Any]]:
        params = {"query": promql} if at is None else {"query": promql, "time": f"{at:.3f}"}
        answer = httpx.get(f"{self.url}/api/v1/query", params=params, timeout=5).json()
        return list(answer["data"]["result"])


@contextlib.contextmanager
def running(
    workdir: Path, exporter: Exporter, *, rules: dict[str, Any] | None = None
) -> Iterator[Prometheus]:
    server = Prometheus(workdir, targets=[f"127.0.0.1:{exporter.port}"], rules=rules)
    try:
        yield server.start()
    finally:
        server.stop()


@contextlib.contextmanager
def silent_server() -> Iterator[int]:
    """A port that accepts connections and never answers (a Prometheus that hangs)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    try:
        yield int(listener.getsockname()[1])
    finally:
        listener.close()


class RecordingServer:
    """Answers every request like Prometheus' ``/api/v1/alerts`` with no alerts, recording headers."""

    def __init__(self) -> None:
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        """Each request's path with its query string."""
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                recorder.headers.append(dict(self.headers.items()))
                recorder.paths.append(self.path)
                body = b'{"status":"success","data":{"alerts":[]}}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> RecordingServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
