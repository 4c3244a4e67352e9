"""The tests' own checkers: the link checker's page reading (tests/support/linkcheck.py)
finds what HTML holds, active markup included, and the trace finder
(tests/support/traces.py) answers exactly what a plain scan of every file answers."""

from __future__ import annotations

import gzip
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from .support.linkcheck import Page, check_links
from .support.traces import files_holding, readings, site_files


def _page(text: str) -> Page:
    page = Page()
    page.feed(text)
    return page


def test_links_ids_and_message_sections_are_read_with_their_references_resolved() -> None:
    page = _page(
        '<HTML><body><A HREF="a.html?x=1&amp;y=2#top">a</A><img src=pic.png alt=x>'
        "<link rel='stylesheet' href='s.css'><article class=\"message indent-0\" id=\"m1\">"
        '<meta http-equiv="Refresh" content="0; url=../b.html"><p id=p1 title="1 > 0">x</p>'
    )
    assert page.links == ["a.html?x=1&y=2#top", "pic.png", "s.css", "../b.html"]
    assert page.ids == {"m1", "p1"}
    assert page.messages == ["m1"]
    assert page.dangers == []


def test_active_markup_is_found_wherever_it_hides() -> None:
    page = _page(
        '<p title="a > b" onclick="x()">t</p><SCRIPT>alert(1)</SCRIPT><div style="color:red">'
        '<a href=" javascript:alert(1)">j</a><iframe src="x.html"></iframe><form action="/x">'
        '<img src=x onerror=alert(1)/><svg/onload=alert(1)><script src="static/times.js" defer onload="x()">'
    )
    assert page.dangers == [
        "p[onclick]",
        "<script>",
        "div[style]",
        "a[href=' javascript:alert(1)']",
        "<iframe>",
        "<form>",
        "img[onerror]",
        "svg[onload]",
        "script[onload]",
        "<script>",
    ]


def test_the_themes_own_scripts_and_search_box_are_not_dangers_and_comments_are_skipped() -> None:
    page = _page(
        '<script src="../../static/times.js" defer></script>'
        '<script type="application/json" id="words">{"a": 1}</script>'
        '<form role="search" action="../search/index.html">'
        "<!-- <script>not markup</script> -->"
    )
    assert page.dangers == []
    assert page.links == ["../../static/times.js"]


def test_broken_links_and_fragments_are_reported(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "index.html").write_text('<a href="sub/">s</a><a href="sub/a.html#x">a</a><a href="none.html">n</a>')
    (tmp_path / "sub" / "index.html").write_text('<a href="../index.html#y">i</a><a href="/sub/a.html">r</a>')
    (tmp_path / "sub" / "a.html").write_text('<p id="x">x</p><a href="../../out.html">o</a>')
    assert sorted(check_links(tmp_path)) == [
        "index.html -> none.html (missing)",
        "sub/a.html -> ../../out.html (leaves the site)",
        "sub/index.html -> ../index.html#y (no id 'y')",
    ]


def _plain_scan(output: Path, needles: list[bytes]) -> list[str]:
    return [
        f"{rel}: {needle[:60]!r}"
        for rel, data in site_files(output)
        for needle in needles
        if any(needle.lower() in text for text in readings(data))
    ]


_TEXT = st.binary(max_size=60).map(lambda b: b.replace(b"\0", b"")) | st.sampled_from(
    [b"O&#39;Brien said", b"a &amp; b", b"line one\nline two", b"x@example.org"]
)


@settings(max_examples=60)
@given(files=st.lists(_TEXT, min_size=1, max_size=6), needles=st.lists(_TEXT.filter(bool), min_size=1, max_size=4))
def test_traces_are_exactly_what_a_plain_scan_of_every_file_finds(
    tmp_path_factory: object, files: list[bytes], needles: list[bytes]
) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        output = Path(folder)
        for number, data in enumerate(files):
            path = output / f"f{number}.html"
            if number % 2:
                path = output / "d" / f"f{number}.mbox.gz"
                path.parent.mkdir(exist_ok=True)
                data = gzip.compress(data)
            path.write_bytes(data)
        assert files_holding(output, needles) == _plain_scan(output, needles)


def test_a_needle_is_found_in_a_gzipped_file_and_behind_html_escapes(tmp_path: Path) -> None:
    (tmp_path / "t.mbox.gz").write_bytes(gzip.compress(b"From: Someone <SECRET@example.org>\n"))
    (tmp_path / "p.html").write_text("<p>O&#39;Brien wrote</p>")
    (tmp_path / "q.html").write_text("<p>nothing here</p>")
    assert files_holding(tmp_path, [b"secret@EXAMPLE.org", b"o'brien wrote"]) == [
        'p.html: b"o\'brien wrote"',
        "t.mbox.gz: b'secret@EXAMPLE.org'",
    ]
