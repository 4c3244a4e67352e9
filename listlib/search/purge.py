"""Take deleted documents out of a big segment's files without renumbering the others
(``purge_segment``): a take-down must leave no trace of a message's text in the
index, and rewriting a segment of 8,000 documents (``merge.merge_segments``) takes
seconds, where this takes a tenth of one.

The terms holding the deleted documents are the ones the caller names (a hidden
message displayed again), each checked, or else found by decoding every postings
list (with numpy in a big dictionary: ``bulk.postings_holding``).

The copy is a new segment folder: the files that held nothing of the deleted
documents are hard links to the old ones; rewritten are the ``d<k>.json`` chunks of
the deleted documents (their rows become ``null``), the postings and positions files
of the terms they held (their postings dropped; a term only they held is gone), the
dictionary chunks naming those files, and ``meta.json`` (a chunk's first term may
have gone; a chunk left empty is dropped, the ones after it renumbered). Their doc
numbers stay tombstones in the manifest (numbers only) and ``days.bin`` and the meta
keep their days, until a merge renumbers the segment.
Writes only the new folder, under a temporary name renamed into place.
"""

from __future__ import annotations

import json
import os
import shutil
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Collection, Sequence
from itertools import accumulate
from pathlib import Path
from typing import Any

from ..fsutil import naming
from .codec import SCRIPT_SUFFIX, drop_positions, drop_postings, postings_hold, script_twin
from .segment import term_key

__all__ = ["VECTOR_FROM", "purge_segment"]

VECTOR_FROM = 2_000
"""Dictionaries of this many terms or more are searched for the deleted documents' terms
with numpy (about 30 ms for 30,000 terms of 7,000 documents, against 0.3 s term by
term; numpy's import costs some 0.1 s)."""


def purge_segment(
    old: Path, new: Path, deleted: Sequence[int], *, twins: bool = True, terms: Collection[str] | None = None
) -> bool:
    """Write ``new`` as ``old`` without the documents ``deleted`` (ascending), the files
    it rewrites with their script twins when ``twins``; False (nothing written) when
    no term would be left: then the caller rewrites the segment whole. ``terms``: every
    term the deleted documents hold that may still be in the segment, when the caller
    knows them (each is checked; when one is not found holding a deleted document,
    every term is searched, as without ``terms``)."""
    meta = json.loads((old / "meta.json").read_bytes())
    blobs: dict[str, bytes] = {}
    base = f"{old}/"

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
            entries = loaded[k] = json.loads((old / f"t{k}.json").read_bytes())
        return entries

    changed: dict[str, bytes | None] = {}  # term -> new postings (None: the term is gone)
    positions: dict[str, bytes] = {}
    holding = _named(meta["dict"], chunk, blob, deleted, terms) if terms is not None else None
    if holding is None:
        holding = _holding([chunk(k) for k in range(count)], blob, deleted)
    gone = set(deleted)
    for term, _df, pfile, poff, plen, qfile, qoff, qlen in holding:
        changed[term], drop = drop_postings(memoryview(blob(f"p{pfile}.bin"))[poff : poff + plen], deleted, gone)
        if changed[term] is not None and qfile >= 0:
            positions[term] = drop_positions(blob(f"q{qfile}.bin")[qoff : qoff + qlen], drop)
    files: dict[str, bytes] = {}
    kept: list[str] = []  # dictionary chunks kept as they are
    p_files = {entry[2] for entry in holding if entry[0] in changed}
    q_files = {entry[5] for entry in holding if entry[0] in positions}
    # Every entry naming a file rewritten is in a chunk loaded: a file holds a run of
    # terms in dictionary order, which may go on in the chunks before and after.
    for at, numbers in ((2, p_files), (5, q_files)):
        _load_runs(chunk, count, sorted(loaded), at, numbers)
    packed: dict[str, dict[str, tuple[int, int]]] = {"p": {}, "q": {}}
    touched: set[int] = set()  # dictionary chunks naming a file rewritten
    for letter, numbers, at, spans in (("p", p_files, 2, changed), ("q", q_files, 5, positions)):
        # A file holds a run of terms in dictionary order: each one's bytes follow the last's.
        parts: dict[int, list[bytes]] = {number: [] for number in numbers}
        ends = dict.fromkeys(numbers, 0)
        for k in sorted(loaded):
            for entry in loaded[k]:
                number = entry[at]
                if number not in parts:
                    continue
                touched.add(k)
                if changed.get(entry[0], b"") is None:
                    continue
                piece = spans.get(entry[0])
                if piece is None:
                    piece = blob(f"{letter}{number}.bin")[entry[at + 1] : entry[at + 1] + entry[at + 2]]
                packed[letter][entry[0]] = (ends[number], len(piece))
                ends[number] += len(piece)
                parts[number].append(piece)
        files.update((f"{letter}{number}.bin", b"".join(pieces)) for number, pieces in parts.items())
    # A chunk left with no term is dropped: the ones after it are renumbered (copied under
    # their new names: a file's record is found by its name, size and mtime).
    firsts: list[str] = []
    for k in range(count):
        name = f"t{len(firsts)}.json"
        if k not in touched:
            firsts.append(meta["dict"][k])
            if name == f"t{k}.json":
                kept.append(name)
            else:
                files[name] = (old / f"t{k}.json").read_bytes()
            continue
        entries = []
        for entry in loaded[k]:
            term = entry[0]
            if term in changed and changed[term] is None:
                continue
            entry = list(entry)
            if term in changed:
                entry[1] = _count(changed[term])
            if term in packed["p"]:
                entry[3:5] = packed["p"][term]
            if term in packed["q"]:
                entry[6:8] = packed["q"][term]
            entries.append(entry)
        if entries:
            firsts.append(entries[0][0])
            files[name] = _json(entries)
    if not firsts:
        return False
    meta["dict"] = firsts
    size = int(meta["docs_chunk"])
    for number in sorted({doc // size for doc in deleted}):
        rows = json.loads((old / f"d{number}.json").read_bytes())
        for doc in deleted:
            if doc // size == number:
                rows[doc % size] = None
        files[f"d{number}.json"] = _json(rows)
    files["meta.json"] = _json(meta)
    if twins:
        files.update([(name + SCRIPT_SUFFIX, script_twin(name, data)) for name, data in files.items()])
        kept += [name + SCRIPT_SUFFIX for name in kept]
    _write(old, new, files, kept)
    return True


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
    numpy (``bulk.postings_holding``) in a dictionary of ``VECTOR_FROM`` terms or more,
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
    from .bulk import postings_holding  # numpy: worth its import for a big dictionary

    # The postings files one after another, each term's postings found by its file's place.
    files = sorted({entry[2] for entry in entries})
    base = dict(zip(files, accumulate((len(blob(f"p{k}.bin")) for k in files), initial=0), strict=False))
    data = b"".join(blob(f"p{k}.bin") for k in files)
    starts = [base[entry[2]] + entry[3] for entry in entries]
    return [entries[i] for i in postings_holding(data, starts, deleted)]


def _count(postings: bytes | None) -> int:
    assert postings is not None
    return int.from_bytes(postings[:4], "little")


def _json(data: object) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _write(old: Path, new: Path, files: dict[str, bytes], kept: list[str]) -> None:
    """``new``: the ``files``, and linked from ``old`` the dictionary chunks ``kept``
    and every other file but its dictionary chunks."""
    temp = new.with_name(new.name + ".tmp")
    shutil.rmtree(temp, ignore_errors=True)
    temp.mkdir(parents=True)
    try:
        with naming(new):
            with os.scandir(old) as entries:
                for entry in entries:
                    if entry.name not in files and not entry.name.startswith("t"):
                        _link(entry.path, f"{temp}/{entry.name}")
            for name in kept:
                _link(f"{old}/{name}", f"{temp}/{name}")
            for name, data in files.items():
                (temp / name).write_bytes(data)
        os.replace(temp, new)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise


def _link(source: str, target: str) -> None:
    """A file that holds nothing deleted, shared with the old segment (copied where
    the file system has no hard links)."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)
