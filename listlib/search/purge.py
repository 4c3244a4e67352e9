"""Take deleted documents out of a big segment's files without renumbering the others
(``purge_segment``): a take-down must leave no trace of a message's text in the
index, and rewriting a segment of 50,000 documents (``merge.merge_segments``) takes
about 20 s, where this takes well under one.

The copy is a new segment folder: the files that held nothing of the deleted
documents are hard links to the old ones; rewritten are the ``d<k>.json`` chunks of
the deleted documents (their rows become ``null``), the postings and positions files
of the terms they held (their postings dropped; a term only they held is gone), the
dictionary chunks naming those files, and ``meta.json`` (a chunk's first term may
have gone). Their doc numbers stay tombstones in the manifest (numbers only) and
``days.bin`` and the meta keep their days, until a merge renumbers the segment.
Writes only the new folder, under a temporary name renamed into place.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..fsutil import naming
from .codec import SCRIPT_SUFFIX, drop_positions, drop_postings, postings_hold, script_twin

__all__ = ["purge_segment"]


def purge_segment(old: Path, new: Path, deleted: Sequence[int], *, twins: bool = True) -> bool:
    """Write ``new`` as ``old`` without the documents ``deleted`` (ascending), the files
    it rewrites with their script twins when ``twins``; False (nothing written) when a
    dictionary chunk would be left empty: then the caller rewrites the segment whole."""
    meta = json.loads((old / "meta.json").read_bytes())
    blobs: dict[str, bytes] = {}
    base = f"{old}/"

    def blob(name: str) -> bytes:
        data = blobs.get(name)
        if data is None:
            with open(base + name, "rb") as file:
                data = blobs[name] = file.read()
        return data

    chunks: list[list[list[Any]]] = [json.loads((old / f"t{k}.json").read_bytes()) for k in range(len(meta["dict"]))]
    gone = set(deleted)
    changed: dict[str, bytes | None] = {}  # term -> new postings (None: the term is gone)
    positions: dict[str, bytes] = {}
    for chunk in chunks:
        for term, df, pfile, poff, plen, qfile, qoff, qlen in chunk:
            data = memoryview(blob(f"p{pfile}.bin"))[poff : poff + plen]
            if df == 1 and int.from_bytes(data[5:9], "little") not in gone:
                continue  # most terms are in one document
            if not postings_hold(data, deleted):
                continue
            changed[term], drop = drop_postings(data, deleted)
            if changed[term] is not None and qfile >= 0:
                positions[term] = drop_positions(blob(f"q{qfile}.bin")[qoff : qoff + qlen], drop)
    files: dict[str, bytes] = {}
    p_files = {f"p{e[2]}.bin" for chunk in chunks for e in chunk if e[0] in changed}
    q_files = {f"q{e[5]}.bin" for chunk in chunks for e in chunk if e[0] in positions}
    packed: dict[str, dict[str, tuple[int, int]]] = {"p": {}, "q": {}}
    for letter, names, at, spans in (("p", p_files, 2, changed), ("q", q_files, 5, positions)):
        # A file holds a run of terms in dictionary order: each one's bytes follow the last's.
        parts: dict[str, list[bytes]] = {name: [] for name in names}
        ends = dict.fromkeys(names, 0)
        for chunk in chunks:
            for entry in chunk:
                name = f"{letter}{entry[at]}.bin"
                if name not in parts or changed.get(entry[0], b"") is None:
                    continue
                piece = spans.get(entry[0])
                if piece is None:
                    piece = blob(name)[entry[at + 1] : entry[at + 1] + entry[at + 2]]
                packed[letter][entry[0]] = (ends[name], len(piece))
                ends[name] += len(piece)
                parts[name].append(piece)
        files.update((name, b"".join(pieces)) for name, pieces in parts.items())
    for k, chunk in enumerate(chunks):
        entries = []
        for entry in chunk:
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
        if not entries:
            return False
        if entries != chunk:
            files[f"t{k}.json"] = _json(entries)
            meta["dict"][k] = entries[0][0]
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
    _write(old, new, files)
    return True


def _count(postings: bytes | None) -> int:
    assert postings is not None
    return int.from_bytes(postings[:4], "little")


def _json(data: object) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _write(old: Path, new: Path, files: dict[str, bytes]) -> None:
    temp = new.with_name(new.name + ".tmp")
    shutil.rmtree(temp, ignore_errors=True)
    temp.mkdir(parents=True)
    try:
        with naming(new):
            with os.scandir(old) as entries:
                for entry in entries:
                    if entry.name not in files:
                        _link(entry.path, f"{temp}/{entry.name}")
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
