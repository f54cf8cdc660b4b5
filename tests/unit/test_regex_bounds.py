"""A catastrophic regex in a catalog entry cannot hang validation: the match is bounded in time
and the value fails with a clear error."""

from __future__ import annotations

import time

from aianalysis import resources
from aianalysis.analysis import validation


def param(pattern: str) -> resources.WorkflowParameter:
    return resources.WorkflowParameter.model_validate(
        {"name": "TARGET", "type": "string", "required": True, "pattern": pattern}
    )


def test_a_catastrophic_pattern_fails_the_value_within_its_time_bound() -> None:
    evil = "a" * 40 + "!"  # (a|aa)+$ backtracks ~fib(40) times on this with an unbounded engine

    started = time.monotonic()
    checked = validation.check_parameters([param("(a|aa)+$")], {"TARGET": evil})
    elapsed = time.monotonic() - started

    assert checked.canonical == {}
    assert any(
        "did not finish within" in error and "report the workflow" in error for error in checked.errors
    )
    assert elapsed < 30, "bounded: an unbounded engine takes hours on this value"


def test_the_same_pattern_still_accepts_a_matching_value() -> None:
    checked = validation.check_parameters([param("(a+)+$")], {"TARGET": "aaaa"})

    assert checked.errors == [] and checked.canonical == {"TARGET": "aaaa"}
