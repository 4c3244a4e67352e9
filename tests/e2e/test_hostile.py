"""The hostile corpus (tests/support/hostile/) through the whole tool: import, check, build, the
CLI's reports, and a real browser (issue 23's acceptance).

Every payload is written as the files an operator imports (mboxrd, mboxo, maildir,
Pipermail) and goes through the real ``listlib`` command. The import must account for
every message, the store must hold the From-quoted traps exactly, every feed and sitemap
must be well-formed XML, every page must parse, carry the CSP and hold nothing that could
run script or leave the page, nothing may be written outside output/, and no CLI output
may carry a raw control character. Then headless Chromium opens every page and every
attachment over HTTP (Apache with Debian's stock type config when installed: it sends no
type for names it does not know, so the browser sniffs; else Python's server) and every
page from disk, with a positive control that must be seen to run.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

import pytest

from ..support.chromium import CHROMIUM, DevTools, Marker, browser_without_downloads, open_url
from ..support.helpers import SITE_TOML, run_listlib, stored_files
from ..support.hostile import CHAIN_DEPTH, HostileCorpus, write_hostile_corpus
from ..support.hostile.attachments import PWNED, polyglot
from ..support.hostile.checks import RAW_CONTROL_RE, assert_terminal_safe, load_deep_json, page_problems
from ..support.webservers import apache_missing, public_copy, start_apache

SUMMARY_RE = re.compile(
    r"(\d+) filed \((\d+) Message-ID collisions?, (\d+) to _no_list\), (\d+) duplicates?, (\d+) failed"
)
# Extensions every common server (Debian's mime.types for Apache, nginx's, Python's) sends
# with a type no browser runs: what an attachment of this corpus may be saved as.
INERT_EXTENSIONS = {".txt", ".bin", ".pdf", ".png", ".jpg", ".gz", ".patch"}


@dataclass
class Site:
    root: Path
    corpus: HostileCorpus
    marker: Marker
    imported: Any
    """The text-mode import's CompletedProcess."""
    built: Any

    @property
    def output(self) -> Path:
        return self.root / "output"

    def files(self, *suffixes: str) -> list[Path]:
        return sorted(p for p in self.output.rglob("*") if p.is_file() and p.suffix in suffixes)

    def attachments(self) -> list[Path]:
        """Every attachment file the build wrote: in a folder named like a message's .eml file."""
        return sorted(
            p for p in self.output.glob("*/*/*/*/*") if p.is_file() and p.parent.with_suffix(".eml").is_file()
        )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    marker = Marker()
    top = tmp_path_factory.mktemp("hostile")
    corpus = write_hostile_corpus(top / "corpus", beacon=marker.url)
    root = top / "site"
    root.mkdir()
    (root / "listlib.toml").write_text(SITE_TOML)
    try:
        imported = run_listlib("import", *corpus.paths(), cwd=root)
        built = run_listlib("build", "--jobs", "1", "--json", cwd=root)
        yield Site(root, corpus, marker, imported, built)
    finally:
        marker.close()


def test_import_accounts_for_every_message_and_a_second_import_files_nothing(site: Site) -> None:
    result = site.imported
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert_terminal_safe(result.stdout + result.stderr)
    found = SUMMARY_RE.search(result.stdout)
    assert found, result.stdout
    filed, collisions, no_list, duplicates, failed = map(int, found.groups())
    assert filed + duplicates + failed == site.corpus.messages, result.stdout
    assert (duplicates, failed) == (site.corpus.duplicates, site.corpus.failed), result.stdout
    assert (collisions, no_list) == (2, 1), result.stdout  # the twins and <collide>; the Subject-only message
    assert "3 lines that look like mbox separators" in result.stderr  # the unknown separator shape
    again = run_listlib("import", "--json", *site.corpus.paths(), cwd=site.root, check=True)
    data = json.loads(again.stdout)
    assert (data["messages"], data["duplicates"], data["filed"]) == (site.corpus.messages,) * 2 + (0,), data


def test_check_finds_the_store_clean(site: Site) -> None:
    result = run_listlib("check", cwd=site.root)
    assert result.returncode == 0 and result.stdout.endswith("clean\n"), result.stdout + result.stderr
    assert_terminal_safe(result.stdout + result.stderr)


def test_the_store_holds_mbox_quoting_traps_exactly(site: Site) -> None:
    stored = set(stored_files(site.root / "content").values())
    for message_id, raw in site.corpus.stored.items():
        assert raw in stored, message_id


def test_the_build_succeeds_and_every_feed_and_sitemap_is_well_formed_xml(site: Site) -> None:
    assert site.built.returncode == 0, site.built.stdout + site.built.stderr
    assert json.loads(site.built.stdout)["written"] > 1000
    xml_files = site.files(".atom", ".xml")
    assert len(xml_files) > 10
    for path in xml_files:
        ET.parse(path)  # raises on ill-formed XML
        assert not RAW_CONTROL_RE.search(path.read_text(encoding="utf-8")), path
    # The latest entries carry the hostile headers, shown as symbols.
    assert "\u241b]52;c;aGVsbG8=\u2407" in (site.output / "dev" / "feed.atom").read_text(encoding="utf-8")


def test_every_page_parses_carries_the_csp_and_can_run_nothing_but_the_theme(site: Site) -> None:
    pages = site.files(".html")
    assert len(pages) > CHAIN_DEPTH
    raw = {text: name for name, payload in site.corpus.payloads.items() for text in payload.raw}
    problems = {}
    for path in pages:
        text = path.read_bytes().decode("utf-8")  # strict: a lone surrogate could not have been written
        name = PurePosixPath(path.relative_to(site.output).as_posix())
        found = page_problems(name, text) + [f"raw {raw[r]} payload {r[:40]!r}" for r in raw if r in text]
        if found:
            problems[str(name)] = found[:5]
    assert problems == {}
    for path in site.files(".atom", ".xml"):
        text = path.read_text(encoding="utf-8")
        assert not [r for r in raw if r in text], path


def test_the_pages_show_every_payload(site: Site) -> None:
    text = "".join(p.read_text(encoding="utf-8") for p in site.files(".html"))
    for name, payload in site.corpus.payloads.items():
        for shown in payload.shown + tuple(w for w in payload.words if name != "missing-headers"):
            assert shown in text, (name, shown)


def test_nothing_is_written_outside_output_and_attachments_get_inert_names(site: Site) -> None:
    output = site.output.resolve()
    for dirpath, dirnames, filenames in os.walk(site.output):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            assert not path.is_symlink(), path
            assert path.resolve().is_relative_to(output), path
    assert {p.name for p in site.root.iterdir()} <= {"listlib.toml", "content", "output", ".cache"}
    written = {str(p.relative_to(site.corpus.folder)) for p in site.corpus.folder.rglob("*")}
    assert not any(".html" in name or "passwd" in name or "escape" in name for name in written)
    assert not Path("/tmp/listlib-escape.txt").exists() and not Path("/tmp/listlib-absolute.html").exists()
    attachments = site.attachments()
    assert len(attachments) > 80
    assert {p.suffix for p in attachments} <= INERT_EXTENSIONS, sorted({p.name for p in attachments})
    for path in attachments:
        assert not RAW_CONTROL_RE.search(path.name) and "\u202e" not in path.name, path


def test_cli_reports_of_hostile_mail_are_terminal_safe(site: Site) -> None:
    threads = run_listlib("threads", cwd=site.root, check=True)
    assert_terminal_safe(threads.stdout + threads.stderr)
    assert "\u241b]52;c;aGVsbG8=\u2407" in threads.stdout
    as_json = run_listlib("threads", "--json", cwd=site.root, check=True)
    assert_terminal_safe(as_json.stdout + as_json.stderr)
    data = load_deep_json(as_json.stdout)
    assert max(t["messages"] for t in data["threads"]) == CHAIN_DEPTH
    words = [w for payload in site.corpus.payloads.values() for w in payload.words]
    for word in words:
        if word == "missingheaders":
            continue  # filed to _no_list, which is not published
        result = run_listlib("search", "--json", word, cwd=site.root, check=True)
        assert json.loads(result.stdout)["total"] >= 1, word
        assert_terminal_safe(result.stdout + result.stderr)
    for query in ("osc", "twin", "hello", "evil"):
        result = run_listlib("search", query, cwd=site.root, check=True)
        assert_terminal_safe(result.stdout + result.stderr)


# -- a real browser ---------------------------------------------------------------------------------

chromium_only = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")


@pytest.fixture(scope="module")
def www(site: Site) -> Iterator[Path]:
    """A world-readable copy of output/ with ``control.html``, the positive control, added."""
    copy = public_copy(site.output)
    (copy / "control.html").write_text(polyglot(site.marker.url))
    os.chmod(copy / "control.html", 0o644)
    try:
        yield copy
    finally:
        shutil.rmtree(copy.parent)


@pytest.fixture(scope="module")
def browser() -> Iterator[DevTools]:
    with browser_without_downloads() as devtools:
        yield devtools


def visit(browser: DevTools, marker: Marker, base: str, paths: list[str]) -> None:
    """Open the control, then every path under ``base``: the control ran, nothing else did."""
    before = len(marker.hits)
    assert open_url(browser, base + "control.html") == PWNED, f"{base}: the control did not run"
    assert marker.hits[before:] == ["/ran?/" + base.split("//", 1)[1].split("/", 1)[1] + "control.html"], (
        f"{base}: the marker missed the control: {marker.hits[before:]}"
    )
    ran = [path for path in paths if open_url(browser, base + quote(path)) == PWNED]
    # An image request may still be on its way when the tab closes; one more page settles it.
    open_url(browser, base + "index.html")
    hits = sorted(set(marker.hits[before + 1 :]))
    assert ran == [] and hits == [], f"{base}: scripts ran in {ran}, the marker saw {hits}"


def relative(paths: list[Path], site: Site) -> list[str]:
    return [p.relative_to(site.output).as_posix() for p in paths]


# The theme's redirect.html exactly, with nothing but escaped text in it.
REDIRECT_RE = re.compile(
    r'<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
    r'(?:<meta http-equiv="Content-Security-Policy" content="[^"<>]*">\n)?'
    r"<title>[^<>]*</title>\n"
    r'<meta http-equiv="refresh" content="0; url=[^"<>:]*">\n<link rel="canonical" href="https://[^"<>]*">\n'
    r'<meta name="robots" content="noindex, follow">\n</head>\n<body>\n'
    r'<p>This message is at <a href="[^"<>:]*">[^<>]*</a>.</p>\n</body>\n</html>\n'
)


def shown_pages(site: Site) -> list[Path]:
    """Every page but the theme's redirect pages (one per message and Message-ID: 1,200 of
    them lead to the 600-message thread, which would take minutes to load each time).
    Only a page that is exactly the redirect template, with plain text in it, is left out."""
    return [p for p in site.files(".html") if not REDIRECT_RE.fullmatch(p.read_text(encoding="utf-8"))]


@contextlib.contextmanager
def python_server(folder: Path) -> Iterator[str]:
    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


@contextlib.contextmanager
def http_server(folder: Path, work: Path) -> Iterator[str]:
    """Apache httpd with Debian's stock type config when installed (it sends no type for a name
    it does not know, and Chromium then sniffs: the hardest test), else Python's server."""
    if apache_missing():
        with python_server(folder) as url:
            yield url
        return
    server = start_apache(folder, work)
    try:
        yield server.url
    finally:
        server.stop()


@pytest.mark.slow
@chromium_only
def test_no_page_or_attachment_runs_script_over_http(site: Site, www: Path, browser: DevTools, tmp_path: Path) -> None:
    with http_server(www, tmp_path) as base:
        visit(browser, site.marker, base, relative(site.attachments() + shown_pages(site), site))


@pytest.mark.slow
@chromium_only
def test_no_page_runs_script_from_disk(site: Site, www: Path, browser: DevTools) -> None:
    visit(browser, site.marker, www.as_uri() + "/", relative(shown_pages(site), site))
