"""What the index reads of a displayed message (``SearchText``), and the search
document made of it (``document``).

The render pass displays every message of the threads it renders; it hands the
``SearchText`` of each to the indexer (``spool``), which would otherwise display
the same messages again. Only the address obfuscation option changes these fields,
so the render pass's display (with its attachment links, image settings and HTML) and
the indexer's own (text only, ``indexer_options``) give the same ``SearchText`` (a test
holds them to that). Pure.
"""

from __future__ import annotations

import functools
import itertools
from typing import NamedTuple

from ..display import DisplayOptions, MessageDisplay, display_message, obfuscate_address
from ..store.index import Row
from ..urls import message_id_hash, message_path
from ..values import Month
from .analysis import words
from .segment import Doc

__all__ = [
    "EXCERPT",
    "SearchText",
    "analyse",
    "author_words",
    "document",
    "excerpt_of",
    "indexer_options",
    "search_text",
    "thread_key",
]

THREAD_KEY_CHARS = 10
"""Hex digits of a thread key: 40 bits, no two threads of one result page share one."""

EXCERPT = 240

AUTHORS_KEPT = 256
"""How many authors' words a process keeps (``author_words``): a list's writers write
again and again. Small, so that it is full early (an indexing worker's memory does not
grow with the archive): on linux-raid (19,526 messages, 1,447 authors) a worker indexing
every other run of 256 messages misses 1,012 times in 9,798 with 256 entries, 925 with
4,096; a miss costs some 16 us, a message's document some 370 us."""


class SearchText(NamedTuple):
    subject: str
    author: str
    """As results show it (``MessageDisplay.author_shown``)."""
    author_name: str
    address: str
    """Obfuscated when the site obfuscates addresses."""
    attachments: str
    """File names, space-separated."""
    body: str


def search_text(display: MessageDisplay, obfuscate: bool) -> SearchText:
    address = display.author_address
    if address and obfuscate:
        address = obfuscate_address(address)
    return SearchText(
        display.subject,
        display.author_shown,
        display.author_name,
        address,
        " ".join(a.filename for a in display.attachments),
        display.text,
    )


def document(row: Row, text: SearchText, cls: str | None = None) -> Doc:
    """The search document of a stored message; ``cls``: its class (``classify``), for ``is:``."""
    return Doc(
        call=row.call,
        message_id=row.message_id or "",
        list=row.list,
        url=message_path(row.list, Month(row.year, row.month), row.call),
        subject=text.subject,
        author=text.author,
        date=row.date,
        excerpt=excerpt_of(text.body),
        thread=thread_key(row),
        fields={
            "subject": words(text.subject),
            "author": author_words(text.author_name, text.address),
            "attachments": words(text.attachments),
            "body": words(text.body),
            "class": [cls] if cls else [],
        },
    )


def thread_key(row: Row) -> str:
    """What results grouped by thread group by: a digest of the first Message-ID of the
    message's References (its thread's first message, as its sender's mailer knew it),
    else of its In-Reply-To, else of its own. From the message alone, so a thread
    re-rooted later (a parent that arrives late) does not leave stale keys behind: its
    messages keep sharing their key. Messages that lost their headers each stand alone."""
    first = row.refs.split()[0] if row.refs.split() else row.in_reply_to or row.message_id or row.call
    return message_id_hash(first.strip("<>"))[:THREAD_KEY_CHARS]


def author_words(name: str, address: str) -> list[str]:
    """The author field's tokens: the name's and the address's words, each name word
    written in several capitalised parts (``NeilBrown``, ``McDonald``, ``DMcKenzie``)
    followed by those parts, so that ``from:neil`` finds NeilBrown as it finds Neil
    Brown. Address local parts need nothing more: ``.``, ``_`` and ``-`` already
    separate words (``neil.brown@`` gives ``neil`` and ``brown``)."""
    return list(_author_words(name, address))


@functools.lru_cache(maxsize=AUTHORS_KEPT)
def _author_words(name: str, address: str) -> tuple[str, ...]:
    out: list[str] = []
    for word in name.split():
        whole = words(word)
        out.extend(whole)
        parts = [part for part in _camel_parts(word) if part]
        if len(parts) > 1:
            out.extend(token for part in parts for token in words(part) if token not in whole)
    out.extend(words(address))
    return tuple(out)


def _camel_parts(word: str) -> list[str]:
    """``word`` cut where a lower-case letter meets a capital (``Neil|Brown``) and
    before the last capital of a run that a lower-case letter follows (``NEIL|Brown``)."""
    cuts = [0]
    for at in range(1, len(word)):
        before, here = word[at - 1], word[at]
        after = word[at + 1] if at + 1 < len(word) else ""
        if here.isupper() and (before.islower() or (before.isupper() and after.islower())):
            cuts.append(at)
    cuts.append(len(word))
    return [word[a:b] for a, b in itertools.pairwise(cuts)]


def analyse(row: Row, raw: bytes, obfuscate: bool, cls: str | None = None) -> Doc:
    """One stored message as a search document, displayed here (text only)."""
    display = display_message(raw, indexer_options(obfuscate))
    return document(row, search_text(display, obfuscate), cls)


def indexer_options(obfuscate: bool) -> DisplayOptions:
    """How the indexer displays a message: no HTML, only the text fields."""
    return DisplayOptions(obfuscate_addresses=obfuscate, text_only=True)


def excerpt_of(body: str) -> str:
    """The first ``EXCERPT`` characters of the body, whitespace collapsed, cut at a word."""
    head = body[: EXCERPT * 4]  # collapsing a long body to keep its start costs more than the rest
    # str.split() splits at the characters regex \s matches (both use Py_UNICODE_ISSPACE).
    excerpt = " ".join(head.split())
    if len(excerpt) <= EXCERPT and len(head) < len(body):
        excerpt = " ".join(body.split())  # mostly whitespace at the start: the slow way
    if len(excerpt) > EXCERPT:
        excerpt = excerpt[:EXCERPT].rsplit(" ", 1)[0] + "…"
    return excerpt
