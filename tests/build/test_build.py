"""listlib build: the exact files a change rewrites, identical output whichever way a
site was built, permanent URLs, theme overrides, and repair after a killed build."""

from __future__ import annotations

import gzip
import re
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from listlib.build import build_site, plan_site
from listlib.config import load_config
from listlib.filing import file_sources
from listlib.store.core import Store
from listlib.urls import message_id_path

from ..support.helpers import make_message, mboxrd, run_listlib
from ..support.linkcheck import check_links

T0 = datetime(2024, 3, 28, 9, 0, tzinfo=UTC)


def post(
    n: int,
    subject: str,
    *,
    reply_to: int | None = None,
    refs: tuple[int, ...] = (),
    at: timedelta | None = None,
    extra: dict[str, str] | None = None,
    body: str | None = None,
) -> bytes:
    headers = dict(extra or {})
    if reply_to is not None:
        headers["In-Reply-To"] = f"<m{reply_to}@example.org>"
    if refs:
        headers["References"] = " ".join(f"<m{r}@example.org>" for r in refs)
    return make_message(
        subject,
        body or f"Message number {n}.\n",
        message_id=f"<m{n}@example.org>",
        sender=f"Person {n % 3} <p{n % 3}@example.org>",
        date=T0 + (at if at is not None else timedelta(days=n)),
        extra=headers,
    )


def add(root: Path, *messages: bytes) -> None:
    config = load_config(root / "listlib.toml")
    source = root.parent / f"in-{len(list(root.parent.glob('in-*')))}.mbox"
    source.write_bytes(mboxrd(list(messages)))
    with Store(config.site.content_dir).open() as store:
        report = file_sources(store, config.lists, [source])
    assert report.filed == len(messages), report.summary()


def build(root: Path, **options: object):  # type: ignore[no-untyped-def]
    return build_site(load_config(root / "listlib.toml"), workers=1, **options)  # type: ignore[arg-type]


def tree(folder: Path) -> dict[str, bytes]:
    """Every file of a built site, except the search index's data (its segment names and
    layout depend on the build history; tests/search/test_search.py compares it by its answers)."""
    return {
        rel: p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not (rel := p.relative_to(folder).as_posix()).startswith(("search/seg/", "search/manifest"))
    }


def call_of(root: Path, n: int) -> tuple[str, str]:
    """(call number, store path) of message m<n>."""
    with Store(root / "content").open() as store:
        (row,) = store.index.rows_by_message_id("dev", f"m{n}@example.org")
    return row.call, row.path


def page_of(root: Path, n: int) -> str:
    _call, path = call_of(root, n)
    return path[: -len(".eml")] + ".html"


THREAD = [
    post(1, "Plans for 2.0"),
    post(2, "Re: Plans for 2.0", reply_to=1, refs=(1,)),
    post(3, "Re: Plans for 2.0", reply_to=2, refs=(1, 2)),
    post(4, "Another topic"),
    post(5, "Re: Another topic", reply_to=4, refs=(4,), at=timedelta(days=6)),
]


def test_a_second_build_with_nothing_new_writes_nothing(site: Path) -> None:
    add(site, *THREAD)
    first = build(site)
    assert first.written and not first.removed
    again = build(site)
    assert again.written == [] and again.removed == [] and again.jobs_run == 0


def test_one_new_reply_rewrites_exactly_its_pages(site: Path) -> None:
    add(site, *THREAD)
    build(site)
    # A reply to message 2 (filed in March) that arrives in April: its thread spans two months now.
    add(site, post(6, "Re: Plans for 2.0", reply_to=2, refs=(1, 2), at=timedelta(days=10)))
    report = build(site)
    call, path = call_of(site, 6)
    root_page = page_of(site, 1)
    base = path[: -len(".eml")]
    expected = {
        root_page,  # the thread page
        root_page[: -len(".html")] + ".mbox.gz",  # the thread download
        base + ".eml",  # the new message's raw copy and its permanent URL
        base + ".html",
        "dev/2024/04/index.html",  # its month: threads, by date, download
        "dev/2024/04/date.html",
        "dev/2024/04/dev-2024-04.mbox.gz",
        "dev/2024/03/index.html",  # the thread's first month now says it continues, and its count
        "dev/2024/03/sitemap.xml",  # the sitemap of the thread's month: its last date
        "dev/index.html",  # list index, feed, site index
        "dev/feed.atom",
        "index.html",
        "sitemap.xml",  # the sitemap index: that sitemap's last date
        message_id_path("m6@example.org"),  # Message-ID lookup
    }
    assert set(report.written) == expected
    assert report.removed == []
    assert call in (site / "output" / root_page).read_text()


def test_incremental_builds_give_the_same_bytes_as_a_build_from_scratch(site: Path) -> None:
    steps = [
        [post(2, "Re: Plans", reply_to=1, refs=(1,))],  # a reply whose parent is not there yet
        [post(4, "Topic B"), post(3, "Re: Plans", reply_to=2, refs=(1, 2))],
        [post(1, "Plans")],  # the late root: the thread is re-rooted
        [post(5, "Re: Topic B", reply_to=4, refs=(4,), at=timedelta(days=40))],
        [post(6, "Topic C", extra={"X-No-Archive": "yes"}), post(7, "Re: Topic B", reply_to=4, refs=(4,))],
    ]
    for step in steps:
        add(site, *step)
        build(site)
    incremental = tree(site / "output")
    shutil.rmtree(site / ".cache")
    build(site, clean=True)
    scratch = tree(site / "output")
    assert sorted(incremental) == sorted(scratch)
    different = [path for path in scratch if scratch[path] != incremental[path]]
    assert different == []
    assert check_links(site / "output") == []


def test_a_late_root_turns_the_old_thread_page_into_a_redirect(site: Path) -> None:
    add(site, post(2, "Re: Plans", reply_to=1, refs=(1,)), post(3, "Re: Plans", reply_to=2, refs=(1, 2)))
    build(site)
    old_page = site / "output" / page_of(site, 2)
    assert "Message number 3." in old_page.read_text()
    add(site, post(1, "Plans"))
    build(site)
    new_page = page_of(site, 1)
    call2, _ = call_of(site, 2)
    text = old_page.read_text()
    assert 'http-equiv="refresh"' in text
    assert f"{Path(new_page).name}#{call2}" in text
    assert "Message number 2." in (site / "output" / new_page).read_text()


def test_every_message_has_a_permanent_page_and_a_message_id_page(site: Path) -> None:
    add(site, *THREAD)
    build(site)
    output = site / "output"
    for n in range(1, 6):
        assert (output / page_of(site, n)).is_file()
        lookup = (output / message_id_path(f"m{n}@example.org")).read_text()
        call, _ = call_of(site, n)
        assert f"#{call}" in lookup
    assert check_links(output) == []


def test_downloads_hold_the_stored_bytes_as_mboxrd(site: Path) -> None:
    tricky = post(1, "Quoting", body="From the start\n>From quoted\nplain\n")
    add(site, tricky, post(2, "Re: Quoting", reply_to=1, refs=(1,)))
    build(site)
    output = site / "output"
    month = gzip.decompress((output / "dev/2024/03/dev-2024-03.mbox.gz").read_bytes())
    assert b"\n>From the start\n>>From quoted\n" in month
    assert month.count(b"\nFrom ") + month.startswith(b"From ") == 2
    _call, path = call_of(site, 1)
    assert (output / path).read_bytes() == (site / "content" / path).read_bytes()


def test_a_message_that_asks_not_to_be_archived_shows_only_a_placeholder(site: Path) -> None:
    secret = post(1, "Secret subject", body="Secret body.\n", extra={"X-No-Archive": "yes"})
    add(site, secret, post(2, "Re: Secret subject", reply_to=1, refs=(1,), body="Reply body.\n"))
    build(site)
    output = site / "output"
    _call, path = call_of(site, 1)
    assert not (output / path).exists()  # no raw copy
    everything = b"".join(
        gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes()
        for p in output.rglob("*")
        if p.is_file()
    )
    assert b"Secret body" not in everything
    assert b"Person 1" not in everything  # the author of message 1
    assert b"Reply body." in everything


def test_a_site_template_override_rebuilds_only_the_pages_using_it(site: Path) -> None:
    add(site, *THREAD)
    build(site)
    theme = site / "mytheme" / "templates"
    theme.mkdir(parents=True)
    with (site / "listlib.toml").open("a") as handle:
        handle.write('\n[theme]\ndir = "mytheme"\n')
    assert build(site).jobs_run == 0  # an empty site theme changes nothing
    redirect = '<!doctype html><meta http-equiv="refresh" content="0; url={{ url(target) }}">\n'
    (theme / "redirect.html").write_text(redirect)
    plan = plan_site(load_config(site / "listlib.toml"))
    kinds = {item["job"].split(":")[0] for item in plan.planned}
    assert kinds == {"messages", "mid"}
    report = build(site)
    assert report.written and all(p.endswith(".html") and "/index.html" not in p for p in report.written)


def test_a_template_can_extend_the_default_one_block_by_block(site: Path) -> None:
    add(site, *THREAD)
    theme = site / "mytheme" / "templates"
    theme.mkdir(parents=True)
    (theme / "base.html").write_text(
        '{% extends "!default/base.html" %}{% block footer %}<p>Hosted by the Quill project.</p>{% endblock %}'
        '{% block head %}<link rel="stylesheet" href="site.css">{% endblock %}'
    )
    with (site / "listlib.toml").open("a") as handle:
        handle.write('\n[theme]\ndir = "mytheme"\n')
    build(site)
    page = (site / "output" / page_of(site, 1)).read_text()
    assert "Hosted by the Quill project." in page and "Message number 1." in page
    # The thread page adds its script to the head block, after the site's own.
    assert '<link rel="stylesheet" href="site.css"><script src="../../../static/visits.js" defer>' in page


def test_a_broken_template_names_file_and_line(site: Path) -> None:
    add(site, *THREAD)
    theme = site / "mytheme" / "templates"
    theme.mkdir(parents=True)
    (theme / "month.html").write_text('{% extends "base.html" %}\n{% block main %}\n{{ nope( }}\n{% endblock %}\n')
    with (site / "listlib.toml").open("a") as handle:
        handle.write('\n[theme]\ndir = "mytheme"\n')
    result = run_listlib("build", cwd=site)
    assert result.returncode != 0
    assert "month.html:3" in result.stderr and "Traceback" not in result.stderr


def test_files_that_no_longer_belong_are_removed(site: Path) -> None:
    add(site, *THREAD)
    build(site)
    config = load_config(site / "listlib.toml")
    toml = site / "listlib.toml"
    toml.write_text(toml.read_text().replace('title = "Test archive"', 'title = "T"'))
    _call, path = call_of(site, 5)
    (config.site.content_dir / path).unlink()
    run_listlib("check", "--repair", cwd=site, check=True)
    report = build(site)
    assert path in report.removed
    assert not (site / "output" / path).exists()
    assert check_links(site / "output") == []


def test_a_build_without_its_build_state_still_removes_what_no_longer_belongs(site: Path) -> None:
    """The build state (in .cache/) may be deleted or come from an older version: the
    next build runs every job and then sweeps what none of them made."""
    add(site, *THREAD)
    build(site)
    config = load_config(site / "listlib.toml")
    _call, path = call_of(site, 5)
    (config.site.content_dir / path).unlink()
    run_listlib("check", "--repair", cwd=site, check=True)
    stray = site / "output" / "dev" / "2024" / "sitemap.xml"  # e.g. a layout an older listlib wrote
    stray.write_text("old")
    for name in ("build.sqlite", "build.sqlite-wal", "build.sqlite-shm"):
        (config.site.cache_dir / name).unlink(missing_ok=True)
    report = build(site)
    assert {path, "dev/2024/sitemap.xml"} <= set(report.removed)
    assert not (site / "output" / path).exists() and not stray.exists()
    assert (site / "output" / "index.html").exists()
    assert check_links(site / "output") == []
    assert build(site).removed == []


@pytest.mark.parametrize(("point", "count"), [("job-done", 1), ("job-done", 7), ("job-done", 30), ("removing", 1)])
def test_a_killed_build_is_repaired_by_the_next_one(site: Path, point: str, count: int) -> None:
    add(site, *THREAD)
    build(site)
    add(site, post(6, "Re: Another topic", reply_to=4, refs=(4,)), post(7, "New one", at=timedelta(days=50)))
    (site / "listlib.toml").write_text((site / "listlib.toml").read_text().replace("Test archive", "Renamed"))
    killed = run_listlib("build", "--jobs", "1", cwd=site, env={"LISTLIB_CRASH_AT": f"{point}:{count}"})
    assert killed.returncode == -9, killed.stderr
    (site / "output" / "dev" / f".listlib-tmp-{12345}-0").write_text("left over")
    run_listlib("build", cwd=site, check=True)
    repaired = tree(site / "output")
    shutil.rmtree(site / ".cache")
    build(site, clean=True)
    assert repaired == tree(site / "output")


def test_parallel_and_serial_builds_agree(site: Path) -> None:
    add(site, *THREAD, *(post(n, f"Topic {n}") for n in range(10, 60)))
    build_site(load_config(site / "listlib.toml"), workers=2)
    parallel = tree(site / "output")
    build(site, clean=True)
    assert parallel == tree(site / "output")


def test_quiet_builds_print_only_when_files_changed(site: Path) -> None:
    add(site, *THREAD)
    first = run_listlib("build", "--quiet", cwd=site, check=True)
    assert "files written" in first.stdout
    again = run_listlib("build", "--quiet", cwd=site, check=True)
    assert again.stdout == "" and again.stderr == ""
    assert run_listlib("-q", "build", cwd=site, check=True).stdout == ""


def test_addresses_in_subjects_and_names_are_hidden_on_every_page(site: Path) -> None:
    add(
        site,
        make_message(
            "Mail neilb@suse.de about it",
            message_id="<x1@example.org>",
            sender='"neilb@suse.de" <neilb@suse.de>',
            date=T0,
        ),
    )
    build(site)
    pages = b"".join(p.read_bytes() for p in (site / "output").rglob("*") if p.suffix in (".html", ".atom"))
    assert b"neilb@suse.de" not in pages and "ne…@suse.de".encode() in pages
    toml = site / "listlib.toml"
    toml.write_text(toml.read_text().replace("[site]\n", "[site]\nobfuscate_addresses = false\n"))
    build(site)
    month = (site / "output" / "dev" / "2024" / "03" / "index.html").read_text()
    assert "Mail neilb@suse.de about it" in month


def test_clean_build_removes_only_what_the_build_owns(site: Path) -> None:
    add(site, *THREAD)
    build(site)
    before = tree(site / "output")
    output = site / "output"
    # A host's files, put there by hand beside the archive, are not the build's to delete.
    (output / "CNAME").write_text("lists.example.org\n")
    (output / ".well-known").mkdir()
    (output / ".well-known" / "security.txt").write_text("Contact: mailto:a@example.org\n")
    # A stray file inside a folder the build makes is its own (a clean build sweeps it).
    (output / "dev" / "stray.html").write_text("old")
    report = build(site, clean=True)
    assert (output / "CNAME").read_text() == "lists.example.org\n"
    assert (output / ".well-known" / "security.txt").exists()
    assert not (output / "dev" / "stray.html").exists()
    after = tree(output)
    del after["CNAME"], after[".well-known/security.txt"]
    assert after == before
    assert report.written


def test_the_404_page_links_from_the_root_so_it_works_at_any_depth(site: Path) -> None:
    """A server sends 404.html for a missing URL at any depth (``/dev/2024/nope.html``):
    its stylesheet, header links and search form start at the site's root, not beside it."""
    build(site)
    page = (site / "output" / "404.html").read_text()
    links = re.findall(r'(?:href|src|action)="([^"]*)"', page)
    assert links and any("static/style.css" in link for link in links)
    inside = [link for link in links if not link.startswith(("https://", "data:", "#"))]
    assert inside and all(link.startswith("/") for link in inside), inside
