"""How index pages show a message's subject and sender, and a thread's participants:
cleaned and cut as display cleans them (``controls``), with addresses obfuscated
when the site asks; what stands for a missing one is in the site's language
(``Words``, from the translation table's ``shown.*`` strings). Pure."""

from __future__ import annotations

from typing import NamedTuple

from ..controls import SUBJECT_CHARS, clean_header_text
from ..display import obfuscate_addresses
from ..store.index import Row
from ..threadcache import ThreadLine
from ..translation import Texts, english

__all__ = ["PARTICIPANTS_SHOWN", "WORDS_PREFIX", "Words", "author", "participants", "subject", "words_of"]

PARTICIPANTS_SHOWN = 4
"""Participants named on a month page's thread line (the others are counted)."""


class Words(NamedTuple):
    """What index pages show for a subject or a sender that cannot be shown."""

    not_archived: str
    removed: str
    no_subject: str
    unknown: str


WORDS_PREFIX = "shown."
"""The translation table's keys of ``Words``."""


def words_of(texts: Texts | None = None) -> Words:
    """``Words`` in the language of ``texts`` (English when None)."""
    table = texts or english()
    return Words(*(table.text(WORDS_PREFIX + name) for name in Words._fields))


def subject(hide: bool, row: Row, words: Words) -> str:
    """A subject for index pages, cleaned and cut as display does (``controls``); ``hide``:
    obfuscate the addresses in it, as display does."""
    if row.no_archive:
        return words.removed if row.removed else words.not_archived
    text = clean_header_text(" ".join(row.subject.split()), SUBJECT_CHARS) or words.no_subject
    return obfuscate_addresses(text) if hide else text


def author(hide: bool, row: Row, words: Words) -> str:
    """An author's name for index pages; nothing for a withheld message."""
    return "" if row.no_archive else _author_name(hide, row.from_name, row.from_addr, words)


def _author_name(hide: bool, from_name: str, from_addr: str, words: Words) -> str:
    """A name to show for a sender (never an address unless the name is one), cleaned as
    display cleans it (``controls``)."""
    name = clean_header_text(from_name)
    if name:
        return obfuscate_addresses(name) if hide else name
    return clean_header_text(from_addr.split("@")[0]) or words.unknown


def participants(
    entry: ThreadLine, hide: bool, words: Words, shown: dict[tuple[str, str], str] | None = None
) -> tuple[tuple[str, ...], int]:
    """The first ``PARTICIPANTS_SHOWN`` names of a thread's authors, and how many more;
    ``shown``: the names worked out so far, by (name, address) (senders repeat)."""
    names: list[str] = []
    seen: set[str] = set()
    known = {} if shown is None else shown
    for pair in entry.authors:  # withheld messages are not among them
        name = known.get(pair)
        if name is None:
            name = known[pair] = _author_name(hide, *pair, words)
        key = name.casefold()
        if name and key not in seen:
            seen.add(key)
            names.append(name)
    return tuple(names[:PARTICIPANTS_SHOWN]), max(0, len(names) - PARTICIPANTS_SHOWN)
