"""``aianalysis catalog search``: the exact JSON other tools parse, the table people read, and
clean exit codes on user mistakes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from aianalysis import cli

from .test_catalog_loader import workflow_yaml, write

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def catalog_dir(tmp_path: Path) -> Path:
    write(
        tmp_path / "catalog" / "memory.yaml",
        workflow_yaml("oom-v1", "oom-increase-memory"),
        workflow_yaml("oom-v2", "oom-increase-memory", "1.1.0"),
        workflow_yaml("oom-risky", "oom-scale-out", risk="high").replace(
            "Increase memory limit", "Scale out"
        ),
    )
    write(
        tmp_path / "catalog" / "other.yaml",
        workflow_yaml("evict", "evicted-reschedule", signals="[Evicted]").replace(
            "Increase memory limit", "Reschedule"
        ),
    )
    return tmp_path / "catalog"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_json_output_is_exact(catalog_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        [
            "catalog",
            "search",
            "--catalog",
            str(catalog_dir),
            "--query",
            "increase memory unknownword",
            "--signal-type",
            "OOMKilled",
            "--environment",
            "production",
            "-o",
            "json",
        ],
        capsys,
    )
    assert (code, err) == (0, "")
    rows = json.loads(out)
    assert [list(row) for row in rows] == [["workflow_id", "version", "title", "description", "confidence"]]
    assert rows[0]["workflow_id"] == "oom-increase-memory"
    assert rows[0]["version"] == "1.1.0"
    assert rows[0]["title"] == "Increase memory limit"
    assert rows[0]["description"] == "Raises the memory limit."
    assert 0.6 < rows[0]["confidence"] < 1.0
    assert rows[0]["confidence"] == round(rows[0]["confidence"], 3)


def test_business_flags_decide_eligibility(catalog_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["catalog", "search", "--catalog", str(catalog_dir), "--signal-type", "OOMKilled", "-o", "json"]

    def found(*flags: str) -> list[str]:
        code, out, _ = run([*base, *flags], capsys)
        assert code == 0
        return [row["workflow_id"] for row in json.loads(out)]

    assert found("--environment", "production") == ["oom-increase-memory"]
    assert found("--environment", "production", "--risk-tolerance", "high") == [
        "oom-increase-memory",
        "oom-scale-out",
    ]
    assert found("--environment", "staging", "--risk-tolerance", "high") == []
    assert found() == []  # every sample workflow is production-only; the incident has no environment


def test_all_versions_and_top_k(catalog_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["catalog", "search", "--catalog", str(catalog_dir), "--environment", "production", "-o", "json"]
    code, out, _ = run([*base, "--signal-type", "OOMKilled", "--all-versions"], capsys)
    assert code == 0
    assert [(row["workflow_id"], row["version"]) for row in json.loads(out)] == [
        ("oom-increase-memory", "1.1.0"),
        ("oom-increase-memory", "1.0.0"),
    ]
    code, out, _ = run([*base, "--query", "memory", "--risk-tolerance", "high", "--top-k", "1"], capsys)
    assert (code, len(json.loads(out))) == (0, 1)


def test_table_is_the_default(catalog_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        [
            "catalog",
            "search",
            "--catalog",
            str(catalog_dir),
            "--environment",
            "production",
            "--query",
            "OOMKilled",
        ],
        capsys,
    )
    lines = out.splitlines()
    assert code == 0
    assert lines[0].split() == ["WORKFLOW", "ID", "VERSION", "CONFIDENCE", "TITLE"]
    assert lines[1].split() == ["oom-increase-memory", "1.1.0", "1.000", "Increase", "memory", "limit"]
    code, out, _ = run(
        ["catalog", "search", "--catalog", str(catalog_dir), "--query", "nothing matches this"], capsys
    )
    assert out == "No eligible workflow matches.\n"


def test_user_errors_exit_2_with_one_line_and_no_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = write(tmp_path / "bad.yaml", workflow_yaml("x", "x", risk="extreme"))
    code, out, err = run(["catalog", "search", "--catalog", str(bad)], capsys)
    assert code == 2
    assert out == ""
    assert err.startswith(
        f"aianalysis: error: {bad}: document 1 (RemediationWorkflow 'x'): invalid spec: spec.riskLevel"
    )
    assert "Traceback" not in err

    code, _, err = run(["catalog", "search", "--catalog", str(bad), "--priority", "urgent"], capsys)
    assert code == 2
    assert "invalid business context: priority" in err

    code, _, err = run(["catalog", "search", "--catalog", str(tmp_path / "missing")], capsys)
    assert (code, err.strip()) == (2, f"aianalysis: error: {tmp_path / 'missing'}: no such file or directory")


def test_bad_usage_exits_2(catalog_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run([], capsys)[0] == 2
    assert run(["catalog"], capsys)[0] == 2
    with pytest.raises(SystemExit) as exited:
        cli.main(["catalog", "search", "--catalog", str(catalog_dir), "--top-k", "0"])
    assert exited.value.code == 2
    assert "must be between 1 and 100" in capsys.readouterr().err


def test_help_documents_the_risk_tolerance_default(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["catalog", "search", "--help"])
    assert "default: low" in " ".join(capsys.readouterr().out.split())


def test_console_entry_point_runs_as_a_module(catalog_dir: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "aianalysis",
            "catalog",
            "search",
            "--catalog",
            str(catalog_dir),
            "--signal-type",
            "Evicted",
            "--environment",
            "production",
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "operator"), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr
    assert [row["workflow_id"] for row in json.loads(result.stdout)] == ["evicted-reschedule"]


def test_custom_labels_action_type_and_severity_synonyms_from_flags(
    capsys: pytest.CaptureFixture[str],
) -> None:
    kubernaut = ROOT / "examples" / "kubernaut" / "catalog"
    base = ["catalog", "search", "--catalog", str(kubernaut), "--environment", "production", "-o", "json"]
    asked = [*base, "--risk-tolerance", "medium", "--action-type", "RestartPod", "--severity", "warning"]
    code, out, _ = run([*asked, "--custom-label", "team=storefront"], capsys)
    assert code == 0
    assert {row["workflow_id"] for row in json.loads(out)} == {
        "storefront-restart-pods",
        "storefront-restart-leaking-pods",
    }
    code, out, _ = run(asked, capsys)
    assert code == 0 and json.loads(out) == [], "customLabels restrict to incidents that carry them"
    code, _, err = run([*asked, "--custom-label", "team"], capsys)
    assert code == 2 and "--custom-label must be KEY=VALUE" in err
