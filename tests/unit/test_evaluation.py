"""``aianalysis eval``: scenario files, the in-memory cluster, scoring, and the reports."""

from __future__ import annotations

import asyncio
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from aianalysis import catalog, cli, errors, resources, settings
from aianalysis.analysis import llm, tools
from aianalysis.evaluation import chart, cluster, command, progress, report, runner, scoring, suite, tally

ROOT = Path(__file__).resolve().parents[2]
CATALOG = catalog.load_paths([ROOT / "examples" / "catalog"])
CORPUS = ROOT / "examples" / "eval"

SPEC = {
    "signal": {"type": "OOMKilled", "severity": "high"},
    "resource": {"kind": "Deployment", "name": "web", "namespace": "shop"},
    "businessContext": {"environment": "production", "priority": "P1", "riskTolerance": "low"},
}


def doc(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "web-oom",
        "description": "a web server OOMKilled",
        "analysis": SPEC,
        "expect": {"workflowIds": ["oomkill-increase-memory"]},
    }
    return base | overrides


def parsed(**overrides: Any) -> suite.Scenario:
    return suite.parse(doc(**overrides), path=Path("s.yaml"))


def write(directory: Path, name: str, body: object) -> Path:
    path = directory / name
    path.write_text(body if isinstance(body, str) else yaml.safe_dump(body))
    return path


# ---- scenario files ------------------------------------------------------------------------------


def test_analysis_may_be_an_aianalysis_object_or_its_spec() -> None:
    as_object = parsed(analysis={"apiVersion": "kubernaut.io/v1alpha1", "kind": "AIAnalysis", "spec": SPEC})
    assert as_object.spec == parsed().spec
    assert as_object.spec.resource.name == "web"


def test_a_scenario_file_loads_with_its_path_tags_and_single_review_reason(tmp_path: Path) -> None:
    body = doc(tags=["memory"], expect={"workflowIds": [], "expectReview": "no_eligible_workflow"})
    path = write(tmp_path, "one.yaml", body)
    [loaded] = suite.load_scenarios([tmp_path])
    assert loaded.path == path
    assert loaded.tags == ("memory",)
    assert loaded.expect.expect_review == ["no_eligible_workflow"]
    assert loaded.cluster is None


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("name: [unclosed", "cannot read"),
        ("- just\n- a list\n", "a scenario is a mapping"),
        ("name: a\n---\nname: b\n", "exactly one YAML document"),
        (doc(expect=None), "expect"),
        (doc(expct={"workflowIds": ["x"]}), "expct: Extra inputs are not permitted"),
        (doc(expect={"workflowIds": []}), "an empty workflowIds needs expectReview"),
        (doc(expect={"workflowIds": ["a"], "expectReview": "inconclusive"}), "not both"),
        (doc(expect={"workflowIds": ["a"], "forbiddenWorkflowIds": ["a"]}), "both expected and forbidden: a"),
        (doc(expect={"workflowIds": [], "expectReview": "maybe"}), "expect.expectReview"),
        (
            doc(expect={"workflowIds": ["a"], "parameters": {"X": {"pattern": "("}}}),
            "not a regular expression",
        ),
        (doc(analysis={"kind": "Deployment", "spec": {}}), "expected an AIAnalysis object or spec"),
        (doc(analysis={"signal": {"type": "X"}}), "analysis.signal.severity"),
        (doc(cluster=[{"kind": "Secret", "metadata": {"name": "db"}}]), "Secrets are never shown"),
        (doc(cluster=[{"kind": "Pod"}]), "cluster[0]: Pod needs metadata.name"),
        (doc(logs={"web-1": "hello"}), "logs need a cluster"),
        (doc(cluster=[], logs={"web-1/app": "hello"}), "logs.web-1/app: no Pod 'web-1'"),
    ],
)
def test_a_bad_scenario_file_is_rejected_naming_the_file_and_the_problem(
    tmp_path: Path, body: object, message: str
) -> None:
    path = write(tmp_path, "bad.yaml", body)
    with pytest.raises(suite.ScenarioError, match=r"bad\.yaml") as caught:
        suite.load_scenarios([path])
    assert message in str(caught.value)


def test_scenario_names_must_be_unique_across_files(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", doc())
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub", "b.yaml", doc())
    with pytest.raises(suite.ScenarioError, match=r"name 'web-oom' is already used by .*a\.yaml"):
        suite.load_scenarios([tmp_path])


def test_a_directory_without_scenarios_and_a_missing_path_are_errors(tmp_path: Path) -> None:
    with pytest.raises(suite.ScenarioError, match="no scenario files"):
        suite.load_scenarios([tmp_path])
    with pytest.raises(suite.ScenarioError, match="no such file or directory"):
        suite.load_scenarios([tmp_path / "missing"])


def test_namespaced_cluster_objects_default_to_the_incident_namespace() -> None:
    loaded = parsed(
        cluster=[
            {"kind": "Pod", "metadata": {"name": "web-1"}},
            {"kind": "Node", "metadata": {"name": "n1"}},
            {"kind": "Pod", "metadata": {"name": "other", "namespace": "kube-system"}},
        ]
    )
    assert loaded.cluster is not None
    assert [obj["metadata"].get("namespace") for obj in loaded.cluster] == ["shop", None, "kube-system"]


@pytest.mark.parametrize(
    ("expect", "problem"),
    [
        (
            {"workflowIds": ["no-such-workflow"]},
            "expect.workflowIds: 'no-such-workflow' is not in the catalog",
        ),
        (
            {"workflowIds": ["restart-pods"], "forbiddenWorkflowIds": ["typo-workflow"]},
            "expect.forbiddenWorkflowIds: 'typo-workflow' is not in the catalog",
        ),
        (
            {"workflowIds": ["oomkill-scale-out-raise-limits"]},
            "'oomkill-scale-out-raise-limits' can never be selected here (riskLevel high exceeds",
        ),
        (
            {"workflowIds": ["oomkill-increase-memory"], "parameters": {"REPLICAS": 3}},
            "expect.parameters.REPLICAS: no expected workflow declares this parameter",
        ),
        (
            {"workflowIds": ["scale-out-deployment"], "parameters": {"REPLICAS": "many"}},
            "expect.parameters.REPLICAS: expected an integer",
        ),
    ],
)
def test_expectations_the_catalog_cannot_meet_are_rejected_before_running(
    expect: dict[str, Any], problem: str
) -> None:
    with pytest.raises(suite.ScenarioError) as caught:
        suite.check_against([parsed(expect=expect)], CATALOG)
    assert problem in str(caught.value)
    assert "s.yaml" in str(caught.value)


def test_a_bad_scenario_makes_the_command_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, "typo.yaml", doc(expect={"workflowIds": ["restart-podz"]}))
    code = cli.main(["eval", "--scenarios", str(tmp_path), "--catalog", str(ROOT / "examples/catalog")])
    assert code == 2
    err = capsys.readouterr().err
    assert "typo.yaml: expect.workflowIds: 'restart-podz' is not in the catalog" in err
    assert "Traceback" not in err


# ---- the shipped corpus --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus() -> list[suite.Scenario]:
    return suite.load_scenarios([CORPUS])


def test_the_corpus_loads_fits_the_example_catalog_and_has_at_least_40_scenarios(
    corpus: list[suite.Scenario],
) -> None:
    suite.check_against(corpus, CATALOG)
    assert len(corpus) >= 40


def test_the_corpus_covers_every_dd_recovery_003_reason_code(corpus: list[suite.Scenario]) -> None:
    as_failures = {
        previous.failure.reason
        for s in corpus
        if s.spec.recovery is not None
        for previous in s.spec.recovery.previous_executions
    }
    assert set(resources.CANONICAL_REASON_CODES) <= as_failures
    assert {s.spec.signal.type for s in corpus} & set(resources.CANONICAL_REASON_CODES) >= {
        "OOMKilled",
        "ImagePullBackOff",
        "NodeNotReady",
        "Forbidden",
    }


def test_the_corpus_has_every_kind_of_trap(corpus: list[suite.Scenario]) -> None:
    tagged = {
        tag: [s for s in corpus if tag in s.tags] for tag in ("trap-policy", "trap-similar", "trap-recovery")
    }
    tagged |= {tag: [s for s in corpus if tag in s.tags] for tag in ("trap-injection", "trap-no-fit")}
    assert all(len(found) >= 2 for found in tagged.values()), {k: len(v) for k, v in tagged.items()}
    expected = {w for s in tagged["trap-similar"] for w in s.expect.workflow_ids}
    assert {"oomkill-increase-memory", "oomkill-increase-memory-jvm"} <= expected
    assert all(s.expect.review_expected for s in tagged["trap-no-fit"])


def test_policy_traps_forbid_workflows_the_business_context_really_excludes(
    corpus: list[suite.Scenario],
) -> None:
    for s in (s for s in corpus if "trap-policy" in s.tags):
        assert s.expect.forbidden_workflow_ids, s.name
        for workflow_id in s.expect.forbidden_workflow_ids:
            workflow = CATALOG.get(workflow_id)
            assert workflow is not None
            assert catalog.policy.ineligibility(workflow.spec, s.spec.business_context), (s.name, workflow_id)


def test_recovery_traps_expect_an_alternative_to_what_already_failed(corpus: list[suite.Scenario]) -> None:
    recoveries = [s for s in corpus if "trap-recovery" in s.tags]
    for s in recoveries:
        assert s.spec.recovery is not None, s.name
        failed = {p.selected_workflow.workflow_id for p in s.spec.recovery.previous_executions}
        assert not failed & set(s.expect.workflow_ids), s.name


# ---- the in-memory cluster, through the real tool box -------------------------------------------------


def _objects() -> list[dict[str, Any]]:
    owner = [{"kind": "Deployment", "name": "web", "uid": "d1"}]
    return [
        {"kind": "Deployment", "metadata": {"name": "web", "namespace": "shop", "uid": "d1"}, "spec": {}},
        {
            "kind": "ReplicaSet",
            "metadata": {"name": "web-7f", "namespace": "shop", "uid": "r1", "ownerReferences": owner},
        },
        {
            "kind": "Pod",
            "metadata": {
                "name": "web-7f-a",
                "namespace": "shop",
                "ownerReferences": [{"kind": "ReplicaSet", "name": "web-7f"}],
            },
            "spec": {"nodeName": "n1", "containers": [{"name": "app"}]},
            "status": {"phase": "Running"},
        },
        {
            "kind": "Pod",
            "metadata": {"name": "sidecars", "namespace": "shop"},
            "spec": {"nodeName": "n1", "containers": [{"name": "app"}, {"name": "proxy"}]},
        },
        {
            "kind": "Pod",
            "metadata": {"name": "stray", "namespace": "shop"},
            "spec": {"containers": [{"name": "x"}]},
        },
        {
            "kind": "Event",
            "metadata": {"name": "e1", "namespace": "shop"},
            "involvedObject": {"kind": "Pod", "name": "web-7f-a", "namespace": "shop"},
            "reason": "BackOff",
            "type": "Warning",
            "message": "Back-off restarting failed container app",
            "lastTimestamp": "2026-11-20T10:00:00Z",
        },
    ]


def toolbox(reader: tools.ClusterReader) -> tools.ToolBox:
    spec = resources.AIAnalysisSpec.model_validate(SPEC)
    return tools.ToolBox(spec=spec, catalog=CATALOG, reader=reader, max_chars=8000)


async def test_the_in_memory_cluster_serves_objects_events_and_pods_of_an_owner() -> None:
    box = toolbox(cluster.InMemoryCluster(_objects()))
    found = await box.call("get_resource", {"kind": "deploy", "name": "web"})
    assert not found.is_error and "Deployment shop/web" in found.text
    events = await box.call("list_events", {"kind": "Pod", "name": "web-7f-a"})
    assert "BackOff" in events.text and "Back-off restarting failed container app" in events.text
    pods = await box.call("list_pods_of_owner", {"kind": "Deployment", "name": "web"})
    assert "web-7f-a" in pods.text and "stray" not in pods.text and "sidecars" not in pods.text
    missing = await box.call("get_resource", {"kind": "Deployment", "name": "api"})
    assert missing.is_error and "Deployment shop/api not found" in missing.text


async def test_the_in_memory_cluster_serves_current_previous_and_tailed_logs() -> None:
    logs = {
        "web-7f-a/app": suite.PodLog(current="one\ntwo\nthree", previous="OOM at the end"),
        "sidecars/proxy": suite.PodLog(current="proxy ready"),
    }
    box = toolbox(cluster.InMemoryCluster(_objects(), logs=logs))
    tail = await box.call("get_pod_logs", {"name": "web-7f-a", "tail_lines": 2})
    assert "two\nthree" in tail.text and "one" not in tail.text
    previous = await box.call("get_pod_logs", {"name": "web-7f-a", "previous": True})
    assert "OOM at the end" in previous.text
    ambiguous = await box.call("get_pod_logs", {"name": "sidecars"})
    assert ambiguous.is_error and "choose one of: [app proxy]" in ambiguous.text
    chosen = await box.call("get_pod_logs", {"name": "sidecars", "container": "proxy"})
    assert "proxy ready" in chosen.text
    no_previous = await box.call("get_pod_logs", {"name": "sidecars", "container": "proxy", "previous": True})
    assert no_previous.is_error and "previous terminated container" in no_previous.text
    unscheduled = await box.call("get_pod_logs", {"name": "stray"})
    assert unscheduled.is_error and "not scheduled to a node" in unscheduled.text


async def test_what_one_conversation_reads_cannot_change_the_next_one() -> None:
    reader = cluster.InMemoryCluster(_objects())
    first = await reader.get_object(kind="Deployment", name="web", namespace="shop")
    first["spec"]["replicas"] = 99
    again = await reader.get_object(kind="Deployment", name="web", namespace="shop")
    assert again["spec"] == {}


def test_a_scenario_without_cluster_has_no_reader() -> None:
    assert cluster.InMemoryCluster.of(parsed()) is None
    assert cluster.InMemoryCluster.of(parsed(cluster=[])) is not None


# ---- scoring -------------------------------------------------------------------------------------


def status(
    *,
    selected: str | None = None,
    parameters: dict[str, str] | None = None,
    review: resources.HumanReviewReason | None = None,
    attempts: list[tuple[str | None, bool, list[str]]] | None = None,
    alternatives: list[str] | None = None,
) -> resources.AIAnalysisStatus:
    chosen = None
    if selected is not None:
        chosen = resources.SelectedWorkflow(
            workflow_id=selected,
            version="1.0.0",
            container_image="img",
            confidence=0.8,
            rationale="r",
            parameters=parameters or {},
        )
    return resources.AIAnalysisStatus(
        phase="Completed",
        selected_workflow=chosen,
        needs_human_review=review is not None,
        human_review_reason=review,
        validation_attempts=[
            resources.ValidationAttempt(
                attempt=i, workflow_id=w, valid=v, errors=e, at="2026-11-20T10:00:00Z"
            )
            for i, (w, v, e) in enumerate(attempts or [(selected, True, [])], start=1)
        ],
        alternative_workflows=[resources.AlternativeWorkflow(workflow_id=a) for a in alternatives or []]
        or None,
        llm=resources.LLMUsage(provider="p", input_tokens=100, output_tokens=10, requests=2),
    )


def score(s: suite.Scenario, st: resources.AIAnalysisStatus) -> scoring.RunResult:
    return scoring.score(s, status=st, index=CATALOG, run=1, latency_seconds=0.5)


def test_a_selection_among_the_expected_workflows_is_correct_even_when_flagged_for_review() -> None:
    s = parsed(expect={"workflowIds": ["oomkill-increase-memory", "oomkill-restart-heap-tuning"]})
    result = score(s, status(selected="oomkill-restart-heap-tuning", review="low_confidence"))
    assert result.correct and result.needs_human_review and result.parameters_valid is True
    assert result.input_tokens == 100 and result.first_answer_valid is True
    assert not score(s, status(selected="restart-pods")).correct


def test_no_selection_is_wrong_when_a_workflow_was_expected_and_names_the_rejected_candidate() -> None:
    st = status(
        review="parameters_incomplete",
        attempts=[("oomkill-increase-memory", False, ["[missing_parameter] required parameter 'X'"])],
        alternatives=["oomkill-increase-memory"],
    )
    result = score(parsed(), st)
    assert not result.correct
    assert result.candidate == "oomkill-increase-memory"
    assert result.parameters_valid is False


def test_expected_review_is_correct_only_without_a_selection_and_with_an_accepted_reason() -> None:
    s = parsed(expect={"workflowIds": [], "expectReview": ["no_eligible_workflow", "inconclusive"]})
    assert score(s, status(review="no_eligible_workflow", attempts=[(None, True, [])])).correct
    assert not score(s, status(review="validation_failed", attempts=[("x", False, ["[policy] no"])])).correct
    assert not score(s, status(selected="restart-pods", review="inconclusive")).correct
    anything = parsed(expect={"workflowIds": [], "expectReview": "any"})
    rejected = status(review="validation_failed", attempts=[("x", False, ["[policy] no"])])
    assert score(anything, rejected).correct


def test_forbidden_selected_and_forbidden_rejected_are_told_apart() -> None:
    s = parsed(expect={"workflowIds": ["restart-pods"], "forbiddenWorkflowIds": ["force-recreate-pods"]})
    picked = score(s, status(selected="force-recreate-pods"))
    assert picked.forbidden_selected and not picked.correct
    caught = status(
        selected="restart-pods",
        attempts=[("force-recreate-pods", False, ["[policy] not eligible"]), ("restart-pods", True, [])],
    )
    result = score(s, caught)
    assert result.correct and not result.forbidden_selected
    assert result.forbidden_rejected == ["force-recreate-pods"]
    assert result.first_answer_valid is False and result.answers == 2


def test_expected_parameters_compare_canonical_values_and_patterns() -> None:
    s = parsed(
        expect={
            "workflowIds": ["scale-out-deployment"],
            "parameters": {
                "REPLICAS": 6,
                "UPDATE_HPA_MIN": True,
                "TARGET_RESOURCE_NAME": {"pattern": "^we.$"},
            },
        }
    )
    good = {"REPLICAS": "6", "UPDATE_HPA_MIN": "true", "TARGET_RESOURCE_NAME": "web"}
    assert score(s, status(selected="scale-out-deployment", parameters=good)).parameters_matched is True
    bad = score(s, status(selected="scale-out-deployment", parameters=good | {"REPLICAS": "5"}))
    assert bad.correct and bad.parameters_matched is False
    assert bad.parameter_mismatches == ["REPLICAS: expected 6, got '5'"]
    wrong_workflow = score(s, status(selected="rollback-deployment"))
    assert wrong_workflow.parameters_matched is False
    assert score(parsed(), status(selected="oomkill-increase-memory")).parameters_matched is None


def test_a_provider_failure_is_an_incorrect_run_with_the_error() -> None:
    result = scoring.errored(parsed(), error="ProviderUnavailable: 529", run=2, latency_seconds=3.0)
    assert not result.correct and result.error == "ProviderUnavailable: 529" and result.run == 2


# ---- reports -------------------------------------------------------------------------------------

SCENARIOS = [
    parsed(name="a", tags=["memory", "trap-policy"]),
    parsed(name="b", tags=["memory"]),
    parsed(name="c", expect={"workflowIds": [], "expectReview": "any"}),
]


def fake_results() -> list[scoring.RunResult]:
    usage = resources.LLMUsage(
        provider="p", model="m", requests=3, input_tokens=1000, output_tokens=50, tool_calls=2
    )

    def run(name: str, n: int, **fields: Any) -> scoring.RunResult:
        defaults: dict[str, Any] = {"usage": usage, "latency_seconds": 1.0}
        return scoring.RunResult(scenario=name, run=n, **(defaults | fields))

    return [
        run("a", 1, correct=True, selected_workflow="w1", parameters_valid=True, parameters_matched=True),
        run(
            "a",
            2,
            correct=False,
            selected_workflow="w9",
            forbidden_selected=True,
            parameters_valid=True,
            latency_seconds=4.0,
        ),
        run(
            "b",
            1,
            correct=False,
            human_review_reason="parameters_incomplete",
            needs_human_review=True,
            parameters_valid=False,
            latency_seconds=2.0,
        ),
        run("b", 2, correct=False, error="ProviderUnavailable: 529", usage=None, latency_seconds=9.0),
        run(
            "c",
            1,
            correct=True,
            human_review_reason="no_eligible_workflow",
            needs_human_review=True,
            latency_seconds=3.0,
        ),
        run(
            "c",
            2,
            correct=True,
            human_review_reason="no_eligible_workflow",
            needs_human_review=True,
            latency_seconds=5.0,
            forbidden_rejected=["x"],
        ),
    ]


META = report.Meta(
    provider="anthropic",
    model="m",
    catalog=["cat"],
    scenarios=["dir"],
    repeat=2,
    generated_at="2026-11-20T10:00:00Z",
)


def test_the_summary_numbers_of_a_known_result_set() -> None:
    summary = tally.summarize(fake_results(), scenarios=SCENARIOS)
    assert (summary.runs, summary.scenarios, summary.correct.count) == (6, 3, 3)
    assert summary.accuracy == 0.5
    assert (summary.parameters_valid.count, summary.parameters_valid.total) == (2, 3)
    assert (summary.parameters_matched.count, summary.parameters_matched.total) == (1, 1)
    assert (summary.human_review.count, summary.human_review.total) == (3, 5)
    assert (summary.forbidden_selected, summary.forbidden_rejected, summary.errors) == (1, 1, 1)
    assert summary.tokens["input_tokens"] == 5000 and summary.tokens["requests"] == 15
    assert summary.latency_seconds == {"p50": 3.5, "p95": 8.0, "mean": 4.0, "max": 9.0}
    assert summary.by_tag["memory"] == tally.Rate(1, 4)
    assert summary.by_tag["trap-policy"] == tally.Rate(1, 2)
    assert summary.unstable == ["a", "b"]


def test_percentiles_interpolate_and_survive_no_values() -> None:
    assert tally.percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert tally.percentile([7.0], 0.95) == 7.0
    assert tally.percentile([], 0.5) == 0.0


def test_the_writers_produce_json_markdown_and_png_with_the_numbers(tmp_path: Path) -> None:
    results = fake_results()
    summary = tally.summarize(results, scenarios=SCENARIOS)
    err = io.StringIO()
    written = command.write(tmp_path, results, summary=summary, scenarios=SCENARIOS, meta=META, stderr=err)
    document = json.loads((tmp_path / "report.json").read_text())
    assert document["summary"]["accuracy"] == 0.5 and document["summary"]["correct"] == 3
    assert document["summary"]["tokens"]["inputTokens"] == 5000
    assert document["summary"]["latencySeconds"]["p95"] == 8.0
    runs = [r for s in document["scenarios"] for r in s["runs"]]
    assert sum(r["correct"] for r in runs) / len(runs) == document["summary"]["accuracy"]
    assert document["scenarios"][0]["expect"] == {"workflowIds": ["oomkill-increase-memory"]}
    assert runs[3]["error"] == "ProviderUnavailable: 529" and runs[0]["usage"]["inputTokens"] == 1000
    markdown = (tmp_path / "report.md").read_text()
    assert "| accuracy | 50.0% (3/6) |" in markdown
    assert "| human review | 60.0% (3/5) |" in markdown
    assert "| latency | p50 3.50s · p95 8.00s · max 9.00s |" in markdown
    assert "| forbidden workflow selected | 1 (proposed, then rejected: 1) |" in markdown
    assert "| `memory` | 4 | 1 | 25.0% (1/4) |" in markdown
    assert "w9 **FORBIDDEN**" in markdown and "~ 1/2" in markdown
    assert "error: ProviderUnavailable: 529" in markdown
    if chart.available():
        assert (tmp_path / "report.png").read_bytes().startswith(b"\x89PNG")
        assert written == [tmp_path / "report.json", tmp_path / "report.md", tmp_path / "report.png"]
    else:
        assert "matplotlib is not installed" in err.getvalue()


def test_without_matplotlib_the_png_is_skipped_with_a_clear_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    assert not chart.available()
    results = fake_results()
    summary = tally.summarize(results, scenarios=SCENARIOS)
    err = io.StringIO()
    written = command.write(tmp_path, results, summary=summary, scenarios=SCENARIOS, meta=META, stderr=err)
    assert written == [tmp_path / "report.json", tmp_path / "report.md"]
    assert not (tmp_path / "report.png").exists()
    assert "matplotlib is not installed, skipped report.png: pip install matplotlib" in err.getvalue()


def test_markdown_cells_cannot_break_the_table() -> None:
    s = parsed(name="pipe")
    result = scoring.RunResult(scenario="pipe", run=1, correct=False, error="bad | answer\nsecond line")
    text = report.to_markdown(
        [result], summary=tally.summarize([result], scenarios=[s]), scenarios=[s], meta=META
    )
    row = next(line for line in text.splitlines() if line.startswith("| `pipe`"))
    assert "bad \\| answer second line" in row
    assert row.count(" | ") == 7


# ---- progress ------------------------------------------------------------------------------------


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_writes_one_line_per_run_in_logs_and_redraws_on_a_terminal() -> None:
    log = io.StringIO()
    bar = progress.Progress(2, stream=log, width=4)
    bar(scoring.RunResult(scenario="a", run=1, correct=True, latency_seconds=0.25))
    bar(scoring.RunResult(scenario="b", run=1, correct=False, error="x"))
    assert log.getvalue().splitlines() == [
        "[##--] 1/2 correct 1 | a #1: ok (0.25s)",
        "[####] 2/2 correct 1 | b #1: error (0.00s)",
    ]
    tty = Terminal()
    bar = progress.Progress(1, stream=tty, width=4)
    bar(scoring.RunResult(scenario="a", run=1, correct=False))
    assert tty.getvalue() == "\r\033[K[####] 1/1 correct 0 | a #1: wrong (0.00s)\n"


def test_the_readme_sample_shows_every_scenario_field() -> None:
    readme = (CORPUS / "README.md").read_text()
    fields = ["name", "description", "tags", "analysis", "expect", "cluster", "logs"]
    fields += ["workflowIds", "expectReview", "parameters", "forbiddenWorkflowIds", "pattern"]
    missing = [field for field in fields if f"{field}:" not in readme]
    assert not missing
    assert "aianalysis eval --scenarios examples/eval --catalog examples/catalog" in readme


# ---- the command ---------------------------------------------------------------------------------


def test_ctrl_c_still_writes_the_report_of_the_finished_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_run_one = runner.run_one

    async def interrupted_second(s: suite.Scenario, **kwargs: Any) -> scoring.RunResult:
        if s.name == "second":
            raise KeyboardInterrupt
        return await real_run_one(s, **kwargs)

    monkeypatch.setattr(runner, "run_one", interrupted_second)
    # rank first: the offline provider proposes the best-ranked workflow for a person to complete
    first = {"workflowIds": [], "expectReview": "parameters_incomplete"}
    write(tmp_path, "1.yaml", doc(name="first", expect=first))
    write(tmp_path, "2.yaml", doc(name="second"))
    options = command.Options(
        scenarios=[tmp_path],
        catalog=[ROOT / "examples/catalog"],
        provider="offline",
        concurrency=1,
        out=tmp_path / "out",
    )
    out, err = io.StringIO(), io.StringIO()
    assert command.evaluate(options, stdout=out, stderr=err) == command.INTERRUPTED
    assert "interrupted; reporting the 1 finished runs" in err.getvalue()
    document = json.loads((tmp_path / "out" / "report.json").read_text())
    assert document["summary"]["runs"] == 1 and document["summary"]["accuracy"] == 1.0
    assert [len(s["runs"]) for s in document["scenarios"]] == [1, 0]


class SlowProvider:
    """Conversations that wait a little and never submit; one scenario's provider is down."""

    name = "fake"
    model = "fake-1"

    def __init__(self) -> None:
        self.in_flight = 0
        self.most = 0

    def open(self, *, system: str, prompt: str, toolbox: Any, spec: resources.AIAnalysisSpec) -> Any:
        return SlowConversation(self, down=spec.resource.name == "down")

    async def aclose(self) -> None:
        pass


class SlowConversation:
    def __init__(self, provider: SlowProvider, *, down: bool) -> None:
        self.provider, self.down = provider, down
        self.usage = resources.LLMUsage(provider="fake", requests=1, input_tokens=7)

    async def answer(self) -> llm.Submission:
        if self.down:
            raise errors.ProviderUnavailableError("529 overloaded (retries exhausted)")
        self.provider.in_flight += 1
        self.provider.most = max(self.provider.most, self.provider.in_flight)
        await asyncio.sleep(0.01)
        self.provider.in_flight -= 1
        return llm.Submission(raw=None, prose="I think it is fine.")

    async def correct(self, problems: list[str]) -> llm.Submission:
        return await self.answer()


async def test_the_runner_bounds_concurrency_repeats_and_records_provider_failures() -> None:
    many = [parsed(name=f"s{i}") for i in range(6)]
    down = parsed(name="down", analysis=SPEC | {"resource": {"kind": "Deployment", "name": "down"}})
    provider = SlowProvider()
    seen: list[str] = []
    results = await runner.run_all(
        [*many, down],
        index=CATALOG,
        provider=provider,
        settings=settings.Settings(),
        repeat=2,
        concurrency=3,
        on_result=lambda r: seen.append(r.scenario),
    )
    assert provider.most == 3
    assert [(r.scenario, r.run) for r in results] == [(s.name, n) for s in [*many, down] for n in (1, 2)]
    assert len(seen) == 14
    failed = [r for r in results if r.scenario == "down"]
    assert all(r.error == "ProviderUnavailable: 529 overloaded (retries exhausted)" for r in failed)
    answered = results[0]
    assert not answered.correct and answered.human_review_reason == "validation_failed"
    assert answered.answers == 3 and answered.input_tokens == 7
