"""Attachments that would run script in the archive's origin if served as themselves, and
attachment names that try to leave their folder or drive a terminal.

Every active payload runs ``script(beacon)``: it sets the page title to ``PWNED`` and asks
``beacon`` for an image, so a browser test sees it either way (tests/support/chromium.py's
``Marker`` is such a beacon). Used by test_attachment_servers.py (Apache, nginx) and by the
hostile corpus (tests/support/hostile/__init__.py).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from datetime import UTC, datetime
from email.header import Header
from urllib.parse import quote

from ..helpers import make_message

PWNED = "PWNED"


def script(beacon: str) -> str:
    return f"document.title='{PWNED}';new Image().src='{beacon}'+encodeURIComponent(location.pathname);"


def polyglot(beacon: str) -> str:
    """A page whose script runs whether it is read as HTML or as XHTML."""
    return (
        '<html xmlns="http://www.w3.org/1999/xhtml"><head><title>t</title></head>'
        f"<body><p>hostile</p><script>{script(beacon)}</script></body></html>\n"
    )


def svg(beacon: str) -> str:
    return f'<svg xmlns="http://www.w3.org/2000/svg"><script>{script(beacon)}</script></svg>\n'


def type_map(beacon: str) -> str:
    """An Apache type map (mod_negotiation's ``.var`` handler) that answers with HTML of its own."""
    return f"URI: x\n\nContent-type: text/html\nBody:----x----\n{polyglot(beacon)}----x----\n"


Part = tuple[str | None, str, Callable[[str], str]]
"""(file name or None, declared content type, body maker taking the beacon URL)."""

HOSTILE: list[Part] = [
    ("notes", "text/plain", polyglot),
    ("README", "application/octet-stream", polyglot),
    ("Makefile", "text/html", polyglot),
    ("x.php", "application/octet-stream", polyglot),
    (".htaccess", "text/plain", polyglot),
    ("nul", "application/octet-stream", polyglot),
    ("x.xhtm", "application/xhtml+xml", polyglot),
    ("x.xht", "application/xhtml+xml", polyglot),
    ("x.xhtml", "application/xhtml+xml", polyglot),
    ("x.shtml", "text/html", polyglot),
    ("x.svg", "image/svg+xml", svg),
    ("x.svgz", "image/svg+xml", svg),
    ("x.xml", "text/xml", polyglot),
    ("x.xsl", "application/xml", polyglot),
    ("x.atom", "application/atom+xml", polyglot),
    ("x.rss", "application/rss+xml", polyglot),
    ("x.kml", "application/octet-stream", polyglot),
    ("x.xspf", "application/octet-stream", polyglot),
    ("x.mml", "text/mathml", polyglot),
    ("x.mht", "application/octet-stream", polyglot),
    ("x.html", "text/html", polyglot),
    ("x.HTM", "text/html", polyglot),
    ("x.html.en", "text/html", polyglot),
    ("x.html.gz", "application/gzip", polyglot),
    ("x.var", "text/plain", type_map),
    ("x.log", "text/plain", polyglot),
    ("x.json", "application/json", polyglot),
    ("x.eml", "text/plain", polyglot),
    ("x.png", "image/png", polyglot),
    ("photo.jpg", "application/octet-stream", polyglot),
    ("report.pdf", "text/html", polyglot),
    ("x.txt", "text/html", polyglot),
    ("x.patch", "text/x-patch", polyglot),
    ("x.unknownext", "application/octet-stream", polyglot),
    (None, "text/html", polyglot),
    (None, "image/svg+xml", svg),
    (None, "application/xhtml+xml", polyglot),
    (None, "application/x-unheard-of", polyglot),
]
"""Extensionless, defused (``x.php``, ``.htaccess``, ``nul``), rare and active extensions,
SVG, and HTML under content types that lie (issue 23 item 1)."""

CONTROLS = "nul\x00 esc\x1b[2J\x1b[H osc52\x1b]52;c;aGVsbG8=\x07 bel\x07 del\x7f c1\x85\x9b nonchar\ufffe\uffff"
BIDI = "\u202egpj.exe"  # shows as "exe.jpg" in a right-to-left override

TRAVERSAL: list[str] = [
    "../../escape.html",
    "../../../../../../tmp/listlib-escape.txt",
    "/etc/passwd",
    "/tmp/listlib-absolute.html",
    "C:\\Windows\\System32\\drive.html",
    "C:drive-relative.html",
    "\\\\server\\share\\unc.html",
    "\\\\?\\C:\\long\\unc-long.html",
    "..\\..\\backslash.html",
    "....//....//dots.html",
    "..",
    ".",
    "/",
    "con.txt",
    "LPT1",
]
"""Attachment names that try to write outside the attachment folder (POSIX, Windows drive, UNC)."""


def _filename_params(name: str, how: str) -> str:
    """The ``filename`` parameter of a Content-Disposition: raw, RFC 2231 or RFC 2047 encoded."""
    if how == "raw":
        return f'filename="{name}"'
    if how == "rfc2231":
        return f"filename*=utf-8''{quote(name, safe='')}"
    return f'filename="{Header(name, "utf-8").encode(maxlinelen=10_000)}"'


def attachment_message(
    subject: str,
    message_id: str,
    parts: list[tuple[str | None, str, bytes]],
    *,
    date: datetime = datetime(2024, 5, 1, 9, 0, tzinfo=UTC),
    text: str = "Attachments follow.\n",
    name_encoding: str = "raw",
) -> bytes:
    """A multipart/mixed message: a text part, then each (name, content type, bytes) as a base64 attachment."""
    boundary = "b0undary"
    body = [f"--{boundary}\nContent-Type: text/plain; charset=utf-8\n\n{text}"]
    for name, content_type, data in parts:
        disposition = "attachment" + (f"; {_filename_params(name, name_encoding)}" if name is not None else "")
        encoded = base64.encodebytes(data).decode()
        body.append(
            f"--{boundary}\nContent-Type: {content_type}\nContent-Disposition: {disposition}\n"
            f"Content-Transfer-Encoding: base64\n\n{encoded}"
        )
    body.append(f"--{boundary}--\n")
    return make_message(
        subject,
        "\n".join(body),
        message_id=message_id,
        date=date,
        extra={"MIME-Version": "1.0", "Content-Type": f'multipart/mixed; boundary="{boundary}"'},
    )


def hostile_attachment_message(n: int, beacon: str, parts: list[Part]) -> bytes:
    """Message ``n`` (its day of May 2024) carrying ``parts`` of ``HOSTILE``, each running ``script(beacon)``."""
    return attachment_message(
        f"Hostile attachments {n}",
        f"<hostile{n}@example.org>",
        [(name, content_type, make(beacon).encode()) for name, content_type, make in parts],
        date=datetime(2024, 5, n, 9, 0, tzinfo=UTC),
    )
