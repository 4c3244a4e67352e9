"""Raw message bytes -> a tree of decoded MIME parts, fast for the common case and never raising.

Most list mail is one ``text/plain`` part; it is read with listlib's own
header splitter and decoded here, which is several times faster than the
stdlib parser. Everything else (multipart, message/*, attachments, unusual
transfer encodings) goes through the stdlib ``compat32`` parser, the most
lenient one, and is copied into plain ``Part`` values so the walker never
touches ``email.message`` objects. Nesting deeper than ``MAX_DEPTH`` and
parts beyond ``MAX_PARTS`` are cut off (the raw message keeps them).

Pure: no I/O.
"""

from __future__ import annotations

import binascii
import re
from dataclasses import dataclass, field
from email.message import Message
from email.parser import BytesParser
from email.policy import compat32

from ..charsets import decode_bytes
from ..message import decode_header_value, split_message

__all__ = ["MAX_DEPTH", "MAX_PARTS", "MESSAGES", "Headers", "Part", "parse_parts", "read_headers"]

MAX_DEPTH = 24
MAX_PARTS = 2000
#: The message/* types shown as an attached message (the others are shown as text).
MESSAGES = frozenset({"message/rfc822", "message/global", "message/news"})

_FIELDS = (
    "from",
    "subject",
    "date",
    "message-id",
    "content-type",
    "content-transfer-encoding",
    "content-disposition",
    "content-language",
    "x-no-archive",
    "archive",
)
# Anchored on a literal newline (the block gets one in front), which the regex engine
# scans for fast; "^" with re.M is tried at every position.
# The content-* names share their prefix in the pattern: each header line tries fewer
# branches (with re.I every branch is entered, none is skipped on its first character).
_CONTENT = [name.removeprefix("content-") for name in _FIELDS if name.startswith("content-")]
_NAMES = [name for name in _FIELDS if not name.startswith("content-")] + ["content-(?:" + "|".join(_CONTENT) + ")"]
_FIELD_RE = re.compile(rb"\n(" + "|".join(_NAMES).encode() + rb")[ \t]*:([^\n]*(?:\n[ \t][^\n]*)*)", re.I)
_PARAM_RE = re.compile(r';\s*([!#$%&\'*+\-.^_`|~0-9A-Za-z]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;\s]*)')
_TYPE_RE = re.compile(r"\s*([!#$%&'*+\-.^_`|~0-9A-Za-z]+)/([!#$%&'*+\-.^_`|~0-9A-Za-z]+)\s*(?:;|\Z)")
_FAST_ENCODINGS = {"", "7bit", "8bit", "binary", "quoted-printable", "base64"}
_NOT_BASE64 = bytes(b for b in range(256) if not (chr(b).isascii() and (chr(b).isalnum() or chr(b) in "+/")))
_PARSER = BytesParser(policy=compat32)


Headers = dict[str, bytes]
"""Lower-case field name -> unfolded raw value of its first occurrence."""


@dataclass(slots=True)
class Part:
    """One MIME part, decoded."""

    content_type: str = "text/plain"
    params: dict[str, str] = field(default_factory=dict)
    """Content-Type parameters with lower-case names (charset, format, delsp, start, protocol ...)."""
    filename: str | None = None
    """The decoded suggested file name (unsafe as it stands)."""
    disposition: str | None = None
    content_id: str | None = None
    description: str | None = None
    """The decoded Content-Description (an image's alt text)."""
    payload: bytes = b""
    """The decoded body of a leaf part (a multipart whose boundary is missing keeps its body here)."""
    children: list[Part] = field(default_factory=list)
    headers: Headers | None = None
    """For message/rfc822 parts: the inner message's header fields (its body is ``children[0]``)."""
    truncated: bool = False
    """Nesting or part count limits cut this part's children off."""


def read_headers(header_block: bytes) -> Headers:
    """First occurrence of each field listlib displays, unfolded."""
    found: Headers = {}
    for name, value in _FIELD_RE.findall(b"\n" + header_block):
        key = name.decode("ascii").lower()
        if key not in found:
            found[key] = b" ".join(value.split()) if b"\n" in value else value.strip()
    return found


def _content_type(value: str) -> tuple[str, dict[str, str]]:
    match = _TYPE_RE.match(value)
    if not match:
        return "text/plain", {}
    params = {}
    for name, raw in _PARAM_RE.findall(value, match.end() - 1):
        params.setdefault(name.lower(), raw[1:-1].replace('\\"', '"') if raw.startswith('"') else raw)
    return f"{match.group(1)}/{match.group(2)}".lower(), params


def _decode_transfer(body: bytes, encoding: str) -> bytes:
    if encoding == "base64":
        data = body.translate(None, _NOT_BASE64).rstrip(b"=")
        if len(data) % 4 == 1:
            data = data[:-1]
        try:
            return binascii.a2b_base64(data + b"=" * (-len(data) % 4))
        except binascii.Error:
            return body
    if encoding == "quoted-printable":
        return binascii.a2b_qp(body.replace(b"\r\n", b"\n"))
    return body


def _fast_part(headers: Headers, body: bytes) -> Part | None:
    """The part of a single-part text message, or None when the stdlib parser is needed."""
    content_type, params = _content_type(headers.get("content-type", b"").decode("latin-1"))
    if content_type not in ("text/plain", "text/html"):
        return None
    encoding = headers.get("content-transfer-encoding", b"").decode("latin-1").strip().lower()
    if encoding not in _FAST_ENCODINGS or b"attachment" in headers.get("content-disposition", b"").lower():
        return None
    return Part(content_type, params, payload=_decode_transfer(body, encoding))


def _text(value: object) -> str:
    """A header value from the stdlib as text: its 8-bit bytes come back as surrogates."""
    text = str(value)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "surrogateescape")
        return decode_header_value(raw)
    return text


def _message_headers(message: Message) -> Headers:
    found: Headers = {}
    for name, value in message.raw_items():
        key = name.lower()
        if key in _FIELDS and key not in found:
            text = value if isinstance(value, str) else str(value)
            found[key] = b" ".join(text.encode("utf-8", "surrogateescape").split())
    return found


_DESCRIBING = ("content-type", "content-disposition", "content-id", "content-description")


def _with_decoded_headers(message: Message) -> Message:
    """The message itself, or a stand-in whose describing fields have 8-bit bytes decoded.

    compat32 keeps 8-bit header bytes as surrogates and turns them into U+FFFD
    when asked for a parameter, losing ``filename="r\xc3\xa9sum\xc3\xa9.pdf"``.
    """
    raw = [(name, value) for name, value in message.raw_items() if name.lower() in _DESCRIBING]
    if all(isinstance(value, str) and value.isascii() for _, value in raw):
        return message
    stand_in = Message()
    for name, value in raw:
        data = str(value).encode("utf-8", "surrogateescape")
        stand_in[name] = decode_bytes(b" ".join(data.split()), None)
    return stand_in


def _header_text(message: Message) -> bytes:
    lines = [f"{name}: {value}" for name, value in message.raw_items()]
    return "\n".join(lines).encode("utf-8", "surrogateescape") + b"\n"


class _Converter:
    """Copies a stdlib message tree into Parts, within the depth and part limits."""

    def __init__(self) -> None:
        self.count = 0

    def convert(self, message: Message, depth: int) -> Part:
        self.count += 1
        part = Part()
        described = _with_decoded_headers(message)
        try:
            part.content_type = message.get_content_type()
        except Exception:  # the stdlib has raised on odd Content-Type values
            part.content_type = "application/octet-stream"
        part.params = self._params(described)
        part.filename = self._filename(described)
        try:
            part.disposition = described.get_content_disposition()
        except Exception:
            part.disposition = None
        content_id = described.get("content-id")
        if content_id is not None:
            part.content_id = _text(content_id).strip().strip("<>").strip() or None
        description = described.get("content-description")
        if description is not None:
            part.description = " ".join(decode_header_value(_text(description)).split()) or None
        payload = message.get_payload()
        if isinstance(payload, list) and part.content_type.startswith("message/") and part.content_type not in MESSAGES:
            # delivery-status, disposition-notification ...: blocks of header fields, shown as text.
            part.payload = b"\n".join(_header_text(block) for block in payload if isinstance(block, Message))
            return part
        if isinstance(payload, list):
            if depth >= MAX_DEPTH or self.count >= MAX_PARTS:
                part.truncated = True
                return part
            if part.content_type.startswith("message/") and payload and isinstance(payload[0], Message):
                part.headers = _message_headers(payload[0])
            for child in payload:
                if self.count >= MAX_PARTS:
                    part.truncated = True
                    break
                if isinstance(child, Message):
                    part.children.append(self.convert(child, depth + 1))
            return part
        try:
            decoded = message.get_payload(decode=True)
        except Exception:
            decoded = None
        if isinstance(decoded, bytes):
            part.payload = decoded
        elif isinstance(payload, str):
            part.payload = payload.encode("utf-8", "surrogateescape")
        return part

    @staticmethod
    def _params(message: Message) -> dict[str, str]:
        params: dict[str, str] = {}
        try:
            for name, value in message.get_params() or []:
                if isinstance(value, tuple):  # RFC 2231
                    value = value[2] if len(value) == 3 else str(value)
                params.setdefault(str(name).lower(), _text(value).strip())
        except Exception:
            pass
        return params

    @staticmethod
    def _filename(message: Message) -> str | None:
        try:
            name = message.get_filename()
            if name is None:
                name = message.get_param("name")
                if isinstance(name, tuple):
                    name = name[2] if len(name) == 3 else None
        except Exception:
            return None
        return decode_header_value(_text(name)) if name else None


def parse_parts(raw: bytes) -> tuple[Headers, Part]:
    """The top-level header fields and the part tree of a raw message."""
    header_block, body = split_message(raw)
    headers = read_headers(header_block)
    part = _fast_part(headers, body)
    if part is not None:
        return headers, part
    try:
        message = _PARSER.parsebytes(raw)
        return headers, _Converter().convert(message, 0)
    except Exception:  # the last line of defence: show the body as text
        return headers, Part("text/plain", payload=body)
