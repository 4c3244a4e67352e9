"""MHonArc's pages (``msgNNNNN.html``, ``threads.html``, ``maillist.html``), matched to
stored messages exactly by the Message-ID MHonArc records in each message page.

MHonArc writes ``<!--X-Message-Id: ... -->`` near the top of every message page, the
Message-ID without angle brackets and with ``&``, ``<`` and ``>`` written as character
references. Its index pages (``maillist.html``, ``threads.html`` and their further
pages ``mailN.html``, ``thrdN.html``) lead to the list's index, or to a month's page
when every message of their folder falls in that month (archives kept one folder a
month). Reads the old folder; never writes.
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

__all__ = ["OldPage", "iter_mhonarc"]

_MESSAGE_RE = re.compile(r"msg\d+\.html\Z")
_INDEX_RE = re.compile(r"(?:maillist|threads|mail\d+|thrd\d+)\.html\Z")
_ID_RE = re.compile(rb"<!--X-Message-Id: (.*?) -->")
_HEAD = 4096
"""The comment is in the page's first lines (after X-Subject, X-From-R13, X-Date)."""


class OldPage(NamedTuple):
    """A page of the old archive: its path relative to the archive's root, and for a
    message page the Message-ID it records ("" when none; None for an index page)."""

    path: str
    message_id: str | None


def iter_mhonarc(root: Path) -> Iterator[OldPage]:
    """Every message and index page under ``root``, sorted by path."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        for name in sorted(filenames):
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            if _INDEX_RE.match(name):
                yield OldPage(rel, None)
            elif _MESSAGE_RE.match(name):
                with open(os.path.join(dirpath, name), "rb") as page:
                    head = page.read(_HEAD)
                found = _ID_RE.search(head)
                message_id = html.unescape(found.group(1).decode("utf-8", "replace")).strip() if found else ""
                yield OldPage(rel, message_id)
