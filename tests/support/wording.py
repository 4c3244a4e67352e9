"""The words of a built page that are the site's own (its "chrome"), and the English
ones left among them: for the tests of a site built in another language.

A page's chrome is its text and the attributes a reader meets (``title``,
``aria-label``, ``placeholder``, ``alt``, an Atom category's ``label``) and the
words it hands its scripts (``<script type="application/json">``), less what comes
from the mail: a message body is skipped but for the site's own notes, summaries of
folded parts and header labels inside it, and the mail's strings outside bodies
(subjects, names, file names; ``mail_strings``) are cut out before looking.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from html.parser import HTMLParser
from pathlib import Path

from listlib.display import DisplayOptions, display_message
from listlib.translation import Entry, placeholders

VISIBLE_ATTRIBUTES = ("title", "aria-label", "placeholder", "alt", "label")
_CHROME_IN_BODY = {"note", "remote-image", "missing-image"}
"""Classes of the site's own words inside a message body."""
_MAIL_CLASSES = {"msg-body", "attribution", "from-mail"}
"""Classes of the mail's own text (``from-mail``: a subject, a trailer, a quoted line
inside the site's own words)."""
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class _Chrome(HTMLParser):
    def __init__(self, feed: bool) -> None:
        super().__init__(convert_charrefs=True)
        self.feed_tags = {"title", "summary", "name"} if feed else set()
        """A feed's entries' titles, summaries and authors are the mail's."""
        self.chunks: list[str] = []
        self.stack: list[tuple[str, bool]] = []  # (tag, whether its text is mail)
        self.json = False

    def _mail(self) -> bool:
        return bool(self.stack) and self.stack[-1][1]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        classes = set((values.get("class") or "").split())
        mail = self._mail()
        if classes & _MAIL_CLASSES or tag in self.feed_tags or tag == "code":  # code: syntax, not words
            mail = True
        elif mail and (classes & _CHROME_IN_BODY or tag in ("summary", "dt")):
            mail = False
        if not mail or tag == "pre":  # a body's wide block is labelled by the site
            for name in VISIBLE_ATTRIBUTES:
                if values.get(name) and not (name == "title" and "remote-image" in classes):
                    self.chunks.append(str(values[name]))
        self.json = tag == "script" and values.get("type") == "application/json"
        if tag not in _VOID:
            self.stack.append((tag, mail))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID:
            self.stack.pop()

    def handle_endtag(self, tag: str) -> None:
        for at in range(len(self.stack) - 1, -1, -1):
            if self.stack[at][0] == tag:
                del self.stack[at:]
                break
        self.json = False

    def handle_data(self, data: str) -> None:
        if self.json:
            self.chunks.extend(_json_strings(json.loads(data)))
        elif not self._mail() and data.strip():
            self.chunks.append(data)


def _json_strings(value: object) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _json_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _json_strings(item)


def chrome_chunks(page: str, feed: bool = False) -> list[str]:
    """The page's own words, chunk by chunk (a text node, an attribute, a script's string);
    ``feed``: the page is an Atom feed."""
    parser = _Chrome(feed)
    parser.feed(page)
    parser.close()
    return parser.chunks


def mail_strings(raws: Iterable[bytes], extra: Iterable[str] = ()) -> list[str]:
    """What pages show of these messages outside their bodies (subjects, names, file
    names and types), and ``extra`` (the site's title, its lists' names and
    descriptions): longest first, to be cut out of chrome before looking for English."""
    found: set[str] = set(extra)
    for hide in (True, False):
        options = DisplayOptions(obfuscate_addresses=hide)
        for raw in raws:
            shown = display_message(raw, options)
            found.update((shown.subject, shown.author_name, shown.author_shown, shown.author_address))
            for attachment in shown.attachments:
                found.update((attachment.label, attachment.filename, attachment.content_type))
    found.discard("")
    return sorted(found, key=len, reverse=True)


def english_fragments(english: Mapping[str, Entry], other: Mapping[str, Entry]) -> dict[str, str]:
    """The pieces of English text (between placeholders) that another language's table
    does not also use for the same key, with a key each comes from: any of these in
    a page of that language is English left behind."""
    fragments: dict[str, str] = {}
    for key, entry in english.items():
        if key.startswith("language."):
            continue
        theirs = " ".join([other[key]] if isinstance(other[key], str) else other[key].values())  # type: ignore[union-attr]
        for text in [entry] if isinstance(entry, str) else entry.values():
            for name in placeholders(text):
                text = text.replace("{" + name + "}", "\0")
            for piece in text.split("\0"):
                piece = piece.strip(" .,:;()[]\u2013\u2014-\u2192\u2190\u2026\"'")
                if re.search(r"[A-Za-z]{3}", piece) and piece not in theirs:
                    fragments.setdefault(piece, key)
    return fragments


def english_left(
    page: str, fragments: Mapping[str, str], mail: Iterable[str] = (), feed: bool = False
) -> list[tuple[str, str, str]]:
    """(English fragment, its key, the chunk it is in) for every English fragment in the
    page's chrome once the mail's strings are cut out (``feed``: the page is a feed)."""
    cut = _mail_cut(tuple(mail))
    anywhere = _fragments_pattern(tuple(fragments))
    left = []
    for chunk in chrome_chunks(page, feed):
        chunk = cut(re.sub(r"\{\w+\}", "\0", chunk))  # a script's placeholders, then the mail's strings
        if anywhere.search(chunk) is None:
            continue
        for fragment, key in fragments.items():
            if _fragment_pattern(fragment).search(chunk):
                left.append((fragment, key, chunk.strip()))
    return left


@functools.lru_cache(maxsize=1024)
def _fragment_pattern(fragment: str) -> re.Pattern[str]:
    """A fragment as a word (or words) of its own."""
    return re.compile(rf"(?<![\w]){re.escape(fragment)}(?![\w])")


@functools.lru_cache(maxsize=4)
def _fragments_pattern(fragments: tuple[str, ...]) -> re.Pattern[str]:
    """Any of the fragments as words of their own (a chunk that matches is then asked
    fragment by fragment: most chunks match none)."""
    return re.compile(rf"(?<![\w])(?:{'|'.join(map(re.escape, fragments))})(?![\w])")


_GRAM = 3


@functools.lru_cache(maxsize=4)
def _mail_cut(mail: tuple[str, ...]) -> Callable[[str], str]:
    """A chunk with each of ``mail``'s strings that it holds replaced by NUL, in their
    order (longest first). A page's chunks are asked only about the strings that start
    with one of their three-letter pieces: thousands of subjects and names, a few per
    chunk."""
    starting: dict[str, list[int]] = {}
    short = []
    for at, text in enumerate(mail):
        if len(text) < _GRAM:
            short.append(at)
        else:
            starting.setdefault(text[:_GRAM], []).append(at)

    def cut(chunk: str) -> str:
        wanted = set(short)
        for start in range(len(chunk) - _GRAM + 1):
            wanted.update(starting.get(chunk[start : start + _GRAM], ()))
        for at in sorted(wanted):
            if mail[at] in chunk:
                chunk = chunk.replace(mail[at], "\0")
        return chunk

    return cut


def site_pages(output: Path) -> list[Path]:
    """Every page and feed of a built site."""
    return sorted(p for p in output.rglob("*") if p.is_file() and p.suffix in (".html", ".atom"))
