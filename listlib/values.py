"""Small value types and the words listlib uses for them.

Glossary (the same words in code, templates, URLs, docs and tests):

- *message*: one email, stored byte-for-byte as received.
- *call number*: the 8-character URL-safe name a message gets when it is filed;
  unique across the site, stable forever, never reused. Call numbers are
  allocated from the clock (1/64 ms ticks since 2020-01-01) so that they are
  never reused even when messages are removed, and they sort by filing time.
- *list slug*: the short name of a list (``dev``); also its folder in the store.
- *month*: a (year, month) pair in UTC; messages are stored under the month of
  their date.
- *store*: the ``content/`` folder of call-numbered messages plus its derived index.
- *filer*: code that reads messages from a source (mbox, maildir, folder, POP3).
- *unrouted*: mail that matched no configured list, filed under ``_no_list``
  (``NO_LIST``); unpublished unless ``[site] publish_unrouted``.
- *quarantine*: ``content/_failed/``, where a message that cannot be filed is kept
  with its reason.
- *thread*, *root*: a reply tree and the message at its top; a thread is named by
  its root's call number (its *thread id*).
- *page*: a file of the website under ``output/``; its path is its URL, made only
  by ``urls``.
- *kind*: a kind of page (thread, month, list, feed ...; ``plan.kinds``).
- *job*: the unit of rendering: the pages of one kind for one thing (a thread, a
  list's month ...), with a typed *record* of its inputs and a *key*, the digest
  of those inputs, of its templates and of the code that renders.
- *plan*: which jobs a build runs, keeps and drops; *build records*: the keys and
  output files of the jobs done (``plan.state``); *manifest*: every file the build
  owns in ``output/``, with its hash.
- *theme*: templates and static files, a chain of folders over the default one.

This module is pure: no I/O, no clock, no imports from the rest of listlib.
"""

from __future__ import annotations

import hashlib
import re
from typing import NamedTuple

__all__ = [
    "ALPHABET",
    "EPOCH_MS",
    "TICKS_PER_MS",
    "CALL_NUMBER_LENGTH",
    "FAILED",
    "NO_LIST",
    "Month",
    "RESERVED_SLUGS",
    "call_number_from_int",
    "call_number_to_int",
    "is_call_number",
    "is_slug",
    "message_id_hash",
    "plural",
    "tick_of_ms",
]

# ASCII order, so the lexical order of call numbers is their numeric order.
ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
CALL_NUMBER_LENGTH = 8
_BASE = len(ALPHABET)
_MAX = _BASE**CALL_NUMBER_LENGTH
_PAIRS = [a + b for a in ALPHABET for b in ALPHABET]
_PAIR_BASE = _BASE * _BASE
_CALL_RE = re.compile(r"[0-9A-Za-z]{8}\Z")
_SLUG_RE = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?\Z")

#: Epoch of the call-number clock: 2020-01-01T00:00:00Z in milliseconds.
EPOCH_MS = 1_577_836_800_000
#: Ticks per millisecond; 62**8 ticks last until about the year 2128.
TICKS_PER_MS = 64

#: Pseudo-list for mail that matched no configured list.
NO_LIST = "_no_list"
#: Pseudo-list for mail that could not be filed; each comes with a reason file.
FAILED = "_failed"
RESERVED_SLUGS = frozenset({NO_LIST, FAILED})


class Month(NamedTuple):
    """A UTC (year, month) pair: the unit of storage and threading."""

    year: int
    month: int

    def __str__(self) -> str:
        return f"{self.year:04d}-{self.month:02d}"


def call_number_from_int(value: int) -> str:
    """Encode a tick count as an 8-character call number."""
    if not 0 <= value < _MAX:
        raise ValueError(f"call number value {value} is out of range")
    # Two digits at a time (imports allocate thousands a second).
    value, d0 = divmod(value, _PAIR_BASE)
    value, d1 = divmod(value, _PAIR_BASE)
    d3, d2 = divmod(value, _PAIR_BASE)
    return _PAIRS[d3] + _PAIRS[d2] + _PAIRS[d1] + _PAIRS[d0]


def call_number_to_int(call: str) -> int:
    """Decode a call number back to its tick count."""
    if not is_call_number(call):
        raise ValueError(f"{call!r} is not a call number")
    value = 0
    for char in call:
        value = value * _BASE + ALPHABET.index(char)
    return value


def tick_of_ms(epoch_ms: int) -> int:
    """The first call-number tick of a Unix time in milliseconds."""
    return max(0, (epoch_ms - EPOCH_MS) * TICKS_PER_MS)


def is_call_number(text: str) -> bool:
    """True when ``text`` has the shape of a call number."""
    return bool(_CALL_RE.match(text))


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``count`` and ``noun``, the noun in the plural unless the count is 1 ("1 message",
    "0 messages", "2 messages"; ``many`` for a plural that is not ``noun + 's'``). Every
    summary line counts with it."""
    return f"{count} {noun if count == 1 else many or noun + 's'}"


def is_slug(text: str) -> bool:
    """True when ``text`` is a valid list slug (lower-case letters, digits, dashes)."""
    return bool(_SLUG_RE.match(text))


def message_id_hash(message_id: str) -> str:
    """The lower-case hex SHA-256 of a Message-ID without its angle brackets: its lookup
    page's name (``urls.message_id_path``), and what the ledger keeps of a removed one."""
    return hashlib.sha256(message_id.strip().strip("<>").encode("utf-8", "surrogatepass")).hexdigest()
