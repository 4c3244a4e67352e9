"""Read segments back and merge them into one (``merge_segments``), cut one into
pieces of a bounded size (``split_segment``), and decide which to merge
(``pick_merges``) so the number of segments stays logarithmic below that size (and
linear above it: segments of at least half the size are merged with nothing).

Impact bytes are copied as they are (they were computed with the index's fixed
average length), so merging needs no message text: postings are remapped to the new
(list, date, call) numbering and deleted documents dropped (their rows may be
``null`` already: ``purge``). Writes nothing itself.
"""

from __future__ import annotations

import json
import math
from bisect import bisect_left
from pathlib import Path
from typing import Any

from .codec import decode_positions, decode_postings
from .segment import DisplayRow, Posting, SegmentData, dict_name, display_row, docs_name, meta_name, sort_rows

__all__ = ["MERGE_FACTOR", "merge_segments", "pick_merges", "piece_bounds", "read_segment", "split_segment"]

MERGE_FACTOR = 4
"""Segments of one size tier (a power of 8 documents) merged together once there are this many."""
_TIER_BASE = 8
_DELETED_SHARE = 0.3


def read_segment(folder: Path, rev: int = 0) -> SegmentData:
    """The segment ``folder`` at revision ``rev`` (``purge``) in memory."""
    meta = json.loads((folder / meta_name(rev)).read_bytes())
    rows: list[DisplayRow] = []
    number = 0
    while len(rows) < meta["docs"]:
        rows.extend(_row(row) for row in json.loads((folder / docs_name(meta, number)).read_bytes()))
        number += 1
    files: dict[str, bytes] = {}

    def blob(name: str, offset: int, length: int) -> bytes:
        if name not in files:
            files[name] = (folder / name).read_bytes()
        return files[name][offset : offset + length]

    postings: dict[str, Posting] = {}
    for chunk in range(len(meta["dict"])):
        entries = json.loads((folder / dict_name(meta, chunk)).read_bytes())
        for term, df, pfile, poff, plen, qfile, qoff, qlen in entries:
            docs, impacts = decode_postings(blob(f"p{pfile}.bin", poff, plen))
            positions = decode_positions(blob(f"q{qfile}.bin", qoff, qlen), df) if qfile >= 0 else None
            postings[term] = Posting(docs, list(impacts), positions)
    return SegmentData(rows, postings)


def _row(row: list[object] | None) -> DisplayRow:
    """A row as read; a deleted document's row purged (``purge``) is ``null``, left out by every merge."""
    return _PURGED if row is None else display_row(row)


_PURGED = DisplayRow("", "", 0, b"null")


def merge_segments(parts: list[tuple[SegmentData, set[int]]]) -> SegmentData:
    """One segment of every live document of ``parts`` ((data, deleted doc numbers))."""
    live: list[tuple[int, int]] = []
    rows: list[DisplayRow] = []
    for index, (data, deleted) in enumerate(parts):
        for number, row in enumerate(data.rows):
            if number not in deleted:
                live.append((index, number))
                rows.append(row)
    order = sort_rows(rows)
    new_number = {live[old]: new for new, old in enumerate(order)}
    merged: dict[str, list[tuple[int, int, list[int] | None]]] = {}
    for index, (data, _deleted) in enumerate(parts):
        for term, posting in data.postings.items():
            target = merged.setdefault(term, [])
            positions = posting.positions
            for i, (doc, impact) in enumerate(zip(posting.docs, posting.impacts, strict=True)):
                new = new_number.get((index, doc))
                if new is not None:
                    target.append((new, impact, positions[i] if positions is not None else None))
    postings: dict[str, Posting] = {}
    for term, items in merged.items():
        if not items:
            continue
        items.sort(key=lambda item: item[0])
        has_positions = items[0][2] is not None
        postings[term] = Posting(
            [item[0] for item in items],
            [item[1] for item in items],
            [item[2] or [] for item in items] if has_positions else None,
        )
    return SegmentData([rows[i] for i in order], postings)


def piece_bounds(count: int, most: int) -> list[tuple[int, int]]:
    """``count`` documents cut into the fewest runs of at most ``most``, of even size
    (each at least half of ``most`` when there are two or more): [start, end) of each."""
    pieces = -(-count // most)
    return [(count * k // pieces, count * (k + 1) // pieces) for k in range(pieces)]


def split_segment(data: SegmentData, most: int) -> list[SegmentData]:
    """``data`` as consecutive segments of at most ``most`` documents each (none when it
    has none), every posting renumbered from its piece's first document."""
    bounds = piece_bounds(len(data.rows), most)
    if len(bounds) <= 1:
        return [data] if data.rows else []
    pieces = []
    for start, end in bounds:
        postings: dict[str, Posting] = {}
        for term, posting in data.postings.items():
            low, high = bisect_left(posting.docs, start), bisect_left(posting.docs, end)
            if low == high:
                continue
            positions = posting.positions
            postings[term] = Posting(
                [doc - start for doc in posting.docs[low:high]],
                list(posting.impacts[low:high]),
                list(positions[low:high]) if isinstance(positions, list) else None,
            )
        pieces.append(SegmentData(data.rows[start:end], postings))
    return pieces


def _tier(docs: int) -> int:
    return int(math.log(max(docs, 1), _TIER_BASE))


def pick_merges(segments: list[dict[str, Any]], most: int) -> list[list[str]]:
    """Groups of segment ids to merge: ``MERGE_FACTOR`` or more of one size tier (the
    new merged segment may then fill the next tier: callers call again), or a segment
    whose deleted documents are a large share of it (rewritten alone). A segment of
    ``most // 2`` live documents or more is full: merged with no other (a merge's
    result is cut into segments of at most ``most``: ``split_segment``)."""
    by_tier: dict[int, list[dict[str, Any]]] = {}
    for info in segments:
        live = int(info["docs"]) - len(info.get("deleted", ()))
        if live < most // 2:
            by_tier.setdefault(_tier(live), []).append(info)
    for tier in sorted(by_tier):
        group = by_tier[tier]
        if len(group) >= MERGE_FACTOR:
            return [[str(info["id"]) for info in group]]
    for info in segments:
        if info.get("deleted") and len(info["deleted"]) > _DELETED_SHARE * int(info["docs"]):
            return [[str(info["id"])]]
    return []
