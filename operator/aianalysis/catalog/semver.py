"""Semantic-version precedence (semver.org §11), so "latest" means the highest version.

Plain string or tuple-of-ints ordering gets it wrong: ``1.10.0`` > ``1.9.0``, and a prerelease
(``2.0.0-rc.1``) comes *before* its release (``2.0.0``), and numeric prerelease identifiers compare
as numbers (``rc.2`` < ``rc.10``) but below alphanumeric ones.
"""

from __future__ import annotations

import re

from aianalysis import resources

_SEMVER = re.compile(resources.SEMVER_PATTERN)

#: One prerelease identifier: numeric ones (0, n, "") sort before alphanumeric ones (1, 0, text).
Identifier = tuple[int, int, str]
#: (major, minor, patch, is_release, prerelease identifiers, build metadata).
SortKey = tuple[int, int, int, int, tuple[Identifier, ...], str]


def is_valid(version: str) -> bool:
    return _SEMVER.match(version) is not None


def key(version: str) -> SortKey:
    """Sort key giving semver precedence; raises ValueError for a non-semver string.

    Build metadata has no precedence in semver; it is the last element only so that two
    versions differing by build metadata still sort deterministically.
    """
    match = _SEMVER.match(version)
    if match is None:
        raise ValueError(f"not a semantic version: {version!r}")
    major, minor, patch = (int(part) for part in match.group(1, 2, 3))
    prerelease, build = match.group(4), match.group(5)
    identifiers = tuple(_identifier(part) for part in prerelease[1:].split(".")) if prerelease else ()
    return (major, minor, patch, 0 if prerelease else 1, identifiers, build or "")


def highest(versions: list[str]) -> str | None:
    return max(versions, key=key, default=None)


def _identifier(part: str) -> Identifier:
    return (0, int(part), "") if part.isdigit() else (1, 0, part)
