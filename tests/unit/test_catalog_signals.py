"""Signal normalization at analysis time: alert names become the signal types workflows speak of,
whoever wrote the AIAnalysis, and the table is extendable."""

from __future__ import annotations

import pytest

from aianalysis import errors, resources
from aianalysis import settings as settings_mod
from aianalysis.analysis import pipeline
from aianalysis.catalog import signals


def spec(signal_type: str, alert_name: str | None = None) -> resources.AIAnalysisSpec:
    return resources.AIAnalysisSpec.model_validate(
        {
            "signal": {"type": signal_type, "severity": "high", "alertName": alert_name},
            "resource": {"kind": "Deployment", "name": "api", "namespace": "shop"},
        }
    )


@pytest.mark.parametrize(
    ("signal_type", "alert_name", "expected"),
    [
        ("KubePodCrashLooping", None, "CrashLoopBackOff"),
        ("KubeDeploymentRolloutStuck", "KubeDeploymentRolloutStuck", "RolloutStuck"),
        ("Unknown", "KubeNodeNotReady", "NodeNotReady"),
        ("KubePodDisruptionBudgetAtLimit", None, "PDBAtLimit"),
        ("CPUThrottlingHigh", None, "CPUThrottling"),
        ("OOMKilled", "KubePodCrashLooping", "OOMKilled"),  # a stated signal type is kept
        ("SomethingOwn", None, "SomethingOwn"),
    ],
)
def test_alert_names_are_normalized_and_stated_types_kept(
    signal_type: str, alert_name: str | None, expected: str
) -> None:
    normalized = pipeline.normalized(spec(signal_type, alert_name), settings=settings_mod.Settings())
    assert normalized.signal.type == expected


def test_the_table_is_extendable_and_checked() -> None:
    configured = settings_mod.Settings(
        catalog=settings_mod.CatalogSettings(
            signal_types=("PaymentsQueueBacklog=QueueBacklog", "KubePodCrashLooping=Crash")
        )
    )
    assert (
        pipeline.normalized(spec("PaymentsQueueBacklog"), settings=configured).signal.type == "QueueBacklog"
    )
    assert pipeline.normalized(spec("KubePodCrashLooping"), settings=configured).signal.type == "Crash"
    with pytest.raises(errors.ConfigError, match="SIGNAL_TYPES"):
        settings_mod.Settings(catalog=settings_mod.CatalogSettings(signal_types=("no-equals-sign",)))
    assert signals.parse_pairs(("A = B",)) == {"A": "B"}
