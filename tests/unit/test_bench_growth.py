"""``make bench``'s growth points run (a small catalog here): the bench is code too, and a rename in
the catalog once broke it without any test noticing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_growth_point_admits_the_catalog_and_measures_its_memory_and_search() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "bench.growth", "--point", "300", "--queries", "20"],
        cwd=ROOT, capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    point = json.loads(out.stdout)
    assert point["workflows"] == point["entries"] == 300, point
    assert point["catalog_mib"] > 0 and point["load_s"] > 0, point
    assert 0 < point["typical_p50_ms"] <= point["typical_p99_ms"], point
    assert 0 < point["text_only_p50_ms"] <= point["text_only_p99_ms"], point
