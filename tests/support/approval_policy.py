"""The approval admission policy as it ships (``crds/``), and waiting until the executor trusts
approvals made under it: its last change, as the API server recorded it, older than the margin."""

from __future__ import annotations

import datetime
import json
import time
from pathlib import Path
from typing import Any

import yaml

from aianalysis import resources, settings

ROOT = Path(__file__).resolve().parents[2]
FILE = ROOT / "crds" / "kubernaut.io_workflowexecutions_approval.yaml"
KINDS = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
DEFAULT_MARGIN_SECONDS = settings.Settings().executor.approval_policy_margin_seconds


def shipped() -> list[dict[str, Any]]:
    """The policy and its binding, as in ``crds/``."""
    return [d for d in yaml.safe_load_all(FILE.read_text()) if d and d["kind"] in KINDS]


def last_change(cluster: Any) -> datetime.datetime:
    """The latest server-written time on the policy or its binding (creation, managedFields)."""
    times: list[datetime.datetime] = []
    for doc in shipped():
        got = cluster.kubectl(
            "get", doc["kind"].lower(), doc["metadata"]["name"], "-o", "json", "--show-managed-fields"
        )
        meta = json.loads(got.stdout)["metadata"]
        stamps = [meta["creationTimestamp"], *(e["time"] for e in meta.get("managedFields") or [])]
        times += [t for t in (resources.parse_timestamp(s) for s in stamps) if t is not None]
    return max(times)


def wait_in_force(cluster: Any, *, margin_seconds: float = DEFAULT_MARGIN_SECONDS) -> None:
    """Until approvals made now count for an executor with this margin (one-second timestamps:
    a second more). A condition on the clock with a deadline, not a guessed sleep."""
    until = last_change(cluster) + datetime.timedelta(seconds=margin_seconds + 1.5)
    deadline = time.monotonic() + margin_seconds + 60
    while datetime.datetime.now(datetime.UTC) <= until:
        if time.monotonic() > deadline:
            raise AssertionError(f"the approval policy keeps changing (last change {last_change(cluster)})")
        time.sleep(0.2)
