"""A take-down's purge with numpy, over many terms' encoded postings at once (``purge``
loads it for big dictionaries and long postings only): ``postings_holding`` finds the
terms whose postings hold given documents, where ``codec.postings_hold`` costs some
10 µs a term, and ``drop_postings_of`` drops those documents from them, encoding what
is left as ``bulk.encode_all_postings`` does. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .bulk import encode_all_postings
from .codec import BLOCK, _decode_blocks

__all__ = ["drop_postings_of", "postings_holding"]


def _u32(buf: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The little-endian u32 at each offset ``at`` of the bytes ``buf``."""
    out = buf[at].astype(np.int64)
    for k in (1, 2, 3):
        out |= buf[at + k].astype(np.int64) << (8 * k)
    return out


def _blocks(buf: np.ndarray, starts: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every block of the postings starting at each offset of ``starts`` in ``buf``: its
    term's index, its offset and its number of postings (the first blocks of all terms,
    then the second ones, and so on)."""
    at = np.asarray(starts, np.int64)
    left = _u32(buf, at)
    at = at + 4
    term = np.arange(len(at))
    terms, offsets, sizes = [], [], []
    while len(term):  # one round per block: the n-th block of every term that has one
        n = np.minimum(left, BLOCK)
        terms.append(term)
        offsets.append(at)
        sizes.append(n)
        at = at + 5 + (n - 1) * buf[at].astype(np.int64) + n
        left = left - n
        going = left > 0
        term, at, left = term[going], at[going], left[going]
    return np.concatenate(terms), np.concatenate(offsets), np.concatenate(sizes)


def postings_holding(data: bytes | memoryview, starts: Sequence[int], docs: Sequence[int]) -> list[int]:
    """The indexes ``i`` (ascending) of the terms whose postings, encoded as
    ``codec.encode_postings`` from offset ``starts[i]`` of ``data``, hold any of ``docs``:
    ``[i for i, s in enumerate(starts) if codec.postings_hold(data[s:], docs)]``, with
    every block of every term decoded at once."""
    if not starts or not docs:
        return []
    buf = np.frombuffer(data, np.uint8)
    wanted = np.asarray(sorted(docs), np.int64)
    block_term, block_at, block_n = _blocks(buf, starts)
    width = buf[block_at].astype(np.int64)
    first = _u32(buf, block_at + 1)
    hit = np.isin(first, wanted)
    gaps_of = block_n - 1
    total = int(gaps_of.sum())
    if total:
        block = np.repeat(np.arange(len(block_at)), gaps_of)
        start = np.cumsum(gaps_of) - gaps_of  # each block's first gap in the flat arrays
        k = np.arange(total) - start[block]
        where = block_at[block] + 5 + k * width[block]
        gaps = buf[where].astype(np.int64)
        for byte in (1, 2, 3):
            wide = width[block] > byte
            gaps[wide] |= buf[where[wide] + byte].astype(np.int64) << (8 * byte)
        sums = np.cumsum(gaps)
        before = np.zeros(len(block_at), np.int64)
        some = gaps_of > 0
        before[some] = (sums - gaps)[start[some]]
        found = first[block] + sums - before[block]
        hit[np.unique(block[np.isin(found, wanted)])] = True
    return sorted(set(block_term[hit].tolist()))


def drop_postings_of(
    data: bytes | memoryview, starts: Sequence[int], docs: Sequence[int]
) -> list[tuple[bytes | None, list[int]]]:
    """``codec.drop_postings(data[s:], docs)`` of the terms whose postings, encoded as
    ``codec.encode_postings`` does (every segment's are), start at each offset ``s`` of
    ``starts``: the same bytes (None when no posting is left) and indexes dropped, with
    every block of every term decoded, and the postings left encoded, at once (about
    0.2 µs a posting against 0.4 term by term). ``docs``: at least one."""
    if not starts:
        return []
    buf = np.frombuffer(data, np.uint8)
    wanted = np.asarray(sorted(docs), np.int64)
    block_term, block_at, block_n = _blocks(buf, starts)
    order = np.lexsort((block_at, block_term))  # every term's blocks, in order
    block_term, block_at, block_n = block_term[order], block_at[order], block_n[order]
    width = buf[block_at].astype(np.int64)
    # Every block as a row of BLOCK postings (a term's last block may be short: the rest
    # of its row is left out below): its first doc, then its gaps, summed along the row.
    found = np.zeros((len(block_at), BLOCK), np.int64)
    found[:, 0] = _u32(buf, block_at + 1)
    impacts = np.zeros((len(block_at), BLOCK), np.uint8)
    full = block_n == BLOCK
    for size in (1, 2, 4):
        rows = np.flatnonzero(full & (width == size))
        if len(rows):
            at = block_at[rows, None] + 5
            found[rows, 1:] = buf[at + np.arange((BLOCK - 1) * size)].view(f"<u{size}")
            impacts[rows] = buf[at + (BLOCK - 1) * size + np.arange(BLOCK)]
    view = memoryview(data)
    for row in np.flatnonzero(~full).tolist():  # at most one a term
        numbers, row_impacts = _decode_blocks(view, int(block_at[row]), int(block_n[row]))
        found[row, : len(numbers)] = np.diff(numbers, prepend=0)
        impacts[row, : len(numbers)] = np.frombuffer(row_impacts, np.uint8)
    np.cumsum(found, axis=1, out=found)
    present = np.arange(BLOCK) < block_n[:, None]
    found, impacts = found[present], impacts[present]
    posting_term = np.repeat(block_term, block_n)
    term_start = np.searchsorted(posting_term, np.arange(len(starts)))
    nearest = np.minimum(np.searchsorted(wanted, found), len(wanted) - 1)
    gone = wanted[nearest] == found
    dropped = np.flatnonzero(gone)
    drop_term = posting_term[dropped]
    drop_cuts = np.searchsorted(drop_term, np.arange(len(starts) + 1))
    drop_at = (dropped - term_start[drop_term]).tolist()
    kept = ~gone
    left_counts = np.bincount(posting_term[kept], minlength=len(starts))
    some = np.flatnonzero(left_counts)
    encoded, ends = encode_all_postings(found[kept], impacts[kept], np.cumsum(left_counts[some]))
    out: list[tuple[bytes | None, list[int]]] = [(None, []) for _ in starts]
    for number, begin, end in zip(some.tolist(), ends, ends[1:], strict=False):
        out[number] = (encoded[begin:end], [])
    cuts = drop_cuts.tolist()
    for number in range(len(starts)):
        out[number] = (out[number][0], drop_at[cuts[number] : cuts[number + 1]])
    return out
