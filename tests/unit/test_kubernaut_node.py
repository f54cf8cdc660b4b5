"""The pure parts of ``aianalysis_dev.kubernaut_node``: where a recorded target lives in the
scenario's manifests now, the classification of scenarios, and the report's figures."""

from __future__ import annotations

from aianalysis_dev import kubernaut_node


def objects(namespace: str, *deployments: str) -> list[dict[str, object]]:
    found: list[dict[str, object]] = [{"kind": "Namespace", "metadata": {"name": namespace}}]
    found += [{"kind": "Deployment", "metadata": {"name": d, "namespace": namespace}} for d in deployments]
    return found


def test_a_recorded_target_follows_the_scenarios_renamed_namespace() -> None:
    recorded = {"kind": "Deployment", "name": "checkout-api", "namespace": "demo-rollout"}
    assert kubernaut_node.target_home(objects("demo-shipping", "checkout-api"), recorded) == (
        "demo-shipping",
        "checkout-api",
    )


def test_a_renamed_target_is_the_one_object_of_its_kind_and_never_a_guess_among_several() -> None:
    recorded = {"kind": "Deployment", "name": "old-name", "namespace": "demo"}
    assert kubernaut_node.target_home(objects("demo", "new-name"), recorded) == ("demo", "new-name")
    assert kubernaut_node.target_home(objects("demo", "a", "b"), recorded) == ("demo", "old-name")


def test_every_scenario_is_either_run_or_named_with_a_reason() -> None:
    assert not set(kubernaut_node.FITTING) & set(kubernaut_node.UNFITTING)
    assert all(reason.strip() for reason in kubernaut_node.UNFITTING.values())
    alerts = set(kubernaut_node.FIRES_ON)
    assert {"KubePodCrashLooping", "ContainerOOMKilling", "KubePodNotScheduled"} <= alerts


def test_the_report_counts_right_wrong_declined_and_errors_apart() -> None:
    outcome = kubernaut_node.Outcome
    outcomes = [
        outcome(scenario="a", alert="X", expected=("w1",), selected="w1"),
        outcome(scenario="b", alert="X", expected=("w1",), selected="w2"),
        outcome(scenario="c", alert="X", expected=("w1",), review="no workflow"),
        outcome(scenario="d", alert="X", expected=("w1",), error="timed out"),
    ]
    text = kubernaut_node.report(outcomes, {"e": "needs OLM"})
    assert (
        "right 1/4 of the scenarios that fit one node (1 declined, 1 wrong, 1 errors); 1 do not fit" in text
    )
    assert [line.split()[0] for line in text.splitlines()[:5]] == [
        "right",
        "wrong",
        "declined",
        "error",
        "not",
    ]
