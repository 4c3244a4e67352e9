"""``invert`` for many documents at once, with numpy, in a form cheap to send and merge.

``segment.invert`` walks every token in Python (about a microsecond each; linux-raid
has ten million). Here (``invert_columns``) the tokens of all documents become one
array of term numbers, and one stable sort by term puts every occurrence in (term,
document, position) order, from which postings, counts and positions are cut with
array operations; Python touches each distinct term and each distinct (document,
weighted count) once. Impacts are quantized by the same ``codec.quantize``, so
``to_segment(invert_columns(docs))`` equals ``segment.invert(docs)`` byte for byte
(a property test holds the two to that).

The result, ``Columns``, is a run's postings as a few flat arrays: a worker sends it
to the indexing process at memory speed (postings as Python objects took as long to
pickle as to compute), and ``merge_columns`` joins runs with array operations too.
A take-down's purge does the same with encoded postings (``bulkpurge``).
Imports numpy, so callers load this module only for big batches. Pure.
"""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import cached_property
from itertools import count
from typing import NamedTuple

import numpy as np

from ..heap import trim_heap
from .codec import BLOCK, MAX_POSITION, quantize
from .segment import FIELD_GAP, FIELD_TERMS, WEIGHTS, DisplayRow, Doc, Layout, Posting, SegmentData, sort_rows, term_key

__all__ = [
    "Columns",
    "collect_runs",
    "encode_all_postings",
    "invert_columns",
    "layout_of",
    "merge_columns",
    "to_segment",
]

_FIELDS = list(WEIGHTS.items())
_PREFIXED = FIELD_TERMS
_PREFIXES = tuple(prefix for prefix, _ in _PREFIXED)


def invert_columns(docs: Sequence[Doc], avgdl: float, b: float, first: int = 0) -> Columns:
    """``segment.invert(docs, avgdl, b, first)`` as ``Columns``, computed with array operations."""
    shown = [d.display() for d in docs]
    order = sort_rows(shown)
    rows: list[DisplayRow] = []
    tokens: list[str] = []
    # One run per (document, field): its document, token count, weight and first position.
    run_doc: list[int] = []
    run_len: list[int] = []
    run_weight: list[int] = []
    run_at: list[int] = []
    norms: list[float] = []
    for number, index in enumerate(order):
        doc = docs[index]
        rows.append(shown[index])
        fields = doc.fields
        at = 0
        length = 0
        for name, weight in _FIELDS:
            toks = fields.get(name) or ()
            if toks:
                tokens.extend(toks)
                run_doc.append(number)
                run_len.append(len(toks))
                run_weight.append(weight)
                run_at.append(at)
            length += weight * len(toks)
            at += len(toks) + FIELD_GAP
        norms.append(1 - b + b * length / avgdl if avgdl > 0 else 1.0)
        # Field terms ride along as tokens without positions (at -1).
        for prefix, name in _PREFIXED:
            toks = fields.get(name)
            if toks:
                tokens.extend([prefix + tok for tok in toks])
                run_doc.append(number)
                run_len.append(len(toks))
                run_weight.append(WEIGHTS.get(name, 1))
                run_at.append(-1)
    return _columns(rows, tokens, run_doc, run_len, run_weight, run_at, norms, first)


class Columns(NamedTuple):
    """The postings of a run of documents, term after term, as flat arrays."""

    rows: list[DisplayRow]
    """Display rows in doc-number order."""
    terms: list[str]
    ends: np.ndarray
    """Per term, the end of its postings in ``docs``/``impacts`` (cumulative)."""
    docs: np.ndarray
    """Doc numbers (u32), ascending within a term."""
    impacts: np.ndarray
    """Impact bytes, one per posting."""
    place_ends: np.ndarray
    """Per term, the end of its positions in ``places`` (cumulative; none for field terms)."""
    places: np.ndarray
    """Per posting of a word term: u16 count, then that many u16 positions."""
    by_key: bool = False
    """Whether ``terms`` are in ``term_key`` order (a final merge puts them so)."""


def _columns(
    rows: list[DisplayRow],
    tokens: list[str],
    run_doc: list[int],
    run_len: list[int],
    run_weight: list[int],
    run_at: list[int],
    norms: list[float],
    first: int,
) -> Columns:
    n = len(tokens)
    if not n:
        return _empty(rows)
    terms, numbers = _numbered(tokens)
    term_of = numbers.astype(np.uint16 if len(terms) <= 0x10000 else np.uint32)  # radix-sorted when u16
    lengths = np.array(run_len, dtype=np.int64)
    run_start = np.cumsum(lengths) - lengths
    doc = np.repeat(np.array(run_doc, dtype=np.int64), lengths)
    weight = np.repeat(np.array(run_weight, dtype=np.int64), lengths)
    at = np.array(run_at, dtype=np.int64)
    position = np.arange(n, dtype=np.int64) - np.repeat(run_start - at, lengths)
    position[np.repeat(at < 0, lengths)] = -1
    # Tokens are in (document, position) order already: a stable sort by term keeps it.
    by_term = np.argsort(term_of, kind="stable")
    term_of = term_of[by_term]
    doc = doc[by_term]
    weight = weight[by_term]
    position = position[by_term]
    new_posting = np.ones(n, dtype=bool)
    new_posting[1:] = (term_of[1:] != term_of[:-1]) | (doc[1:] != doc[:-1])
    starts = np.flatnonzero(new_posting)
    posting_doc = doc[starts]
    posting_term = term_of[starts]
    impacts = _impacts(posting_doc, np.add.reduceat(weight, starts), norms)
    # Positions: per posting of a word term a count slot, then its positions under MAX_POSITION.
    kept = (position >= 0) & (position < MAX_POSITION)
    positional = position[starts] >= 0
    kept_counts = np.add.reduceat(kept.astype(np.int64), starts)
    slots = kept_counts + positional
    slot_end = np.cumsum(slots)
    slot_start = slot_end - slots
    places = np.empty(int(slot_end[-1]), dtype="<u2")
    places[slot_start[positional]] = kept_counts[positional]
    posting_of = np.cumsum(new_posting) - 1
    kept_before = np.cumsum(kept_counts) - kept_counts
    places[(slot_start[posting_of] + np.cumsum(kept) - kept_before[posting_of])[kept]] = position[kept]
    term_ends = np.r_[np.flatnonzero(posting_term[1:] != posting_term[:-1]) + 1, len(starts)]
    return Columns(
        rows,
        [terms[i] for i in posting_term[term_ends - 1].tolist()],
        term_ends,
        (posting_doc + first).astype(np.uint32),
        impacts,
        slot_end[term_ends - 1],
        places,
    )


def _numbered(strings: list[str]) -> tuple[list[str], np.ndarray]:
    """The distinct strings in order of first appearance, and each string's number among
    them. ``setdefault`` with a rising default finds the first occurrences in C; their
    indexes are then made dense."""
    vocabulary: dict[str, int] = {}
    firsts = np.fromiter(map(vocabulary.setdefault, strings, count()), dtype=np.int64, count=len(strings))
    dense = np.zeros(len(strings), dtype=np.int64)
    dense[np.fromiter(vocabulary.values(), dtype=np.int64, count=len(vocabulary))] = np.arange(len(vocabulary))
    return list(vocabulary), dense[firsts]


def _empty(rows: list[DisplayRow]) -> Columns:
    none = np.zeros(0, dtype=np.int64)
    return Columns(rows, [], none, none.astype(np.uint32), none.astype(np.uint8), none, none.astype("<u2"), True)


def _impacts(doc: np.ndarray, weighted: np.ndarray, norms: list[float]) -> np.ndarray:
    """``quantize(weighted / norm)`` per posting, each distinct (document, weight) once in Python."""
    scale = int(weighted.max()) + 1
    distinct, where = np.unique(doc * scale + weighted, return_inverse=True)
    values = [quantize(int(key % scale) / norms[int(key // scale)]) for key in distinct.tolist()]
    return np.array(values, dtype=np.uint8)[where]


def _starts(ends: np.ndarray) -> np.ndarray:
    """Where the pieces ending at the cumulative ``ends`` start."""
    starts = np.zeros(len(ends), dtype=np.int64)
    starts[1:] = ends[:-1]
    return starts


def merge_columns(parts: list[Columns], *, by_key: bool = False) -> Columns:
    """Runs of consecutive documents (numbered as one, in order) as one run, its terms
    in ``term_key`` order when ``by_key`` (what a segment is written in: the last merge
    sorts them at no extra cost). ``parts`` is used up: each array of the runs is let go
    as soon as it is merged (``_scatter``)."""
    if not parts:
        return _empty([])
    if len(parts) == 1 and not (by_key and not parts[0].by_key):
        return parts.pop()
    terms: list[str] = []
    rows: list[DisplayRow] = []
    starts, ends, place_starts, place_ends = [], [], [], []
    for part in parts:
        rows.extend(part.rows)
        terms.extend(part.terms)
        for begin, end, spans in ((starts, ends, part.ends), (place_starts, place_ends, part.place_ends)):
            begin.append(_starts(spans))
            end.append(spans.astype(np.int64))
    if not terms:
        parts.clear()
        return _empty(rows)
    distinct, grouped = _numbered(terms)
    if by_key:
        order = _key_order(distinct)
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        distinct, grouped = [distinct[i] for i in order], rank[grouped]
    # Each term's pieces in part order, which is doc-number order.
    order = np.argsort(grouped, kind="stable")
    grouped = grouped[order]
    last = np.r_[np.flatnonzero(grouped[1:] != grouped[:-1]), len(grouped) - 1]
    bounds = np.cumsum([0, *(len(part.terms) for part in parts)]).tolist()
    start, end = np.concatenate(starts), np.concatenate(ends)
    place_start, place_end = np.concatenate(place_starts), np.concatenate(place_ends)
    new_ends = np.cumsum((end - start)[order])[last]
    new_place_ends = np.cumsum((place_end - place_start)[order])[last]
    docs = _scatter(parts, "docs", start, end, order, bounds)
    impacts = _scatter(parts, "impacts", start, end, order, bounds)
    places = _scatter(parts, "places", place_start, place_end, order, bounds)
    parts.clear()
    return Columns(rows, distinct, new_ends, docs, impacts, new_place_ends, places, by_key)


_SCATTER = 1 << 20
"""Elements moved per step of ``_scatter`` (bounds its index arrays to a few MB)."""


def _scatter(
    parts: list[Columns], name: str, start: np.ndarray, end: np.ndarray, order: np.ndarray, bounds: list[int]
) -> np.ndarray:
    """One array of the merged run: piece k (``start[k]:end[k]`` of its part's array,
    pieces numbered part after part, ``bounds`` where each part's begin) goes to place
    ``order``-th. Part by part, a bounded slice at a time; each part's array is let go
    once moved, so the merge needs little more than its result on top of its input."""
    lengths = end - start
    dest = np.empty_like(lengths)
    ordered = lengths[order]
    dest[order] = np.cumsum(ordered) - ordered
    out = np.empty(int(lengths.sum()), dtype=getattr(parts[0], name).dtype)
    for number, part in enumerate(parts):
        source = getattr(part, name)
        parts[number] = part._replace(**{name: source[:0]})
        low, high = bounds[number], bounds[number + 1]
        shift = dest[low:high] - start[low:high]
        sizes = lengths[low:high]
        cuts = np.searchsorted(np.cumsum(sizes), np.arange(_SCATTER, int(sizes.sum()), _SCATTER)).tolist()
        for first, stop in itertools.pairwise([0, *cuts, high - low]):
            if stop <= first:
                continue
            begin, finish = int(start[low + first]), int(end[low + stop - 1])
            places = np.repeat(shift[first:stop], sizes[first:stop])
            places += np.arange(begin, finish)
            out[places] = source[begin:finish]
        del source
    return out


_MERGE_FANIN = 8


def collect_runs(parts: Iterable[Columns]) -> list[Columns]:
    """Runs of consecutive documents, taken in as they come, merged ``_MERGE_FANIN`` at
    a time like a counter in that base, so that runs (each with its own copy of its
    terms) do not pile up and each posting is copied about log8(runs) times. Returns
    the few runs left, in order, for ``merge_columns`` (the biggest merge: callers
    may first let go of what they no longer need, such as worker processes)."""
    stack: list[tuple[int, Columns]] = []  # (level, run), earliest documents first
    for part in parts:
        stack.append((0, part))
        while len(stack) >= _MERGE_FANIN and len({level for level, _run in stack[-_MERGE_FANIN:]}) == 1:
            level = stack[-1][0]
            group = [run for _level, run in stack[-_MERGE_FANIN:]]
            del stack[-_MERGE_FANIN:]
            stack.append((level + 1, merge_columns(group)))
            trim_heap()  # the merged runs were many small arrays: give their memory back
    return [run for _level, run in stack]


def to_segment(columns: Columns) -> SegmentData:
    """``Columns`` as the ``SegmentData`` that ``write_segment`` writes; each term's
    ``Posting`` is made when asked for, so the postings are never held twice."""
    return SegmentData(columns.rows, _ColumnPostings(columns), lambda: layout_of(columns))


def layout_of(columns: Columns) -> Layout:
    """Every term encoded as ``codec.encode_postings`` does, laid out in ``term_key`` order."""
    if not columns.by_key:
        columns = merge_columns([columns], by_key=True)  # a copy: callers with big runs merge them so first
    blob, offsets = encode_all_postings(columns.docs, columns.impacts, columns.ends)
    ends = columns.ends.tolist()
    places = columns.places.astype("<u2", copy=False)
    return Layout(
        columns.terms,
        [end - start for start, end in itertools.pairwise([0, *ends])],
        blob,
        offsets,
        memoryview(places.view(np.uint8)),
        [0, *(2 * columns.place_ends).tolist()],
    )


def _key_order(terms: list[str]) -> list[int]:
    """Term numbers in ``term_key`` order."""
    return sorted(range(len(terms)), key=[term_key(term) for term in terms].__getitem__)


_ENCODE_STEP = 1 << 18
"""Postings encoded per step of ``encode_all_postings`` (its temporaries are ten times that in bytes)."""


def encode_all_postings(docs: np.ndarray, impacts: np.ndarray, ends: np.ndarray) -> tuple[bytes, list[int]]:
    """The postings of every term (term k: ``docs``/``impacts`` up to ``ends[k]``), each
    encoded as ``codec.encode_postings`` does, one after another; and the offsets where
    each term's bytes start (one more at the end). Array operations, on a few hundred
    thousand postings (whole terms) at a time."""
    ends = ends.astype(np.int64)
    cuts = np.searchsorted(ends, np.arange(_ENCODE_STEP, int(ends[-1]) if len(ends) else 0, _ENCODE_STEP), "right")
    blobs: list[bytes] = []
    offsets: list[int] = [0]
    first = 0
    for stop in [*np.unique(cuts).tolist(), len(ends)]:
        if stop <= first:
            continue
        base, top = (int(ends[first - 1]) if first else 0), int(ends[stop - 1])
        blob, local = _encode_terms(docs[base:top], impacts[base:top], ends[first:stop] - base)
        at = offsets[-1]
        offsets.extend(offset + at for offset in local[1:])
        blobs.append(blob)
        first = stop
    return b"".join(blobs), offsets


def _encode_terms(docs: np.ndarray, impacts: np.ndarray, ends: np.ndarray) -> tuple[bytes, list[int]]:
    count = len(docs)
    df = np.diff(ends, prepend=0)
    term = np.repeat(np.arange(len(ends)), df)
    within = np.arange(count, dtype=np.int64) - np.repeat(ends - df, df)
    docs = docs.astype(np.int64)
    gaps = np.zeros(count, dtype=np.int64)
    gaps[1:] = docs[1:] - docs[:-1]
    at_block = within % BLOCK == 0
    gaps[at_block] = 0
    block_starts = np.flatnonzero(at_block)
    block = np.cumsum(at_block) - 1
    size = np.diff(block_starts, append=count)
    biggest = np.maximum.reduceat(gaps, block_starts) if count else gaps
    width = np.where(biggest < 0x100, 1, np.where(biggest < 0x10000, 2, 4))
    block_bytes = 5 + (size - 1) * width + size
    # Offsets: every term's 4-byte count, then its blocks.
    blocks_before = np.cumsum(block_bytes) - block_bytes
    block_term = term[block_starts]
    block_at = blocks_before + 4 * (block_term + 1)
    term_bytes = 4 * np.ones(len(ends), dtype=np.int64)
    np.add.at(term_bytes, block_term, block_bytes)
    offsets = np.zeros(len(ends) + 1, dtype=np.int64)
    np.cumsum(term_bytes, out=offsets[1:])
    out = np.zeros(int(offsets[-1]), dtype=np.uint8)
    _put_le(out, offsets[:-1], df, 4)
    out[block_at] = width
    _put_le(out, block_at + 1, docs[block_starts], 4)
    step = within % BLOCK
    posting_width = width[block]
    gap_at = block_at[block] + 5 + (step - 1) * posting_width
    inside = ~at_block
    for byte in range(4):
        has = inside & (posting_width > byte)
        out[gap_at[has] + byte] = (gaps[has] >> (8 * byte)) & 0xFF
    out[block_at[block] + 5 + (size[block] - 1) * posting_width + step] = impacts
    return out.tobytes(), offsets.tolist()


def _put_le(out: np.ndarray, at: np.ndarray, values: np.ndarray, width: int) -> None:
    for byte in range(width):
        out[at + byte] = (values >> (8 * byte)) & 0xFF


class _ColumnPostings(Mapping[str, Posting]):
    """The postings of ``Columns`` by term, each made when asked for."""

    def __init__(self, columns: Columns) -> None:
        self.terms = columns.terms
        self.ends = columns.ends.tolist()
        self.place_ends = columns.place_ends.tolist()
        self.docs = memoryview(columns.docs.view(np.uint8))
        self.impacts = memoryview(columns.impacts)
        self.places = memoryview(columns.places.astype("<u2", copy=False).view(np.uint8))

    @cached_property
    def number(self) -> dict[str, int]:
        return {term: number for number, term in enumerate(self.terms)}

    def span(self, number: int) -> tuple[int, int, memoryview | None]:
        """Term ``number``'s postings (start, end) and its encoded positions (None for a field term)."""
        start = self.ends[number - 1] if number else 0
        place_start = self.place_ends[number - 1] if number else 0
        place_end = self.place_ends[number]
        positions = self.places[place_start * 2 : place_end * 2] if place_end > place_start else None
        return start, self.ends[number], positions

    def __getitem__(self, term: str) -> Posting:
        start, end, positions = self.span(self.number[term])
        docs = array("I")
        docs.frombytes(self.docs[start * 4 : end * 4])
        return Posting(docs, bytes(self.impacts[start:end]), None if positions is None else bytes(positions))

    def __iter__(self) -> Iterator[str]:
        return iter(self.terms)

    def __len__(self) -> int:
        return len(self.terms)
