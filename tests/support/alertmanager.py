"""A real Alertmanager (built from Go modules by hack/build-alertmanager.sh) on loopback only: the
web API on a random 127.0.0.1 port, clustering (gossip) off, its webhook receivers pointed at the
operator's intake on 127.0.0.1, or at a :class:`Receiver` that records what Alertmanager delivers."""

from __future__ import annotations

import datetime
import http.server
import json
import threading
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.support import programs

ROOT = Path(__file__).resolve().parents[2]
WEBHOOK_PATH = "/api/v1/alertmanager"


def binary() -> Path:
    """``$AIANALYSIS_ALERTMANAGER_BIN/alertmanager``, else built (or reused) by the hack script."""
    return programs.cached_binary(
        "alertmanager", env="AIANALYSIS_ALERTMANAGER_BIN", script="build-alertmanager.sh"
    )


def config(*, intake_port: int, token: str, wrong_token: str) -> dict[str, Any]:
    """Route everything to the intake; alerts labelled ``tenant=intruder`` go there with a wrong token."""
    url = f"http://127.0.0.1:{intake_port}{WEBHOOK_PATH}"
    return {
        "route": {
            "receiver": "aianalysis",
            "group_by": ["alertname", "namespace"],
            "group_wait": "0s",
            "group_interval": "1s",
            "repeat_interval": "1h",
            "routes": [{"matchers": ['tenant="intruder"'], "receiver": "wrong-token"}],
        },
        "receivers": [
            {
                "name": "aianalysis",
                "webhook_configs": [
                    {
                        "url": url,
                        "send_resolved": True,
                        "http_config": {"authorization": {"credentials": token}},
                    }
                ],
            },
            {
                "name": "wrong-token",
                "webhook_configs": [
                    {"url": url, "http_config": {"authorization": {"credentials": wrong_token}}}
                ],
            },
        ],
    }


class Alertmanager(programs.Program):
    name = "alertmanager"

    def __init__(self, workdir: Path, settings: dict[str, Any]) -> None:
        super().__init__(workdir)
        self.config_file = workdir / "alertmanager.yml"
        self.config_file.write_text(yaml.safe_dump(settings))

    def start(self, timeout: float = 30.0) -> Alertmanager:
        argv = [
            str(binary()),
            f"--config.file={self.config_file}",
            f"--storage.path={self.workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--cluster.listen-address=",  # no gossip port at all
        ]
        self.launch(argv, timeout)
        return self

    def post(self, *alerts: dict[str, Any]) -> None:
        """Alertmanager's own API, as Prometheus uses it."""
        response = httpx.post(f"{self.url}/api/v2/alerts", json=list(alerts), timeout=10)
        assert response.status_code == 200, response.text

    def metric(self, name: str, **labels: str) -> float:
        total = 0.0
        for line in httpx.get(f"{self.url}/metrics", timeout=10).text.splitlines():
            if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
                total += float(line.rsplit(" ", 1)[1])
        return total


def alert(labels: dict[str, str], *, resolved: bool = False, **annotations: str) -> dict[str, Any]:
    now = datetime.datetime.now(datetime.UTC)
    body: dict[str, Any] = {
        "labels": labels,
        "annotations": annotations,
        "startsAt": (now - datetime.timedelta(minutes=5)).isoformat(),
    }
    if resolved:
        body["endsAt"] = now.isoformat()
    return body


class Receiver:
    """A webhook receiver on 127.0.0.1 that records every notification Alertmanager delivers (the
    webhook payload: ``status``, ``groupLabels``, ``alerts`` ...), as Slack or PagerDuty would get them."""

    def __init__(self) -> None:
        self.notifications: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        received, lock = self.notifications, self._lock

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with lock:
                    received.append(json.loads(body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *_: Any) -> None:  # quiet
                return

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/notify"

    def received(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.notifications)

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


def receiver_config(url: str) -> dict[str, Any]:
    """Everything to one webhook receiver, one group per alertname and object, notified at once,
    changes within a second, never repeated within the test (a repeat would be a duplicate)."""
    return {
        "route": {
            "receiver": "people",
            "group_by": ["alertname", "namespace", "aianalysis", "workflowexecution"],
            "group_wait": "0s",
            "group_interval": "1s",
            "repeat_interval": "1h",
        },
        "receivers": [{"name": "people", "webhook_configs": [{"url": url, "send_resolved": True}]}],
    }
