"""Pure: the times of an assessment, all taken from status timestamps (never from memory), so that
a restarted operator resumes a window where it was: ``assessAfter = completedAt + window``."""

from __future__ import annotations

import datetime
import re

_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


def window_seconds(declared: str | None, *, default_seconds: float) -> int:
    """A workflow's ``stabilizationWindow`` (``5m``, ``90s``, ``1h30m``), else the default."""
    match = _DURATION.fullmatch(declared.strip()) if declared else None
    if not match or not any(match.groups()):
        return int(default_seconds)
    hours, minutes, seconds = (int(g or 0) for g in match.groups())
    return hours * 3600 + minutes * 60 + seconds


def parse_time(stamp: object) -> datetime.datetime | None:
    """An RFC 3339 timestamp (None when absent or unreadable)."""
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        parsed = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=datetime.UTC)


def timestamp(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
