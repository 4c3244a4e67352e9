"""Times on pages: a thread whose senders write from different time zones shows every
time in one zone (UTC, so the order is evident without scripts) with each sender's own
clock and offset beside it, and every date of every page is a ``<time datetime>``
holding an ISO 8601 moment. (``tests/e2e/test_browser.py`` checks the reader's zone
that ``static/times.js`` shows in Chromium.)"""

from __future__ import annotations

import re
from datetime import datetime
from html.parser import HTMLParser
from pathlib import Path

from ..build.test_build import add, build
from ..support.helpers import make_message

# A reply chain: each message is later than the one before, but the sender's clocks
# (Tokyo, New York, Paris, no offset) say otherwise.
CHAIN = [
    ("Tue, 04 Nov 2025 08:30:00 +0900", "Mon, 03 Nov 2025 23:30:00 UTC"),
    ("Mon, 03 Nov 2025 19:05:00 -0500", "Tue, 04 Nov 2025 00:05:00 UTC"),
    ("Tue, 04 Nov 2025 01:10:00 +0100", "Tue, 04 Nov 2025 00:10:00 UTC"),
    ("Tue, 04 Nov 2025 00:20:00 +0000", "Tue, 04 Nov 2025 00:20:00 UTC"),
]


def chain(more: int = 0) -> list[bytes]:
    """The chain, and ``more`` later replies (a thread of six has a table of contents)."""
    out = []
    dates = [date for date, _utc in CHAIN] + [f"Wed, 05 Nov 2025 1{k}:00:00 -0800" for k in range(more)]
    for n, date in enumerate(dates, 1):
        refs = " ".join(f"<z{k}@example.org>" for k in range(1, n))
        extra = {"In-Reply-To": f"<z{n - 1}@example.org>", "References": refs} if n > 1 else {}
        subject = "Zones" if n == 1 else "Re: Zones"
        out.append(make_message(subject, f"Reply {n}.\n", message_id=f"<z{n}@example.org>", date=date, extra=extra))
    return out


class Times(HTMLParser):
    """Every <time> (its attributes and text) and the page's text outside message bodies,
    <time>, <pre> and <code> (query syntax) elements."""

    def __init__(self) -> None:
        super().__init__()
        self.times: list[tuple[dict[str, str | None], str]] = []
        self.loose: list[str] = []
        self._stack: list[tuple[str, bool]] = []
        self._text: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("meta", "link", "br", "img", "input", "hr", "col", "wbr"):
            return
        classes = (dict(attrs).get("class") or "").split()
        self._stack.append((tag, "msg-body" in classes or tag in ("pre", "code", "script", "time")))
        if tag == "time":
            self.times.append((dict(attrs), ""))
            self._text = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "time" and self._text is not None:
            attrs, _ = self.times[-1]
            self.times[-1] = (attrs, "".join(self._text))
            self._text = None
        while self._stack:
            if self._stack.pop()[0] == tag:
                break

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)
        elif not any(hidden for _tag, hidden in self._stack):
            self.loose.append(data)


def parse(page: Path) -> Times:
    parser = Times()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def thread_page(site: Path) -> Path:
    return next(p for p in (site / "output/dev").rglob("*.html") if "<h1>Zones</h1>" in p.read_text())


def test_a_thread_in_mixed_zones_shows_utc_in_order_with_each_senders_clock(site: Path) -> None:
    add(site, *chain())
    build(site)
    page = thread_page(site)
    found = parse(page)
    shown = [(attrs, text) for attrs, text in found.times if "data-utc" in attrs]
    # The table of contents is short of the threshold: one UTC time per message.
    expected = [datetime.strptime(utc, "%a, %d %b %Y %H:%M:%S UTC") for _date, utc in CHAIN]
    assert [text for _a, text in shown] == [f"{e:%Y-%m-%d %H:%M} UTC" for e in expected]
    assert [a["datetime"] for a, _t in shown] == [f"{e:%Y-%m-%dT%H:%M:%S}Z" for e in expected]
    assert [text for _a, text in shown] == sorted(text for _a, text in shown)  # the chain's order, evident
    senders = [(attrs["datetime"], text) for attrs, text in found.times if "data-utc" not in attrs]
    assert senders == [
        ("2025-11-04T08:30:00+09:00", "2025-11-04 08:30 +0900"),
        ("2025-11-03T19:05:00-05:00", "2025-11-03 19:05 -0500"),
        ("2025-11-04T01:10:00+01:00", "2025-11-04 01:10 +0100"),
    ]  # the fourth sender's clock is UTC: nothing more to say
    text = page.read_text()
    assert "times in <span data-time-zone>UTC</span>" in text
    assert "static/times.js" in text and "<script>" not in text


def test_every_date_on_every_page_is_a_time_element_with_an_iso_moment(site: Path) -> None:
    add(site, *chain(more=2), make_message("Undated", message_id="<u@x>", date=None))
    build(site)
    pages = sorted((site / "output").rglob("*.html"))
    seen = 0
    for page in pages:
        found = parse(page)
        for attrs, text in found.times:
            value = attrs.get("datetime") or ""
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
            assert moment.tzinfo is not None, f"{page}: {value} has no zone"
            assert text.startswith(f"{moment:%Y-%m-%d}"[: len(text[:10])]), f"{page}: {text} vs {value}"
            seen += 1
        loose = re.findall(r"\d{4}-\d{2}-\d{2}", " ".join(found.loose))
        assert loose == [], f"{page}: dates outside <time>: {loose}"
    assert seen > 20  # the thread's table of contents among them
