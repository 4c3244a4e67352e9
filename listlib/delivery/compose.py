"""The bytes a forwarded post is sent as: the stored bytes with the list's headers prepended.

Added (RFC 2369, RFC 2919, RFC 5064): ``List-Id``, ``List-Post``, ``List-Archive``,
``List-Subscribe``, ``List-Unsubscribe`` (mailto), ``Archived-At`` (the message's
permanent page; left out when the author asked not to be archived),
``Precedence: list`` and an ``X-Loop`` marker naming the list address. Fields of
those names already present (from an upstream list) are removed so that a reader
sees one set. Everything else is kept byte for byte:
Message-ID, In-Reply-To, References, every other header field and the body. Two
opt-in changes touch more: a subject prefix (rewrites the Subject field) and a
footer (appended to a plain-text, single-part, 7/8-bit body only); both break
DKIM signatures, so they are off by default. Line ends become CRLF, as SMTP
requires. Pure: no I/O.
"""

from __future__ import annotations

import re

from ..config import ListDelivery
from ..message import FIELD_NAME_RE

__all__ = ["LIST_FIELDS", "compose_post"]

LIST_FIELDS = frozenset(
    {
        "list-id",
        "list-post",
        "list-archive",
        "list-subscribe",
        "list-unsubscribe",
        "list-help",
        "list-owner",
        "archived-at",
        "precedence",
    }
)
_EOL_RE = re.compile(rb"\r?\n")
_HEADER_END_RE = re.compile(rb"\r?\n\r?\n")


def _fold_header(header: bytes) -> list[tuple[bytes, bytes]]:
    """Split a header block into (lower-case name, whole field bytes incl. continuation lines)."""
    fields: list[tuple[bytes, bytes]] = []
    for line in header.splitlines(keepends=True):
        if line[:1] in (b" ", b"\t") and fields:
            name, text = fields[-1]
            fields[-1] = (name, text + line)
            continue
        match = FIELD_NAME_RE.match(line)
        fields.append((match.group(1).lower() if match else b"", line))
    return fields


def _quote_name(name: str) -> str:
    if re.fullmatch(r"[A-Za-z0-9 !#$%&'*+/=?^_`{|}~.-]*", name) and name.isascii():
        return name
    escaped = name.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"' if name.isascii() else ""


def list_headers(delivery: ListDelivery, name: str, list_url: str, archived_at: str | None) -> list[str]:
    """The header fields a forwarded post gets, in order."""
    shown = _quote_name(name)
    list_id = f"{shown} <{delivery.list_id}>" if shown else f"<{delivery.list_id}>"
    request = delivery.request_address
    return [
        f"List-Id: {list_id}",
        f"List-Post: <mailto:{delivery.post_address}>",
        f"List-Archive: <{list_url}>",
        f"List-Subscribe: <mailto:{request}?subject=subscribe>",
        f"List-Unsubscribe: <mailto:{request}?subject=unsubscribe>",
        *([f"Archived-At: <{archived_at}>"] if archived_at else []),
        "Precedence: list",
        f"X-Loop: {delivery.post_address}",
    ]


def compose_post(raw: bytes, delivery: ListDelivery, name: str, list_url: str, archived_at: str | None) -> bytes:
    """The bytes to send for the stored message ``raw`` (see the module docstring)."""
    end = _HEADER_END_RE.search(raw)
    if end is None:
        header, sep, body = raw, b"\n", b""
    else:
        header, sep, body = raw[: end.start()] + b"\n", b"\n", raw[end.end() :]
    kept = []
    for field_name, text in _fold_header(header):
        if field_name.decode("ascii", "replace") in LIST_FIELDS:
            continue
        if field_name == b"subject" and delivery.subject_prefix:
            text = _prefix_subject(text, delivery.subject_prefix)
        kept.append(text)
    added = "".join(f"{line}\n" for line in list_headers(delivery, name, list_url, archived_at)).encode("utf-8")
    if delivery.footer and _footer_fits(kept):
        if body and not body.endswith(b"\n"):
            body += b"\n"
        body += b"-- \n" + delivery.footer.encode("utf-8").rstrip(b"\n") + b"\n"
    data = added + b"".join(kept) + sep + body
    return _EOL_RE.sub(b"\r\n", data)


def _prefix_subject(text: bytes, prefix: str) -> bytes:
    name, _, value = text.partition(b":")
    tag = prefix.strip().encode("utf-8")
    if tag and tag.lower() in value.lower():
        return text  # a reply already carries the tag: do not stack them
    return name + b": " + prefix.encode("utf-8").rstrip(b" ") + b" " + value.lstrip(b" \t")


def _footer_fits(fields: list[bytes]) -> bool:
    """Only a plain-text, single-part body in a 7bit/8bit encoding can take a footer unchanged."""
    content_type = b"text/plain"
    encoding = b"7bit"
    for text in fields:
        name, _, value = text.partition(b":")
        lowered = name.strip().lower()
        if lowered == b"content-type":
            content_type = value.strip().split(b";")[0].strip().lower()
        elif lowered == b"content-transfer-encoding":
            encoding = value.strip().lower()
    return content_type == b"text/plain" and encoding in (b"7bit", b"8bit", b"")
