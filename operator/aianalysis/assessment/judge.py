"""Pure: what was observed after an execution → a verdict with its score and evidence.

Order matters and is the point of this module: anything that makes the observation untrustworthy
(clock skew, the target gone, someone else changing it, a configured data source down) decides
*before* health does, so an execution is never called effective on data that cannot support it.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from aianalysis import resources
from aianalysis.assessment import podhealth

AlertState = Literal["resolved", "firing", "unknown", "not_applicable"]
HEALTHY = 0.99
WEIGHTS = {"podHealth": 0.5, "alert": 0.3, "metrics": 0.2}


@dataclasses.dataclass(frozen=True, kw_only=True)
class Metrics:
    """Before/after comparison from Prometheus (None when Prometheus is not configured)."""

    score: float | None
    detail: str
    unavailable: bool = False


@dataclasses.dataclass(frozen=True, kw_only=True)
class Observed:
    target_found: bool = True
    health: podhealth.PodHealth | None = None
    """None: the target's kind runs no Pods (health does not apply)."""
    alert: AlertState = "not_applicable"
    alert_detail: str = ""
    metrics: Metrics | None = None
    before: str | None = None
    after: str | None = None
    now: str | None = None
    skew_seconds: float | None = None
    max_skew_seconds: float = 30.0


@dataclasses.dataclass(frozen=True, kw_only=True)
class Judgement:
    verdict: resources.AssessmentVerdict
    reason: str
    message: str
    score: float | None
    evidence: tuple[resources.AssessmentEvidence, ...]


def judge(seen: Observed) -> Judgement:
    evidence = _evidence(seen)
    blocker = _untrustworthy(seen)
    if blocker is not None:
        verdict, reason, message = blocker
        return Judgement(
            verdict=verdict,
            reason=reason,
            message=message,
            evidence=evidence,
            score=0.0 if verdict == "ineffective" else None,
        )
    verdict, reason, message = _from_health(seen)
    score = _score(seen)
    if verdict in ("effective", "partial") and seen.metrics is not None and seen.metrics.unavailable:
        return Judgement(
            verdict="unknown",
            reason="MetricsUnavailable",
            score=None,
            evidence=evidence,
            message=f"Prometheus could not be queried ({seen.metrics.detail}); {message}",
        )
    return Judgement(verdict=verdict, reason=reason, message=message, score=score, evidence=evidence)


def _untrustworthy(seen: Observed) -> tuple[resources.AssessmentVerdict, str, str] | None:
    if seen.skew_seconds is not None and abs(seen.skew_seconds) > seen.max_skew_seconds:
        return (
            "unknown",
            "ClockSkew",
            f"this operator's clock is {seen.skew_seconds:+.0f}s off the API server's "
            f"(limit {seen.max_skew_seconds:g}s): the window and 'since the execution' cannot be trusted",
        )
    if not seen.target_found:
        return "unknown", "TargetDeleted", "the target was deleted during the stabilization window"
    if seen.after and seen.now and seen.now != seen.after:
        if seen.before and seen.now == seen.before:
            return "ineffective", "Reverted", "the target went back to its state before the execution"
        return (
            "unknown",
            "SpecDrift",
            "someone else changed the target during the window: the outcome cannot be attributed",
        )
    return None


def _from_health(seen: Observed) -> tuple[resources.AssessmentVerdict, str, str]:
    health = seen.health
    if health is None:
        if seen.alert == "resolved" or (seen.metrics is not None and (seen.metrics.score or 0) >= HEALTHY):
            return "effective", "AlertResolved", "the alert resolved after the execution"
        if seen.alert == "firing":
            return "ineffective", "AlertStillFiring", "the alert still fires after the execution"
        return "unknown", "NoData", "nothing to judge by: the target runs no Pods and no alert or metric says"
    if health.pods == 0:
        return "ineffective", "NoPods", "the target has no running Pods after the execution"
    if health.score == 0.0:
        return "ineffective", "StillFailing", "Pods still fail after the execution: " + health.describe()
    if seen.alert == "firing":
        if health.score >= HEALTHY:
            return "partial", "AlertStillFiring", "Pods are healthy but the alert still fires"
        return "ineffective", "AlertStillFiring", "the alert still fires: " + health.describe()
    if health.score < HEALTHY:
        return "partial", "Degraded", "Pods are up but not clean since the execution: " + health.describe()
    if seen.metrics is not None and seen.metrics.score is not None and seen.metrics.score < 0.5:
        return "partial", "MetricsWorse", "Pods are healthy but the metrics got worse: " + seen.metrics.detail
    return "effective", "Healthy", "Pods healthy since the execution: " + health.describe()


def _score(seen: Observed) -> float | None:
    parts: dict[str, float] = {}
    if seen.health is not None:
        parts["podHealth"] = seen.health.score
    if seen.alert in ("resolved", "firing"):
        parts["alert"] = 1.0 if seen.alert == "resolved" else 0.0
    if seen.metrics is not None and seen.metrics.score is not None:
        parts["metrics"] = seen.metrics.score
    if not parts:
        return None
    total = sum(WEIGHTS[k] for k in parts)
    return round(sum(WEIGHTS[k] * v for k, v in parts.items()) / total, 2)


def _evidence(seen: Observed) -> tuple[resources.AssessmentEvidence, ...]:
    out: list[resources.AssessmentEvidence] = []
    if seen.health is not None:
        h = seen.health
        out.append(
            resources.AssessmentEvidence(
                check="podHealth",
                result="pass" if h.score >= HEALTHY else "fail",
                score=h.score,
                detail=h.describe(),
            )
        )
    elif seen.target_found:
        out.append(
            resources.AssessmentEvidence(
                check="podHealth", result="skipped", detail="the target's kind runs no Pods"
            )
        )
    alert_result: resources.EvidenceResult = {"resolved": "pass", "firing": "fail", "unknown": "unknown"}.get(
        seen.alert, "skipped"
    )  # type: ignore[assignment]
    out.append(
        resources.AssessmentEvidence(
            check="alert", result=alert_result, detail=seen.alert_detail or seen.alert
        )
    )
    if seen.metrics is not None:
        m = seen.metrics
        result: resources.EvidenceResult = (
            "unknown" if m.score is None else "pass" if m.score >= 0.5 else "fail"
        )
        out.append(
            resources.AssessmentEvidence(check="metrics", result=result, score=m.score, detail=m.detail)
        )
    out.append(_spec_evidence(seen))
    if seen.skew_seconds is not None:
        ok = abs(seen.skew_seconds) <= seen.max_skew_seconds
        out.append(
            resources.AssessmentEvidence(
                check="clock",
                result="pass" if ok else "fail",
                detail=f"operator clock {seen.skew_seconds:+.1f}s vs the API server",
            )
        )
    return tuple(out)


def _spec_evidence(seen: Observed) -> resources.AssessmentEvidence:
    trail = f"before {seen.before or '-'}, after {seen.after or '-'}, now {seen.now or '-'}"
    if not seen.target_found:
        return resources.AssessmentEvidence(
            check="targetSpec", result="unknown", detail="target deleted; " + trail
        )
    if seen.after and seen.now and seen.now != seen.after:
        return resources.AssessmentEvidence(
            check="targetSpec", result="fail", detail="changed during the window; " + trail
        )
    if seen.before and seen.after and seen.before == seen.after:
        return resources.AssessmentEvidence(
            check="targetSpec", result="pass", detail="the execution left the spec as it was; " + trail
        )
    return resources.AssessmentEvidence(check="targetSpec", result="pass", detail=trail)
