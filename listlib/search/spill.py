"""Runs of a big batch's postings kept on disk (``spill_run``) and merged back a band
of terms at a time into a segment being written (``write_runs``): indexing a batch
of any size then holds one run of ``update.RUN_DOCS`` documents being inverted and
one band of terms being merged, never the whole segment's postings; a band holds no
more postings and terms than the biggest run (nor more than ``BAND_POSTINGS`` and
``BAND_TERMS``), so that merging never takes more than inverting took.

A run is ``bulk.Columns`` of consecutive documents, its terms in ``term_key`` order,
as flat files in a folder of its own (``terms`` UTF-8 one after another, ``term_at``
where each starts, and the arrays of ``Columns`` as they are in memory). The merge
reads each run's terms ``step`` at a time; a band ends at the smallest last term
read of any run, so every run gives the band all it holds up to there, and the
band's terms are merged (``bulk.merge_columns``: the runs are in doc-number order)
and handed to the writer. The segment's bytes are those of the batch inverted in
one piece. Imports numpy. Writes only under the folders it is given.
"""

from __future__ import annotations

import itertools
from bisect import bisect_right
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .bulk import Columns, layout_of, merge_columns
from .segment import term_key
from .writer import SegmentWriter

__all__ = ["BAND_TERMS", "Run", "spill_run", "write_runs"]

BAND_TERMS = 1 << 17
"""Terms read from all runs together (each run reads its share at a time)."""
BAND_POSTINGS = 1 << 21
"""Postings a band takes from all runs together, and one term more from each (a term
is never cut): its arrays, merged and encoded, are most of what the merge holds."""

_ARRAYS = {"ends": "<i8", "docs": "<u4", "impacts": "u1", "place_ends": "<i8", "places": "<u2"}


class Run(NamedTuple):
    folder: Path
    terms: int
    postings: int


def spill_run(folder: Path, columns: Columns) -> Run:
    """Write ``columns`` (terms in ``term_key`` order) as the run ``folder`` (made here)."""
    assert columns.by_key
    folder.mkdir(parents=True)
    encoded = [term.encode("utf-8", "surrogatepass") for term in columns.terms]
    (folder / "terms").write_bytes(b"".join(encoded))
    np.array([0, *itertools.accumulate(map(len, encoded))], dtype="<i8").tofile(folder / "term_at")
    for name, dtype in _ARRAYS.items():
        np.ascontiguousarray(getattr(columns, name), dtype=dtype).tofile(folder / name)
    return Run(folder, len(encoded), int(columns.ends[-1]) if len(columns.ends) else 0)


class _Reader:
    """A run's terms, read ``step`` at a time, handed out in bands (``take``)."""

    def __init__(self, run: Run, step: int) -> None:
        self.run, self.step = run, step
        self.next = 0
        """The first term not read yet."""
        self.base = 0
        """The run's number of ``terms[0]``."""
        self.terms: list[str] = []
        self.keys: list[bytes] = []
        self.ends: list[int] = []
        """Where each term read ends in the run's postings, after where the one before ends."""
        self.taken = 0
        """Terms of ``terms`` handed out already."""

    def _read(self, name: str, start: int, stop: int) -> np.ndarray:
        dtype = np.dtype(_ARRAYS.get(name, "<i8" if name == "term_at" else "u1"))
        return np.fromfile(self.run.folder / name, dtype=dtype, count=stop - start, offset=start * dtype.itemsize)

    def last(self) -> bytes | None:
        """The key of the last term read, reading more when all were handed out; None at the end."""
        if self.taken == len(self.terms) and self.next < self.run.terms:
            stop = min(self.next + self.step, self.run.terms)
            at = self._read("term_at", self.next, stop + 1).tolist()
            blob = self._read("terms", at[0], at[-1]).tobytes()
            self.terms = [
                blob[a - at[0] : b - at[0]].decode("utf-8", "surrogatepass") for a, b in itertools.pairwise(at)
            ]
            self.keys = [term_key(term) for term in self.terms]
            self.ends = self._read("ends", max(self.next - 1, 0), stop).tolist()
            if not self.next:
                self.ends.insert(0, 0)
            self.base, self.taken, self.next = self.next, 0, stop
        return self.keys[-1] if self.taken < len(self.keys) else None

    def within(self, postings: int) -> bytes:
        """The key of the term at which the terms not handed out reach ``postings`` (at
        least the first of them; the last read when they do not)."""
        ends = self.ends
        at = bisect_right(ends, ends[self.taken] + postings, self.taken + 1) - 1
        return self.keys[min(max(at, self.taken + 1), len(self.keys)) - 1]

    def take(self, bound: bytes) -> Columns | None:
        """The postings of the terms read up to ``bound`` (a key) not handed out yet."""
        stop = bisect_right(self.keys, bound, self.taken)
        if stop == self.taken:
            return None
        first, last = self.base + self.taken, self.base + stop
        spans = []
        for name in ("ends", "place_ends"):
            ends = self._read(name, max(first - 1, 0), last)
            low = int(ends[0]) if first else 0
            spans.append((ends[1:] if first else ends) - low)
            spans.append((low, low + int(spans[-1][-1])))
        (ends, (low, high), place_ends, (place_low, place_high)) = spans
        part = Columns(
            [],
            self.terms[self.taken : stop],
            ends,
            self._read("docs", low, high),
            self._read("impacts", low, high),
            place_ends,
            self._read("places", place_low, place_high),
            True,
        )
        self.taken = stop
        return part


def write_runs(writer: SegmentWriter, runs: list[Run]) -> None:
    """Hand ``writer`` the terms of ``runs`` (consecutive documents, in order) merged, a
    band at a time: up to the terms and postings of the biggest run (a run of a few
    hundred documents is merged in as small bands as it was inverted in)."""
    band_terms = min(BAND_TERMS, max((run.terms for run in runs), default=0))
    band_postings = min(BAND_POSTINGS, max((run.postings for run in runs), default=0))
    readers = [_Reader(run, max(256, band_terms // max(len(runs), 1))) for run in runs]
    while True:
        lasts = [key for key in (reader.last() for reader in readers) if key is not None]
        if not lasts:
            return
        share = max(1, band_postings // len(readers))
        bound = min([*lasts, *(reader.within(share) for reader in readers if reader.last() is not None)])
        parts = [part for part in (reader.take(bound) for reader in readers) if part is not None]
        writer.add_terms(layout_of(merge_columns(parts, by_key=True)))
