"""``aianalysis demo`` chooses its world from ``AIANALYSIS_DEMO_WORLD``; a value it does not know is a
clear error before anything starts."""

from __future__ import annotations

import pytest

from aianalysis import errors
from aianalysis_dev import demo


def test_an_unknown_world_is_refused_before_anything_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(demo.WORLD_ENV, "kind")
    lines: list[str] = []
    with pytest.raises(errors.ConfigError, match="takes auto, node or simulated; got 'kind'"):
        demo.run(out=lines.append)
    assert lines == []
