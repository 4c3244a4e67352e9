"""What pages say and how it reads: counts in words a reader reads aloud ("1 message in
1 thread", never "1 messages"), a thread's tags apart from its dates, and a thread's
contents as one link per row."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

from ..build.test_build import add, build, call_of, post


def test_counts_of_one_are_singular_on_list_month_and_thread_pages(site: Path) -> None:
    add(site, post(1, "Only one"))
    build(site)
    _call, path = call_of(site, 1)
    listing = (site / "output" / "dev" / "index.html").read_text()
    assert "1 message in 1 thread" in listing and "1 messages" not in listing and "1 threads" not in listing
    assert 'title="1 message, 1 thread"' in listing
    month = (site / "output" / path).parent / "index.html"
    assert re.search(r"\b1 message\b", month.read_text()) and "1 messages" not in month.read_text()
    page = (site / "output" / path.replace(".eml", ".html")).read_text()
    assert "1 messages" not in page


def test_the_continues_tag_does_not_touch_the_date(site: Path) -> None:
    add(site, post(1, "Spans months"), post(2, "Re: Spans months", reply_to=1, refs=(1,), at=timedelta(days=40)))
    build(site)
    _call, path = call_of(site, 1)
    month = ((site / "output" / path).parent / "index.html").read_text()
    assert re.search(r'</time> <span class="tag"[^>]*>continues</span>', month)
    assert "</time><span" not in month


def test_each_contents_row_is_one_link_holding_the_author_date_and_a_changed_subject(site: Path) -> None:
    add(
        site,
        post(1, "Plans"),
        *(post(n, "Re: Plans", reply_to=n - 1, refs=tuple(range(1, n))) for n in range(2, 7)),
        post(7, "Other plans (was: Plans)", reply_to=6, refs=tuple(range(1, 7))),
    )
    build(site)
    _call, path = call_of(site, 1)
    page = (site / "output" / path.replace(".eml", ".html")).read_text()
    toc = page[page.index('<details class="toc"') : page.index("</details>")]
    # A row is its item up to the list of its replies (the contents are the tree as nested lists).
    rows = [row.strip() for row in re.findall(r"<li[^>]*>(.*?)(?:</li>|<ol>)", toc, re.S)]
    assert len(rows) == 7
    for row in rows:  # nothing outside the row's one link
        assert row.startswith("<a ") and row.endswith("</a>") and row.count("<a ") == 1
    assert '<span class="subject">Other plans (was: Plans)</span></a>' in rows[-1]
