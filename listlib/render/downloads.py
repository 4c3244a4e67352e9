"""Downloads: mboxrd files (gzip) of a month or a thread.

mboxrd (the variant every modern reader understands): each message is preceded by a
``From `` separator line, and every body line that starts with any number of ``>``
followed by ``From `` gets one more ``>``, so the stored bytes come back exactly when
the file is read as mboxrd. The gzip stream (ISA-L's deflate, via isal) carries no name
and no time, so the same messages always give the same bytes with the same ISA-L.
Pure apart from the caller handing in bytes.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable

from isal import igzip

__all__ = ["encode_mboxrd", "gzip_bytes", "separator_line"]

_LEVEL = 2
"""ISA-L level (0-3). On linux-raid, level 2 compresses 3.2x at 310 MB/s; zlib compressed
3.1x at 91 MB/s at its level 1 and 3.6x at 43 MB/s at level 6."""
_FROM_RE = re.compile(rb"^(>*From )", re.MULTILINE)
_SENDER_RE = re.compile(r"[^\x21-\x7e]|@.*@")


def separator_line(sender: str, date: int) -> bytes:
    """``From <sender> <asctime date in UTC>``."""
    sender = sender.strip()
    if not sender or _SENDER_RE.search(sender):
        sender = "MAILER-DAEMON"
    stamp = time.strftime("%a %b %d %H:%M:%S %Y", time.gmtime(max(date, 0)))
    return f"From {sender} {stamp}\n".encode("ascii", "replace")


def encode_mboxrd(messages: Iterable[tuple[str, int, bytes]]) -> bytes:
    """An mboxrd file of (sender, date, raw bytes) messages."""
    parts: list[bytes] = []
    for sender, date, raw in messages:
        parts.append(separator_line(sender, date))
        body = _FROM_RE.sub(rb">\1", raw) if b"From " in raw else raw
        parts.append(body)
        if not body.endswith(b"\n"):
            parts.append(b"\n")
        parts.append(b"\n")
    return b"".join(parts)


def gzip_bytes(data: bytes) -> bytes:
    """Deterministic gzip (for one ISA-L version): no file name, time 0."""
    return igzip.compress(data, compresslevel=_LEVEL, mtime=0)
