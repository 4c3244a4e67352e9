"""Raw message bytes -> a safe display model (``display_message``); pure, never raises on bad mail.

Nothing here does I/O or keeps state between messages; ``display_message``
may be called from any process. Its one HTML output, ``body_html``, is safe to
insert into a page unescaped: every text from the message is escaped, HTML
parts are sanitized (``display.sanitize``), and the only other markup is this
module's own, with these CSS classes for the theme:

``<div class="msg-body">``
    wraps the whole body.
``<pre class="text">``
    plain text; monospace, best styled ``white-space: pre-wrap`` (format=flowed
    paragraphs are single long lines). Inside: ``<a href rel>`` links and
    ``<span class="quote">`` for short quotes left unfolded.
``<details class="quote"><summary>…</summary><pre class="text">…</pre></details>``
    a folded quote; the summary holds ``<span class="attribution">`` ("On …
    wrote:") when there is one and ``<span class="lines">N quoted lines</span>``.
``<details class="signature">``, ``<details class="footer">``
    a folded signature, a folded Mailman list footer (same inner structure).
``<div class="diff"><pre class="text">…</pre></div>``
    a unified diff (``display.diff`` finds it): ``<span class="diff-file">`` a
    file's header lines, ``diff-hunk`` an ``@@`` line, ``diff-add`` /
    ``diff-del`` runs of added / removed lines (their ``+`` / ``-`` kept),
    ``diff-meta`` a "\\ No newline" line or a binary block's head, ``diff-bin``
    its base85 lines. The ``<pre>`` is the wide one when a line is long.
    ``<div class="diff diffstat">`` is a diffstat, its histogram in
    ``diff-add`` / ``diff-del`` spans.
``<div class="html-part">``
    a sanitized HTML part. Inside it, ``<span class="remote-image"
    title="URL">[image: alt]</span>`` stands for a blocked remote image and
    ``<span class="missing-image">`` for an image that cannot be shown.
``<div class="note …">``
    a remark about the message: ``signed``, ``encrypted``, ``too-long`` (a text
    part over 1 MiB, attached instead), ``too-deep`` (HTML nested too deeply,
    shown as text), ``truncated`` (MIME nested too deeply), ``empty``,
    ``no-archive``, ``unreadable`` (the last-resort raw view; never expected).
``<section class="attached-message">``
    an attached (forwarded, DMARC-wrapped, digested) message: a
    ``<dl class="attached-header">`` with From, Date (``<time>``) and Subject,
    then its body blocks.

Module map: ``mime`` (bytes -> part tree), ``walk`` (part tree -> blocks,
notes and attachments), ``textbody`` (plain text), ``diff`` (diffs in plain
text), ``sanitize`` (HTML, the
only user of nh3), ``attachments`` (file names), ``model`` (the frozen values).
"""

from __future__ import annotations

from html import escape

from ..charsets import decode_bytes
from ..controls import SUBJECT_CHARS, clean_header_text
from ..message import decode_header_value, split_message
from ..translation import english
from .attachments import safe_filename
from .mime import parse_parts, read_headers
from .model import Attachment, DisplayOptions, MessageDisplay
from .textbody import clean_text, obfuscate_address, obfuscate_addresses
from .walk import Walk, author_fields, date_of, is_no_archive, language_of

__all__ = [
    "Attachment",
    "DisplayOptions",
    "MessageDisplay",
    "display_message",
    "obfuscate_address",
    "obfuscate_addresses",
    "safe_filename",
]

_DEFAULT = DisplayOptions()


def _no_archive_html(options: DisplayOptions) -> str:
    note = escape((options.texts or english()).text("display.no_archive"), quote=False)
    return f'<div class="msg-body"><div class="note no-archive">{note}</div></div>'


def _message_id(headers: dict[str, bytes]) -> str | None:
    value = clean_header_text(decode_bytes(headers.get("message-id", b""), None))
    start = value.find("<")
    if start >= 0:
        end = value.find(">", start)
        value = value[start + 1 : end] if end > start else value[start + 1 :]
    value = value.strip()
    return value if value and " " not in value else None


def display_message(raw: bytes, options: DisplayOptions = _DEFAULT) -> MessageDisplay:
    """The display model of one raw message; never raises on bad mail."""
    try:
        return _display(raw, options)
    except Exception:  # the last line of defence: a bug here must not stop a build
        return _unreadable(raw, options)


def _display(raw: bytes, options: DisplayOptions) -> MessageDisplay:
    headers, root = parse_parts(raw)
    date = date_of(headers)
    if is_no_archive(headers):
        return MessageDisplay("", "", "", "", date, None, _no_archive_html(options), (), True, "")
    subject = clean_header_text(decode_header_value(headers.get("subject", b"")), SUBJECT_CHARS)
    if options.obfuscate_addresses:
        subject = obfuscate_addresses(subject)
    name, address, shown = author_fields(headers, options.obfuscate_addresses)
    walk = Walk(options)
    walk.part(root)
    body_html = "" if options.text_only else walk.body_html()
    return MessageDisplay(
        subject=subject,
        author_name=name,
        author_address=address,
        author_shown=shown,
        date=date,
        message_id=_message_id(headers),
        body_html=body_html,
        attachments=walk.frozen_attachments(),
        no_archive=False,
        text=walk.text(),
        language=language_of(headers),
        quote_keys=frozenset(walk.keys),
    )


def _unreadable(raw: bytes, options: DisplayOptions) -> MessageDisplay:
    """What is left to show when the walk failed: the raw message as text."""
    text = clean_text(raw.decode("utf-8", "replace"))
    if options.obfuscate_addresses:
        text = obfuscate_addresses(text)
    note = escape((options.texts or english()).text("display.unreadable"), quote=False)
    body_html = (
        f'<div class="msg-body"><div class="note unreadable">{note}</div>'
        f'<pre class="text">{escape(text, quote=False)}</pre></div>'
    )
    try:
        headers = read_headers(split_message(raw)[0])
        if is_no_archive(headers):
            return MessageDisplay("", "", "", "", date_of(headers), None, _no_archive_html(options), (), True, "")
        name, address, shown = author_fields(headers, options.obfuscate_addresses)
        subject = clean_header_text(decode_header_value(headers.get("subject", b"")), SUBJECT_CHARS)
        if options.obfuscate_addresses:
            subject = obfuscate_addresses(subject)
        return MessageDisplay(subject, name, address, shown, date_of(headers), None, body_html, (), False, "")
    except Exception:
        return MessageDisplay("", "", "", "", None, None, body_html, (), False, "")
