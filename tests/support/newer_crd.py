"""A status "written by a newer version": the CRDs are widened for one test (a review reason this
operator does not know), so a status the API server accepts fails the operator's status model."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

NEWER_REASON = "from_a_newer_version"
CRDS = {
    "aianalyses.kubernaut.io": "kubernaut.io_aianalyses.yaml",
    "workflowexecutions.kubernaut.io": "kubernaut.io_workflowexecutions.yaml",
}
CRD_DIR = Path(__file__).resolve().parents[2] / "crds"
ENUM = "/spec/versions/0/schema/openAPIV3Schema/properties/status/properties/humanReviewReason/enum/-"


@contextlib.contextmanager
def newer_crds(cluster: Any) -> Iterator[str]:
    """Within: both CRDs admit ``humanReviewReason: from_a_newer_version``. Restored after."""
    patch = json.dumps([{"op": "add", "path": ENUM, "value": NEWER_REASON}])
    try:
        for name in CRDS:
            cluster.kubectl("patch", "crd", name, "--type=json", "-p", patch)
        yield NEWER_REASON
    finally:
        for file in CRDS.values():
            cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CRD_DIR / file))


def newer_status(phase: str) -> dict[str, Any]:
    return {"phase": phase, "needsHumanReview": True, "humanReviewReason": NEWER_REASON}


def write_newer_status(cluster: Any, *, kind: str, name: str, namespace: str, phase: str) -> None:
    """Write :func:`newer_status` onto the object (retried until the widened CRD is in effect)."""
    import time  # noqa: PLC0415  # only here

    with newer_crds(cluster):
        deadline = time.monotonic() + 30
        while True:
            done = cluster.kubectl(
                "patch", kind, name, "-n", namespace, "--subresource=status", "--type=merge",
                "-p", json.dumps({"status": newer_status(phase)}), check=False,
            )  # fmt: skip
            if done.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"the widened CRD never admitted the status: {done.stderr}")
            time.sleep(0.2)
