"""gitleaks' rule set (``gitleaks.toml``, vendored verbatim with its MIT license) applied the way
gitleaks applies it, to find the secrets in a text.

The rules are data maintained upstream (222 shapes: cloud keys, SaaS tokens, private keys, JWTs,
webhooks, a generic ``key = value`` rule...), never edited here: ``hack/refresh-gitleaks-rules.sh``
copies a new version in and records its commit and digest in ``gitleaks.source``, which a test
checks. They are written for Go's regexp, so they run on RE2 (``google-re2``): the same syntax and
leftmost-first semantics, and linear time on any input — cluster text is attacker-controlled, and a
backtracking engine running 222 patterns over every tool result is a denial of service waiting.

As gitleaks does: a rule runs only on a text containing one of its keywords (found in one pass over
the lowercased text by an RE2 set); the secret is the rule's ``secretGroup``, else the first non-empty
group, else the match; a rule with an ``entropy`` keeps only secrets above that Shannon entropy;
the global and the rule's allowlists (regexes on the secret, the match or the line; stopwords; the
``AND`` condition) drop what they allow. Path and commit allowlists do not apply to cluster data.
Each rule is compiled the first time a text holds one of its keywords, so the process pays memory
only for the shapes it meets.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.resources
import math
import tomllib
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import re2

RULES_FILE = "gitleaks.toml"
SOURCE_FILE = "gitleaks.source"
_OPTIONS = re2.Options()
_OPTIONS.max_mem = 32 << 20  # the largest rule (generic-api-key) needs ~10 MiB of DFA per text


@dataclasses.dataclass(frozen=True)
class Allowlist:
    target: str  # "secret" | "match" | "line"
    regexes: tuple[str, ...]
    stopwords: tuple[str, ...]
    every: bool  # condition AND: every check must allow

    @functools.cached_property
    def compiled(self) -> tuple[Any, ...]:
        return tuple(re2.compile(r, _OPTIONS) for r in self.regexes)

    def allows(self, *, secret: str, match: str, line: str) -> bool:
        target = {"match": match, "line": line}.get(self.target, secret)
        lowered = secret.lower()
        checks = []
        if self.regexes:
            checks.append(any(r.search(target) for r in self.compiled))
        if self.stopwords:
            checks.append(any(word in lowered for word in self.stopwords))
        return bool(checks) and (all(checks) if self.every else any(checks))


@dataclasses.dataclass(frozen=True)
class GitleaksRule:
    id: str
    regex: str
    keywords: tuple[str, ...]
    entropy: float
    secret_group: int
    allowlists: tuple[Allowlist, ...]

    @functools.cached_property
    def compiled(self) -> Any:
        return re2.compile(self.regex, _OPTIONS)


@dataclasses.dataclass(frozen=True)
class RuleSet:
    rules: tuple[GitleaksRule, ...]
    allowlist: Allowlist
    keywords: tuple[str, ...]
    """Every rule's keywords, once each (the index of one is its position in the RE2 set)."""

    @functools.cached_property
    def _prefilter(self) -> Any:
        found = re2.Set.SearchSet(_OPTIONS)
        for keyword in self.keywords:
            found.Add(re2.escape(keyword))
        found.Compile()
        return found

    @functools.cached_property
    def _by_keyword(self) -> dict[str, tuple[GitleaksRule, ...]]:
        return {k: tuple(r for r in self.rules if k in r.keywords) for k in self.keywords}

    def candidates(self, text: str) -> list[GitleaksRule]:
        """The rules one of whose keywords the text contains (gitleaks' prefilter)."""
        hits = self._prefilter.Match(text.lower()) or ()
        seen: dict[str, GitleaksRule] = {}
        for index in hits:
            for rule in self._by_keyword[self.keywords[index]]:
                seen.setdefault(rule.id, rule)
        return list(seen.values())

    def spans(self, text: str) -> Iterator[tuple[int, int]]:
        """Where the secrets are in ``text`` (character offsets of each secret, not of the match)."""
        for rule in self.candidates(text):
            for found in rule.compiled.finditer(text):
                span = _secret_span(found, rule.secret_group)
                if span is None:
                    continue
                secret = text[span[0] : span[1]]
                if rule.entropy and entropy(secret) <= rule.entropy:
                    continue
                line = _line(text, found.start(), found.end())
                if any(
                    a.allows(secret=secret, match=found.group(), line=line)
                    for a in (self.allowlist, *rule.allowlists)
                ):
                    continue
                yield span


def _secret_span(found: Any, secret_group: int) -> tuple[int, int] | None:
    groups = found.re.groups
    if groups and secret_group:
        return found.span(secret_group) if found.group(secret_group) else None
    for index in range(1, groups + 1):
        if found.group(index):
            return found.span(index)  # type: ignore[no-any-return]
    return found.span()  # type: ignore[no-any-return]


def _line(text: str, start: int, end: int) -> str:
    first = text.rfind("\n", 0, start) + 1
    last = text.find("\n", end)
    return text[first : len(text) if last < 0 else last]


def entropy(text: str) -> float:
    """Shannon entropy in bits per character, as gitleaks computes it."""
    if not text:
        return 0.0
    size = len(text)
    return -sum(n / size * math.log2(n / size) for n in Counter(text).values())


def _allowlist(raw: dict[str, Any]) -> Allowlist:
    return Allowlist(
        target=str(raw.get("regexTarget") or "secret"),
        regexes=tuple(raw.get("regexes") or ()),
        stopwords=tuple(str(w).lower() for w in raw.get("stopwords") or ()),
        every=str(raw.get("condition") or "OR").upper() == "AND",
    )


def parse_rules(data: bytes) -> RuleSet:
    """The rule set of a gitleaks configuration (rules with a regex; path-only rules match files)."""
    config = tomllib.loads(data.decode())
    rules = tuple(
        GitleaksRule(
            id=str(raw["id"]),
            regex=str(raw["regex"]),
            keywords=tuple(str(k).lower() for k in raw.get("keywords") or ()),
            entropy=float(raw.get("entropy") or 0.0),
            secret_group=int(raw.get("secretGroup") or 0),
            allowlists=tuple(_allowlist(a) for a in raw.get("allowlists") or ()),
        )
        for raw in config.get("rules") or ()
        if raw.get("regex")
    )
    unkeyed = [r.id for r in rules if not r.keywords]
    if unkeyed:  # gitleaks runs those on every text; we would rather know than pay it silently
        raise ValueError(f"gitleaks rules without keywords: {', '.join(unkeyed)}")
    keywords = tuple(dict.fromkeys(k for rule in rules for k in rule.keywords))
    return RuleSet(rules=rules, allowlist=_allowlist(config.get("allowlist") or {}), keywords=keywords)


def read_packaged(name: str) -> bytes:
    """A file vendored beside this module (the rules, their source, their license)."""
    return importlib.resources.files(__package__).joinpath(name).read_bytes()


@functools.cache
def rules() -> RuleSet:
    """The vendored rule set, parsed once per process (on first use)."""
    return parse_rules(read_packaged(RULES_FILE))


def source() -> dict[str, str]:
    """``gitleaks.source``: where the vendored rules come from (repository, commit, sha256)."""
    pairs = (line.split("=", 1) for line in read_packaged(SOURCE_FILE).decode().splitlines() if "=" in line)
    return {key.strip(): value.strip() for key, value in pairs}


def merge_spans(spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping or touching spans as one."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged
