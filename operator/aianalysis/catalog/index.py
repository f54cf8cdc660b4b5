"""The catalog's search index, and the ranking it implements.

Maintained incrementally: each ``add``/``discard`` (one per catalog change) costs microseconds,
and nothing is recomputed per search except what depends on the query. Filters are Python ints
used as bitsets (bit i = slot i), so the policy filter is a handful of big-int ANDs whatever the
catalog size; scoring then touches either the surviving candidates or the posting lists of the
query terms, whichever is smaller. Not thread-safe on its own: ``store.Catalog`` holds its lock
around every call.

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
import sys
from collections.abc import Callable, Iterable

from aianalysis import resources
from aianalysis.catalog import actions, model, policy, semver, target, text

SIGNAL_WEIGHT = 0.6
TEXT_WEIGHT = 0.4
TITLE_MATCH = 1.0
DESCRIPTION_MATCH = 0.5
NOT_MATCH = -0.5

_BUSINESS_LABELS = ("environment", "priority", "businessCategory")
_FILTER_LABELS = (*_BUSINESS_LABELS, "severity", "component")
#: The per-query confidence function: (signal type matched, matched text weight) → confidence.
_Scorer = Callable[[bool, float], float]
#: Bit positions set in each byte value, to enumerate a bitset quickly.
_BITS = tuple(tuple(bit for bit in range(8) if value >> bit & 1) for value in range(256))


class _Newest:
    """Orders semver keys highest first, so ties list the newest version first."""

    __slots__ = ("key",)

    def __init__(self, key: semver.Key) -> None:
        self.key = key

    def __lt__(self, other: _Newest) -> bool:
        return self.key > other.key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Newest) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)


#: (-confidence, tie-break rank, slot): sorts best first.
_Scored = tuple[float, tuple[str, _Newest], int]


class _Entry:
    """A workflow analysed once, when it enters the index. Its terms and filter labels are not kept
    here: the posting lists and masks hold them, and ``discard`` derives them again from the spec
    (at 10,000 workflows, per-entry copies cost ~55 MB of the operator's memory)."""

    __slots__ = ("conditional", "rank", "signals", "version_key", "workflow")

    def __init__(self, workflow: model.Workflow) -> None:
        spec = workflow.spec
        self.workflow = workflow
        self.version_key = semver.key(spec.version)
        self.rank = (spec.workflow_id, _Newest(self.version_key))
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
                actions.words(spec.action_type),
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
        self._title: dict[str, set[int]] = {}
        self._description: dict[str, set[int]] = {}
        self._not: dict[str, set[int]] = {}
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
            listed = ((self._entry(i).rank, i) for i in self._positions(candidates))
            return [self._hit(i, 0.0) for _, i in heapq.nsmallest(query.top_k, listed)]
        scored = self._score(candidates, wanted=wanted, terms=terms)
        return [self._hit(i, -negative) for negative, _, i in heapq.nsmallest(query.top_k, scored)]

    def action_types(
        self, *, business: resources.BusinessContext, facts: target.TargetFacts | None = None
    ) -> dict[str, int]:
        """Eligible workflowIds per action type (highest eligible version of each; ``""`` = none)."""
        counts: dict[str, int] = {}
        for slot in self._positions(self._candidates(model.SearchQuery(), business=business, facts=facts)):
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
        for slot in self._positions(mask & self._conditional) if mask & self._conditional else ():
            if policy.conditional_ineligibility(self._entry(slot).workflow.spec, effective, facts=facts):
                mask &= ~(1 << slot)
        return mask if query.all_versions else self._highest_per_id(mask)

    def _highest_per_id(self, mask: int) -> int:
        """Only the highest version of each workflowId among ``mask``: the latest version where it
        survived the filters, else the highest older one that did. Only the older versions that
        survived are walked (after the policy filter: few), never the whole catalog."""
        kept = mask & self._latest
        best: dict[str, int] = {}
        for slot in self._positions(mask & ~self._latest):
            workflow_id = self._entry(slot).workflow.workflow_id
            if kept >> self._latest_slot[workflow_id] & 1:
                continue  # its latest version survived
            held = best.get(workflow_id)
            if held is None or self._entry(slot).version_key > self._entry(held).version_key:
                best[workflow_id] = slot
        for slot in best.values():
            kept |= 1 << slot
        return kept

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
            for term in sorted(set(text.tokens(rest)))
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
            slots: set[int] | None = None
            for word in words:
                having = self._title.get(word, set()) | self._description.get(word, set())
                slots = having if slots is None else slots & having
            for slot in slots or ():
                found |= 1 << slot
        return found & self._unsignalled

    def _score(
        self, candidates: int, *, wanted: frozenset[str], terms: list[tuple[str, float]]
    ) -> list[_Scored]:
        """Every candidate with a positive score."""
        total = sum(weight for _, weight in terms)
        denominator = SIGNAL_WEIGHT * bool(wanted) + TEXT_WEIGHT * bool(terms)

        def confidence(signal: bool, matched: float) -> float:
            share = matched / total if terms else 0.0
            return min(1.0, (SIGNAL_WEIGHT * signal + TEXT_WEIGHT * share) / denominator)

        signalled = self._signalled(candidates, wanted)
        by_candidate = candidates.bit_count() * (len(terms) + 1)
        by_posting = (
            sum(
                len(postings.get(term, ()))
                for term, _ in terms
                for postings in (self._title, self._description, self._not)
            )
            + signalled.bit_count()
        )
        if by_candidate <= by_posting:
            return self._score_candidates(candidates, signalled=signalled, terms=terms, confidence=confidence)
        return self._score_postings(candidates, signalled=signalled, terms=terms, confidence=confidence)

    def _score_candidates(
        self, candidates: int, *, signalled: int, terms: list[tuple[str, float]], confidence: _Scorer
    ) -> list[_Scored]:
        """Scores by walking the candidates."""
        nowhere: set[int] = set()
        postings = [
            (
                weight,
                self._title.get(term, nowhere),
                self._description.get(term, nowhere),
                self._not.get(term, nowhere),
            )
            for term, weight in terms
        ]
        found = []
        for i in self._positions(candidates):
            matched = 0.0
            for weight, in_title, in_description, in_not in postings:
                if i in in_title:
                    matched += weight * TITLE_MATCH
                elif i in in_description:
                    matched += weight * DESCRIPTION_MATCH
                elif i in in_not:
                    matched += weight * NOT_MATCH
            signal = bool(signalled >> i & 1)
            if signal or matched > 0.0:
                found.append((-confidence(signal, matched), self._entry(i).rank, i))
        return found

    def _score_postings(
        self, candidates: int, *, signalled: int, terms: list[tuple[str, float]], confidence: _Scorer
    ) -> list[_Scored]:
        """The same as ``_score_candidates``, walking the query terms' posting lists instead;
        per slot the additions happen in the same order, so the floats are identical (a term is
        in at most one of a workflow's three posting lists)."""
        flags = candidates.to_bytes(self._nbytes(), "little")
        matched: dict[int, float] = {}
        for term, weight in terms:
            for postings, factor in (
                (self._title.get(term, ()), TITLE_MATCH),
                (self._description.get(term, ()), DESCRIPTION_MATCH),
                (self._not.get(term, ()), NOT_MATCH),
            ):
                for i in postings:
                    if flags[i >> 3] >> (i & 7) & 1:
                        matched[i] = matched.get(i, 0.0) + weight * factor
        signalled_slots = set(self._positions(signalled))
        return [
            (-confidence(i in signalled_slots, matched.get(i, 0.0)), self._entry(i).rank, i)
            for i in signalled_slots | matched.keys()
            if i in signalled_slots or matched.get(i, 0.0) > 0.0
        ]

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

    def _positions(self, mask: int) -> list[int]:
        """Set bits of ``mask``, ascending."""
        found: list[int] = []
        for byte_index, byte in enumerate(mask.to_bytes(self._nbytes(), "little")):
            if byte:
                base = byte_index * 8
                found.extend(base + bit for bit in _BITS[byte])
        return found

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
        for postings, terms in lists:
            counted = postings is not self._not  # a warning is not a document containing the term
            for term in terms:
                if on:
                    postings.setdefault(term, set()).add(slot)
                    if counted:
                        self._document_frequency[term] = self._document_frequency.get(term, 0) + 1
                    continue
                postings[term].discard(slot)
                if not postings[term]:
                    del postings[term]
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
