"""The ground floor's own vocabulary: one timestamp format, one condition merge, one merge patch."""

from __future__ import annotations

import datetime

from aianalysis import resources

CET = datetime.timezone(datetime.timedelta(hours=1))
NOW = datetime.datetime(2026, 11, 20, 11, 0, 5, 123456, tzinfo=CET)
LATER = NOW + datetime.timedelta(seconds=30)


def test_timestamps_are_rfc3339_utc_seconds_as_kubernetes_writes_them() -> None:
    assert resources.timestamp(NOW) == "2026-11-20T10:00:05Z"


def test_a_lease_gets_microseconds_and_a_naive_time_is_utc() -> None:
    assert resources.timestamp(NOW, microseconds=True) == "2026-11-20T10:00:05.123456Z"
    assert resources.timestamp(datetime.datetime(2026, 11, 20, 10, 0, 5)) == "2026-11-20T10:00:05Z"


def test_timestamps_parse_back_and_garbage_is_none() -> None:
    utc = NOW.astimezone(datetime.UTC)
    assert resources.parse_timestamp("2026-11-20T10:00:05.123456Z") == utc
    assert resources.parse_timestamp(resources.timestamp(NOW)) == utc.replace(microsecond=0)
    assert resources.parse_timestamp("2026-11-20T11:00:05+01:00") == utc.replace(microsecond=0)
    assert resources.parse_timestamp("2026-11-20T10:00:05") == utc.replace(microsecond=0)
    assert [resources.parse_timestamp(x) for x in ("", "yesterday", None, 5)] == [None] * 4


def _ready(status: resources.ConditionStatus, reason: str, at: datetime.datetime) -> resources.Condition:
    return resources.condition(resources.READY, status, reason, "m" * 2000, now=at, generation=3)


def test_a_condition_cuts_its_message_and_names_its_generation() -> None:
    made = _ready("True", "Done", NOW)
    assert len(made.message) == 1024 and made.observed_generation == 3
    assert made.last_transition_time == "2026-11-20T10:00:05Z"


def test_merging_keeps_the_transition_time_while_the_status_stays() -> None:
    first = resources.set_condition(None, _ready("False", "Waiting", NOW))
    same = resources.set_condition(first, _ready("False", "StillWaiting", LATER))
    moved = resources.set_condition(same, _ready("True", "Done", LATER))

    assert [(c.reason, c.last_transition_time) for c in same] == [("StillWaiting", "2026-11-20T10:00:05Z")]
    assert [(c.reason, c.last_transition_time) for c in moved] == [("Done", "2026-11-20T10:00:35Z")]


def test_merging_keeps_other_writers_conditions_in_place() -> None:
    theirs = resources.condition("Executed", "True", "JobSucceeded", "", now=NOW, generation=1)
    ours = resources.condition("RecoveryStarted", "True", "RecoveryCreated", "", now=NOW, generation=1)
    merged = resources.set_condition([theirs, _ready("False", "Waiting", NOW)], ours)
    assert [c.type for c in merged] == ["Executed", "Ready", "RecoveryStarted"]
    replaced = resources.set_condition(merged, _ready("True", "Done", LATER))
    assert [c.type for c in replaced] == ["Executed", "Ready", "RecoveryStarted"]
    assert replaced[0] is theirs and replaced[2] is ours


def test_a_merge_patch_nulls_what_is_unset_but_never_another_writers_field() -> None:
    status = resources.AIAnalysisStatus(phase="Completed", reason="WorkflowSelected")
    patch = status.merge_patch()
    assert patch["phase"] == "Completed" and patch["selectedWorkflow"] is None
    assert "intake" not in patch, "the intake's counters are the intake's to write"
    execution = resources.WorkflowExecutionStatus(phase="Running").merge_patch()
    assert execution["failureDetails"] is None and "phase" in execution


def test_an_aianalysis_is_made_one_way_owned_by_the_execution_it_recovers_from() -> None:
    spec = resources.AIAnalysisSpec(
        signal=resources.Signal(type="OOMKilled", severity="high"),
        resource=resources.ResourceRef(kind="Deployment", name="api", namespace="shop"),
    )
    alert = resources.new_aianalysis(name="a-1", namespace="shop", spec=spec, labels={"l": "v"})
    assert alert == {
        "apiVersion": "kubernaut.io/v1alpha1",
        "kind": "AIAnalysis",
        "metadata": {"name": "a-1", "namespace": "shop", "labels": {"l": "v"}},
        "spec": spec.wire(),
    }
    failed = {"metadata": {"name": "exec-1", "uid": "u-1"}}
    recovery = resources.new_aianalysis(
        name="a-1-recovery-1",
        namespace="shop",
        spec=spec,
        labels={},
        annotations={"k": "v"},
        execution=failed,
    )
    [owner] = recovery["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("WorkflowExecution", "exec-1", "u-1")
    assert owner["controller"] is False and owner["blockOwnerDeletion"] is False
    assert recovery["metadata"]["annotations"] == {"k": "v"}
