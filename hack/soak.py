"""Soak: the operator process against a local API server and the scripted Messages API (loopback
only), with LLM faults, operator kills and API-server restarts, bounded in size and time. Prints,
per analysis, how many LLM conversations it took (``status.attempt``) and whether every analysis
ended with a valid selection or a clear reason.

    AIANALYSIS_K8S_BIN=... .venv/bin/python hack/soak.py [--analyses 60] [--kills 5] [--faults 0.3]
        [--apiserver-restarts 2]
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.conftest import OperatorProcess  # noqa: E402
from tests.support import messages_server as ms  # noqa: E402
from tests.support.fake_llm import GoodLLM  # noqa: E402

from aianalysis import catalog  # noqa: E402
from aianalysis_dev import devcluster  # noqa: E402

INCIDENTS = sorted((ROOT / "examples" / "incidents").glob("*.yaml"))


class Faulty:
    """``GoodLLM`` with a share of requests answered by a fault (500, 429, a non-JSON page)."""

    def __init__(self, share: float, seed: int) -> None:
        self.good, self.share, self.random = GoodLLM(delay=0.3), share, random.Random(seed)  # noqa: S311  # reproducible faults, not secrets
        self.lock, self.faults = threading.Lock(), collections.Counter[str]()

    def __call__(self, body: dict[str, Any]) -> ms.Step:
        with self.lock:
            roll, kind = self.random.random(), self.random.choice(["500", "429", "html"])
        if roll >= self.share:
            return self.good(body)
        self.faults[kind] += 1
        if kind == "html":
            return ms.Raw(status=200)
        return ms.Fail(int(kind), "scripted fault")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--analyses", type=int, default=60)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--faults", type=float, default=0.3)
    parser.add_argument("--apiserver-restarts", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    rng = random.Random(args.seed)  # noqa: S311  # reproducible schedule, not secrets
    index = catalog.load_paths([ROOT / "examples" / "catalog"])
    policy = Faulty(args.faults, args.seed)
    with devcluster.DevCluster() as cluster, ms.MessagesServer(policy=policy) as llm:
        devcluster.apply_crds(cluster, ROOT / "crds")
        cluster.kubectl("apply", "-f", str(ROOT / "examples" / "catalog"))
        namespace = f"soak-{rng.randrange(1 << 24):06x}"
        cluster.kubectl("create", "namespace", namespace)
        env = {
            "AIANALYSIS_PROVIDER": "anthropic",
            "ANTHROPIC_API_KEY": "sk-soak",
            "AIANALYSIS_ANTHROPIC_BASE_URL": llm.base_url,
            "AIANALYSIS_LLM_MAX_RETRIES": "1",
            "AIANALYSIS_MAX_CONCURRENT_ANALYSES": str(args.concurrency),
            "AIANALYSIS_CROSS_NAMESPACE": f"{namespace}=*",  # the example incidents name their own
        }
        logs = Path(tempfile.mkdtemp(prefix="soak-"))
        operator = OperatorProcess(
            kubeconfig=cluster.kubeconfig,
            log_dir=logs,
            env=env,
            argv=[sys.executable, "-m", "aianalysis", "run", "--namespace", namespace],
        )
        operator.start()
        for number in range(args.analyses):
            doc = yaml.safe_load(INCIDENTS[number % len(INCIDENTS)].read_text())
            doc["metadata"] = {"name": f"soak-{number:03d}"}
            cluster.kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(doc))
        deadline, kills, restarts = time.monotonic() + args.timeout, 0, 0
        schedule = ["kill"] * args.kills + ["restart"] * args.apiserver_restarts
        rng.shuffle(schedule)
        while time.monotonic() < deadline:
            items = json.loads(cluster.kubectl("get", "aia", "-n", namespace, "-o", "json").stdout)["items"]
            done = [i for i in items if (i.get("status") or {}).get("phase") in ("Completed", "Failed")]
            if len(done) == args.analyses:
                break
            if schedule:
                if schedule.pop() == "kill":
                    operator.kill()
                    kills += 1
                    operator.start()
                else:
                    cluster.restart_apiserver()
                    restarts += 1
            time.sleep(rng.uniform(0.5, 1.5))
        operator.stop()
    attempts = collections.Counter((i.get("status") or {}).get("attempt") for i in items)
    outcomes = collections.Counter(
        f"{(i.get('status') or {}).get('phase')}/{(i.get('status') or {}).get('reason')}" for i in items
    )
    invalid = 0
    for item in items:
        chosen = (item.get("status") or {}).get("selectedWorkflow")
        if chosen and index.get(chosen["workflowId"], chosen["version"]) is None:
            invalid += 1
    print(
        json.dumps(
            {
                "analyses": args.analyses,
                "terminal": len(done),
                "operator_kills": kills,
                "apiserver_restarts": restarts,
                "llm_requests": len(llm.requests),
                "llm_faults": dict(policy.faults),
                "conversations_per_analysis": {str(k): v for k, v in sorted(attempts.items(), key=str)},
                "max_conversations_seen": max((k or 0) for k in attempts),
                "outcomes": dict(outcomes),
                "invalid_selections": invalid,
            },
            indent=2,
        )
    )
    return 0 if len(done) == args.analyses and invalid == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
