"""Pipermail's pages (the archiver of Mailman 2), matched to stored messages by what
each page shows of its message.

Pipermail files article ``NNNNNN.html`` in the folder of its month (``2010-March/``)
beside the month's ``thread.html``, ``date.html``, ``author.html`` and ``subject.html``,
under an ``index.html`` of every month. An article shows its subject, its author's
name and (obscured) address, its date in the archiver's local time (``Tue Mar  2
13:22:37 CST 2010``: a zone name, not an offset) and its text. Mailman 2.1 also names
the article's own Message-ID in its reply link (``In-Reply-To=``): when a page does,
that decides. Otherwise a page matches the one stored message that was sent within
15 hours of the date shown (any time zone), by that author (address or name), with
that subject when one does (else any), and whose text is the page's; a page that
matches none is reported with the reason, never guessed; of several copies of one post
(same author, subject and text), the one sent at the time shown, in the archive's own
offset from UTC (learnt per zone name from the pages that matched one message), or
none if that does not single one out. Month pages lead to listlib's month pages, and
the months' text downloads (``2010-March.txt``, ``.txt.gz``) to the months' mbox
downloads. Reads the old folder and stored messages; never writes.
"""

from __future__ import annotations

import bisect
import calendar
import difflib
import email
import email.policy
import html
import os
import re
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple
from urllib.parse import unquote

from ..fsutil import read_file
from ..store.index import Row
from ..values import Month, message_id_hash
from .mapfile import LIST_TARGET, MBOX_TARGET, MONTH_TARGET, Entry

__all__ = ["OldArticle", "parse_article", "pipermail_entries"]

WINDOW = 15 * 3600
"""How far a shown local time may be from the message's (UTC offsets run from -12 to +14 hours)."""
SAME_TEXT = 0.9
"""How alike (difflib ratio of their first words) a page's text and a message's must be."""
_WORDS = 300

_ARTICLE_RE = re.compile(r"\d{6}\.html\Z")
_MONTH_DIR_RE = re.compile(r"(\d{4})-([A-Z][a-z]+)\Z")
_MONTH_FILE_RE = re.compile(r"(\d{4}-[A-Z][a-z]+)\.txt(?:\.gz)?\Z")
_INDEXES = {"thread.html", "date.html", "author.html", "subject.html", "index.html"}
_H1_RE = re.compile(r"<H1>(.*?)</H1>", re.I | re.S)
_NAME_RE = re.compile(r"<B>(.*?)</B>", re.I | re.S)
_ADDRESS_RE = re.compile(r'<A HREF="mailto:[^"]*"[^>]*>(.*?)</A>', re.I | re.S)
_DATE_RE = re.compile(r"<I>\s*\w{3} (\w{3}) +(\d{1,2}) (\d\d):(\d\d):(\d\d)(?: (\S+))? (\d{4})\s*</I>", re.I)
_REPLY_ID_RE = re.compile(r"In-Reply-To=([^\"&\s]+)", re.I)
_BODY_RE = re.compile(r"<!--beginarticle-->(.*?)<!--endarticle-->", re.S)
_TAG_RE = re.compile(r"<[^>]*>")
_MONTHS = {name: number for number, name in enumerate(calendar.month_name) if name}
_ABBR = {name: number for number, name in enumerate(calendar.month_abbr) if name}


class OldArticle(NamedTuple):
    """What an article page shows of its message."""

    subject: str
    name: str
    address: str
    local: int | None
    """The date shown, read as if it were UTC (the zone is unknown)."""
    zone: str
    """The zone's name as shown (``CST``), "" when none."""
    message_id: str | None
    words: tuple[str, ...]


def _text(fragment: str) -> str:
    return " ".join(html.unescape(_TAG_RE.sub("", fragment)).split())


def _address(text: str) -> str:
    return text.replace(" at ", "@").strip().lower()


def _words(text: str) -> tuple[str, ...]:
    return tuple(re.findall(r"\w+", text.lower().replace("@", " at ")))[:_WORDS]


def parse_article(page: str) -> OldArticle:
    """What an article page shows ("" or None where it shows nothing)."""
    subject = _H1_RE.search(page)
    after = page[subject.end() :] if subject else page
    name = _NAME_RE.search(after)
    address = _ADDRESS_RE.search(after)
    date = _DATE_RE.search(after)
    local = None
    if date is not None and date.group(1) in _ABBR:
        month, day, hour, minute, second, year = _ABBR[date.group(1)], *map(int, date.group(2, 3, 4, 5, 7))
        try:
            local = calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0))
        except (ValueError, OverflowError):
            local = None
    reply = _REPLY_ID_RE.search(page)
    body = _BODY_RE.search(page)
    return OldArticle(
        subject=_text(subject.group(1)) if subject else "",
        name=_text(name.group(1)) if name else "",
        address=_address(_text(address.group(1))) if address else "",
        local=local,
        zone=(date.group(6) or "") if date else "",
        message_id=unquote(reply.group(1)).strip().strip("<>") or None if reply else None,
        words=_words(_text(body.group(1))) if body else (),
    )


def _stored_words(content: Path, row: Row) -> tuple[str, ...]:
    """The first words of a stored message's first text part (as Pipermail shows it)."""
    try:
        message = email.message_from_bytes(read_file(content / row.path), policy=email.policy.compat32)
    except OSError:
        return ()
    for part in message.walk():
        if not part.is_multipart() and part.get_content_maintype() == "text":
            payload = part.get_payload(decode=True)
            data = payload if isinstance(payload, bytes) else b""
            try:
                text = data.decode(part.get_content_charset() or "latin-1", "replace")
            except LookupError:
                text = data.decode("latin-1")
            return _words(_TAG_RE.sub(" ", text) if part.get_content_subtype() == "html" else text)
    return ()


def _iter_pages(root: Path) -> Iterator[tuple[str, str]]:
    """(path relative to ``root``, file name) of every page, sorted."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        for name in sorted(filenames):
            yield (name if rel_dir == "." else f"{rel_dir}/{name}"), name


class _Matcher:
    def __init__(self, rows: list[Row], content: Path, slug: str) -> None:
        self.content = content
        self.slug = slug
        shown = sorted((row.date, row.call) for row in rows if not row.removed)
        self.dates = [date for date, _call in shown]
        self.by_call = {row.call: row for row in rows}
        self.order = [call for _date, call in shown]
        self.by_id: dict[str, Row] = {}
        for row in sorted(rows, key=lambda r: r.call, reverse=True):
            if row.message_id and not row.removed:
                self.by_id[row.message_id] = row
        self.removed = {row.mid_hash: row for row in rows if row.removed and row.mid_hash}
        self.removed_dates = sorted(row.date for row in rows if row.removed)
        self._words: dict[str, tuple[str, ...]] = {}

    def words(self, row: Row) -> tuple[str, ...]:
        found = self._words.get(row.call)
        if found is None:
            found = self._words[row.call] = _stored_words(self.content, row)
        return found

    def match(self, article: OldArticle) -> tuple[Row | None, str, list[Row]]:
        """The message of an article, or None, why, and the messages it could be (several
        with the same text, told apart later by the archive's time zone)."""
        if article.message_id:
            row = self.by_id.get(article.message_id) or self.removed.get(message_id_hash(article.message_id))
            if row is not None:
                return row, "", []
        if article.local is None:
            return None, "the page shows no date", []
        low = bisect.bisect_left(self.dates, article.local - WINDOW)
        high = bisect.bisect_right(self.dates, article.local + WINDOW)
        near = [self.by_call[call] for call in self.order[low:high]]
        by_author = [
            row
            for row in near
            if (article.address and row.from_addr.lower() == article.address)
            or (article.name and " ".join(row.from_name.split()) == article.name)
        ]
        what = f"{article.subject!r} from {article.name or article.address!r} of {_shown(article.local)}"
        if not by_author:
            return None, self._nothing(article, f"no stored message of list {self.slug!r} is {what}"), []
        titled = [row for row in by_author if " ".join(row.subject.split()) == article.subject]
        chosen = titled or by_author
        scored = sorted(((_likeness(article.words, self.words(row)), row) for row in chosen), key=lambda pair: -pair[0])
        best, row = scored[0]
        if best < SAME_TEXT:
            return None, self._nothing(article, f"the text of {what} differs from every stored message's"), []
        if len(scored) > 1 and scored[1][0] == best:
            tied = [r for score, r in scored if score == best]
            calls = ", ".join(r.call for r in tied)
            return None, f"{len(tied)} stored messages ({calls}) are {what} with the same text", tied
        return row, "", []

    def _nothing(self, article: OldArticle, reason: str) -> str:
        assert article.local is not None
        low = bisect.bisect_left(self.removed_dates, article.local - WINDOW)
        high = bisect.bisect_right(self.removed_dates, article.local + WINDOW)
        if high > low:
            reason += f" ({high - low} removed from that time cannot be compared)"
        return reason


def _shown(seconds: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M (local time)", time.gmtime(seconds))


def _likeness(page: tuple[str, ...], stored: tuple[str, ...]) -> float:
    if page == stored:
        return 1.0
    return difflib.SequenceMatcher(None, page, stored, autojunk=False).ratio()


def _folder_month(folder: str) -> Month | None:
    found = _MONTH_DIR_RE.match(folder.rsplit("/", 1)[-1]) if folder else None
    if found is None or found.group(2) not in _MONTHS:
        return None
    return Month(int(found.group(1)), _MONTHS[found.group(2)])


def pipermail_entries(
    source: Path, rows: list[Row], content: Path, slug: str, unmatched: list[tuple[str, str]]
) -> tuple[list[Entry], int]:
    """The map of a Pipermail archive, and how many of its articles are of removed messages;
    the articles matched to no message are added to ``unmatched`` with the reason."""
    matcher = _Matcher(rows, content, slug)
    entries: list[Entry] = []
    removed = 0
    offsets: dict[str, Counter[int]] = defaultdict(Counter)
    """Zone name -> how far the matched messages' times are from the times shown."""
    tied: list[tuple[str, OldArticle, str, list[Row]]] = []
    for path, name in _iter_pages(source):
        folder = os.path.dirname(path)
        download = _MONTH_FILE_RE.match(name)
        if download and not folder:
            month = _folder_month(download.group(1))
            if month is not None:
                entries.append((path, MBOX_TARGET, month))
            continue
        if name in _INDEXES:
            month = _folder_month(folder)
            if name == "index.html" and not folder:
                entries.append((path, LIST_TARGET, None))
            elif month is not None:
                entries.append((path, MONTH_TARGET, month))
            else:  # a quarterly, weekly or daily archive: listlib has month pages only
                unmatched.append((path, f"{folder!r} is not a month's folder (YYYY-Month): no page to lead to"))
            continue
        if not _ARTICLE_RE.match(name):
            continue
        with open(source / path, encoding="utf-8", errors="replace") as page:
            article = parse_article(page.read())
        row, reason, candidates = matcher.match(article)
        if row is None and candidates:
            tied.append((path, article, reason, candidates))
        elif row is None:
            unmatched.append((path, reason))
        else:
            if article.local is not None and not row.removed:
                offsets[article.zone][row.date - article.local] += 1
            removed += row.removed
            entries.append((path, row.call, Month(row.year, row.month)))
    # Copies of one post (sent twice, or through two routes) look alike but for their
    # times: the archive's offset from UTC, known from the pages matched, tells them apart.
    for path, article, reason, candidates in tied:
        common = offsets[article.zone].most_common(1)
        exact = [
            r for r in candidates if common and article.local is not None and r.date == article.local + common[0][0]
        ]
        if len(exact) == 1:
            entries.append((path, exact[0].call, Month(exact[0].year, exact[0].month)))
        else:
            unmatched.append((path, reason))
    return entries, removed
