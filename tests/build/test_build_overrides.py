"""Thread overrides and the build: an edit rebuilds only the pages of the threads and
months it touches, every URL keeps working, and the result is a clean build's."""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

from listlib.config import load_config
from listlib.threadedit import edit_override

from ..support.linkcheck import check_links
from .test_build import add, build, call_of, page_of, post, tree


def edit(site: Path, action: str, n: int, parent: int | None = None) -> None:
    config = load_config(site / "listlib.toml")
    edit_override(
        config,
        action,  # type: ignore[arg-type]
        f"m{n}@example.org",
        parent=None if parent is None else f"m{parent}@example.org",
        by="test",
    )


MESSAGES = [
    post(1, "Plans for 2.0"),
    post(2, "Re: Plans for 2.0", reply_to=1, refs=(1,)),
    post(3, "Plans for 2.0, part two"),  # a reply whose client dropped the headers
    post(4, "Re: Plans for 2.0, part two", reply_to=3, refs=(3,), at=timedelta(days=10)),  # April
    post(5, "Another topic"),
    post(6, "A topic in May", at=timedelta(days=40)),
]


def test_attaching_a_thread_rebuilds_its_pages_and_the_old_root_page_redirects(site: Path) -> None:
    add(site, *MESSAGES)
    build(site)
    old_root = page_of(site, 3)
    assert "Message number 4." in (site / "output" / old_root).read_text()
    edit(site, "attach", 3, 1)
    report = build(site)
    root = page_of(site, 1)
    call3, _ = call_of(site, 3)
    text = (site / "output" / root).read_text()
    assert "Message number 3." in text and "Message number 4." in text
    redirect = (site / "output" / old_root).read_text()
    assert 'http-equiv="refresh"' in redirect and f"{Path(root).name}#{call3}" in redirect
    written = set(report.written)
    assert {root, old_root, page_of(site, 4), "dev/2024/03/index.html", "dev/2024/04/index.html"} <= written
    # A thread that is neither touched nor next to one that was (its page links to
    # the previous and next threads) is not rewritten, nor is its month.
    assert page_of(site, 6) not in written
    assert not any(path.startswith("dev/2024/05/") for path in written)
    assert check_links(site / "output") == []


def test_builds_after_attach_detach_and_undo_equal_a_clean_build(site: Path) -> None:
    add(site, *MESSAGES)
    build(site)
    steps = [
        ("attach", 3, 1),
        ("detach", 2, None),
        ("attach", 5, 4),
        ("undo-override", 3, None),
        ("undo-override", 2, None),
    ]
    for action, n, parent in steps:
        edit(site, action, n, parent)
        build(site)
        incremental = tree(site / "output")
        shutil.rmtree(site / ".cache")
        build(site, clean=True)
        scratch = tree(site / "output")
        assert sorted(incremental) == sorted(scratch), (action, n)
        assert [path for path in scratch if scratch[path] != incremental[path]] == [], (action, n)
        assert check_links(site / "output") == []


def test_a_second_build_after_an_override_writes_nothing(site: Path) -> None:
    add(site, *MESSAGES)
    build(site)
    edit(site, "detach", 2)
    assert build(site).written
    again = build(site)
    assert again.written == [] and again.jobs_run == 0
