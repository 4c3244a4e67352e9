"""Patch series on the site: the series section of a cover letter's thread page (patches
in order, review state, collected trailers, links between versions), the trailers on
the patch they apply to, the month page's version tag, the series feed; and what an
incremental build rewrites when a new version or a late review arrives."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

from ..plan.test_build_incremental import assert_same_plan
from .test_build import add, build, page_of, post, tree

DIFF = "---\n x | 2 +-\n\ndiff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n"
AUTHOR = {"From": "Ann Author <ann@example.org>"}


def patch(n: int, subject: str, reply_to: int | None = None, days: int = 0, body: str = "") -> bytes:
    """A patch-series message by Ann (sender fixed, whatever ``n`` is)."""
    message = post(
        n,
        subject,
        reply_to=reply_to,
        refs=(reply_to,) if reply_to else (),
        at=timedelta(days=days, minutes=n),
        body=body or f"Change {n}.\n\nSigned-off-by: Ann Author <ann@example.org>\n{DIFF}",
    )
    return re.sub(rb"(?m)^From: .*$", b"From: Ann Author <ann@example.org>", message, count=1)


def review(n: int, subject: str, reply_to: int, refs: tuple[int, ...], trailer: str, days: int = 6) -> bytes:
    """A reply by Person n%3 giving ``trailer`` (which names them)."""
    body = f"> quoted\n> Reviewed-by: Quoted Person <q@example.org>\n\nLooks good.\n\n{trailer}\n"
    return post(n, subject, reply_to=reply_to, refs=refs, at=timedelta(days=days, minutes=n), body=body)


V1 = [patch(1, "[PATCH 1/1] md: fix the resync")]
V2 = [
    patch(10, "[PATCH v2 0/2] md: fix the resync", days=5, body="Now two patches.\n"),
    patch(12, "[PATCH v2 2/2] md: part two", reply_to=10, days=5),
    patch(11, "[PATCH v2 1/2] md: part one", reply_to=10, days=5),
]


def section(html: str) -> str:
    found = re.search(r'<section class="series".*?</section>', html, re.S)
    assert found, "no series section"
    return found.group(0)


def test_the_cover_letters_page_lists_its_patches_in_order_with_their_trailers_and_versions(site: Path) -> None:
    add(site, *V1, *V2)
    add(site, review(13, "Re: [PATCH v2 1/2] md: part one", 11, (10, 11), "Reviewed-by: Person 1 <p1@example.org>"))
    add(site, review(14, "Re: [PATCH v2 0/2] md: fix the resync", 10, (10,), "Acked-by: Person 2 <p2@example.org>"))
    build(site)
    output = site / "output"
    html = (output / page_of(site, 10)).read_text()
    part = section(html)
    text = re.sub(r"<[^>]+>", "", part)  # the mail's words sit in spans of their own (class from-mail)
    assert "Patch series v2: md: fix the resync" in text
    assert text.index("[1/2] md: part one") < text.index("[2/2] md: part two")
    one, two = part.split("[2/2]")
    assert "Reviewed-by: Person 1" in one and "Acked-by: Person 2" in one and "Acked-by: Person 2" in two
    assert "Reviewed-by: Person 1" not in two and "Quoted Person" not in part
    assert "reviewed" in one
    # the version chain: v1 is linked, v2 (this page) is current
    v1_page = page_of(site, 1)
    assert re.search(r'<a href="[^"]*' + re.escape(v1_page.rsplit("/", 1)[1]) + r'[^"]*">v1</a>', part)
    assert '<span aria-current="page">v2</span>' in part
    # v1's page links forward to v2
    assert '<span aria-current="page">v1</span>' in section((output / v1_page).read_text())
    # the trailers shown on the patch they apply to
    patch_one = html[html.index('id="' + page_of(site, 11).rsplit("/", 1)[1].removesuffix(".html") + '"') :]
    patch_one = patch_one[: patch_one.index("</article>")]
    assert "Collected from the replies" in patch_one and "Reviewed-by: Person 1" in patch_one
    # the month page shows the series once, with its version and size
    month = (output / "dev/2024/04/index.html").read_text()
    assert month.count(">[PATCH v2 0/2] md: fix the resync</a>") == 1 and "part one" not in month
    assert "v2, 2 patches" in month
    # the series feed, newest first
    feed = (output / "dev/series.atom").read_text()
    assert feed.index("[v2] md: fix the resync") < feed.index("[v1] md: fix the resync")
    assert "2 patches" in feed


def test_a_late_review_rewrites_only_the_pages_that_show_it(site: Path) -> None:
    add(site, *V1, *V2)
    build(site)
    add(site, review(13, "Re: [PATCH v2 1/2] md: part one", 11, (10, 11), "Reviewed-by: Person 1 <p1@example.org>"))
    assert_same_plan(site)
    report = build(site)
    thread = page_of(site, 10)
    written = set(report.written)
    assert thread in written and page_of(site, 1) not in written  # the other version's page stays
    assert "dev/series.atom" not in written  # no new series
    assert "Reviewed-by: Person 1" in section((site / "output" / thread).read_text())


def test_a_new_version_rewrites_the_pages_of_its_earlier_versions_and_the_series_feed(site: Path) -> None:
    add(site, *V1, *V2)
    build(site)
    add(site, patch(20, "[PATCH v3 1/1] md: fix the resync", days=9))
    assert_same_plan(site)
    report = build(site)
    written = set(report.written)
    assert {page_of(site, 1), page_of(site, 10), page_of(site, 20), "dev/series.atom"} <= written
    assert "v3" in section((site / "output" / page_of(site, 1)).read_text())
    incremental = tree(site / "output")
    build(site, clean=True)
    assert tree(site / "output") == incremental
