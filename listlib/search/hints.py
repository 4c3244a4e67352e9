"""The terms a message was indexed under, noted in the cache by ``remove`` and ``redact``
before its bytes leave the store (``note_terms``), so that the next search update's
purge looks up those terms only (``purge.purge_segment``'s ``terms``) instead of
searching every postings list of its segment for it (most of a take-down's cost in a
big index). A hidden message needs no note: its bytes are still stored.

A note holds what ``output/search/`` holds of the message until that update (its
terms), under the raw hash it was indexed from (a note of other bytes is never used);
every update that finishes forgets every note (``forget_terms``), once its state is
committed: none outlives the next build, also the note of a message taken down before
it was ever indexed. A note lost or wrong costs only time: the purge checks every term
it is told and searches every term when one does not hold the message. Writes only
its own file in the cache folder.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..classify import Rule, classify_message
from ..fsutil import naming
from ..store.index import Row
from .document import analyse
from .segment import invert

__all__ = ["HINTS_FILE", "NOTED_UP_TO", "forget_terms", "indexed_terms", "load_terms", "note_terms"]

HINTS_FILE = "search-hints.json"
NOTED_UP_TO = 32
"""Up to this many messages taken out of the index in one update, its purge looks up
their terms (``update.HINTS_UP_TO``): a take-down of more notes none."""

_AVGDL, _B = 150.0, 0.75
"""Any positive values: the terms a document is inverted to do not depend on them."""


def indexed_terms(row: Row, raw: bytes, obfuscate: bool, rules: Sequence[Rule]) -> set[str]:
    """The terms the index holds of a message (``invert`` of it alone makes the same
    terms as the batch it was indexed in did)."""
    doc = analyse(row, raw, obfuscate, classify_message(raw, rules))
    return set(invert([doc], _AVGDL, _B).postings)


def load_terms(cache_dir: Path) -> dict[str, tuple[str, set[str]]]:
    """Call -> (raw hash, terms) of every note (none when the file is missing or damaged)."""
    try:
        found = json.loads((cache_dir / HINTS_FILE).read_bytes())
        return {call: (str(raw_hash), set(terms)) for call, (raw_hash, terms) in found.items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}


def note_terms(cache_dir: Path, notes: Iterable[tuple[Row, bytes]], obfuscate: bool, rules: Sequence[Rule]) -> None:
    """Note the terms of these messages (each with its stored bytes), with the notes already there."""
    found = load_terms(cache_dir)
    for row, raw in notes:
        found[row.call] = (row.raw_hash, indexed_terms(row, raw, obfuscate, rules))
    _save(cache_dir, found)


def forget_terms(cache_dir: Path, calls: Iterable[str] | None = None) -> None:
    """Forget the notes of these messages (every note with None)."""
    path = cache_dir / HINTS_FILE
    if not path.exists():
        return
    found = {} if calls is None else load_terms(cache_dir)
    for call in calls or ():
        found.pop(call, None)
    if found:
        _save(cache_dir, found)
    else:
        path.unlink(missing_ok=True)


def _save(cache_dir: Path, found: dict[str, tuple[str, set[str]]]) -> None:
    data = {call: [raw_hash, sorted(terms)] for call, (raw_hash, terms) in sorted(found.items())}
    cache_dir.mkdir(parents=True, exist_ok=True)
    temp = cache_dir / f".{HINTS_FILE}-{os.getpid()}.tmp"
    with naming(temp):
        temp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    os.replace(temp, cache_dir / HINTS_FILE)
