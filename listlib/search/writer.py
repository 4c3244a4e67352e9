"""Write one segment's files a piece at a time (``SegmentWriter``): display rows in
doc-number order, then terms in ``term_key`` order, each in as many calls as the
caller likes, so that a segment of any size is written holding only the piece in
hand and a few files' worth of bytes.

The files are those ``segment`` describes, byte for byte whatever the pieces: a
postings or positions file takes pieces while they fit (``_Packer``, the rule of a
whole layout packed at once), and a dictionary chunk ends with the entry that
brings it to ``DICT_CHUNK``; a file is written as soon as what comes after can no
longer change it. The folder is written under a temporary name and renamed into
place by ``finish`` (``abort`` deletes it). Writes only that folder.
"""

from __future__ import annotations

import bisect
import os
import shutil
from array import array
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..fsutil import naming
from . import segment
from .segment import (
    DOCS_CHUNK,
    DisplayRow,
    Layout,
    Told,
    Written,
    _day,
    _json,
    day_runs,
    meta_name,
    put_file,
)

__all__ = ["SegmentWriter"]

_NO_POSITIONS = (-1, 0, 0)


class _Packer:
    """The ``p<k>.bin`` (or ``q<k>.bin``) files of a segment: pieces (one per term, in
    order, empty for none) appended a run at a time; a file takes pieces while they fit
    in ``limit`` bytes, and at least one. Each piece's (file, offset, length) goes to
    ``spans`` once its file is written (``_NO_POSITIONS`` for an empty piece)."""

    def __init__(self, folder: Path, letter: str, limit: int, written: Written) -> None:
        self.folder, self.letter, self.limit, self.written = folder, letter, limit, written
        self.blob = bytearray()
        self.at = [0]
        """Where each pending piece starts in ``blob``, and one more at the end."""
        self.files = 0
        self.spans: deque[tuple[int, int, int]] = deque()

    def add(self, blob: bytes | memoryview, at: Sequence[int]) -> None:
        """Pieces laid end to end in ``blob``, piece k at ``at[k]:at[k + 1]`` (``at[0]`` 0)."""
        base = len(self.blob)
        self.blob += blob
        self.at.extend(base + offset for offset in at[1:])
        self._pack(final=False)

    def finish(self) -> None:
        self._pack(final=True)

    def _pack(self, final: bool) -> None:
        at, limit = self.at, self.limit
        pieces = len(at) - 1
        start = 0
        # A file's end is settled once a piece known ends past its limit (or at the end).
        while start < pieces and at[start] < at[-1] and (final or at[-1] > at[start] + limit):
            end = max(bisect.bisect_right(at, at[start] + limit, start) - 1, start + 1)
            base = at[start]
            name = f"{self.letter}{self.files}.bin"
            put_file(self.folder, name, memoryview(self.blob)[base : at[end]], self.written)
            self.spans.extend(
                (self.files, at[k] - base, at[k + 1] - at[k]) if at[k + 1] > at[k] else _NO_POSITIONS
                for k in range(start, end)
            )
            start, self.files = end, self.files + 1
        if final:
            self.spans.extend([_NO_POSITIONS] * (pieces - start))
            start = pieces
        if start:
            cut = at[start]
            del self.blob[:cut]
            self.at = [offset - cut for offset in at[start:]]


class SegmentWriter:
    """A segment being written into ``folder`` (which must not exist): ``add_rows`` and
    ``add_terms`` as often as needed, then ``finish`` (or ``abort``). ``told`` is told
    of each file as written; ``twins``: each file's script twin too."""

    def __init__(self, folder: Path, told: Told | None = None, *, twins: bool = True) -> None:
        self.target = folder
        self.folder = folder.with_name(folder.name + ".tmp")
        shutil.rmtree(self.folder, ignore_errors=True)
        with naming(self.folder):
            self.folder.mkdir(parents=True)
        self.written = Written(told, twins)
        # Looked up here: tests make them small.
        self.p = _Packer(self.folder, "p", segment.POSTINGS_CHUNK, self.written)
        self.q = _Packer(self.folder, "q", segment.POSTINGS_CHUNK * 2, self.written)
        self.dict_chunk = segment.DICT_CHUNK
        self.pending: deque[tuple[str, int]] = deque()
        """Terms (and their document frequencies) not yet in a dictionary entry."""
        self.entries: list[list[Any]] = []
        self.sizes = [0]
        """Running total of the dictionary entries' sizes (``entries`` not yet written)."""
        self.firsts: list[str] = []
        self.rows: list[bytes] = []
        """Rows of the display chunk not yet full."""
        self.docs = 0
        self.days = array("H")
        self.lists: dict[str, list[int]] = {}

    def add_rows(self, rows: Sequence[DisplayRow]) -> None:
        """The next documents' display rows, in doc-number order."""
        for row in rows:
            self.rows.append(row.json)
            self.days.append(_day(row.date))
            span = self.lists.setdefault(row.list, [self.docs, self.docs + 1])
            span[1] = self.docs = self.docs + 1
            if len(self.rows) == DOCS_CHUNK:
                self._put_rows()

    def _put_rows(self) -> None:
        number = (self.docs - 1) // DOCS_CHUNK
        with naming(self.folder):
            put_file(self.folder, f"d{number}.json", b"[" + b",".join(self.rows) + b"]", self.written)
        self.rows = []

    def add_terms(self, layout: Layout) -> None:
        """The next terms (``term_key`` order, all after those added before), encoded."""
        with naming(self.folder):
            self.pending.extend(zip(layout.terms, layout.df, strict=True))
            self.p.add(layout.postings, layout.postings_at)
            self.q.add(layout.positions, layout.positions_at)
            self._put_dictionary(final=False)

    def _put_dictionary(self, final: bool) -> None:
        p, q, entries, sizes = self.p.spans, self.q.spans, self.entries, self.sizes
        for _ in range(min(len(p), len(q))):
            term, df = self.pending.popleft()
            entries.append([term, df, *p.popleft(), *q.popleft()])
            sizes.append(sizes[-1] + len(term.encode()) + 30)
        start = 0
        # A chunk ends with the entry that brings its size to DICT_CHUNK (settled once one is known).
        while start < len(entries) and (final or sizes[-1] >= sizes[start] + self.dict_chunk):
            end = min(bisect.bisect_left(sizes, sizes[start] + self.dict_chunk, start + 1), len(entries))
            put_file(self.folder, f"t{len(self.firsts)}.json", _json(entries[start:end]), self.written)
            self.firsts.append(entries[start][0])
            start = end
        if start:
            del entries[:start]
            self.sizes = [size - sizes[start] for size in sizes[start:]]

    def finish(self) -> dict[str, object]:
        """Write the rest and the meta, and rename the folder into place; returns the meta."""
        try:
            with naming(self.target):
                self.p.finish()
                self.q.finish()
                self._put_dictionary(final=True)
                if self.rows:
                    self._put_rows()
                days = self.days
                meta = {
                    "docs": self.docs,
                    "docs_chunk": DOCS_CHUNK,
                    "lists": self.lists,
                    "dict": self.firsts,
                    "day_runs": day_runs(days),
                    "min_day": min(days, default=0),
                    "max_day": max(days, default=0),
                    "files": [self.p.files, self.q.files],
                }
                put_file(self.folder, meta_name(0), _json(meta), self.written)
                os.replace(self.folder, self.target)
        except BaseException:
            self.abort()
            raise
        return meta

    def abort(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
