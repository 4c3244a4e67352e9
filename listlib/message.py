"""Raw message bytes -> the facts filing needs (routing, dating, dedup, indexing).

Pure and lenient: it never raises on bad mail and never modifies the bytes it
is given. It reads only the header block with a small hand-written parser
(the stdlib ``email`` parser is an order of magnitude slower and not needed to
file a message); decoding for display happens when rendering.
"""

from __future__ import annotations

import binascii
import calendar
import hashlib
import re
from collections import Counter
from collections.abc import Iterable
from typing import NamedTuple

try:
    # email.utils.parsedate_tz itself, without the modules email.utils loads (sockets,
    # random numbers, charsets): about 12 ms of every 'listlib import' start.
    from email._parseaddr import parsedate_tz
except ImportError:  # pragma: no cover - a Python whose email package moved it
    from email.utils import parsedate_tz

from .charsets import decode_bytes

__all__ = [
    "FIELD_NAME_RE",
    "FIELD_RE",
    "MessageFacts",
    "blank_line",
    "body_tokens",
    "decode_header_value",
    "parse_date",
    "parse_date_offset",
    "parse_from",
    "parse_message",
    "raw_hash",
    "skeleton",
    "split_message",
]

# A header field name is printable ASCII except ':' (RFC 5322 section 2.2).
FIELD_NAME_RE = re.compile(rb"([\x21-\x39\x3b-\x7e]+)[ \t]*:")
"""A field name and its colon, at the start of a header line."""
_LEADING_BLANK_RE = re.compile(rb"(?:[ \t\r]*\n)+")
# A header line starts a field ("Name:") or continues one (white space). The header
# block ends before the first line that does neither: a search for it jumps from
# newline to newline (a literal first character).
_HEADER_LINE_RE = re.compile(rb"[ \t]|[\x21-\x39\x3b-\x7e]+[ \t]*:")
_NOT_HEADER_LINE_RE = re.compile(rb"\n(?![ \t]|[\x21-\x39\x3b-\x7e]+[ \t]*:)")
FIELD_RE = re.compile(rb"^([\x21-\x39\x3b-\x7e]+)[ \t]*:([^\n]*(?:\n[ \t][^\n]*)*)", re.M)
"""Every (name, folded value) of a header block."""
# Fields are found by their preceding newline (the header is searched with one put in
# front): a literal first character lets the regex engine skip from line to line,
# where "^" with re.M would try every position.
_WANTED_FIELD_RE = re.compile(
    rb"\n(message-id|in-reply-to|references|subject|from|date|list-id|to|cc|delivered-to"
    rb"|x-original-to|resent-to|envelope-to|x-no-archive|archive)[ \t]*:([^\n]*(?:\n[ \t][^\n]*)*)",
    re.I,
)
_LOWER_NAMES = {
    spelling.encode(): spelling.lower()
    for name in (
        "Message-ID", "In-Reply-To", "References", "Subject", "From", "Date", "List-Id", "To", "Cc",
        "Delivered-To", "X-Original-To", "Resent-To", "Envelope-To", "X-No-Archive", "Archive",
    )
    for spelling in (name, name.lower(), name.replace("-ID", "-Id"), name.upper())
}  # fmt: skip
"""The usual spellings of the wanted field names, lower-cased without a decode."""
_RECEIVED_FIELD_RE = re.compile(rb"\nreceived[ \t]*:([^\n]*(?:\n[ \t][^\n]*)*)", re.I)
# RFC 2047 encoded-word, as leniently as the stdlib reads it (spaces inside the payload allowed).
_ENCODED_WORD_RE = re.compile(r"=\?([^?]*?)\?([QqBb])\?(.*?)\?=")
_NOT_BASE64 = bytes(b for b in range(256) if not (chr(b).isascii() and (chr(b).isalnum() or chr(b) in "+/")))
# The common RFC 5322 shape, read without parsedate_tz (same results, 5x faster);
# everything else goes through parsedate_tz.
_MONTHS = {
    m: i
    for i, m in enumerate(["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], start=1)
}
_DATE_RE = re.compile(
    r"\s*(?:[A-Za-z]{3},\s*)?(0?[1-9]|[12][0-9]|3[01])\s+(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\s+"
    r"([1-9][0-9]{3})\s+([01][0-9]|2[0-3]):([0-5][0-9])(?::([0-5][0-9]|60))?\s+([+-])([0-9]{2})([0-9]{2})"
    r"(?:\s*\([^()]*\))?\s*\Z",
    re.I,
)
_MSGID_RE = re.compile(r"<([^<>\s]+)>")
_WS_RE = re.compile(r"\s+")
_ALNUM_RE = re.compile(r"[^0-9a-z]+")
# Lines Mailman's scrubber adds or rewrites when it regenerates an archive
# (twisted-python holds every message twice with different scrubber URLs).
_SCRUBBER_RE = re.compile(
    rb"^(?:(?:Name|Type|Size|Desc|URL|Url) ?:.*|.*was scrubbed\.\.\.|-{14} next part -{14})\r?$",
    re.M,
)
_NOT_ALNUM = bytes(b for b in range(256) if not chr(b).isascii() or not chr(b).isalnum())
_TOKEN_RE = re.compile(rb"[A-Za-z0-9]{2,}")
_FROM_QUOTE_RE = re.compile(rb"^>+(?=From )", re.M)

_TEXT_FIELDS = ("message-id", "in-reply-to", "references", "date", "x-no-archive", "archive")

#: Header fields whose addresses route a message to a list.
RECIPIENT_FIELDS = ("to", "cc", "delivered-to", "x-original-to", "resent-to", "envelope-to")


class MessageFacts(NamedTuple):
    """What filing needs to know about one message, taken from its header.

    A named tuple: parsing workers send thousands of these a second to the
    filing process, and tuples pickle several times faster than dataclasses.
    """

    has_headers: bool
    raw_hash: str
    """Hash of the exact bytes (see ``raw_hash``)."""
    message_id: str | None
    in_reply_to: str | None
    references: tuple[str, ...]
    subject: str
    from_name: str
    from_addr: str
    date: int | None
    """The Date header as Unix seconds (UTC), or None when absent or unparseable."""
    received_date: int | None
    """Date of the newest (topmost) Received header that carries a parseable date."""
    list_ids: tuple[str, ...]
    recipient_fields: tuple[bytes, ...]
    """The unfolded To, Cc, Delivered-To, ... fields (see ``RECIPIENT_FIELDS``), in order,
    as bytes: only routing reads them, and only when no List-Id matched."""
    vitals: str
    """Hash of sender, subject and body words: equal for copies of one post."""
    no_archive: bool = False
    """The author asked not to be archived publicly (``X-No-Archive: yes``, ``Archive: no``)."""

    @property
    def recipients(self) -> tuple[str, ...]:
        """The lower-cased addresses of the recipient fields (only routing needs them: not
        worth extracting from every long Cc list up front)."""
        return tuple(_recipients(_text(value) for value in self.recipient_fields))


def blank_line(data: bytes, start: int = 0) -> tuple[int, int]:
    """The first empty line (LF or CRLF) from ``start``: (where it starts, where the
    text after it starts), or (-1, -1) when there is none."""
    blank = data.find(b"\n\n", start)
    stop = blank if blank >= 0 else len(data)
    # A memchr for a carriage return first: most mail stored as LF has none.
    crlf = data.find(b"\n\r\n", start, stop) if data.find(b"\r", start, stop) >= 0 else -1
    if crlf >= 0:
        return crlf + 1, crlf + 3
    if blank >= 0:
        return blank + 1, blank + 2
    return -1, -1


def split_message(raw: bytes) -> tuple[bytes, bytes]:
    """Split raw bytes into (header block, body), leniently.

    Leading blank or whitespace-only lines are skipped (some real files start
    with a line of spaces); the header block ends at the first empty line or at
    the first line that is neither a field nor a continuation.
    """
    start = 0
    if raw[:1] in (b" ", b"\t", b"\r", b"\n"):
        lead = _LEADING_BLANK_RE.match(raw)
        start = lead.end() if lead else 0
    end, body = blank_line(raw, start)
    if end < 0:
        end = body = len(raw)
    # A line that is neither a field nor a continuation ends the header early. The
    # newline ending the last line is left out of the search: the blank line after
    # it is not a header line.
    if start < end and not _HEADER_LINE_RE.match(raw, start, end):
        return b"", raw[start:]
    last = end - 1 if raw[end - 1 : end] == b"\n" else end
    bad = _NOT_HEADER_LINE_RE.search(raw, start, last)
    if bad is None:
        return raw[start:end], raw[body:]
    stop = bad.start() + 1
    return raw[start:stop], raw[stop:]


def _unfold(value: bytes) -> bytes:
    """Unfold a field value and collapse runs of white space (RFC 5322 section 2.2.3)."""
    return b" ".join(value.split()) if b"\n" in value else value.strip()


def _iter_fields(header: bytes) -> list[tuple[str, bytes]]:
    """Unfolded (lower-case name, value) pairs of the wanted fields but Received, in header order."""
    return [
        (
            _LOWER_NAMES.get(name) or name.decode("ascii").lower(),
            value.strip() if b"\n" not in value else b" ".join(value.split()),  # _unfold, inline
        )
        for name, value in _WANTED_FIELD_RE.findall(b"\n" + header)
    ]


def _received_date(header: bytes) -> int | None:
    """The date of the newest (topmost) Received field that has one (after its last ';')."""
    for match in _RECEIVED_FIELD_RE.finditer(b"\n" + header):
        value = match.group(1)
        if b";" in value:
            return parse_date(_text(_unfold(value).rpartition(b";")[2]))
    return None


def _text(value: bytes) -> str:
    """Header bytes as text: UTF-8 when valid, else Windows-1252 (a superset of Latin-1)."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return value.decode("cp1252", errors="replace")


def _word_bytes(encoding: str, payload: str) -> bytes:
    """The bytes of one encoded-word's payload, decoded leniently (bad base64 padding, stray characters)."""
    data = payload.encode("utf-8")
    if encoding in "Qq":
        return binascii.a2b_qp(data, header=True)
    data = data.translate(None, _NOT_BASE64).rstrip(b"=")
    if len(data) % 4 == 1:  # a lone trailing character carries no whole byte
        data = data[:-1]
    try:
        return binascii.a2b_base64(data + b"=" * (-len(data) % 4))
    except binascii.Error:
        return b""


def _decode_encoded_words(text: str) -> str:
    """RFC 2047: decode every encoded-word; whitespace between two of them is dropped.

    Adjacent words in one charset are joined before decoding, so a character
    split across two words (common in long UTF-8 subjects) survives. Unknown
    charsets and broken payloads decode by ``charsets.decode_bytes``' fallbacks.
    """
    out: list[str] = []
    pending = b""
    pending_charset = ""
    pos = 0
    for match in _ENCODED_WORD_RE.finditer(text):
        gap = text[pos : match.start()]
        if gap and not (pos and gap.isspace()):
            if pending:
                out.append(decode_bytes(pending, pending_charset))
                pending = b""
            out.append(gap)
        charset = match.group(1).lower()
        if pending and charset != pending_charset:
            out.append(decode_bytes(pending, pending_charset))
            pending = b""
        pending += _word_bytes(match.group(2), match.group(3))
        pending_charset = charset
        pos = match.end()
    if pending:
        out.append(decode_bytes(pending, pending_charset))
    out.append(text[pos:])
    return "".join(out)


def decode_header_value(value: bytes | str) -> str:
    """Decode RFC 2047 encoded-words, tolerating broken encodings; collapse whitespace."""
    text = _text(value) if isinstance(value, bytes) else value
    if "=?" in text:
        text = _decode_encoded_words(text)
    return _WS_RE.sub(" ", text).strip()


def parse_date_offset(value: str) -> tuple[int, int] | None:
    """An RFC 5322 date (leniently) as (Unix seconds, the sender's UTC offset in seconds), or None.

    Offsets beyond +/-14 hours (seen in real Pipermail archives) are ignored
    rather than trusted (the offset becomes 0); years before 1000 are refused.
    """
    fast = _DATE_RE.match(value)
    if fast:
        day, month, year, hour, minute, second, sign, zone_hours, zone_minutes = fast.groups()
        offset = int(zone_hours) * 3600 + int(zone_minutes) * 60
        if sign == "-":
            offset = -offset
        if abs(offset) > 14 * 3600:
            offset = 0
        moment = (int(year), _MONTHS[month.lower()], int(day), int(hour), int(minute), int(second or 0))
        return calendar.timegm(moment) - offset, offset
    try:
        parsed = parsedate_tz(value)
    except (ValueError, IndexError, TypeError, OverflowError):
        return None
    if parsed is None or parsed[0] < 1000:
        return None
    offset = parsed[9] or 0
    if abs(offset) > 14 * 3600:
        offset = 0
    try:
        return calendar.timegm(parsed[:6]) - offset, offset
    except (ValueError, OverflowError):
        return None


def parse_date(value: str) -> int | None:
    """An RFC 5322 date (leniently) as Unix seconds, or None (see ``parse_date_offset``)."""
    parsed = parse_date_offset(value)
    return parsed[0] if parsed else None


def _message_ids(value: str) -> list[str]:
    return _MSGID_RE.findall(value)


def _first_message_id(value: str) -> str | None:
    ids = _message_ids(value)
    if ids:
        return ids[0]
    stripped = value.strip()
    return stripped if stripped and " " not in stripped else None


# The lookbehinds make matches start only at the start of a word: without them a
# long header without "@" costs time quadratic in its length.
_ADDR_RE = re.compile(r"(?<![^\s<>()\[\],;:\"'])[^\s<>()\[\],;:\"']+@[^\s<>()\[\],;:\"']+")
_OBFUSCATED_RE = re.compile(
    r"(?<![^\s<>()\[\],;:\"'])([^\s<>()\[\],;:\"']+) at ([^\s<>()\[\],;:\"']+\.[^\s<>()\[\],;:\"']+)"
)
_ANGLE_RE = re.compile(r"<([^<>]*)>")


def _normalize_address(addr: str) -> str:
    """Lower-case an address and undo Pipermail's ``user at host`` obfuscation."""
    addr = addr.strip().strip("<>").lower()
    if "@" not in addr and " at " in addr:
        addr = addr.replace(" at ", "@", 1)
    return addr.replace(" ", "")


def parse_from(value: str) -> tuple[str, str]:
    """(display name, address) of a From header; fast paths for the common shapes."""
    value = value.strip()
    angle = _ANGLE_RE.findall(value)
    if angle and "@" in angle[-1]:
        name = value[: value.rfind("<")].strip().strip('"').strip()
        return name, _normalize_address(angle[-1])
    # Pipermail writes "user at host (Name)"; others write "user@host (Name)".
    value = _OBFUSCATED_RE.sub(r"\1@\2", value)
    match = _ADDR_RE.search(value)
    if not match:
        return value, ""
    rest = (value[: match.start()] + value[match.end() :]).strip()
    name = rest.strip("()").strip().strip('"').strip()
    return name, match.group(0).lower()


def _recipients(values: Iterable[str]) -> list[str]:
    out = []
    for value in values:
        out.extend(a.lower() for a in _ADDR_RE.findall(value))
        if " at " in value:
            out.extend(f"{u}@{h}".lower() for u, h in _OBFUSCATED_RE.findall(value))
    return out


def _list_id(value: str) -> str:
    ids = re.findall(r"<([^<>]+)>", value)
    return (ids[-1] if ids else value).strip().lower()


def skeleton(text: str) -> str:
    """Lower-case ASCII letters and digits of a text: what survives mangling."""
    return _ALNUM_RE.sub("", text.lower())


def _material_body(body: bytes) -> bytes:
    if b">From " in body:
        body = _FROM_QUOTE_RE.sub(b"", body)
    if b"scrubbed..." in body or b" next part " in body:
        body = _SCRUBBER_RE.sub(b"", body)
    return body


def body_tokens(body: bytes) -> Counter[bytes]:
    """Words of a body used to tell copies of one post from different posts.

    Only ASCII letters and digits count, so copies that lost or re-encoded
    non-ASCII characters, or that differ in mbox ``>From`` quoting,
    whitespace or Mailman scrubber notices, give the same words.
    """
    return Counter(_TOKEN_RE.findall(_material_body(body)))


def _vitals(from_addr: str, subject: str, body: bytes) -> str:
    digest = hashlib.blake2b(digest_size=12)
    digest.update(skeleton(from_addr).encode())
    digest.update(b"\0")
    digest.update(skeleton(subject).encode())
    digest.update(b"\0")
    digest.update(_material_body(body).translate(None, _NOT_ALNUM))
    return digest.hexdigest()


def raw_hash(raw: bytes) -> str:
    """The hash of a message's exact bytes, as kept in the index."""
    return hashlib.blake2b(raw, digest_size=16).hexdigest()


def _no_archive(text: dict[str, str]) -> bool:
    """``X-No-Archive: yes`` (Usenet custom) or RFC 5064 ``Archive: no``."""
    if text.get("x-no-archive", "").strip().lower().startswith("yes"):
        return True
    return text.get("archive", "").strip().lower().split(";")[0].strip() == "no"


def parse_message(raw: bytes) -> MessageFacts:
    """Read the facts filing needs from a raw message; never raises on bad mail."""
    header, body = split_message(raw)
    pairs = _iter_fields(header)
    has_headers = bool(pairs) or bool(FIELD_RE.search(header))
    first: dict[str, bytes] = {}
    recipients_raw: list[bytes] = []
    list_ids: list[str] = []
    for name, value in pairs:
        if name not in first:
            first[name] = value
        if name in RECIPIENT_FIELDS:
            recipients_raw.append(value)
        elif name == "list-id":
            list_ids.append(_list_id(_text(value)))
    text = {name: _text(first[name]) for name in _TEXT_FIELDS if name in first}
    subject = decode_header_value(first.get("subject", b""))
    from_name, from_addr = parse_from(decode_header_value(first.get("from", b"")))
    irt_ids = _message_ids(text.get("in-reply-to", ""))
    date_text = text.get("date")
    return MessageFacts(
        has_headers=has_headers,
        raw_hash=raw_hash(raw),
        message_id=_first_message_id(text.get("message-id", "")),
        # Junky In-Reply-To such as 'Your message of "..." <id>': the last id wins.
        in_reply_to=irt_ids[-1] if irt_ids else None,
        references=tuple(_message_ids(text.get("references", ""))),
        subject=subject,
        from_name=from_name,
        from_addr=from_addr,
        date=parse_date(date_text) if date_text else None,
        received_date=_received_date(header),
        list_ids=tuple(list_ids),
        recipient_fields=tuple(recipients_raw),
        vitals=_vitals(from_addr, subject, body),
        no_archive=_no_archive(text),
    )
