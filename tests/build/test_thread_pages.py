"""A long thread is shown on several pages (``plan.paging``): each lists the whole thread,
says which page it is and links to the others, and every link to a message (its
permanent URL's redirect, its Message-ID page, the month's by-date page, the feed)
lands on the page that holds it; incremental builds keep all of that as a clean build
makes it, and a reply rewrites only what it moves."""

from __future__ import annotations

import re
import shutil
from datetime import timedelta
from pathlib import Path

from listlib.plan.paging import PAGE_BYTES, PAGE_MESSAGES
from listlib.urls import message_id_path

from ..plan.test_build_incremental import remove_message
from ..support.linkcheck import check_links, parse_page
from .test_build import add, build, call_of, page_of, post, tree

HEAVY = PAGE_BYTES // 3 - 2_000
"""A body of this size: three messages to a page."""


def heavy(n: int, parent: int | None = None, *, days: int | None = None) -> bytes:
    """Message m<n> with a body of about ``HEAVY`` bytes (a log), answering m<parent>."""
    line = f"log line of message {n}: disk sector error at offset 0x1f3a <retrying> & giving up\n"
    body = f"Message number {n}.\n\n" + line * (HEAVY // len(line))
    at = timedelta(days=days if days is not None else n)
    if parent is None:
        return post(n, "Array rebuild fails", at=at, body=body)
    return post(n, "Re: Array rebuild fails", reply_to=parent, refs=(1, parent), at=at, body=body)


LONG_THREAD = [heavy(1), *(heavy(n, 1) for n in range(2, 13))]
"""A root and eleven answers to it: four pages of three."""


def text(site: Path, path: str) -> str:
    return (site / "output" / path).read_text()


def pages_of(site: Path) -> list[str]:
    root = page_of(site, 1)
    stem = root[: -len(".html")]
    found = sorted(p.relative_to(site / "output").as_posix() for p in (site / "output").glob(f"{stem}-*.html"))
    return [root, *sorted(found, key=lambda p: int(p[len(stem) + 1 : -len(".html")]))]


def holder(site: Path, n: int) -> str:
    """The page of the thread whose message sections include m<n>."""
    call, _path = call_of(site, n)
    found = [p for p in pages_of(site) if call in parse_page(site / "output" / p).messages]
    assert len(found) == 1, found
    return found[0]


def redirect_target(site: Path, n: int) -> str:
    """Where m<n>'s permanent URL sends the reader."""
    page = text(site, page_of(site, n))
    return re.search(r'http-equiv="refresh" content="0; url=([^"]+)"', page).group(1)  # type: ignore[union-attr]


def test_a_long_thread_is_cut_into_pages_by_size(site: Path) -> None:
    add(site, *LONG_THREAD)
    build(site)
    pages = pages_of(site)
    assert len(pages) == 4
    assert [p.rsplit("/", 1)[1] for p in pages[1:]] == [f"{call_of(site, 1)[0]}-{k}.html" for k in (2, 3, 4)]
    for number, page in enumerate(pages, start=1):
        html = text(site, page)
        assert f"Page {number} of 4" in html
        if number > 1:
            assert f'rel="prev" href="{pages[number - 2].rsplit("/", 1)[1]}"' in html
        else:
            assert 'rel="prev"' not in html
        if number < 4:
            assert f'rel="next" href="{pages[number].rsplit("/", 1)[1]}"' in html
        else:
            assert 'rel="next"' not in html
        assert html.count('<article class="message') == 3
        assert len(html.encode()) < 500_000
        for n in range(1, 13):  # every page's contents list the whole thread, each on its page
            call = call_of(site, n)[0]
            where = (n - 1) // 3 + 1
            anchor = f"#{call}" if where == number else f"{pages[where - 1].rsplit('/', 1)[1]}#{call}"
            assert f'<a href="{anchor}"' in html
    assert holder(site, 1) == pages[0] and holder(site, 4) == pages[1] and holder(site, 12) == pages[3]
    sitemap = text(site, "dev/2024/03/sitemap.xml")
    assert all(f"<loc>https://lists.example.org/{page}</loc>" in sitemap for page in pages)
    assert check_links(site / "output") == []


def test_every_link_to_a_message_lands_on_the_page_that_holds_it(site: Path) -> None:
    add(site, *LONG_THREAD)
    build(site)
    call, _path = call_of(site, 5)
    page = pages_of(site)[1].rsplit("/", 1)[1]
    assert page.endswith("-2.html") and holder(site, 5).endswith(page)
    assert redirect_target(site, 5) == f"../03/{page}#{call}"  # the permanent URL (m5 is filed in April)
    assert f"{page}#{call}" in text(site, message_id_path("m5@example.org"))
    month = page_of(site, 5).rsplit("/", 1)[0]
    assert f'href="../03/{page}#{call}"' in text(site, f"{month}/date.html")
    assert f"{page}#{call}" in text(site, "dev/feed.atom")
    later = text(site, pages_of(site)[2])  # a parent link to a message on another page
    assert f'href="{page}#{call_of(site, 1)[0]}">parent' not in later
    assert f'href="{pages_of(site)[0].rsplit("/", 1)[1]}#{call_of(site, 1)[0]}">parent<span' in later


def test_a_thread_of_many_short_messages_is_cut_by_count(site: Path) -> None:
    count = PAGE_MESSAGES + 5
    add(site, post(1, "Poll"), *(post(n, "Re: Poll", reply_to=1, refs=(1,)) for n in range(2, count + 1)))
    build(site)
    pages = pages_of(site)
    assert len(pages) == 2
    assert text(site, pages[1]).count('<article class="message') == 5
    assert redirect_target(site, count).endswith(f"-2.html#{call_of(site, count)[0]}")
    assert redirect_target(site, PAGE_MESSAGES).endswith(f".html#{call_of(site, PAGE_MESSAGES)[0]}")
    assert "-2.html" not in redirect_target(site, PAGE_MESSAGES)


def test_a_short_thread_keeps_its_single_page(site: Path) -> None:
    add(site, *LONG_THREAD[:3])
    build(site)
    assert pages_of(site) == [page_of(site, 1)]
    html = text(site, page_of(site, 1))
    assert "Page 1 of" not in html and 'rel="next"' not in html


def _clean(site: Path, where: Path) -> dict[str, bytes]:
    where.mkdir()
    shutil.copytree(site / "content", where / "content", ignore=shutil.ignore_patterns(".lock", ".index"))
    shutil.copy(site / "listlib.toml", where / "listlib.toml")
    build(where, clean=True)
    return tree(where / "output")


def test_a_late_reply_at_the_end_rewrites_the_thread_pages_and_moves_nothing(site: Path, tmp_path: Path) -> None:
    add(site, *LONG_THREAD, heavy(13, 12, days=13))
    build(site)
    before = {n: redirect_target(site, n) for n in range(2, 14)}
    add(site, heavy(14, 13, days=40))  # after m13, the last in the thread's order: a new page 5
    report = build(site)
    pages = pages_of(site)
    assert len(pages) == 5 and holder(site, 14) == pages[4]
    assert {n: redirect_target(site, n) for n in range(2, 14)} == before
    written = set(report.written)
    assert set(pages) <= written  # each lists the whole thread, the new reply too
    assert not written & {page_of(site, n) for n in range(2, 14)}  # no earlier message moved
    assert not written & {message_id_path(f"m{n}@example.org") for n in range(1, 14)}
    assert tree(site / "output") == _clean(site, tmp_path / "clean")


def test_a_late_reply_in_the_middle_moves_only_the_messages_after_it(site: Path, tmp_path: Path) -> None:
    add(site, *LONG_THREAD)
    build(site)
    before = {n: redirect_target(site, n) for n in range(2, 13)}
    add(site, heavy(13, 2, days=40))  # right after m2: m3 to m12 each move one place on
    report = build(site)
    assert holder(site, 13) == pages_of(site)[0]
    moved = {n for n in range(2, 13) if redirect_target(site, n) != before[n]}
    assert moved == {3, 6, 9, 12}  # pages of three: [1 2 13] [3 4 5] [6 7 8] [9 10 11] [12]
    written = set(report.written)
    assert {page_of(site, n) for n in moved} <= written
    assert {message_id_path(f"m{n}@example.org") for n in moved} <= written
    assert not written & {page_of(site, n) for n in (2, 4, 5, 7, 8, 10, 11)}
    assert tree(site / "output") == _clean(site, tmp_path / "clean")
    assert check_links(site / "output") == []


def test_a_thread_that_loses_a_page_loses_its_file(site: Path, tmp_path: Path) -> None:
    add(site, *LONG_THREAD[:4])  # pages [1 2 3] [4]
    build(site)
    last = pages_of(site)[1]
    remove_message(site, 4)
    report = build(site)
    assert last in report.removed and not (site / "output" / last).exists()
    assert tree(site / "output") == _clean(site, tmp_path / "clean")
