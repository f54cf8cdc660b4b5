"""Time as the API server writes it: one clock type, one formatter, one parser.

Pure code takes ``now`` as a value (a :data:`Clock` is passed in); the processes pass :func:`utcnow`.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable

Clock = Callable[[], datetime.datetime]
"""Wall-clock time, passed in: pure code takes ``now``, the processes pass :func:`utcnow`."""


def utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def timestamp(moment: datetime.datetime, *, microseconds: bool = False) -> str:
    """RFC 3339 in UTC with a ``Z``: second precision, the format Kubernetes writes in statuses,
    conditions and Events; with ``microseconds``, a ``MicroTime`` (a Lease's times). A naive
    ``moment`` is taken as UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    utc = moment.astimezone(datetime.UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if microseconds else "%Y-%m-%dT%H:%M:%SZ")


def parse_timestamp(stamp: object) -> datetime.datetime | None:
    """An RFC 3339 timestamp (``Time`` or ``MicroTime``) as an aware datetime; None when absent or
    unreadable (a stamp without a zone is taken as UTC)."""
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        parsed = datetime.datetime.fromisoformat(stamp)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=datetime.UTC)
