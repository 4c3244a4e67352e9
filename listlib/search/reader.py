"""Run a query over the index files (``search``); ``search.js`` runs the same steps.

Steps: read the manifest; per live segment, look each query term up in the
dictionary chunks that can hold it; fetch the postings of the terms found; intersect
the required clauses (phrases checked against positions), drop excluded, deleted,
other-list and out-of-date-range documents; score BM25 over the impact bytes with
the document frequency among the documents not deleted, times a mild recency factor
(at most +2% for the newest live day); sort by score (6 decimals), then newer, then
higher call number; page.

A score depends on the live documents only, never on which segment holds a document
or what tombstones remain unmerged: the same archive answers the same way however
its index was built up (deleted documents are left out of every document frequency,
including the one that picks a prefix's expansions; each document's day is exact).
Files are read through a ``Source`` that counts bytes, so tests and benchmarks see
what a browser would fetch. A segment file missing means the index was updated since
the manifest was read (a take-down deletes the files a purge replaced at once, not a
build later): the query is run again, once, from a manifest read afresh. A segment's
files are named as its revision says (``segment.meta_name``, ``dict_name``,
``docs_name``). Never writes.
"""

from __future__ import annotations

import json
import math
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import SearchError
from .codec import decode_positions, decode_postings
from .query import CLASS_FIELD, Clause, Query, parse_query
from .segment import dict_name, doc_days, docs_name, meta_name, term_key

__all__ = ["FORMAT", "Hit", "Results", "Source", "ThreadHits", "group_by_thread", "search"]

FORMAT = 4
PREFIX_EXPANSIONS = 50
RECENCY = 0.02


class _SegmentGone(SearchError):
    """A file of a segment the manifest read names is not there (any more)."""


class Source:
    """Files of the index by path relative to ``search/``, cached, with a byte count."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cache: dict[str, bytes] = {}
        self.fetched = 0
        self.files = 0

    def read(self, path: str) -> bytes:
        data = self.cache.get(path)
        if data is None:
            try:
                data = (self.root / path).read_bytes()
            except OSError as exc:
                message = f"{self.root / path}: cannot read the search index ({exc.strerror})"
                if isinstance(exc, FileNotFoundError) and path.startswith("seg/"):
                    raise _SegmentGone(message) from None
                raise SearchError(message) from None
            self.cache[path] = data
            self.fetched += len(data)
            self.files += 1
        return data

    def json(self, path: str) -> Any:
        return json.loads(self.read(path))


@dataclass
class Hit:
    call: str
    message_id: str
    list: str
    url: str
    subject: str
    author: str
    date: int
    excerpt: str
    score: float
    thread: str = ""
    """``document.thread_key`` ("" in an index written before it)."""

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


@dataclass
class Results:
    total: int
    hits: list[Hit] = field(default_factory=list)
    terms: list[str] = field(default_factory=list)
    """Every token the query looked for (for highlighting)."""


@dataclass
class ThreadHits:
    """The hits of one thread on a page of results (``group_by_thread``)."""

    subject: str
    """Its earliest hit's subject without reply prefixes ("" when it has none)."""
    first: Hit
    """Its earliest hit: where a link to the thread leads."""
    hits: list[Hit]
    """Oldest first, as the thread reads."""


_REPLY_PREFIX_RE = re.compile(r"^(?:\s*(?:re|fwd?|aw|sv|vs|antw)\s*(?:\[\d+\])?\s*[:\uff1a]\s*)+", re.I)


def group_by_thread(hits: list[Hit]) -> list[ThreadHits]:
    """A page of hits grouped by thread (``Hit.thread``), each group where its best hit
    ranked; hits without a thread key stand alone. (search.js's ``groupByThread`` twin.)"""
    groups: dict[str, list[Hit]] = {}
    for hit in hits:
        groups.setdefault(hit.thread or "=" + hit.call, []).append(hit)
    out = []
    for members in groups.values():
        members.sort(key=lambda h: (h.date, h.call))
        first = members[0]
        out.append(ThreadHits(_REPLY_PREFIX_RE.sub("", first.subject), first, members))
    return out


def _round(x: float) -> float:
    return math.floor(x * 1e6 + 0.5) / 1e6


class _Segment:
    def __init__(self, source: Source, info: dict[str, Any]) -> None:
        self.source = source
        self.id = str(info["id"])
        self.deleted = set(info.get("deleted", ()))
        self.meta = source.json(f"seg/{self.id}/{meta_name(int(info.get('rev', 0)))}")
        self.keys = [term_key(t) for t in self.meta["dict"]]
        self.entries: dict[str, list[Any] | None] = {}
        self.postings: dict[str, tuple[list[int], bytes]] = {}
        self._doc_days: list[int] | None = None

    def _chunk(self, number: int) -> list[list[Any]]:
        return self.source.json(f"seg/{self.id}/{dict_name(self.meta, number)}")  # type: ignore[no-any-return]

    def entry(self, term: str) -> list[Any] | None:
        if term not in self.entries:
            found = None
            number = bisect_right(self.keys, term_key(term)) - 1
            if number >= 0:
                for entry in self._chunk(number):
                    if entry[0] == term:
                        found = entry
                        break
            self.entries[term] = found
        return self.entries[term]

    def expand(self, prefix: str) -> list[list[Any]]:
        """Dictionary entries starting with ``prefix``."""
        key = term_key(prefix)
        number = max(0, bisect_right(self.keys, key) - 1)
        found: list[list[Any]] = []
        while number < len(self.keys):
            if number > 0 and self.keys[number] > key and not self.meta["dict"][number].startswith(prefix):
                break
            found.extend(e for e in self._chunk(number) if e[0].startswith(prefix))
            number += 1
        return found

    def docs(self, entry: list[Any]) -> tuple[list[int], bytes]:
        term = entry[0]
        if term not in self.postings:
            data = self.source.read(f"seg/{self.id}/p{entry[2]}.bin")
            self.postings[term] = decode_postings(memoryview(data)[entry[3] : entry[3] + entry[4]])
        return self.postings[term]

    def live_df(self, entry: list[Any]) -> int:
        """How many documents not deleted hold the entry's term."""
        if not self.deleted:
            return int(entry[1])
        docs, _impacts = self.docs(entry)
        return sum(1 for doc in docs if doc not in self.deleted)

    def positions(self, entry: list[Any]) -> list[list[int]]:
        data = self.source.read(f"seg/{self.id}/q{entry[5]}.bin")
        return decode_positions(data[entry[6] : entry[6] + entry[7]], entry[1])

    def doc_days(self) -> list[int]:
        """Every document's day (from the meta's ``day_runs``)."""
        if self._doc_days is None:
            self._doc_days = doc_days(self.meta["day_runs"])
        return self._doc_days

    def rows(self, numbers: list[int]) -> dict[int, list[Any]]:
        out = {}
        for number in numbers:
            size = self.meta["docs_chunk"]
            chunk = self.source.json(f"seg/{self.id}/{docs_name(self.meta, number // size)}")
            out[number] = chunk[number % size]
        return out


def load_manifest(source: Source) -> dict[str, Any]:
    try:
        manifest = source.json("manifest.json")
    except SearchError:
        raise SearchError(f"{source.root}: no search index here (run 'listlib build')") from None
    if manifest.get("format") != FORMAT:
        raise SearchError(f"{source.root}: search index format {manifest.get('format')} is not {FORMAT}; rebuild")
    return manifest  # type: ignore[no-any-return]


def search(source: Source, text: str, *, offset: int = 0, limit: int = 10, lists: list[str] | None = None) -> Results:
    """The ``limit`` best hits from ``offset`` for ``text`` (query syntax: ``query``)."""
    query = parse_query(text)
    if lists:
        query.lists.extend(lists)
    try:
        return _run(source, load_manifest(source), query, offset, limit)
    except _SegmentGone:
        pass
    # The index changed since its manifest was read (and cached): read it all again, once.
    source.cache.clear()
    try:
        return _run(source, load_manifest(source), query, offset, limit)
    except _SegmentGone as exc:
        raise SearchError(f"{exc}; the index changed twice while it was read, try again") from None


def _clause_terms(clause: Clause) -> list[str]:
    if clause.field:
        return [clause.field + t for t in clause.tokens]
    return list(clause.tokens)


def _run(source: Source, manifest: dict[str, Any], query: Query, offset: int, limit: int) -> Results:
    segments = [_Segment(source, info) for info in manifest["segments"]]
    table: list[float] = manifest["impacts"]
    total_docs = max(1, int(manifest["live"]))
    looked: list[str] = []
    # Phase 1: dictionary entries per segment, and the index-wide document frequency.
    expansions: dict[Clause, list[str]] = {}
    for clause in query.must + query.must_not:
        if clause.prefix:
            term = _clause_terms(clause)[0]
            dfs: dict[str, int] = {}
            for segment in segments:
                for entry in segment.expand(term):
                    segment.entries[entry[0]] = entry
                    dfs[entry[0]] = dfs.get(entry[0], 0) + segment.live_df(entry)
            best = sorted(dfs, key=lambda t: (-dfs[t], term_key(t)))[:PREFIX_EXPANSIONS]
            expansions[clause] = sorted(best, key=term_key)
    df: dict[str, int] = {}
    for clause in query.must + query.must_not:
        terms = expansions.get(clause) or _clause_terms(clause)
        if clause.field and len(clause.tokens) > 1:
            terms = terms + list(clause.tokens)
        for term in terms:
            if term in df:
                continue
            df[term] = sum(s.live_df(e) for s in segments if (e := s.entry(term)) is not None)
    for clause in query.must:
        if clause.field != CLASS_FIELD:
            looked.extend(t[2:] if clause.field else t for t in (expansions.get(clause) or _clause_terms(clause)))
    idf = {t: math.log(1 + (total_docs - n + 0.5) / (n + 0.5)) for t, n in df.items()}
    if not query.must:
        return Results(0, [], looked)
    low, high = int(manifest["min_day"]), int(manifest["max_day"])
    scored: list[tuple[float, int, int, int]] = []
    for position, segment in enumerate(segments):
        for number, (score, day) in _segment_hits(segment, query, expansions, idf, table).items():
            recency = (day - low) / (high - low) if high > low else 0.0
            scored.append((_round(score * (1 + RECENCY * recency)), day, position, number))
    scored.sort(key=lambda h: (h[0], h[1]), reverse=True)
    hits = [
        Hit(*row[:8], score=score, thread=row[8] if len(row) > 8 else "")
        for score, row in _page(segments, scored, offset, limit)
    ]
    return Results(len(scored), hits, sorted(set(looked)))


def _page(
    segments: list[_Segment], scored: list[tuple[float, int, int, int]], offset: int, limit: int
) -> list[tuple[float, list[Any]]]:
    """(score, display row) of the hits ``offset`` to ``offset + limit`` of ``scored``
    (sorted by score and day). Hits equal in both are ordered by date, then call number,
    newest and highest first: from their rows, fetched for the equal hits at the page's
    edges too (where a document sits in the index must not decide its place)."""
    start, end = offset, min(offset + limit, len(scored))
    if start >= end:
        return []
    while start > 0 and scored[start - 1][:2] == scored[offset][:2]:
        start -= 1
    while end < len(scored) and scored[end][:2] == scored[end - 1][:2]:
        end += 1
    window = [(score, day, segments[at].rows([number])[number]) for score, day, at, number in scored[start:end]]
    window.sort(key=lambda h: (h[0], h[1], h[2][6], h[2][0]), reverse=True)
    return [(score, row) for score, _day, row in window[offset - start : offset - start + limit]]


def _clause_docs(
    segment: _Segment, clause: Clause, terms: list[str], idf: dict[str, float], table: list[float]
) -> dict[int, float] | None:
    """Doc -> score of the documents of one segment that satisfy ``clause``."""
    if clause.prefix:
        found: dict[int, float] = {}
        for term in terms:
            entry = segment.entry(term)
            if entry is None:
                continue
            docs, impacts = segment.docs(entry)
            weight = idf[term]
            for doc, impact in zip(docs, impacts, strict=True):
                value = weight * table[impact]
                if value > found.get(doc, -1.0):
                    found[doc] = value
        return found
    result: dict[int, float] | None = None
    for term in terms:
        entry = segment.entry(term)
        if entry is None:
            return {}
        docs, impacts = segment.docs(entry)
        weight = idf[term]
        if result is None:
            result = {doc: weight * table[impact] for doc, impact in zip(docs, impacts, strict=True)}
        else:
            result = {
                doc: result[doc] + weight * table[impact]
                for doc, impact in zip(docs, impacts, strict=True)
                if doc in result
            }
        if not result:
            return result
    if len(clause.tokens) > 1 and result:
        result = _phrase(segment, clause.tokens, result)
    return result


def _phrase(segment: _Segment, tokens: tuple[str, ...], candidates: dict[int, float]) -> dict[int, float]:
    """The candidates where ``tokens`` occur one after another."""
    per_token: list[dict[int, set[int]]] = []
    for token in tokens:
        entry = segment.entry(token)
        if entry is None:
            return {}
        docs, _impacts = segment.docs(entry)
        positions = segment.positions(entry)
        per_token.append({doc: set(plist) for doc, plist in zip(docs, positions, strict=True) if doc in candidates})
    kept = {}
    for doc, score in candidates.items():
        firsts = per_token[0].get(doc, ())
        if any(all(p + i in per_token[i].get(doc, ()) for i in range(1, len(tokens))) for p in firsts):
            kept[doc] = score
    return kept


def _segment_hits(
    segment: _Segment,
    query: Query,
    expansions: dict[Clause, list[str]],
    idf: dict[str, float],
    table: list[float],
) -> dict[int, tuple[float, int]]:
    scores: dict[int, float] | None = None
    for clause in query.must:
        terms = expansions.get(clause) or _clause_terms(clause)
        if clause.prefix and clause not in expansions:
            return {}
        found = _clause_docs(segment, clause, terms, idf, table) or {}
        if clause.field and len(clause.tokens) > 1 and found:
            # A fielded phrase: the field's words, then the phrase anywhere.
            found = _phrase(segment, clause.tokens, found)
        scores = found if scores is None else {d: s + found[d] for d, s in scores.items() if d in found}
        if not scores:
            return {}
    assert scores is not None
    for clause in query.must_not:
        terms = expansions.get(clause) or _clause_terms(clause)
        for doc in _clause_docs(segment, clause, terms, idf, table) or {}:
            scores.pop(doc, None)
    for doc in segment.deleted:
        scores.pop(doc, None)
    if query.lists:
        spans = [segment.meta["lists"].get(slug) for slug in query.lists]
        ranges = [span for span in spans if span]
        scores = {d: s for d, s in scores.items() if any(a <= d < b for a, b in ranges)}
    days = segment.doc_days()
    if (query.after is not None or query.before is not None) and scores:
        after = query.after if query.after is not None else -1
        before = query.before if query.before is not None else 1 << 30
        scores = {d: s for d, s in scores.items() if after <= days[d] < before}
    return {d: (s, days[d]) for d, s in scores.items()}
