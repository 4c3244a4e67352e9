"""Control characters in text that came from mail, made visible: for pages, feeds and terminals.

Mail carries what its sender put there: ``Subject: hello \\x1b[31mworld`` is a
real header, and so are NUL bytes, bells and OSC 52 "write the clipboard"
sequences. Raw, they make an Atom feed ill-formed XML (XML 1.0 refuses C0
controls other than tab, LF and CR, U+FFFE, U+FFFF and lone surrogates, so
feed readers drop the whole feed) and drive the operator's terminal. The
rules, one table for bodies, header fields and terminal output:

- C0 controls and DEL become their Unicode control pictures (``\\x1b`` ->
  ``␛``, ``\\x07`` -> ``␇``, ``\\x7f`` -> ``␡``): the reader sees something
  was there;
- C1 controls (never text; usually a wrong charset), U+FFFE, U+FFFF and lone
  surrogates become U+FFFD;
- in a one-line header field, tab, LF and CR are spaces (``clean_header_text``);
  bodies keep them (``display.textbody.clean_text``); terminal output keeps
  its own newlines (``terminal_text``).

Shown subjects are cut to ``SUBJECT_CHARS`` (300) characters everywhere they
appear: the message's own page as well as month, date and thread lists,
prev/next links, feeds and lookup pages, since a 2 MB subject would otherwise
be copied into every neighbouring page. Its raw message keeps it whole. Other
header fields (names, addresses, Message-IDs, dates) are cut to
``FIELD_CHARS`` (1000). Stored messages and the index keep the raw text: this
is for showing only.

Pure: no I/O, no imports from the rest of listlib.
"""

from __future__ import annotations

import re

__all__ = ["CONTROL_TABLE", "FIELD_CHARS", "SUBJECT_CHARS", "clean_header_text", "terminal_text"]

SUBJECT_CHARS = 300
"""The longest subject shown anywhere (a longer one ends in an ellipsis)."""
FIELD_CHARS = 1000
"""The longest other header field shown (names, addresses, Message-IDs)."""

CONTROL_TABLE: dict[int, int | str] = {
    **{c: 0x2400 + c for c in range(0x20)},
    0x7F: 0x2421,
    **{c: 0xFFFD for c in (*range(0x80, 0xA0), 0xFFFE, 0xFFFF, *range(0xD800, 0xE000))},
}
"""Every character ``clean_header_text`` and ``terminal_text`` replace, and with what
(``str.translate`` table); bodies use it without tab and newline."""

_HEADER_TABLE = {**CONTROL_TABLE, 0x09: " ", 0x0A: " ", 0x0D: " "}
_TERMINAL_TABLE = {c: r for c, r in CONTROL_TABLE.items() if c != 0x0A}
_UNSAFE_RE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def clean_header_text(text: str, limit: int = FIELD_CHARS) -> str:
    """A decoded header field as one line of text that any page, feed or JSON file
    can hold: no control character left raw, no surrounding blanks, at most
    ``limit`` characters (the last one an ellipsis when cut)."""
    if _UNSAFE_RE.search(text):
        text = text.translate(_HEADER_TABLE)
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def terminal_text(text: str) -> str:
    """Text for a terminal: its line breaks kept, every other control character shown
    as a symbol, so nothing from mail can move the cursor, clear the screen, set the
    window title or write the clipboard."""
    if _UNSAFE_RE.search(text):
        return text.translate(_TERMINAL_TABLE)
    return text
