"""Tokenizing for the catalog's text match: deterministic, dependency-free, and the same for
workflows and queries (so a word matches itself whatever its case or plural)."""

from __future__ import annotations

import re

_TOKEN = re.compile(r"[a-z0-9]+")
#: Words as people write signal types: ``OOMKilled``, ``pod-oom-killer``, ``disk_pressure``.
_WORD = re.compile(r"[a-z0-9](?:[a-z0-9_.-]*[a-z0-9])?")

#: English function words plus filler common in LLM-written queries; they match everything, so
#: they would only dilute the score.
STOPWORDS = frozenset(
    """
    a about after again all also an and any are as at be because been before being between both but
    by can could did do does doing down due during each for from further had has have having here
    how i if in into is it its itself just may might more most must need needs no nor not now of
    off on once only or other our out over own same should so some such than that the their them
    then there these they this those through to too under until up very was we were what when
    where which while who why will with would you your
    """.split()  # noqa: SIM905  (a word list reads better than 120 quoted strings)
)


def tokenize(text: str) -> list[str]:
    """Normalized content tokens in order of appearance (duplicates kept)."""
    return [_stem(token) for token in _TOKEN.findall(text.casefold()) if _keep(token)]


def token_set(text: str) -> frozenset[str]:
    return frozenset(tokenize(text))


def words(text: str) -> list[str]:
    """Casefolded whole words, keeping inner ``-``, ``_`` and ``.``, to spot signal-type names."""
    return _WORD.findall(text.casefold())


def _keep(token: str) -> bool:
    return len(token) > 1 and token not in STOPWORDS


def _stem(token: str) -> str:
    """Fold plurals only ("limits" → "limit", "retries" → "retry"): enough for catalog prose,
    and predictable, unlike a full stemmer."""
    if len(token) > 4 and token.endswith("ies"):
        return token[:-3] + "y"
    if len(token) > 3 and token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token
