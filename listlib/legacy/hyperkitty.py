"""HyperKitty's URLs (the archiver of Mailman 3), computed from Message-IDs alone. Pure.

HyperKitty names a message by the base-32 SHA-1 of its Message-ID (``Message-ID-Hash``,
the same value Mailman 3 puts in the header of that name), and a thread by the hash of
its first message: the one whose parent (its In-Reply-To, else the last of its
References) is not in the list. Its pages are ``list/<address>/message/<hash>/``,
``list/<address>/thread/<hash>/``, ``list/<address>/<year>/<month>/`` (the month not
zero-padded in the links it makes, either way in the URLs it answers) and
``list/<address>/``.
"""

from __future__ import annotations

import base64
import email.utils
import hashlib
import re
from collections.abc import Iterable
from typing import NamedTuple

from ..values import Month
from .mapfile import LIST_TARGET, MONTH_TARGET, Entry

__all__ = ["Known", "hyperkitty_entries", "hyperkitty_hash"]

_SPACE_RE = re.compile(r"\s")
_LONGEST = 254
"""HyperKitty keeps Message-IDs in a 255-character column: longer ones are cut to this."""


def hyperkitty_hash(message_id: str) -> str:
    """HyperKitty's ``get_message_id_hash`` of a Message-ID (with or without ``<>``), on
    the Message-ID as its ``get_message_id`` keeps it: white space removed, cut."""
    bare = email.utils.unquote(_SPACE_RE.sub("", message_id))[:_LONGEST]
    return base64.b32encode(hashlib.sha1(bare.encode("utf-8", "surrogatepass")).digest()).decode("ascii")


class Known(NamedTuple):
    """A stored message as HyperKitty's URLs need it."""

    call: str
    message_id: str
    month: Month
    in_reply_to: str | None
    refs: str


def hyperkitty_entries(address: str, messages: Iterable[Known]) -> tuple[list[Entry], int]:
    """Every HyperKitty URL of a list's messages, months and index page, and how many
    messages share a Message-ID with an earlier one. HyperKitty archives one message per
    Message-ID (it refuses a later one as a duplicate): its URL leads to the earliest
    (``messages`` come in the order they were filed)."""
    known: list[Known] = []
    ids: set[str] = set()
    shared = 0
    for message in messages:
        if message.message_id in ids:
            shared += 1
            continue
        ids.add(message.message_id)
        known.append(message)
    base = f"list/{address}/"
    entries: list[Entry] = [(base, LIST_TARGET, None)]
    months: set[Month] = set()
    for message in known:
        digest = hyperkitty_hash(message.message_id)
        entries.append((f"{base}message/{digest}/", message.call, message.month))
        parent = message.in_reply_to or (message.refs.split()[-1] if message.refs.split() else None)
        if parent is None or parent not in ids:
            entries.append((f"{base}thread/{digest}/", message.call, message.month))
        months.add(message.month)
    for month in sorted(months):
        entries.append((f"{base}{month.year:04d}/{month.month}/", MONTH_TARGET, month))
        if month.month < 10:
            entries.append((f"{base}{month.year:04d}/{month.month:02d}/", MONTH_TARGET, month))
    return entries, shared
