"""Split an mbox stream into messages, streaming, with a strict separator rule.

Handles mboxo (Pipermail ``.txt``), mboxrd (``>From`` quoting undone), and
mboxcl/cl2 (a Content-Length that lands exactly on the next separator or the
end is trusted, so unquoted ``From`` lines inside such a body stay put). A
line is a separator only when it looks like ``From <sender> <date>`` with a
real date (asctime, or RFC 2822 followed by a header field as early Pipermail
wrote), so body lines such as "From what I can see, ..." never split a
message. Works on bytes throughout: 8-bit bytes in separator lines are fine.
Never holds more than one message plus one read chunk in memory.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO, Literal

from ..message import blank_line, parse_date

__all__ = [
    "MboxFormat",
    "MboxPart",
    "count_separator_like",
    "is_separator",
    "iter_mbox",
    "quote_mboxrd",
    "separator_date",
]

MboxFormat = Literal["auto", "mboxo", "mboxrd"]

_DAY = rb"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
_MON = rb"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_TZ = rb"(?:[A-Z]{1,5}|[+-]\d{4})"
# asctime, as written by every mbox writer: "Thu Jan  1 00:00:00 1970", tz optional.
_ASCTIME_RE = re.compile(
    rb"From (?P<sender>.*?) +(?P<date>"
    + _DAY
    + rb" +"
    + _MON
    + rb" +\d{1,2} +\d{1,2}:\d\d(?::\d\d)?(?: +"
    + _TZ
    + rb")* +\d{4}(?: +"
    + _TZ
    + rb")?)[ \t]*\r?\Z"
)
# RFC 2822 dates, as written by the Pipermail of Mailman 2's early years (1999-2001:
# "From someone@example.org Thu, 1 Jul 1999 06:06:56 -0400 (EDT)") and a few
# exporters ("Mon, 18 Apr 2016 10:15:40 +0200"). Weekday, seconds, zone and zone
# comment are optional, the year may have two digits. Stricter than asctime, as such
# a line is easier to write in prose: the sender must look like an address (user@host,
# Pipermail's "user at host", or a bare name like MAILER-DAEMON), the date must parse,
# and the next line must be a header field (see ``is_separator``).
_RFC2822_RE = re.compile(
    rb"From (?P<sender>[^\s@]+@[^\s@]+|[^\s@]+ at [^\s@]+|[\w.+=-]+) +(?P<date>(?:"
    + _DAY
    + rb", *)?(?:0?[1-9]|[12]\d|3[01]) +"
    + _MON
    + rb" +(?:\d{4}|\d\d) +(?:[01]?\d|2[0-3]):[0-5]\d(?::(?:[0-5]\d|60))?(?: +"
    + _TZ
    + rb")?(?: +\([^()\r\n]*\))?)[ \t]*\r?\Z"
)
# A header field line "Name: value" (RFC 5322 2.2; obsolete syntax allows blanks before the colon).
_FIELD_RE = re.compile(rb"[!-9;-~]+[ \t]*:")
# Loosely what a separator of any shape looks like ("From <word> ... <clock time> ..."),
# only to explain a failed message: never used to split.
_SEPARATOR_LIKE_RE = re.compile(rb"^From [^\s:][^\n]*?\b\d\d?:\d\d", re.M)
_CONTENT_LENGTH_RE = re.compile(rb"^Content-Length:[ \t]*(\d+)[ \t]*\r?$", re.M | re.I)
_UNQUOTE_RE = re.compile(rb"^>(>*From )", re.M)
_QUOTE_RE = re.compile(rb"^(>*From )", re.M)
_CHUNK = 1 << 20
#: Once this much past a message's start is read without its header's end, its Content-Length is not looked for.
_HEADER_LIMIT = 4 << 20
_FIELD_PEEK = 1000


@dataclass(frozen=True, slots=True)
class MboxPart:
    """One message as found in an mbox: separator line, stored bytes, trailing blank line."""

    separator: bytes
    """The ``From `` line without its line ending."""
    raw: bytes
    """The message as it is stored: separator removed, mboxrd quoting undone."""
    trailer: bytes
    """The blank line the mbox writer put after the message (``b""`` when absent)."""
    end: int
    """Offset in the (decompressed) stream just past this message."""


def is_separator(line: bytes, following: bytes | None = None) -> bool:
    """True when a line (without line ending) is an mbox ``From `` separator.

    ``following`` is the next line (None at the end of the stream). An asctime
    date suffices on its own; a separator with an RFC 2822 date counts only when a
    header field follows it, so a quoted separator in a body does not split it.
    """
    if _ASCTIME_RE.match(line):
        return True
    return _is_rfc2822_separator(line, following)


def _is_rfc2822_separator(line: bytes, following: bytes | None) -> bool:
    if following is None or not _FIELD_RE.match(following):
        return False
    match = _RFC2822_RE.match(line)
    return bool(match) and parse_date(match.group("date").decode("latin-1")) is not None


def _separator_at(buf: _Buffer, start: int, line_end: int | None) -> bool:
    """Whether the line at ``start`` (ending at ``line_end``, None at the end of the stream) is a separator."""
    stop = buf.base + len(buf.data) if line_end is None else line_end
    line = buf.data[start - buf.base : stop - buf.base].rstrip(b"\r")
    if _ASCTIME_RE.match(line):
        return True
    if line_end is None or not _RFC2822_RE.match(line):
        return False
    # Only the next line's field name matters; a field name fits in a line's 998 bytes (RFC 5322 2.1.1).
    following = line_end + 1 - buf.base
    while len(buf.data) < following + _FIELD_PEEK and buf.fill():
        pass
    if following >= len(buf.data):
        return False
    return _is_rfc2822_separator(line, buf.data[following : following + _FIELD_PEEK].split(b"\n", 1)[0])


def separator_date(line: bytes) -> int | None:
    """The date of a separator line as Unix seconds, or None (also for the 1970 placeholder)."""
    match = _ASCTIME_RE.match(line) or _RFC2822_RE.match(line)
    if not match or line.endswith(b" 00:00:00 1970"):
        return None
    when = parse_date(match.group("date").decode("latin-1"))
    # public-inbox writes "From mboxrd@z Thu Jan  1 00:00:00 1970": not a date.
    return when if when else None


def count_separator_like(raw: bytes) -> int:
    """How many lines of ``raw`` look like mbox separators of some shape, recognised or not."""
    return sum(1 for _ in _SEPARATOR_LIKE_RE.finditer(raw)) if b"From " in raw else 0


def quote_mboxrd(raw: bytes) -> bytes:
    """mboxrd quoting (the inverse of what reading an mboxrd undoes)."""
    return _QUOTE_RE.sub(rb">\1", raw)


def _detect(first_separator: bytes, fmt: MboxFormat) -> bool:
    """True when the stream is mboxrd."""
    if fmt != "auto":
        return fmt == "mboxrd"
    return first_separator.startswith(b"From mboxrd@z ")


class _Buffer:
    """A sliding window over a stream: ``data`` holds bytes from ``base`` on.

    A bytearray, so a message many chunks long is appended to in place (amortized)
    rather than copied whole on every read, which made huge messages quadratic.
    """

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.data = bytearray()
        self.base = 0
        self.eof = False

    @property
    def end(self) -> int:
        """Absolute offset just past the bytes read so far."""
        return self.base + len(self.data)

    def fill(self) -> bool:
        """Read one more chunk; False at end of stream."""
        if self.eof:
            return False
        chunk = self.stream.read(_CHUNK)
        if not chunk:
            self.eof = True
            return False
        self.data += chunk
        return True

    def get(self, start: int, stop: int) -> bytes:
        """The bytes from absolute offset ``start`` to ``stop``, copied once."""
        with memoryview(self.data) as view:
            return bytes(view[start - self.base : stop - self.base])

    def drop(self, upto: int) -> None:
        """Forget bytes before absolute offset ``upto``."""
        cut = upto - self.base
        if cut > _CHUNK:
            # A fresh (small) copy of the rest, so a huge message's memory goes at once.
            self.data = self.data[cut:]
            self.base = upto


def _line_end(buf: _Buffer, start: int) -> int | None:
    """Absolute offset of the newline ending the line at ``start``, reading as needed."""
    search = start
    while True:
        index = buf.data.find(b"\n", search - buf.base)
        if index >= 0:
            return index + buf.base
        search = max(search, buf.end)  # what was searched holds no newline
        if not buf.fill():
            return None


def _content_length_end(buf: _Buffer, start: int) -> int | None:
    """Where a trustworthy Content-Length says the message starting at ``start`` ends.

    Returns the offset of the newline before the next separator (or the end of
    the stream), or None when there is no Content-Length or it does not land on
    a separator: then the strict separator rule alone decides.
    """
    search = start
    while True:
        header_end = blank_line(buf.data, search - buf.base)[1]
        if header_end >= 0 or buf.eof or buf.end - start > _HEADER_LIMIT:
            break
        # The next search overlaps the last by two bytes: a "\n\r\n" may straddle a read.
        search = max(search, buf.end - 2)
        buf.fill()
    if header_end < 0 or buf.data.find(b"ength:", start - buf.base, header_end) < 0:
        return None
    match = _CONTENT_LENGTH_RE.search(buf.data, start - buf.base, header_end)
    if not match:
        return None
    end = header_end + buf.base + int(match.group(1))
    while end + 8 > buf.end and buf.fill():
        pass
    rel = end - buf.base
    if rel == len(buf.data):
        return end
    for blank in (b"\n", b"\r\n"):
        if buf.data.startswith(blank, rel):
            if rel + len(blank) == len(buf.data):
                return end
            line_start = end + len(blank)
            if not buf.data.startswith(b"From ", line_start - buf.base):
                continue
            if _separator_at(buf, line_start, _line_end(buf, line_start)):
                return line_start - 1
    return None


def iter_mbox(stream: BinaryIO, fmt: MboxFormat = "auto") -> Iterator[MboxPart]:
    """Yield the messages of an mbox stream in order.

    The stream must start with a separator line (callers sniff first). Time is
    linear in the stream's length; memory is about twice the largest message.
    """
    buf = _Buffer(stream)
    buf.fill()
    first_end = _line_end(buf, 0)
    if not _separator_at(buf, 0, first_end):
        raise ValueError("not an mbox: the first line is not a 'From ' separator")
    rd = _detect(buf.get(0, buf.end if first_end is None else first_end), fmt)
    sep_start = 0
    sep_end = first_end
    while sep_end is not None:
        start = sep_end + 1
        separator = buf.get(sep_start, sep_end).rstrip(b"\r")
        # Find the next separator: a line starting "From " that passes the strict rule,
        # unless a trustworthy Content-Length points past it. An mboxrd quotes every
        # "From " line of a body, so there its Content-Length headers are not read.
        stop = None if rd else _content_length_end(buf, start)
        search = start - 1 if stop is None else stop
        next_sep: int | None = None
        while True:
            index = buf.data.find(b"\nFrom ", search - buf.base)
            if index < 0:
                # Resume after what was searched (less a possible partial "\nFrom "),
                # not from the message start: a huge message is read once, not once a chunk.
                search = max(search, buf.end - 5)
                if buf.fill():
                    continue
                break
            cand = index + buf.base + 1
            if _separator_at(buf, cand, _line_end(buf, cand)):
                next_sep = cand
                break
            search = cand
        end = buf.end if next_sep is None else next_sep
        trailer = _trailer(buf, start, end, next_sep is not None)
        chunk = buf.get(start, end - len(trailer))
        if next_sep is not None:
            buf.drop(next_sep)  # before unquoting: the buffer and two copies would be three times the message
        if rd and b">From " in chunk:
            chunk = _UNQUOTE_RE.sub(rb"\1", chunk)
        yield MboxPart(separator=separator, raw=chunk, trailer=trailer, end=end)
        if next_sep is None:
            return
        sep_start = next_sep
        sep_end = _line_end(buf, next_sep)
        if sep_end is None:
            # A separator as the very last line, without a newline: an empty message.
            line = buf.get(sep_start, buf.end)
            yield MboxPart(separator=line.rstrip(b"\r"), raw=b"", trailer=b"", end=buf.end)
            return


def _trailer(buf: _Buffer, start: int, end: int, before_separator: bool) -> bytes:
    """The blank line an mbox writer put after the message from ``start`` to ``end``:
    a second line ending at its end, or the whole message being one line ending
    before a separator; ``b""`` when there is none."""
    size = end - start
    rel = end - buf.base
    for blank in (b"\r\n", b"\n"):
        if size == len(blank) and before_separator and buf.data.startswith(blank, rel - len(blank)):
            return blank
        if size >= 2 * len(blank) and buf.data.startswith(blank * 2, rel - 2 * len(blank)):
            return blank
    return b""
