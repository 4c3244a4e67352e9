"""The MIME walk: which parts a reader sees, which are attachments, and the notes in between.

Rules:

- ``multipart/alternative``: the ``text/plain`` alternative when it has any
  text, else the HTML one, else the richest other one; pictures inside the
  alternatives not shown are still listed as attachments (Apple Mail puts
  them there).
- ``multipart/related``: the root part (``start`` parameter, else the first);
  the others are attachments, shown inline where the HTML refers to them by
  ``cid:``.
- ``multipart/signed``: the signed content, a "signed" note, and the
  signature listed as a small attachment (``signature.asc`` / ``smime.p7s``).
- ``multipart/encrypted`` and S/MIME ``application/pkcs7-mime``: an
  "encrypted" note, the ciphertext listed as an attachment.
- ``message/rfc822`` (forwards, Mailman's DMARC wrapping, digest entries): a
  section with the inner message's From, Date and Subject, then its body.
- ``text/plain`` (and patches, diffs, logs) and ``text/html`` parts without
  ``Content-Disposition: attachment`` are shown; a shown part with a file
  name is also listed as an (inline) attachment so it can be downloaded.
- Text parts over ``MAX_SHOWN_BYTES`` are listed as attachments with a note
  instead of being shown (a thread page holding one stays under ~500 KB); up to
  ``MAX_INDEXED_BYTES`` their text is still searched. Every other part is an attachment.
- A multipart whose boundary is missing shows its body as text.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from html import escape
from urllib.parse import quote

from ..charsets import decode_bytes
from ..controls import SUBJECT_CHARS, clean_header_text
from ..message import decode_header_value, parse_date_offset, parse_from
from ..translation import english
from . import sanitize
from .attachments import display_name, unique_filename
from .mime import MESSAGES, Headers, Part
from .model import Attachment, DisplayOptions
from .textbody import (
    clean_text,
    obfuscate_address,
    obfuscate_addresses,
    plain_text,
    quote_keys,
    render_plain,
    unflow,
)

__all__ = ["MAX_INDEXED_BYTES", "MAX_SHOWN_BYTES", "Walk", "author_fields", "date_of", "is_no_archive"]

MAX_SHOWN_BYTES = 300_000
"""A text part longer than this is attached, not shown: linux-raid has kernel logs of
700 KB quoted whole, which made thread pages of 770 KB (issue 29 wants under ~500 KB)."""
MAX_INDEXED_BYTES = 1 << 20
"""A text part up to this long is searched, shown or not."""

_SHOWN_TEXT = {"text/plain", "text/x-patch", "text/x-diff", "text/diff", "text/x-log"}
_SIGNATURES = {
    "application/pgp-signature": ("OpenPGP", "signature.asc"),
    "application/pkcs7-signature": ("S/MIME", "smime.p7s"),
    "application/x-pkcs7-signature": ("S/MIME", "smime.p7s"),
}
_SMIME = {"application/pkcs7-mime", "application/x-pkcs7-mime"}


def is_no_archive(headers: Headers) -> bool:
    """``X-No-Archive: yes`` (the Usenet custom) or RFC 5064 ``Archive: no``."""
    if headers.get("x-no-archive", b"").strip().lower().startswith(b"yes"):
        return True
    return headers.get("archive", b"").lower().split(b";")[0].strip() == b"no"


def date_of(headers: Headers) -> datetime | None:
    """The Date header in the sender's own offset, or None."""
    value = headers.get("date")
    parsed = parse_date_offset(value.decode("latin-1")) if value else None
    if parsed is None:
        return None
    seconds, offset = parsed
    try:
        return datetime.fromtimestamp(seconds, timezone(timedelta(seconds=offset)))
    except (ValueError, OverflowError, OSError):
        return None


_LANGUAGE_RE = re.compile(r"[A-Za-z]{2,8}(?:-[A-Za-z0-9]{1,8})*")


def language_of(headers: Headers) -> str:
    """The first language tag of the Content-Language header, or "" (none, or not a tag)."""
    value = headers.get("content-language", b"").decode("latin-1")
    first = value.split(",", 1)[0].strip()
    return first if _LANGUAGE_RE.fullmatch(first) else ""


def author_fields(headers: Headers, obfuscate: bool) -> tuple[str, str, str]:
    """(name, address, shown) of the From header (see ``MessageDisplay``)."""
    name, address = parse_from(decode_header_value(headers.get("from", b"")))
    name = clean_header_text(name)
    address = clean_header_text(address)
    if obfuscate:
        name = obfuscate_addresses(name)
    if name:
        return name, address, name
    shown = obfuscate_address(address) if obfuscate and "@" in address else address
    return address.split("@", 1)[0], address, shown


class _Pending:
    """An attachment being collected; frozen once the cid: references are known."""

    __slots__ = ("content_id", "content_type", "data", "description", "filename", "inline", "label")

    def __init__(self, filename: str, label: str, part: Part, inline: bool) -> None:
        self.filename = filename
        self.label = label
        self.content_type = part.content_type
        self.data = part.payload
        self.content_id = part.content_id
        self.description = part.description
        self.inline = inline


class Walk:
    """One message's walk: HTML blocks, new text and attachments, in part order."""

    def __init__(self, options: DisplayOptions) -> None:
        self.options = options
        self.words = options.texts or english()
        """The site's words (``translation``): notes and labels are in its language."""
        self.blocks: list[str | _Html] = []
        self.texts: list[str] = []
        self.attachments: list[_Pending] = []
        self.taken: set[str] = set()
        self.counters: dict[str, int] = {}
        self.keys: set[str] = set()
        """``quote_keys`` of the text parts shown (not made with ``text_only``)."""

    # -- results ---------------------------------------------------------------------------------

    def body_html(self) -> str:
        cid_urls: dict[str, tuple[str, str]] = {}
        for pending in self.attachments:
            if pending.content_id:
                # An image the HTML gives no alt text is named by its Content-Description, else its name.
                found = (self.options.attachment_base + quote(pending.filename), pending.description or pending.label)
                cid_urls.setdefault(pending.content_id, found)
                cid_urls.setdefault(pending.content_id.lower(), found)
        used: set[str] = set()
        pieces = []
        for block in self.blocks:
            if isinstance(block, _Html):
                html, cids = sanitize.rewrite_images(block.html, cid_urls, self.options.load_remote_images, self.words)
                used |= cids
                block = f'<div class="html-part">{html}</div>'
            pieces.append(block)
        used = {cid.lower() for cid in used}
        for pending in self.attachments:
            if pending.content_id and pending.content_id.lower() in used:
                pending.inline = True
        if not pieces:
            pieces.append(f'<div class="note empty">{escape(self.words.text("display.empty"), quote=False)}</div>')
        return '<div class="msg-body">' + "".join(pieces) + "</div>"

    def frozen_attachments(self) -> tuple[Attachment, ...]:
        return tuple(
            Attachment(p.filename, p.label, p.content_type, len(p.data), p.content_id, p.inline, p.data)
            for p in self.attachments
        )

    def text(self) -> str:
        return "\n\n".join(text for text in self.texts if text)

    # -- the walk --------------------------------------------------------------------------------

    def note(self, css: str, key: str, **values: object) -> None:
        """A remark about the message: the text of ``key`` in the site's language."""
        text = self.words.text(key, **values)
        self.blocks.append(f'<div class="note {css}">{escape(text, quote=False)}</div>')

    def label(self, key: str) -> str:
        return escape(self.words.text(key), quote=False)

    def attach(self, part: Part, inline: bool = False, name: str | None = None) -> _Pending:
        given = part.filename or name
        filename = unique_filename(given, part.content_type, self.taken, self.counters)
        pending = _Pending(filename, display_name(given, filename), part, inline)
        self.attachments.append(pending)
        return pending

    def part(self, part: Part) -> None:
        kind = part.content_type
        if kind.startswith("multipart/"):
            if not part.children:
                self.text_part(part, "text/plain")
            elif kind == "multipart/alternative":
                self.alternative(part)
            elif kind == "multipart/related":
                self.related(part)
            elif kind == "multipart/signed":
                self.signed(part)
            elif kind == "multipart/encrypted":
                self.encrypted(part)
            else:
                for child in part.children:
                    self.part(child)
            if part.truncated:
                self.note("truncated", "display.nested_parts")
        elif kind in MESSAGES:
            self.message(part)
        elif kind in _SMIME:
            smime_type = part.params.get("smime-type", "").lower()
            if smime_type == "signed-data":
                self.note("signed", "display.smime_signed")
            else:
                self.note("encrypted", "display.smime_encrypted")
            self.attach(part, name="smime.p7m")
        elif part.disposition != "attachment" and (kind in _SHOWN_TEXT or kind == "text/html"):
            self.text_part(part, kind)
        elif part.disposition != "attachment" and kind.startswith("message/") and part.payload:
            self.text_part(part, "text/plain")
        else:
            self.attach(part)

    def text_part(self, part: Part, kind: str) -> None:
        payload = part.payload
        if len(payload) > MAX_SHOWN_BYTES:
            size = self.words.text("display.too_long_bytes", n=len(payload), count=self.words.number(len(payload)))
            self.note("too-long", "display.too_long", size=size)
            self.attach(part)
            if len(payload) <= MAX_INDEXED_BYTES:
                self.texts.append(self._search_text(payload, part, kind))
            return
        if part.filename:
            self.attach(part, inline=True)
        text = decode_bytes(payload, part.params.get("charset"))
        obfuscate = self.options.obfuscate_addresses
        if kind == "text/html" and sanitize.too_deep(text):
            self.note("too-deep", "display.too_deep")
            text = sanitize.html_as_text(text)
            kind = "text/plain"
        if kind == "text/html":
            html = sanitize.sanitize_html(text, drop_mailto=obfuscate)
            if obfuscate:
                html = _obfuscate_html(html)
            self.blocks.append(_Html(html))
            self.texts.append(sanitize.html_to_text(html))
            return
        text = clean_text(text)
        if part.params.get("format", "").lower() == "flowed":
            text = unflow(text, part.params.get("delsp", "").lower() == "yes")
        if self.options.text_only:
            self.texts.append(plain_text(text, obfuscate))
            return
        html, plain = render_plain(text, obfuscate, self.words, parent=self.options.parent)
        if self.options.keys:
            self.keys |= quote_keys(text)
        if html:
            self.blocks.append(html)
        self.texts.append(plain)

    def _search_text(self, payload: bytes, part: Part, kind: str) -> str:
        """The text ``text_part`` gives the search index of a part it does not show:
        what it gives of one it shows, in either mode."""
        text = decode_bytes(payload, part.params.get("charset"))
        obfuscate = self.options.obfuscate_addresses
        if kind == "text/html" and sanitize.too_deep(text):
            text, kind = sanitize.html_as_text(text), "text/plain"
        if kind == "text/html":
            html = sanitize.sanitize_html(text, drop_mailto=obfuscate)
            return sanitize.html_to_text(_obfuscate_html(html) if obfuscate else html)
        text = clean_text(text)
        if part.params.get("format", "").lower() == "flowed":
            text = unflow(text, part.params.get("delsp", "").lower() == "yes")
        return plain_text(text, obfuscate)

    def alternative(self, part: Part) -> None:
        children = part.children
        chosen = next((c for c in children if c.content_type == "text/plain" and c.payload.strip()), None)
        chosen = chosen or next((c for c in children if c.content_type == "text/html"), None)
        chosen = chosen or next((c for c in reversed(children) if c.content_type.startswith("multipart/")), None)
        chosen = chosen or children[-1]
        self.part(chosen)
        for child in children:
            if child is not chosen:
                self.leftover_files(child)

    def leftover_files(self, part: Part) -> None:
        """Files inside an alternative that is not shown (pictures of an HTML version) are listed."""
        if part.children:
            for child in part.children:
                self.leftover_files(child)
        elif not part.content_type.startswith(("text/", "multipart/", "message/")):
            self.attach(part)

    def related(self, part: Part) -> None:
        start = part.params.get("start", "").strip().strip("<>")
        root = next((c for c in part.children if start and c.content_id == start), part.children[0])
        self.part(root)
        for child in part.children:
            if child is not root:
                if child.children:
                    self.part(child)
                else:
                    self.attach(child)

    def signed(self, part: Part) -> None:
        content, *rest = part.children
        kinds = [_SIGNATURES.get(child.content_type) for child in rest]
        label = next((kind[0] for kind in kinds if kind), "")
        self.part(content)
        self.note("signed", "display.signed_with", kind=label) if label else self.note("signed", "display.signed")
        for child, kind in zip(rest, kinds, strict=True):
            self.attach(child, name=kind[1] if kind else None)

    def encrypted(self, part: Part) -> None:
        self.note("encrypted", "display.encrypted")
        for child in part.children:
            if child.content_type == "application/pgp-encrypted" and len(child.payload) < 64:
                continue  # the "Version: 1" control part
            self.attach(child, name="encrypted.asc")

    def message(self, part: Part) -> None:
        headers = part.headers or {}
        obfuscate = self.options.obfuscate_addresses
        rows = []
        name, address, _shown = author_fields(headers, obfuscate)
        if address and obfuscate:
            address = obfuscate_address(address)
        sender = f"{name} <{address}>" if name and address and name != address.split("@")[0] else address or name
        if sender:
            rows.append((self.label("display.from"), escape(sender, quote=False)))
        when = date_of(headers)
        if when is not None:
            stamp = when.strftime("%Y-%m-%d %H:%M %z")
            rows.append((self.label("display.date"), f'<time datetime="{when.isoformat()}">{stamp}</time>'))
        elif headers.get("date"):
            rows.append(
                (
                    self.label("display.date"),
                    escape(clean_header_text(decode_header_value(headers["date"])), quote=False),
                )
            )
        subject = clean_header_text(decode_header_value(headers.get("subject", b"")), SUBJECT_CHARS)
        if subject:
            rows.append(
                (
                    self.label("display.subject"),
                    escape(obfuscate_addresses(subject) if obfuscate else subject, quote=False),
                )
            )
        header = "".join(f"<dt>{label}</dt><dd>{value}</dd>" for label, value in rows)
        self.blocks.append(f'<section class="attached-message"><dl class="attached-header">{header}</dl>')
        if part.children:
            self.part(part.children[0])
        elif part.payload:
            self.text_part(part, "text/plain")
        if part.truncated:
            self.note("truncated", "display.nested_message")
        self.blocks.append("</section>")


class _Html:
    """A sanitized HTML fragment whose images are rewritten once all attachments are known."""

    __slots__ = ("html",)

    def __init__(self, html: str) -> None:
        self.html = html


def _obfuscate_html(html: str) -> str:
    """Addresses in sanitized HTML obfuscated, ``cid:`` references (which look like addresses) kept."""
    if "@" not in html:
        return html
    pieces = html.split('src="cid:')
    out = [obfuscate_addresses(pieces[0])]
    for piece in pieces[1:]:
        reference, quote_mark, rest = piece.partition('"')
        out.append(f'src="cid:{reference}{quote_mark}{obfuscate_addresses(rest)}')
    return "".join(out)
