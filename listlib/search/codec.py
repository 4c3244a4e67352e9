"""The binary encodings of the index files (little-endian; ``search.js`` decodes the same).

Postings of one term: ``u32 count``, then blocks of up to ``BLOCK`` postings, each
``u8 width`` (1, 2 or 4), ``u32 first doc``, ``n - 1`` doc-number gaps of ``width``
bytes, then ``n`` impact bytes (the quantized length-normalized term frequency, see
``quantize``). Fixed-width blocks decode with one C call in Python and a typed
array in the browser.

Positions of one term: for each posting in order, ``u16 count`` then that many
``u16`` positions (``MAX_POSITION``).

Script twins (``script_twin``): every file of the index also exists as ``<name>.js``, a
classic script that hands its bytes to the page (``ListlibSearch.put(name, data)``: a
JSON file's value as it is, a binary file's bytes in base64). A page opened from
``file://`` may not ``fetch`` files, but may load scripts: ``search.js`` reads the
twins there, and the files themselves over http.

Pure; no I/O.
"""

from __future__ import annotations

import base64
import json
import math
import struct
import sys
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Container, Sequence
from itertools import accumulate, islice, pairwise, repeat
from operator import sub

__all__ = [
    "BLOCK",
    "decode_positions",
    "decode_postings",
    "drop_positions",
    "drop_postings",
    "encode_positions",
    "encode_postings",
    "impact_table",
    "postings_hold",
    "script_twin",
    "SCRIPT_SUFFIX",
]

BLOCK = 128
SCRIPT_SUFFIX = ".js"
_TYPECODE = {1: "B", 2: "H", 4: "I"}
_SWAP = sys.byteorder != "little"
_TFN_BASE = 0.05
_TFN_STEP = 1.06


def quantize(tfn: float) -> int:
    """A length-normalized term frequency as one byte 1..255 (log scale, 6% steps)."""
    if tfn <= _TFN_BASE:
        return 1
    return max(1, min(255, round(math.log(tfn / _TFN_BASE) / math.log(_TFN_STEP)) + 1))


def impact_table(k1: float) -> list[float]:
    """Per impact byte, BM25's saturated term weight ``tfn (k1 + 1) / (tfn + k1)``,
    rounded to 6 digits (written into the manifest so both readers use the same numbers)."""
    table = [0.0]
    for q in range(1, 256):
        tfn = _TFN_BASE * _TFN_STEP ** (q - 1)
        table.append(round(tfn * (k1 + 1) / (tfn + k1), 6))
    return table


_ONE = struct.Struct("<IBI")


def encode_postings(docs: Sequence[int], impacts: list[int] | bytes) -> bytes:
    if len(docs) == 1:  # most terms of a segment occur in one document
        return _ONE.pack(1, 1, docs[0]) + bytes(impacts[:1])
    count = len(docs)
    # Every gap at once (loops in C: a take-down encodes postings of 50,000 documents
    # again); a block's gaps are a slice of them.
    gaps = array("I", map(sub, islice(docs, 1, None), docs))
    out = bytearray(struct.pack("<I", count))
    for start in range(0, count, BLOCK):
        end = min(start + BLOCK, count)
        block = gaps[start : end - 1]
        biggest = max(block, default=0)
        width = 1 if biggest < 0x100 else 2 if biggest < 0x10000 else 4
        out += struct.pack("<BI", width, docs[start])
        values = block if width == 4 else array(_TYPECODE[width], block)
        if _SWAP:
            values.byteswap()
        out += values.tobytes()
        out += bytes(impacts[start:end])
    return bytes(out)


def decode_postings(data: bytes | memoryview) -> tuple[list[int], bytes]:
    """(doc numbers, impact bytes) of one term."""
    view = memoryview(data)
    (count,) = struct.unpack_from("<I", view, 0)
    return _decode_blocks(view, 4, count)


def _decode_blocks(view: memoryview, at: int, left: int) -> tuple[list[int], bytes]:
    """(doc numbers, impact bytes) of the ``left`` postings whose blocks start at ``at``."""
    docs: list[int] = []
    impacts = bytearray()
    while left:
        n = min(left, BLOCK)
        width, first = struct.unpack_from("<BI", view, at)
        at += 5
        gaps = array(_TYPECODE[width])
        gaps.frombytes(view[at : at + (n - 1) * width])
        if _SWAP:
            gaps.byteswap()
        at += (n - 1) * width
        docs.extend(accumulate(gaps, initial=first))
        impacts += view[at : at + n]
        at += n
        left -= n
    return docs, bytes(impacts)


def drop_postings(
    data: bytes | memoryview, docs: Sequence[int], gone: Container[int] | None = None
) -> tuple[bytes | None, list[int]]:
    """One term's postings without ``docs`` (ascending; None when none is left), and the
    indexes of the postings dropped. Blocks before the first one dropped are kept as
    they are (and not decoded: their first docs say which may hold one); the rest are
    encoded again (a block holds ``BLOCK`` postings). ``gone``: ``docs`` as a set, when
    the caller drops them from many terms."""
    view = memoryview(data)
    (count,) = struct.unpack_from("<I", view, 0)
    starts: list[int] = []
    firsts: list[int] = []
    widths: list[int] = []
    at, left = 4, count
    while left:
        n = min(left, BLOCK)
        width, first = struct.unpack_from("<BI", view, at)
        starts.append(at)
        firsts.append(first)
        widths.append(width)
        at += 5 + (n - 1) * width + n
        left -= n
    # The first block that may hold one of the docs: decoded from there on.
    lowest = bisect_left(docs, firsts[0]) if firsts else len(docs)
    if lowest == len(docs):
        return bytes(data), []
    block = bisect_right(firsts, docs[lowest]) - 1
    if lowest == len(docs) - 1 and count > 1:
        return _drop_one(view, count, starts, firsts, widths, block, docs[lowest])
    base = block * BLOCK
    numbers, impacts = _decode_blocks(view, starts[block], count - base)
    # Only the docs within that range; looked up one by one when few, else in one pass.
    docs = docs[lowest : bisect_left(docs, numbers[-1] + 1)]
    if len(docs) * 16 < len(numbers):
        drop = []
        for doc in docs:
            at = bisect_left(numbers, doc)
            if numbers[at] == doc:
                drop.append(at)
    else:
        if gone is None:
            gone = set(docs)
        drop = [at for at, doc in enumerate(numbers) if doc in gone]
    if not drop:
        return bytes(data), []
    if len(drop) == count:
        return None, drop
    first = drop[0] // BLOCK * BLOCK
    bounds = [first, *drop, len(numbers)]
    kept = [(a if k == 0 else a + 1, b) for k, (a, b) in enumerate(pairwise(bounds))]
    tail = encode_postings([doc for a, b in kept for doc in numbers[a:b]], b"".join(impacts[a:b] for a, b in kept))
    prefix = view[4 : starts[block + first // BLOCK]]
    return struct.pack("<I", count - len(drop)) + bytes(prefix) + tail[4:], [base + at for at in drop]


_LOWEST = {1: 0, 2: 0x100, 4: 0x10000}
"""The smallest gap that needs a block of each width (``encode_postings`` picks the least)."""


def _width(biggest: int) -> int:
    return 1 if biggest < 0x100 else 2 if biggest < 0x10000 else 4


def _gap_bytes(gaps: Sequence[int], width: int) -> bytes:
    values = array(_TYPECODE[width], gaps)
    if _SWAP:
        values.byteswap()
    return values.tobytes()


def _drop_one(
    view: memoryview, count: int, starts: list[int], firsts: list[int], widths: list[int], block: int, doc: int
) -> tuple[bytes | None, list[int]]:
    """``drop_postings`` of one doc (its only candidate, which block ``block`` would
    hold): that block is decoded and encoded again; every block after it loses its
    first posting to the block before and takes the next block's first, which moves
    its gap bytes and impact bytes over by one as they are (a block is decoded only
    to sum its gaps, and its gaps converted only when its width changes). The bytes
    are those of ``encode_postings`` of the postings left."""
    blocks = len(starts)

    def impacts_at(j: int) -> int:  # where block j's impact bytes start
        return starts[j] + 5 + (min(BLOCK, count - j * BLOCK) - 1) * widths[j]

    n = min(BLOCK, count - block * BLOCK)
    numbers, impacts = _decode_blocks(view, starts[block], n)
    at = bisect_left(numbers, doc)
    if at == n or numbers[at] != doc:
        return bytes(view), []
    del numbers[at]
    kept = impacts[:at] + impacts[at + 1 :]
    if block + 1 < blocks:  # the next block's first posting moves into this one
        numbers.append(firsts[block + 1])
        first_impact = impacts_at(block + 1)
        kept += view[first_impact : first_impact + 1]
    out = bytearray(struct.pack("<I", count - 1))
    out += view[4 : starts[block]]
    if numbers:
        gaps = list(map(sub, islice(numbers, 1, None), numbers))
        width = _width(max(gaps, default=0))
        out += struct.pack("<BI", width, numbers[0])
        out += _gap_bytes(gaps, width)
        out += kept
    for j in range(block + 1, blocks):
        n = min(BLOCK, count - j * BLOCK)
        if n == 1:
            break  # the last block's only posting moved into the block before
        width, start = widths[j], starts[j] + 5
        raw = view[start : start + (n - 1) * width]
        gaps_j = array(_TYPECODE[width])
        gaps_j.frombytes(raw)
        if _SWAP:
            gaps_j.byteswap()
        rest = gaps_j[1:]
        # The least width of the gaps left: the old one, unless the gap leaving was the
        # one that needed it (``encode_postings`` always picked the least).
        biggest = max(rest, default=0) if width > 1 and gaps_j[0] >= _LOWEST[width] else _LOWEST[width]
        impact_at = start + (n - 1) * width
        moved = view[impact_at + 1 : impact_at + n]
        if j + 1 < blocks:
            boundary = firsts[j + 1] - (firsts[j] + sum(gaps_j))
            biggest = max(biggest, boundary)
            next_impact = impacts_at(j + 1)
            moved = bytes(moved) + view[next_impact : next_impact + 1]
        new_width = _width(biggest)
        out += struct.pack("<BI", new_width, firsts[j] + gaps_j[0])
        if new_width == width:
            out += raw[width:]
        else:
            out += _gap_bytes(rest, new_width)
        if j + 1 < blocks:
            out += boundary.to_bytes(new_width, "little")
        out += moved
    return bytes(out), [block * BLOCK + at]


def postings_hold(data: bytes | memoryview, docs: Sequence[int]) -> bool:
    """Whether one term's postings hold any of ``docs`` (ascending): block by block,
    decoding only a block whose range of doc numbers could hold one."""
    view = memoryview(data)
    (left,) = struct.unpack_from("<I", view, 0)
    at = 4
    while left:
        n = min(left, BLOCK)
        width, first = struct.unpack_from("<BI", view, at)
        end = at + 5 + (n - 1) * width + n
        after = struct.unpack_from("<I", view, end + 1)[0] if n < left else 1 << 32
        at_doc = bisect_left(docs, first)
        if at_doc < len(docs) and docs[at_doc] < after:
            gaps = array(_TYPECODE[width])
            gaps.frombytes(view[at + 5 : at + 5 + (n - 1) * width])
            if _SWAP:
                gaps.byteswap()
            if not set(docs[at_doc : bisect_left(docs, after)]).isdisjoint(accumulate(gaps, initial=first)):
                return True
        at = end
        left -= n
    return False


MAX_POSITION = 0xFFFF
"""Positions are u16: phrases are matched within a message's first 65,535 words."""


def encode_positions(positions: list[list[int]]) -> bytes:
    flat: list[int] = []
    for plist in positions:
        if plist and plist[-1] >= MAX_POSITION:
            plist = [p for p in plist if p < MAX_POSITION][:MAX_POSITION]
        flat.append(len(plist))
        flat.extend(plist)
    values = array("H", flat)
    if _SWAP:
        values.byteswap()
    return values.tobytes()


def drop_positions(data: bytes | memoryview, drop: Sequence[int]) -> bytes:
    """One term's positions without those of its postings number ``drop`` (ascending):
    the bytes between them are kept as they are (only the counts on the way are read)."""
    values: Sequence[int]
    if _SWAP:
        swapped = array("H")
        swapped.frombytes(data)
        swapped.byteswap()
        values = swapped
    else:
        values = memoryview(data).cast("B").cast("H")
    view = memoryview(data)
    kept = bytearray()
    at = start = posting = 0
    for index in drop:
        at = _skip(values, at, index - posting)
        kept += view[2 * start : 2 * at]
        at += values[at] + 1
        posting = index + 1
        start = at
    kept += view[2 * start :]
    return bytes(kept)


def _skip(values: Sequence[int], at: int, postings: int) -> int:
    """Where the positions of the posting ``postings`` after the one at ``at`` start (a
    posting's positions: their count, then them). Unrolled: a take-down steps over
    hundreds of thousands of postings of its message's most frequent words."""
    for _ in repeat(None, postings >> 3):
        at += values[at] + 1
        at += values[at] + 1
        at += values[at] + 1
        at += values[at] + 1
        at += values[at] + 1
        at += values[at] + 1
        at += values[at] + 1
        at += values[at] + 1
    for _ in repeat(None, postings & 7):
        at += values[at] + 1
    return at


def decode_positions(data: bytes | memoryview, count: int) -> list[list[int]]:
    values = array("H")
    values.frombytes(data)
    if _SWAP:
        values.byteswap()
    out: list[list[int]] = []
    at = 0
    for _ in range(count):
        n = values[at]
        out.append(values[at + 1 : at + 1 + n].tolist())
        at += n + 1
    return out


def script_twin(name: str, data: bytes | memoryview) -> bytes:
    """The script that carries the index file ``name`` (a file name, without its
    folder: a purged segment's copy shares its unchanged files with the original)."""
    head = b"ListlibSearch.put(" + json.dumps(name).encode() + b","
    if name.endswith(".json"):
        return head + bytes(data) + b");\n"
    return head + b'"' + base64.b64encode(data) + b'");\n'
