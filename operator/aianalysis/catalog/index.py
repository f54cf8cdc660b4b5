"""The catalog's search index, and the ranking it implements.

Maintained incrementally: each ``add``/``discard`` (one per catalog change) costs microseconds,
and nothing is recomputed per search except what depends on the query. Filters are Python ints
used as bitsets (bit i = slot i), so the policy filter is a handful of big-int ANDs whatever the
catalog size. Posting lists (the slots holding a term in a title, a description, a
``whenNotToUse``) are arrays of slot numbers while a term is rare and bitsets once more than 1/32
of the slots hold it, so they cost at most 4 bytes per (workflow, term) and at most a bit per slot
(at 10,000 workflows: ~2 MB instead of the ~19 MB sets of ints took). Scoring cuts each query
term's posting lists down to the candidates (one AND, or a walk of a short array), sums the
matched weight per slot, groups the slots by score and ranks only the best groups until ``top_k``
are taken: the work grows with what the query matches, not with the catalog. Not thread-safe on
its own: ``store.Catalog`` holds its lock around every call.

Confidence (what ``SearchHit.confidence`` means)
------------------------------------------------
The fraction of the best score any workflow could get for this query::

    confidence = (0.6 × signal + 0.4 × text) / (0.6 × [query names a signal type] + 0.4 × [query has terms])

- ``signal`` is 1 when the workflow's ``labels.signalTypes`` contain a signal type the query names
  (``signal_type``, or, without it, any word of ``text`` that is a signal type in the catalog,
  case-insensitive), else 0. A workflow that declares no signal types (classified by
  ``actionType``, as Kubernaut's are) gets it when the signal type's words appear in its title,
  description or ``whenToUse`` and not in its ``whenNotToUse``.
- ``text`` is the IDF-weighted share of the query's other terms the workflow contains: a term in
  the title counts fully, a term found only in the description (with ``guidance.whenToUse``,
  ``guidance.preconditions`` and the words of ``actionType``) counts half, and a term found only in
  ``guidance.whenNotToUse`` counts minus half: a look-alike that says it is not for this case
  ranks below the one that is. IDF (``ln(1 + (N+1) / (df+1))`` over the N indexed workflows, all
  versions) makes rare, specific words weigh more than common ones; a term no workflow contains
  still counts in the denominator, so an unmatched part of the query lowers every confidence: it
  measures coverage of what was asked, not of what happens to exist.

So 1.0 = the workflow handles the signal type asked for and every query term appears in its title;
a signal-type match alone is worth 0.6 when the query also has terms, which ranks every workflow
for the right signal above every workflow that only shares words with the query. A query with
neither signal type nor terms lists the eligible workflows with confidence 0.0. Otherwise only
workflows with a positive score are returned. Ties: workflowId ascending, then newest version.

Versions: eligibility is decided per version, and then (unless ``all_versions``) the highest
ELIGIBLE version of each workflowId is kept, so a newer version restricted away from this
incident never hides an older one that fits it.
"""

from __future__ import annotations

import heapq
import math
import re
import sys
from array import array
from collections.abc import Iterable

from aianalysis import resources
from aianalysis.catalog import actions, model, policy, semver, target, text

SIGNAL_WEIGHT = 0.6
TEXT_WEIGHT = 0.4
TITLE_MATCH = 1.0
DESCRIPTION_MATCH = 0.5
NOT_MATCH = -0.5

_BUSINESS_LABELS = ("environment", "priority", "businessCategory")
_FILTER_LABELS = (*_BUSINESS_LABELS, "severity", "component")
#: A posting list: the slots holding a term, as an array of slot numbers while few workflows hold
#: it (4 bytes a slot), as a bitset int once more than 1/32 of the slots do (1 bit a slot).
_Posting = array | int  # type: ignore[type-arg]  # array is generic only in the stubs
_ONE = re.compile("1")
#: Below this many slots a posting list is an array; it turns into a bitset above 1/32 of the slots.
_MIN_DENSE = 64


class _Newest:
    """Orders semver keys highest first, so ties list the newest version first."""

    __slots__ = ("key",)

    def __init__(self, key: semver.SortKey) -> None:
        self.key = key

    def __lt__(self, other: _Newest) -> bool:
        return self.key > other.key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Newest) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)


class _Entry:
    """A workflow analysed once, when it enters the index. Its terms and filter labels are not kept
    here: the posting lists and masks hold them, and ``discard`` derives them again from the spec
    (at 10,000 workflows, per-entry copies cost ~55 MB of the operator's memory)."""

    __slots__ = ("conditional", "rank", "signals", "version_key", "workflow", "workflow_id")

    def __init__(self, workflow: model.Workflow) -> None:
        spec = workflow.spec
        self.workflow = workflow
        self.workflow_id = sys.intern(spec.workflow_id)
        self.version_key = semver.key(spec.version)
        self.rank = (self.workflow_id, _Newest(self.version_key))
        self.signals = frozenset(sys.intern(policy.norm(signal)) for signal in spec.labels.signal_types)
        self.conditional = policy.is_conditional(spec)

    def terms(self) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
        """Title terms, description terms not in the title, and whenNotToUse terms in neither."""
        spec = self.workflow.spec
        guidance = spec.guidance or resources.WorkflowGuidance()
        title = text.token_set(spec.title)
        positive = " ".join(
            part
            for part in (
                spec.description,
                guidance.when_to_use,
                guidance.preconditions,
                actions.spelled_out(spec.action_type),
            )
            if part
        )
        description = text.token_set(positive) - title
        negative = text.token_set(guidance.when_not_to_use or "") - title - description
        return title, description, negative

    def filters(self) -> list[tuple[str, frozenset[str]]]:
        return [
            (label, frozenset(policy.norm(value) for value in allowed or ()))
            for label, allowed in _filter_labels(self.workflow.spec.labels)
        ]


class Index:
    """Search structures for a set of workflows (at most one per workflowId + version)."""

    def __init__(self) -> None:
        self._slots: list[_Entry | None] = []
        self._free: list[int] = []
        self._all = 0
        self._latest = 0
        self._latest_slot: dict[str, int] = {}
        self._by_id: dict[str, set[int]] = {}
        self._risk_at_most = dict.fromkeys(resources.RISK_ORDER, 0)
        self._unrestricted = dict.fromkeys(_FILTER_LABELS, 0)
        self._admits: dict[str, dict[str, int]] = {label: {} for label in _FILTER_LABELS}
        self._signals: dict[str, int] = {}
        self._unsignalled = 0
        self._conditional = 0
        self._actions: dict[str, int] = {}
        self._title: dict[str, _Posting] = {}
        self._description: dict[str, _Posting] = {}
        self._not: dict[str, _Posting] = {}
        self._document_frequency: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._slots) - len(self._free)

    def add(self, workflow: model.Workflow) -> int:
        """Index ``workflow``; returns the slot to ``discard`` it with."""
        entry = _Entry(workflow)
        slot = heapq.heappop(self._free) if self._free else len(self._slots)
        if slot == len(self._slots):
            self._slots.append(None)
        self._slots[slot] = entry
        self._flip(entry, bit=1 << slot, on=True)
        self._post(entry, slot=slot, on=True)
        self._by_id.setdefault(workflow.workflow_id, set()).add(slot)
        self._elect_latest(workflow.workflow_id)
        return slot

    def discard(self, slot: int) -> None:
        entry = self._slots[slot]
        if entry is None:
            return
        self._slots[slot] = None
        heapq.heappush(self._free, slot)
        self._flip(entry, bit=1 << slot, on=False)
        self._post(entry, slot=slot, on=False)
        workflow_id = entry.workflow.workflow_id
        self._by_id[workflow_id].discard(slot)
        if not self._by_id[workflow_id]:
            del self._by_id[workflow_id]
        self._elect_latest(workflow_id)

    def search(
        self,
        query: model.SearchQuery,
        *,
        business: resources.BusinessContext,
        facts: target.TargetFacts | None = None,
    ) -> list[model.SearchHit]:
        """Policy filter first (the incident's business context, narrowed by the query, and the
        target's detected ``facts``), then the query's hard filters, then ranking. See the module
        docstring for the confidence."""
        candidates = self._candidates(query, business=business, facts=facts)
        if not candidates:
            return []
        wanted = self._wanted_signals(query)
        terms = self._weighted_terms(query.text, wanted)
        if not wanted and not terms:
            listed = ((self._entry(i).rank, i) for i in _positions(candidates))
            return [self._hit(i, 0.0) for _, i in heapq.nsmallest(query.top_k, listed)]
        return [
            self._hit(i, confidence) for confidence, i in self._top(candidates, wanted, terms, query.top_k)
        ]

    def action_types(
        self, *, business: resources.BusinessContext, facts: target.TargetFacts | None = None
    ) -> dict[str, int]:
        """Eligible workflowIds per action type (highest eligible version of each; ``""`` = none)."""
        counts: dict[str, int] = {}
        for slot in _positions(self._candidates(model.SearchQuery(), business=business, facts=facts)):
            action = self._entry(slot).workflow.spec.action_type or ""
            counts[action] = counts.get(action, 0) + 1
        return counts

    # ---- filtering -----------------------------------------------------------------------

    def _candidates(
        self,
        query: model.SearchQuery,
        *,
        business: resources.BusinessContext,
        facts: target.TargetFacts | None = None,
    ) -> int:
        narrowing = policy.narrow(
            business,
            environment=query.environment,
            priority=query.priority,
            business_category=query.business_category,
            risk_tolerance=query.risk_tolerance,
        )
        if narrowing.conflicts:
            return 0
        effective = narrowing.business
        mask = self._all & self._risk_at_most[effective.risk_tolerance]
        incident = (effective.environment, effective.priority, effective.business_category)
        for label, value in zip(_BUSINESS_LABELS, incident, strict=True):
            mask &= self._admitting(label, value)
        severity = query.severity
        if severity is not None:
            severity = resources.SEVERITY_SYNONYMS.get(policy.norm(severity), severity)
        for label, value in (("severity", severity), ("component", query.component)):
            if value is not None:
                mask &= self._admitting(label, value)
        if query.signal_type is not None:
            mask &= self._signals.get(policy.norm(query.signal_type), 0) | self._unsignalled
        if query.action_type is not None:
            mask &= self._actions.get(policy.norm(query.action_type), 0)
        for slot in _positions(mask & self._conditional) if mask & self._conditional else ():
            if policy.conditional_ineligibility(self._entry(slot).workflow.spec, effective, facts=facts):
                mask &= ~(1 << slot)
        return mask if query.all_versions else self._highest_per_id(mask)

    def _highest_per_id(self, mask: int) -> int:
        """Only the highest version of each workflowId among ``mask``: the latest version where it
        survived the filters, else the highest older one that did. Only the older versions that
        survived are walked (after the policy filter: few), never the whole catalog."""
        kept = mask & self._latest
        older = mask & ~self._latest
        if not older:
            return kept
        flags = kept.to_bytes(self._nbytes(), "little")
        latest_slot = self._latest_slot
        best: dict[str, tuple[_Entry, int]] = {}
        for slot in _positions(older):
            entry = self._entry(slot)
            latest = latest_slot[entry.workflow_id]
            if flags[latest >> 3] >> (latest & 7) & 1:
                continue  # its latest version survived
            held = best.get(entry.workflow_id)
            if held is None or entry.version_key > held[0].version_key:
                best[entry.workflow_id] = (entry, slot)
        return kept | _bitset(slot for _, slot in best.values())

    def _admitting(self, label: str, value: str | None) -> int:
        """Slots whose ``label`` admits ``value`` (None = the incident has no value)."""
        if value is None:
            return self._unrestricted[label]
        return self._unrestricted[label] | self._admits[label].get(policy.norm(value), 0)

    # ---- ranking -------------------------------------------------------------------------

    def _wanted_signals(self, query: model.SearchQuery) -> frozenset[str]:
        if query.signal_type is not None:
            return frozenset({policy.norm(query.signal_type)})
        return frozenset(word for word in text.words(query.text) if word in self._signals)

    def _weighted_terms(self, query_text: str, wanted: frozenset[str]) -> list[tuple[str, float]]:
        """Query terms other than the signal types already counted, with IDF weights, sorted so
        every score is summed in the same order (equal matches → bit-identical floats)."""
        rest = " ".join(word for word in text.words(query_text) if word not in wanted)
        size = len(self)
        return [
            (term, math.log(1.0 + (size + 1) / (self._document_frequency.get(term, 0) + 1)))
            for term in sorted(set(text.tokenize(rest)))
        ]

    def _signalled(self, candidates: int, wanted: frozenset[str]) -> int:
        """Candidates that get the signal part of the score."""
        signalled = self._text_signalled(wanted)
        for signal in wanted:
            signalled |= self._signals.get(signal, 0)
        return signalled & candidates

    def _text_signalled(self, wanted: frozenset[str]) -> int:
        """Workflows without signal types whose own words name a wanted signal type (and whose
        whenNotToUse does not)."""
        found = 0
        for signal in wanted:
            words = text.token_set(signal)
            if not words:
                continue
            slots: int | None = None
            for word in words:
                having = _as_bits(self._title.get(word, 0)) | _as_bits(self._description.get(word, 0))
                slots = having if slots is None else slots & having
            found |= slots or 0
        return found & self._unsignalled

    def _top(
        self, candidates: int, wanted: frozenset[str], terms: list[tuple[str, float]], top_k: int
    ) -> list[tuple[float, int]]:
        """The ``top_k`` best (confidence, slot) among the candidates with a positive score, best
        first (ties: rank, then slot).

        Work is bounded by what the query touches: each term's posting lists are cut down to the
        candidates (a bitset AND, or a walk of a short array), the matched weight is summed per
        slot in term order (so equal matches give bit-identical floats), slots are grouped by
        (signal, matched weight), and only the best groups are ranked, until ``top_k`` are taken."""
        total = sum(weight for _, weight in terms)
        denominator = SIGNAL_WEIGHT * bool(wanted) + TEXT_WEIGHT * bool(terms)
        flags = candidates.to_bytes(self._nbytes(), "little")
        matched = [0.0] * len(self._slots)
        for term, weight in terms:
            for postings, factor in (
                (self._title, TITLE_MATCH),
                (self._description, DESCRIPTION_MATCH),
                (self._not, NOT_MATCH),
            ):
                posting = postings.get(term)
                if posting is None:
                    continue
                add = weight * factor
                for i in _restrict(posting, candidates, flags):
                    matched[i] += add
        groups: dict[tuple[bool, float], list[int]] = {}
        signalled = self._signalled(candidates, wanted)
        marks = signalled.to_bytes(self._nbytes(), "little")
        for i in _positions(candidates):
            if marks[i >> 3] >> (i & 7) & 1:
                groups.setdefault((True, matched[i]), []).append(i)
            elif matched[i] > 0.0:
                groups.setdefault((False, matched[i]), []).append(i)
        tiers: dict[float, list[int]] = {}
        for (signal, weight), slots in groups.items():
            share = weight / total if terms else 0.0
            confidence = min(1.0, (SIGNAL_WEIGHT * signal + TEXT_WEIGHT * share) / denominator)
            tiers.setdefault(confidence, []).extend(slots)
        best: list[tuple[float, int]] = []
        for confidence in sorted(tiers, reverse=True):
            ranked = ((self._entry(i).rank, i) for i in tiers[confidence])
            best.extend((confidence, i) for _, i in heapq.nsmallest(top_k - len(best), ranked))
            if len(best) >= top_k:
                break
        return best

    def _hit(self, slot: int, confidence: float) -> model.SearchHit:
        spec = self._entry(slot).workflow.spec
        return model.SearchHit(
            workflow_id=spec.workflow_id,
            version=spec.version,
            title=spec.title,
            description=spec.description,
            confidence=confidence,
            action_type=spec.action_type,
            deprecated=spec.lifecycle == "Deprecated",
        )

    # ---- maintenance ---------------------------------------------------------------------

    def _entry(self, slot: int) -> _Entry:
        entry = self._slots[slot]
        assert entry is not None, f"slot {slot} is free but still set in a mask"
        return entry

    def _nbytes(self) -> int:
        return (len(self._slots) + 7) // 8

    def _flip(self, entry: _Entry, *, bit: int, on: bool) -> None:
        """Set (or clear) the entry's bit in every filter mask it belongs to (a Disabled workflow
        is in none of ``_all``, so no search can return it)."""
        spec = entry.workflow.spec
        if spec.lifecycle != "Disabled":
            self._all = _set(self._all, bit, on=on)
        if not entry.signals:
            self._unsignalled = _set(self._unsignalled, bit, on=on)
        if entry.conditional:
            self._conditional = _set(self._conditional, bit, on=on)
        if spec.action_type:
            _update(self._actions, [policy.norm(spec.action_type)], bit=bit, on=on)
        risk = entry.workflow.spec.risk_level
        for tolerance, mask in self._risk_at_most.items():
            if policy.risk_allowed(risk, tolerance):
                self._risk_at_most[tolerance] = _set(mask, bit, on=on)
        for label, allowed in entry.filters():
            if not allowed:
                self._unrestricted[label] = _set(self._unrestricted[label], bit, on=on)
            _update(self._admits[label], allowed, bit=bit, on=on)
        _update(self._signals, entry.signals, bit=bit, on=on)

    def _post(self, entry: _Entry, *, slot: int, on: bool) -> None:
        """Add (or remove) the entry's terms to the posting lists and document frequencies."""
        title, description, negative = entry.terms()
        lists = ((self._title, title), (self._description, description), (self._not, negative))
        dense_from = max(_MIN_DENSE, len(self._slots) // 32)
        for postings, terms in lists:
            counted = postings is not self._not  # a warning is not a document containing the term
            for term in terms:
                if on:
                    _post_add(postings, sys.intern(term), slot, dense_from=dense_from)
                    if counted:
                        self._document_frequency[term] = self._document_frequency.get(term, 0) + 1
                    continue
                _post_discard(postings, term, slot, sparse_below=dense_from // 4)
                if counted:
                    self._document_frequency[term] -= 1
                    if not self._document_frequency[term]:
                        del self._document_frequency[term]

    def _elect_latest(self, workflow_id: str) -> None:
        """Keep ``_latest`` pointing at the highest version of ``workflow_id``."""
        previous = self._latest_slot.pop(workflow_id, None)
        if previous is not None:
            self._latest &= ~(1 << previous)
        slots = self._by_id.get(workflow_id)
        if slots:
            newest = max(slots, key=lambda slot: self._entry(slot).version_key)
            self._latest_slot[workflow_id] = newest
            self._latest |= 1 << newest


def _positions(mask: int) -> list[int]:
    """Set bits of ``mask``, ascending (the reversed binary text, searched in C)."""
    return [found.start() for found in _ONE.finditer(bin(mask)[:1:-1])]


def _bitset(slots: Iterable[int]) -> int:
    listed = list(slots)
    if not listed:
        return 0
    flags = bytearray((max(listed) >> 3) + 1)
    for slot in listed:
        flags[slot >> 3] |= 1 << (slot & 7)
    return int.from_bytes(flags, "little")


def _as_bits(posting: _Posting) -> int:
    return posting if isinstance(posting, int) else _bitset(posting)


def _restrict(posting: _Posting, candidates: int, flags: bytes) -> list[int]:
    """The slots of ``posting`` among ``candidates`` (``flags``: the candidates as bytes)."""
    if isinstance(posting, int):
        return _positions(posting & candidates)
    return [i for i in posting if flags[i >> 3] >> (i & 7) & 1]


def _post_add(postings: dict[str, _Posting], term: str, slot: int, *, dense_from: int) -> None:
    posting = postings.get(term)
    if posting is None:
        postings[term] = array("I", (slot,))
    elif isinstance(posting, int):
        postings[term] = posting | 1 << slot
    else:
        posting.append(slot)
        if len(posting) > dense_from:
            postings[term] = _bitset(posting)


def _post_discard(postings: dict[str, _Posting], term: str, slot: int, *, sparse_below: int) -> None:
    posting = postings[term]
    if isinstance(posting, int):
        posting &= ~(1 << slot)
        if posting.bit_count() < sparse_below:
            postings[term] = array("I", _positions(posting))
        else:
            postings[term] = posting
    else:
        posting.remove(slot)
    if not postings[term]:
        del postings[term]


def _set(mask: int, bit: int, *, on: bool) -> int:
    return mask | bit if on else mask & ~bit


def _update(masks: dict[str, int], keys: Iterable[str], *, bit: int, on: bool) -> None:
    for key in keys:
        mask = _set(masks.get(key, 0), bit, on=on)
        if mask:
            masks[key] = mask
        else:
            masks.pop(key, None)


def _filter_labels(labels: resources.WorkflowLabels) -> list[tuple[str, list[str] | None]]:
    return [
        ("environment", labels.environment),
        ("priority", labels.priority),
        ("businessCategory", labels.business_category),
        ("severity", list(labels.severity) if labels.severity is not None else None),
        ("component", _kinds(labels.component)),
    ]


def _kinds(components: list[str] | None) -> list[str] | None:
    """``labels.component`` as the lower-case kinds a search's ``component`` names (``*`` = any)."""
    if not components or any(entry.strip() == target.WILDCARD for entry in components):
        return None
    return [entry.strip().rpartition("/")[2] for entry in components]
