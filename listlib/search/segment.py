"""Write one immutable index segment (a folder under ``output/search/seg/``).

A segment holds documents numbered 0..n-1 in (list, date, call) order, so a list is
a range of doc numbers and doc numbers roughly follow time. Files:

``meta.json``
    ``docs``, ``docs_chunk`` (the size below), ``lists`` (slug -> [first, end)), ``dict``
    (the first term of each dictionary chunk), ``day_runs`` (every document's day, for
    the recency factor and ``after:``/``before:``: ``day_runs``), ``min_day``/``max_day``,
    ``files`` (how many postings and positions files are numbered: the next numbers free).
``t<k>.json``
    dictionary chunk k: sorted ``[term, df, postings file, offset, length, positions
    file, offset, length]`` (positions file -1 when the term has none).
``p<k>.bin``, ``q<k>.bin``
    postings and positions (``codec``), grouped about ``POSTINGS_CHUNK`` bytes a
    file so a query fetches only the files of its terms; a bigger term gets a file
    of its own.
``d<k>.json``
    the result-display data of ``DOCS_CHUNK`` documents: ``[call, message_id, list,
    url, subject, author, date, excerpt, thread]`` (``thread``: ``document.thread_key``,
    what results grouped by thread group by; rows written before it have eight items).
``<file>.js``
    each file's script twin (``codec.script_twin``), read by pages opened from ``file://``.

Format 3 had every document's day in ``days.bin`` too: the meta, which every query
reads, has them already, and a file less makes a one-message segment six files.

A segment purged of documents taken down (``purge``) keeps its folder and its name: it
gets a *revision* r (the manifest's ``rev``), its meta is ``meta-r.json``, and each file
the purge rewrote is written under a new name, never over the old one: a dictionary
chunk ``t<k>-r.json`` (the meta's ``trev``: each chunk's revision, 0 for ``t<k>.json``),
a display chunk ``d<k>-r.json`` (``drev``: chunk number -> revision, for those rewritten),
a postings or positions file under the next free number (``files``), which its
dictionary entries name. Every file name thus always holds the same bytes (caches and
mirrors never see a file change), and the names a revision uses are those of the
helpers ``meta_name``, ``dict_name`` and ``docs_name``, which both readers mirror.

Terms sort by UTF-16 code units (how JavaScript compares strings). Field terms are
``s:<word>`` (subject), ``f:<word>`` (author) and ``c:<class>`` (the message's class,
``classify``; for ``is:``); plain words cover every field of ``WEIGHTS``, with its
weight. The folder is written under a temporary name and renamed into place, so a
segment is either whole or absent. Writes only its folder.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from ..fsutil import write_all
from .codec import MAX_POSITION, SCRIPT_SUFFIX, encode_positions, encode_postings, quantize, script_twin

__all__ = [
    "DOCS_CHUNK",
    "Entry",
    "Layout",
    "FIELD_GAP",
    "FIELD_TERMS",
    "WEIGHTS",
    "DisplayRow",
    "Doc",
    "Posting",
    "SegmentData",
    "Told",
    "Written",
    "day_runs",
    "dict_name",
    "display_row",
    "docs_name",
    "doc_days",
    "invert",
    "meta_name",
    "put_file",
    "sort_rows",
    "term_key",
    "write_segment",
]

WEIGHTS = {"subject": 3, "author": 2, "attachments": 2, "body": 1}
"""How much an occurrence counts towards a plain word's frequency and a document's length."""
FIELD_GAP = 8
"""Positions skipped between fields, so no phrase spans two."""
FIELD_TERMS = (("s:", "subject"), ("f:", "author"), ("c:", "class"))
"""(prefix, field) of the field terms: a field's tokens, prefixed, with no positions (a
field not in ``WEIGHTS``, the class, counts once and is no plain word)."""
DOCS_CHUNK = 4
DICT_CHUNK = 8_000
POSTINGS_CHUNK = 8_000
_DAY = 86_400


def term_key(term: str) -> bytes:
    """Sort key matching JavaScript's string comparison (UTF-16 code units)."""
    return term.encode("utf-16-be", "surrogatepass")


def meta_name(rev: int) -> str:
    """The meta file of a segment's revision (the manifest's ``rev``: 0 until purged)."""
    return f"meta-{rev}.json" if rev else "meta.json"


def dict_name(meta: Mapping[str, Any], k: int) -> str:
    """The file of dictionary chunk ``k`` (its revision in ``trev``, when purged)."""
    revs = meta.get("trev")
    rev = revs[k] if revs else 0
    return f"t{k}-{rev}.json" if rev else f"t{k}.json"


def docs_name(meta: Mapping[str, Any], k: int) -> str:
    """The file of display chunk ``k`` (its revision in ``drev``, when purged)."""
    rev = meta.get("drev", {}).get(str(k), 0)
    return f"d{k}-{rev}.json" if rev else f"d{k}.json"


@dataclass
class Doc:
    """One message, analysed: what is indexed and what a result shows."""

    call: str
    message_id: str
    list: str
    url: str
    subject: str
    author: str
    date: int
    excerpt: str
    fields: dict[str, list[str]] = field(default_factory=dict)
    """Tokens per field name of ``WEIGHTS``, and ``class`` (``[class]``, or none)."""
    thread: str = ""
    """``document.thread_key``: the same for every message of a thread."""

    def display(self) -> DisplayRow:
        shown = [
            self.call,
            self.message_id,
            self.list,
            self.url,
            self.subject,
            self.author,
            self.date,
            self.excerpt,
            self.thread,
        ]
        return display_row(shown)


class DisplayRow(NamedTuple):
    """A document's result-display data: what ordering and the segment's meta need,
    and the row as JSON (``[call, message_id, list, url, subject, author, date,
    excerpt, thread]``), as compact as it gets while a big segment is being put together."""

    call: str
    list: str
    date: int
    json: bytes


def display_row(row: list[object]) -> DisplayRow:
    return DisplayRow(str(row[0]), str(row[2]), int(row[6]), _json(row))  # type: ignore[call-overload]


@dataclass(slots=True)
class Posting:
    docs: list[int] | array[int] = field(default_factory=list)
    """Doc numbers, ascending (an ``array('I')`` when encoded: 4 bytes each in memory)."""
    impacts: list[int] | bytes | bytearray = field(default_factory=list)
    positions: list[list[int]] | bytes | bytearray | None = None
    """Per posting, its positions; or already encoded (``codec.encode_positions``)."""


Entry = tuple[str, int, bytes | memoryview, bytes | memoryview | None]
"""A term as written: (term, document frequency, encoded postings, encoded positions or None)."""


@dataclass
class SegmentData:
    """A segment in memory: display rows and postings, ready to write (or read back to merge)."""

    rows: list[DisplayRow]
    """In doc-number order."""
    postings: Mapping[str, Posting]
    layout: Callable[[], Layout] | None = None
    """The postings already encoded and laid end to end, when their maker can do it faster."""


class Layout(NamedTuple):
    """Every term's encoded postings and positions, one after another in ``term_key``
    order: each postings file of a segment is then one slice of ``postings``."""

    terms: list[str]
    df: list[int]
    postings: bytes | memoryview
    postings_at: list[int]
    """Where each term's postings start, and one more at the end."""
    positions: bytes | memoryview
    positions_at: list[int]
    """Likewise; a term without positions (a field term) has an empty span."""


def _laid_out(postings: Mapping[str, Posting]) -> Layout:
    """Postings encoded term by term and laid end to end (what ``bulk`` makes with arrays)."""
    terms: list[str] = []
    dfs: list[int] = []
    encoded: list[bytes | memoryview] = []
    positions: list[bytes | memoryview] = []
    for term, df, blob, places in _entries(postings):
        terms.append(term)
        dfs.append(df)
        encoded.append(blob)
        positions.append(b"" if places is None else places)
    return Layout(
        terms,
        dfs,
        b"".join(encoded),
        list(itertools.accumulate(map(len, encoded), initial=0)),
        b"".join(positions),
        list(itertools.accumulate(map(len, positions), initial=0)),
    )


def _entries(postings: Mapping[str, Posting]) -> Iterator[Entry]:
    for term in sorted(postings, key=term_key):
        posting = postings[term]
        positions = posting.positions
        if isinstance(positions, list):
            positions = encode_positions(positions)
        yield term, len(posting.docs), encode_postings(posting.docs, posting.impacts), positions


def _day(date: int) -> int:
    return max(0, min(0xFFFF, date // _DAY))


def day_runs(days: Sequence[int]) -> list[int]:
    """Every document's day, exactly, as runs of one day: ``[count, day change, count,
    day change, ...]`` (the first change from day 0). Within a list documents follow
    their dates, so a run is usually a day of one list: about as short as a sample of
    every 64th day (what the recency factor once used, which made a message's score
    depend on the segment it sat in)."""
    runs: list[int] = []
    previous = 0
    for day, group in itertools.groupby(days):
        runs += (sum(1 for _ in group), day - previous)
        previous = day
    return runs


def doc_days(runs: Sequence[int]) -> list[int]:
    """The day of every document, from its segment's ``day_runs``."""
    days: list[int] = []
    day = 0
    for at in range(0, len(runs), 2):
        day += runs[at + 1]
        days += [day] * runs[at]
    return days


def sort_rows(rows: Sequence[DisplayRow]) -> list[int]:
    """Indexes of ``rows`` in doc-number order: (list, date, call)."""
    return sorted(range(len(rows)), key=lambda i: (rows[i].list, rows[i].date, rows[i].call))


_Accumulators = dict[str, tuple["array[int]", bytearray, "array[int] | None"]]
"""Per term, while inverting: doc numbers, impact bytes and (``u16``) positions."""


def invert(docs: Sequence[Doc], avgdl: float, b: float) -> SegmentData:
    """Number the documents and build every term's postings, token by token (the
    definition ``bulk`` follows with array operations; used for small batches), encoded:
    doc numbers as ``array('I')``, impacts and positions as bytes."""
    shown = [d.display() for d in docs]
    order = sort_rows(shown)
    found: _Accumulators = {}
    rows: list[DisplayRow] = []
    weighted_fields = [(name, weight) for name, weight in WEIGHTS.items() if weight > 1]
    for number, index in enumerate(order):
        doc = docs[index]
        rows.append(shown[index])
        fields = doc.fields
        positions: defaultdict[str, list[int]] = defaultdict(list)
        length = 0
        at = 0
        for name, weight in WEIGHTS.items():
            toks = fields.get(name) or ()
            length += weight * len(toks)
            for offset, tok in enumerate(toks, at):
                positions[tok].append(offset)
            at += len(toks) + FIELD_GAP
        extra: dict[str, int] = {}
        for name, weight in weighted_fields:
            for tok in fields.get(name) or ():
                extra[tok] = extra.get(tok, 0) + weight - 1
        norm = 1 - b + b * length / avgdl if avgdl > 0 else 1.0
        impact: dict[int, int] = {}
        for tok, plist in positions.items():
            weighted = len(plist) + extra.get(tok, 0) if extra else len(plist)
            q = impact.get(weighted)
            if q is None:
                q = impact[weighted] = quantize(weighted / norm)
            acc = found.get(tok)
            if acc is None:
                acc = found[tok] = (array("I"), bytearray(), array("H"))
            acc[0].append(number)
            acc[1].append(q)
            if plist[-1] >= MAX_POSITION:
                plist = [p for p in plist if p < MAX_POSITION][:MAX_POSITION]
            places = acc[2]
            places.append(len(plist))  # type: ignore[union-attr]
            places.extend(plist)  # type: ignore[union-attr]
        _field_terms(found, number, fields, norm)
    return SegmentData(rows, _postings_of(found))


def _field_terms(found: _Accumulators, number: int, fields: dict[str, list[str]], norm: float) -> None:
    """Add document ``number``'s field terms (``s:word``, ``f:word``, ``c:class``: no positions) to ``found``."""
    for prefix, name in FIELD_TERMS:
        counts: dict[str, int] = {}
        for tok in fields.get(name) or ():
            counts[tok] = counts.get(tok, 0) + 1
        for tok, count in counts.items():
            acc = found.get(prefix + tok)
            if acc is None:
                acc = found[prefix + tok] = (array("I"), bytearray(), None)
            acc[0].append(number)
            acc[1].append(quantize(WEIGHTS.get(name, 1) * count / norm))


def _postings_of(found: _Accumulators) -> dict[str, Posting]:
    """The accumulated terms as postings, encoded (compact to send from a worker)."""
    return {
        term: Posting(docs, bytes(impacts), _le_bytes(places) if places is not None else None)
        for term, (docs, impacts, places) in found.items()
    }


def _le_bytes(values: array[int]) -> bytes:
    if sys.byteorder != "little":
        values = array(values.typecode, values)
        values.byteswap()
    return values.tobytes()


Told = Callable[[str, bytes | memoryview, int], None]
"""Told of each file of a segment as it is written: (name, bytes, mtime_ns)."""


class Written(NamedTuple):
    """How a segment's files are written: ``told`` of each (name, bytes, mtime_ns), and
    with their script twins (``codec.script_twin``) or not."""

    told: Told | None = None
    twins: bool = True


def put_file(folder: Path, name: str, data: bytes | memoryview, written: Written) -> None:
    """Write the file ``name`` of a segment's folder, and its script twin when asked."""
    _put_one(folder, name, data, written.told)
    if written.twins:
        _put_one(folder, name + SCRIPT_SUFFIX, script_twin(name, data), written.told)


def _put_one(folder: Path, name: str, data: bytes | memoryview, told: Told | None) -> None:
    path = f"{folder}/{name}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
    try:
        write_all(fd, data)
    finally:
        os.close(fd)
    if told is not None:
        told(name, data, os.stat(path).st_mtime_ns)  # once closed: what a later stat sees


def _json(data: object) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def write_segment(
    folder: Path, data: SegmentData, told: Told | None = None, *, twins: bool = True
) -> dict[str, object]:
    """Write ``data`` as the segment ``folder`` (which must not exist); returns its meta.
    ``told`` is told of each file (its mtime is kept when the folder is renamed into
    place), so that the caller need not read them back to record them; ``twins``: each
    file's script twin too. (``writer.SegmentWriter`` writes one a piece at a time.)"""
    from .writer import SegmentWriter  # it writes this module's format

    writer = SegmentWriter(folder, told, twins=twins)
    try:
        writer.add_rows(data.rows)
        writer.add_terms(data.layout() if data.layout is not None else _laid_out(data.postings))
    except BaseException:
        writer.abort()
        raise
    return writer.finish()
