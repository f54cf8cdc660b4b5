"""Pure: the times of an assessment, all taken from status timestamps (never from memory), so that
a restarted operator resumes a window where it was: ``assessAfter = completedAt + window``."""

from __future__ import annotations

import re

_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


def window_seconds(declared: str | None, *, default_seconds: float) -> int:
    """A workflow's ``stabilizationWindow`` (``5m``, ``90s``, ``1h30m``), else the default."""
    match = _DURATION.fullmatch(declared.strip()) if declared else None
    if not match or not any(match.groups()):
        return int(default_seconds)
    hours, minutes, seconds = (int(g or 0) for g in match.groups())
    return hours * 3600 + minutes * 60 + seconds
