"""Take deleted documents out of a big segment's files without renumbering the others
(``purge_segment``): a take-down must leave no trace of a message's text in the
index, and rewriting a segment of 8,000 documents (``merge.merge_segments``) takes
seconds, where this takes a tenth of one.

The terms holding the deleted documents are the ones the caller names (a hidden
message displayed again), each checked, or else found by decoding every postings
list (with numpy in a big dictionary: ``bulkpurge.postings_holding``).

The purge makes the next *revision* of the segment in its own folder (the naming is
``segment``'s: ``meta_name``, ``dict_name``, ``docs_name``): written again, under names
no revision used before, are the ``d<k>`` chunks of the deleted documents (their rows
become ``null``), the postings and positions files of the terms they held (under the
next free numbers; their postings dropped; a term only they held is gone), the
dictionary chunks naming those files, and the meta (a chunk's first term may have
gone; a chunk left empty is dropped, the ones after it written again under their new
numbers). Every other file is shared by both revisions as it is: a take-down at 50,000
messages writes a few hundred small files, not a copy of the 15,000 of the segment.
The names the new revision no longer uses are returned (``Purged.stale``): they hold
the deleted documents' text, and the caller deletes them once the manifest naming the
new revision is written (a reader holding the manifest before finds one missing and
reads the manifest again). Their doc numbers stay tombstones in the manifest (numbers
only) and the meta keeps their days, until a merge renumbers the
segment. Files of a purge killed before its manifest was written (names of a later
revision, numbers not yet in use) are deleted by the next purge of the segment.
Writes only in the segment's folder.
"""

from __future__ import annotations

import json
import os
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Collection, Sequence
from itertools import accumulate
from pathlib import Path
from typing import Any, NamedTuple

from ..fsutil import naming
from .codec import SCRIPT_SUFFIX, drop_positions, drop_postings, postings_hold
from .segment import Told, Written, dict_name, docs_name, meta_name, put_file, term_key

__all__ = ["VECTOR_FROM", "Purged", "purge_segment"]

VECTOR_FROM = 2_000
"""Dictionaries of this many terms or more are searched for the deleted documents' terms
with numpy (about 30 ms for 30,000 terms of 7,000 documents, against 0.3 s term by
term; numpy's import costs some 0.1 s)."""

LONG_FROM = 512
"""Terms of this many postings or more lose documents (more than one) with numpy, all
at once (``_drop_long``): decoding and encoding them again in Python costs some
100 ns a posting, and a take-down of a thousand messages reaches millions."""

_REVISED_RE = re.compile(r"(?:meta|[td]\d+)-(\d+)\.json\Z")
_NUMBERED_RE = re.compile(r"([pq])(\d+)\.bin\Z")


class Purged(NamedTuple):
    """A segment's revision written by ``purge_segment``."""

    rev: int
    stale: list[str]
    """The names of the revision before that this one no longer uses (with their script
    twins): to delete once the manifest naming ``rev`` is written."""


def purge_segment(
    folder: Path,
    rev: int,
    deleted: Sequence[int],
    *,
    twins: bool = True,
    terms: Collection[str] | None = None,
    told: Told | None = None,
) -> Purged | None:
    """Write the next revision of the segment ``folder`` (now at revision ``rev``)
    without the documents ``deleted`` (ascending), the files it writes with their script
    twins when ``twins``, each ``told`` as written; None (nothing written) when no term
    would be left: then the caller rewrites the segment whole. ``terms``: every term the
    deleted documents hold that may still be in the segment, when the caller knows them
    (each is checked; when one is not found holding a deleted document, every term is
    searched, as without ``terms``)."""
    meta = json.loads((folder / meta_name(rev)).read_bytes())
    new_rev = rev + 1
    next_p, next_q = meta["files"]
    _clear_leftovers(folder, rev, next_p, next_q)
    blobs: dict[str, bytes] = {}
    base = f"{folder}/"

    def blob(name: str) -> bytes:
        data = blobs.get(name)
        if data is None:
            with open(base + name, "rb") as file:
                data = blobs[name] = file.read()
        return data

    count = len(meta["dict"])
    loaded: dict[int, list[list[Any]]] = {}  # dictionary chunk number -> its entries

    def chunk(k: int) -> list[list[Any]]:
        entries = loaded.get(k)
        if entries is None:
            entries = loaded[k] = json.loads(blob(dict_name(meta, k)))
        return entries

    changed: dict[str, bytes | None] = {}  # term -> new postings (None: the term is gone)
    positions: dict[str, bytes] = {}
    holding = _named(meta["dict"], chunk, blob, deleted, terms) if terms is not None else None
    if holding is None:
        holding = _holding([chunk(k) for k in range(count)], blob, deleted)
    gone = set(deleted)
    dropped = _drop_long(holding, blob, deleted) if len(deleted) > 1 else {}
    for term, _df, pfile, poff, plen, qfile, qoff, qlen in holding:
        found = dropped.get(term)
        if found is None:
            found = drop_postings(memoryview(blob(f"p{pfile}.bin"))[poff : poff + plen], deleted, gone)
        changed[term], drop = found
        if changed[term] is not None and qfile >= 0:
            positions[term] = drop_positions(blob(f"q{qfile}.bin")[qoff : qoff + qlen], drop)
    files: dict[str, bytes] = {}
    stale: list[str] = []
    p_files = sorted({entry[2] for entry in holding if entry[0] in changed})
    q_files = sorted({entry[5] for entry in holding if entry[0] in positions})
    # Every entry naming a file rewritten is in a chunk loaded: a file holds a run of
    # terms in dictionary order, which may go on in the chunks before and after.
    for at, numbers in ((2, set(p_files)), (5, set(q_files))):
        _load_runs(chunk, count, sorted(loaded), at, numbers)
    # A file rewritten gets the next number free: its old name keeps its old bytes.
    renumbered = {
        "p": {old: next_p + i for i, old in enumerate(p_files)},
        "q": {old: next_q + i for i, old in enumerate(q_files)},
    }
    touched, packed = _pack_files(loaded, blob, renumbered, changed, positions, files)
    p_spans, q_spans, p_numbers, q_numbers = packed["p"], packed["q"], renumbered["p"], renumbered["q"]
    stale += [f"{letter}{number}.bin" for letter, numbers in renumbered.items() for number in numbers]
    # A chunk left with no term is dropped: the ones after it are renumbered (written
    # again under their new numbers).
    old_revs: list[int] = meta.get("trev") or [0] * count
    firsts: list[str] = []
    revs: list[int] = []
    kept: set[str] = set()
    for k in range(count):
        number = len(firsts)
        if k not in touched:
            firsts.append(meta["dict"][k])
            if number == k:
                revs.append(old_revs[k])
                kept.add(dict_name(meta, k))
            else:
                revs.append(new_rev)
                files[f"t{number}-{new_rev}.json"] = blob(dict_name(meta, k))
            continue
        entries = []
        for entry in loaded[k]:  # the purge's own copy: changed in place
            term = entry[0]
            postings = changed.get(term, b"")
            if postings is None:
                continue
            if postings:
                entry[1] = _count(postings)
            span = p_spans.get(term)
            if span is not None:
                entry[2:5] = p_numbers[entry[2]], *span
            span = q_spans.get(term)
            if span is not None:
                entry[5:8] = q_numbers[entry[5]], *span
            entries.append(entry)
        if entries:
            firsts.append(entries[0][0])
            revs.append(new_rev)
            files[f"t{number}-{new_rev}.json"] = _json(entries)
    if not firsts:
        return None
    stale.extend(name for name in [dict_name(meta, k) for k in range(count)] if name not in kept)
    size = int(meta["docs_chunk"])
    chunk_revs = dict(meta.get("drev", {}))
    for number in sorted({doc // size for doc in deleted}):
        name = docs_name(meta, number)
        rows = json.loads(blob(name))
        for doc in deleted:
            if doc // size == number:
                rows[doc % size] = None
        files[f"d{number}-{new_rev}.json"] = _json(rows)
        chunk_revs[str(number)] = new_rev
        stale.append(name)
    meta["dict"] = firsts
    if any(revs):
        meta["trev"] = revs
    else:
        meta.pop("trev", None)
    meta["drev"] = chunk_revs
    meta["files"] = [next_p + len(p_files), next_q + len(q_files)]
    files[meta_name(new_rev)] = _json(meta)
    stale.append(meta_name(rev))
    if twins:
        stale += [name + SCRIPT_SUFFIX for name in stale]
    written = Written(told, twins)
    with naming(folder):
        for name, data in files.items():
            put_file(folder, name, data, written)
    return Purged(new_rev, stale)


def _pack_files(
    loaded: dict[int, list[list[Any]]],
    blob: Callable[[str], bytes],
    renumbered: dict[str, dict[int, int]],
    changed: dict[str, bytes | None],
    positions: dict[str, bytes],
    files: dict[str, bytes],
) -> tuple[set[int], dict[str, dict[str, tuple[int, int]]]]:
    """Put into ``files`` each postings and positions file ``renumbered`` (letter -> old
    number -> new), its terms' bytes one after another in dictionary order (a file holds
    a run of terms): ``changed`` and ``positions`` where the purge changed them, the old
    bytes else, a term gone left out. Returns the dictionary chunks naming those files
    and each term's new (offset, length) in them, by letter. One pass over the loaded
    chunks' entries: their number is what a purge's time goes with."""
    p_numbers, q_numbers = renumbered["p"], renumbered["q"]
    parts: dict[str, list[bytes | memoryview]] = {}
    ends: dict[str, int] = {}
    views: dict[str, memoryview] = {}
    p_spans: dict[str, tuple[int, int]] = {}
    q_spans: dict[str, tuple[int, int]] = {}
    touched: set[int] = set()
    for letter, numbers in renumbered.items():
        for number in numbers:
            name = f"{letter}{number}.bin"
            parts[name], ends[name] = [], 0
            views[name] = memoryview(blob(name))

    def put(name: str, piece: bytes | memoryview, spans: dict[str, tuple[int, int]], term: str) -> None:
        spans[term] = (ends[name], len(piece))
        ends[name] += len(piece)
        parts[name].append(piece)

    for k in sorted(loaded):
        for entry in loaded[k]:
            in_p, in_q = entry[2] in p_numbers, entry[5] in q_numbers
            if not (in_p or in_q):
                continue
            touched.add(k)
            term = entry[0]
            postings = changed.get(term, b"")
            if postings is None:
                continue  # gone
            if in_p:
                name = f"p{entry[2]}.bin"
                put(name, postings or views[name][entry[3] : entry[3] + entry[4]], p_spans, term)
            if in_q:
                name = f"q{entry[5]}.bin"
                piece = positions.get(term)
                put(name, views[name][entry[6] : entry[6] + entry[7]] if piece is None else piece, q_spans, term)
    for letter, numbers in renumbered.items():
        for old, new in numbers.items():
            files[f"{letter}{new}.bin"] = b"".join(parts[f"{letter}{old}.bin"])
    return touched, {"p": p_spans, "q": q_spans}


def _clear_leftovers(folder: Path, rev: int, next_p: int, next_q: int) -> None:
    """Delete the files a purge killed before its manifest was written left in the
    folder: of a revision after ``rev``, or numbered from the next numbers free. (They
    hold no more than the live files, but a later take-down must not leave them behind
    holding its message.)"""
    free = {"p": next_p, "q": next_q}
    with naming(folder):
        for name in os.listdir(folder):
            base = name.removesuffix(SCRIPT_SUFFIX)
            if "-" in base:
                found = _REVISED_RE.match(base)
                later = found is not None and int(found[1]) > rev
            elif base[0] in "pq":
                found = _NUMBERED_RE.match(base)
                later = found is not None and int(found[2]) >= free[found[1]]
            else:
                continue
            if later:
                os.unlink(f"{folder}/{name}")


def _named(
    firsts: list[str],
    chunk: Callable[[int], list[list[Any]]],
    blob: Callable[[str], bytes],
    deleted: Sequence[int],
    terms: Collection[str],
) -> list[list[Any]] | None:
    """The dictionary entries of ``terms`` whose postings hold any of ``deleted``, each
    looked up in the one chunk that can hold it; None when one of them is missing or
    holds none (``terms`` are not what was indexed)."""
    keys = [term_key(first) for first in firsts]
    found = []
    for term in terms:
        k = bisect_right(keys, term_key(term)) - 1
        entries = chunk(k) if k >= 0 else []
        at = bisect_left(entries, term_key(term), key=lambda entry: term_key(entry[0]))
        entry = entries[at] if at < len(entries) and entries[at][0] == term else None
        if entry is None or not postings_hold(blob(f"p{entry[2]}.bin")[entry[3] : entry[3] + entry[4]], deleted):
            return None
        found.append(entry)
    return found


def _load_runs(chunk: Callable[[int], list[list[Any]]], count: int, ks: list[int], at: int, numbers: set[int]) -> None:
    """Load the dictionary chunks before and after the loaded ones (``ks``) while the
    files ``numbers`` (field ``at`` of an entry; -1 names none) may run on into them."""
    if not numbers:
        return
    for k in ks:
        before = k
        while before > 0 and _edge(chunk(before), at, numbers, first=True):
            before -= 1
            chunk(before)
        after = k
        while after < count - 1 and _edge(chunk(after), at, numbers, first=False):
            after += 1
            chunk(after)


def _edge(entries: list[list[Any]], at: int, numbers: set[int], *, first: bool) -> bool:
    """Whether the first (else last) entry of a chunk naming a file names one of ``numbers``
    (or none does): then the run of that file may go on in the chunk next to it."""
    for entry in entries if first else reversed(entries):
        if entry[at] >= 0:
            return entry[at] in numbers
    return True


def _holding(chunks: list[list[list[Any]]], blob: Callable[[str], bytes], deleted: Sequence[int]) -> list[list[Any]]:
    """The dictionary entries whose postings hold any of ``deleted``: looked up with
    numpy (``bulkpurge.postings_holding``) in a dictionary of ``VECTOR_FROM`` terms or more,
    else term by term."""
    entries = [entry for chunk in chunks for entry in chunk]
    if len(entries) < VECTOR_FROM:
        gone = set(deleted)
        found = []
        for entry in entries:
            data = memoryview(blob(f"p{entry[2]}.bin"))[entry[3] : entry[3] + entry[4]]
            if entry[1] == 1 and int.from_bytes(data[5:9], "little") not in gone:
                continue  # most terms are in one document
            if postings_hold(data, deleted):
                found.append(entry)
        return found
    from .bulkpurge import postings_holding  # numpy: worth its import for a big dictionary

    # The postings files one after another, each term's postings found by its file's place.
    files = sorted({entry[2] for entry in entries})
    base = dict(zip(files, accumulate((len(blob(f"p{k}.bin")) for k in files), initial=0), strict=False))
    data = b"".join(blob(f"p{k}.bin") for k in files)
    starts = [base[entry[2]] + entry[3] for entry in entries]
    return [entries[i] for i in postings_holding(data, starts, deleted)]


def _drop_long(
    holding: list[list[Any]], blob: Callable[[str], bytes], deleted: Sequence[int]
) -> dict[str, tuple[bytes | None, list[int]]]:
    """``codec.drop_postings`` of the terms of ``LONG_FROM`` postings or more, all at once
    with numpy (``bulkpurge.drop_postings_of``): term -> (postings left, indexes dropped)."""
    long = [entry for entry in holding if entry[1] >= LONG_FROM]
    if not long:
        return {}
    from .bulkpurge import drop_postings_of  # numpy: worth its import for long postings

    parts = [memoryview(blob(f"p{entry[2]}.bin"))[entry[3] : entry[3] + entry[4]] for entry in long]
    starts = list(accumulate((len(part) for part in parts), initial=0))[:-1]
    found = drop_postings_of(b"".join(parts), starts, deleted)
    return {entry[0]: result for entry, result in zip(long, found, strict=True)}


def _count(postings: bytes | None) -> int:
    assert postings is not None
    return int.from_bytes(postings[:4], "little")


def _json(data: object) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
