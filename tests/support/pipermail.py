"""A Pipermail (Mailman 2) HTML archive for tests, laid out the way Pipermail lays one out.

Pipermail numbers articles in the order it archives them (``000000.html`` ...), across
the whole archive, and files each in the folder of its month in the archiver's local
time (``2010-March/``), beside that month's ``thread.html``, ``date.html``,
``author.html`` and ``subject.html``; the archive's ``index.html`` lists the months. An
article page shows the subject (``<H1>``), the author's name (``<B>``) and address
(obscured, ``user at host``), the date as ``i18n.ctime`` writes it in the archiver's
time zone (``Tue Mar  2 13:22:37 CST 2010``), and the text, escaped, URLs linked, between
``<!--beginarticle-->`` and ``<!--endarticle-->``. Mailman 2.1 also puts the article's
own Message-ID in the reply link (``In-Reply-To=``); 2.0 did not (``with_message_ids``).

The generator parses mail with Python's ``email`` package, not with listlib: it is the
oracle the mapping is checked against (``Article.message_id`` is what each page is of).
"""

from __future__ import annotations

import calendar
import email
import email.header
import email.policy
import email.utils
import html
import re
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

__all__ = ["Article", "write_pipermail"]

_URL_RE = re.compile(r"(https?://[^\s<>\"]+)")
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


@dataclass(frozen=True)
class Article:
    path: str
    """Its page, relative to the archive's root (``2010-March/000012.html``)."""
    message_id: str
    month: str
    """Its folder (``2010-March``)."""


def _header(value: str | None) -> str:
    if value is None:
        return ""
    parts = []
    for chunk, charset in email.header.decode_header(value):
        if isinstance(chunk, str):
            parts.append(chunk)
            continue
        try:
            parts.append(chunk.decode(charset or "latin-1", "replace"))
        except LookupError:
            parts.append(chunk.decode("latin-1"))
    return " ".join("".join(parts).split())


def _body(message: email.message.Message) -> str:
    for part in message.walk():
        if not part.is_multipart() and part.get_content_maintype() == "text":
            payload = part.get_payload(decode=True) or b""
            charset = part.get_content_charset() or "latin-1"
            try:
                return payload.decode(charset, "replace")
            except LookupError:
                return payload.decode("latin-1")
    return ""


def _ctime(seconds: int, offset_hours: int, zone: str) -> str:
    """Mailman's ``i18n.ctime`` in the archiver's zone: ``Tue Mar  2 13:22:37 CST 2010``."""
    t = time.gmtime(seconds + offset_hours * 3600)
    return (
        f"{_DAYS[t.tm_wday]} {calendar.month_abbr[t.tm_mon]} {t.tm_mday:2d} "
        f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d} {zone} {t.tm_year:04d}"
    )


def _obscure(text: str) -> str:
    return text.replace("@", " at ")


def _article_html(
    subject: str, name: str, address: str, date: str, body: str, message_id: str, list_address: str, with_id: bool
) -> str:
    text = html.escape(_obscure(body), quote=False)
    text = _URL_RE.sub(lambda m: f'<A HREF="{m.group(1)}">{m.group(1)}</A>', text)
    reply = f"mailto:{quote(list_address)}?Subject={quote('Re: ' + subject)}"
    if with_id:
        reply += f"&In-Reply-To={quote('<' + message_id + '>')}"
    return (
        '<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 3.2//EN">\n<HTML>\n <HEAD>\n'
        f"   <TITLE> {html.escape(subject)}\n   </TITLE>\n"
        '   <LINK REL="Index" HREF="index.html" >\n'
        f'   <LINK REL="made" HREF="{html.escape(reply)}">\n'
        '   <META NAME="robots" CONTENT="index,nofollow">\n'
        '   <META http-equiv="Content-Type" content="text/html; charset=utf-8">\n'
        ' </HEAD>\n <BODY BGCOLOR="#ffffff">\n'
        f"   <H1>{html.escape(subject)}</H1>\n"
        f"    <B>{html.escape(name)}</B> \n"
        f'    <A HREF="{html.escape(reply)}"\n       TITLE="{html.escape(subject)}">'
        f"{html.escape(_obscure(address))}\n       </A><BR>\n"
        f"    <I>{date}</I>\n"
        "    <P><UL>\n         <LI> <B>Messages sorted by:</B> \n"
        '              <a href="date.html">[ date ]</a>\n              <a href="thread.html">[ thread ]</a>\n'
        '              <a href="subject.html">[ subject ]</a>\n              <a href="author.html">[ author ]</a>\n'
        "         </LI>\n       </UL>\n    <HR>  \n"
        f"<!--beginarticle-->\n<PRE>{text}\n</PRE>\n\n<!--endarticle-->\n    <HR>\n </BODY>\n</HTML>\n"
    )


def write_pipermail(
    mboxes: list[Path],
    folder: Path,
    list_address: str,
    *,
    offset_hours: int = -6,
    zone: str = "CST",
    with_message_ids: bool = False,
) -> list[Article]:
    """Write the HTML archive of the mail in ``mboxes`` (in order) into ``folder``, as an
    archiver in the zone ``offset_hours`` / ``zone`` would; the articles written."""
    import mailbox

    folder.mkdir(parents=True, exist_ok=True)
    articles: list[Article] = []
    months: dict[str, list[tuple[str, str, str]]] = {}
    number = 0
    for path in mboxes:
        box = mailbox.mbox(str(path), factory=lambda f: email.message_from_binary_file(f), create=False)
        messages = list(box)
        box.close()
        for message in messages:
            message_id = (message.get("Message-ID") or "").strip().strip("<>")
            if not message_id:
                continue  # listlib files these too, but the oracle could not say which is which
            parsed = email.utils.parsedate_tz(message.get("Date") or "")
            if parsed is None:
                continue
            seconds = email.utils.mktime_tz(parsed)
            name, address = email.utils.parseaddr(_header(message.get("From")).replace(" at ", "@"))
            subject = _header(message.get("Subject")) or "(no subject)"
            local = time.gmtime(seconds + offset_hours * 3600)
            month = f"{local.tm_year:04d}-{calendar.month_name[local.tm_mon]}"
            page = f"{number:06d}.html"
            (folder / month).mkdir(exist_ok=True)
            text = _article_html(
                subject,
                name or address,
                address,
                _ctime(seconds, offset_hours, zone),
                _body(message),
                message_id,
                list_address,
                with_message_ids,
            )
            (folder / month / page).write_text(text, encoding="utf-8")
            articles.append(Article(f"{month}/{page}", message_id, month))
            months.setdefault(month, []).append((page, subject, name or address))
            number += 1
    for month, entries in months.items():
        for index in ("thread", "date", "author", "subject"):
            lines = "".join(
                f'<LI><A HREF="{page}">{html.escape(subject)}</A> <I>{html.escape(who)}</I>\n'
                for page, subject, who in entries
            )
            title = f"<HTML><HEAD><TITLE>The {month} Archive by {index}</TITLE></HEAD>"
            (folder / month / f"{index}.html").write_text(f"{title}<BODY><UL>\n{lines}</UL></BODY></HTML>\n")
    for month in months:  # the month's text download (here without its mail: only its name counts)
        (folder / f"{month}.txt.gz").write_bytes(b"")
    listing = "".join(f'<tr><td>{m}:</td><td><A href="{m}/thread.html">[ Thread ]</a></td></tr>\n' for m in months)
    (folder / "index.html").write_text(f"<HTML><BODY><table>\n{listing}</table></BODY></HTML>\n")
    return articles
