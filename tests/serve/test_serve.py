"""listlib serve as a real subprocess: pages, content types, HEAD, byte ranges, path
traversal, live reload after a template change and after an import (timed), the error
overlay and recovery, a taken port, --no-reload and --open, and a clean Ctrl-C; plus
the rebuild gate (requests wait for a rebuild) in-process."""

from __future__ import annotations

import gzip
import os
import re
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from listlib.serve_http import SiteGate, content_type, parse_range

from ..support.devserver import DevServer, Events, fill, page_version, post, raw_request, set_footer, write_site
from ..support.helpers import mboxrd, run_listlib


def temp_files(root: Path) -> list[str]:
    leftovers = [str(p) for p in root.rglob(".listlib-tmp-*")]
    tmp = root / "content" / ".tmp"
    return leftovers + ([str(p) for p in tmp.iterdir()] if tmp.is_dir() else [])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    """One watching server for the module, over a site with a thread and a single post."""
    root = tmp_path_factory.mktemp("serve") / "site"
    write_site(root)
    fill(root, [post(1, "Plans for 2.0"), post(2, "Re: Plans for 2.0", reply_to=1), post(3, "A lone question")])
    server = DevServer.start(root)
    try:
        yield server
    finally:
        code = server.stop()
        # Ctrl-C while watching: exit 0, no traceback, nothing left behind.
        assert code == 0, server.output()
        assert "Traceback" not in server.output()
        assert "Stopped." in server.output()
        assert temp_files(root) == []


def output_file(server: DevServer, suffix: str) -> str:
    found = sorted(p for p in (server.site / "output").rglob(f"*{suffix}") if p.is_file())
    assert found, suffix
    return found[0].relative_to(server.site / "output").as_posix()


def test_pages_are_served_with_the_reload_script_and_output_is_untouched(served: DevServer) -> None:
    status, headers, body = served.get("/")
    assert status == 200 and headers["content-type"] == "text/html; charset=utf-8"
    assert b"Test archive" in body and b"footer-v1" in body
    assert b'<script src="/_listlib/reload.js"' in body
    assert int(headers["content-length"]) == len(body)
    on_disk = (served.site / "output" / "index.html").read_bytes()
    assert b"_listlib" not in on_disk and body.startswith(on_disk[: on_disk.rindex(b"</body>")])
    for path in (served.site / "output").rglob("*"):
        if path.is_file():
            assert b"/_listlib/" not in path.read_bytes(), path
    # Folders: a redirect to the slash form (query kept), then their index.html.
    status, headers, _ = served.get("/dev?x=1")
    assert status == 301 and headers["location"] == "/dev/?x=1"
    status, _, body = served.get("/dev/")
    assert status == 200 and b"Plans for 2.0" in body and b"A lone question" in body
    status, headers, body = served.get("/_listlib/reload.js")
    assert status == 200 and headers["content-type"].startswith("text/javascript") and b"EventSource" in body


def test_missing_files_get_the_theme_404_page(served: DevServer) -> None:
    status, headers, body = served.get("/no/such/page.html")
    assert status == 404 and headers["content-type"].startswith("text/html")
    assert b"Page not found" in body and b"footer-v1" in body and b"/_listlib/reload.js" in body
    assert served.get("/_listlib/nothing")[0] == 404
    assert served.get("/dev/2024/")[0] in (200, 404)  # a folder without index.html: never a listing
    status, _, body = served.get("/dev/2024/")
    assert b"Index of" not in body


def test_content_types_and_downloads_are_served_as_they_are(served: DevServer) -> None:
    eml = output_file(served, ".eml")
    mbox = output_file(served, ".mbox.gz")
    expected = {
        eml: "message/rfc822",
        mbox: "application/gzip",
        "dev/feed.atom": "application/atom+xml; charset=utf-8",
        "sitemap.xml": "application/xml; charset=utf-8",
        "robots.txt": "text/plain; charset=utf-8",
        "static/style.css": "text/css; charset=utf-8",
    }
    for path, kind in expected.items():
        status, headers, body = served.get("/" + path)
        assert status == 200, path
        assert headers["content-type"] == kind, path
        assert "content-encoding" not in headers, path
        assert body == (served.site / "output" / path).read_bytes(), path
    assert gzip.decompress(served.get("/" + mbox)[2]).startswith(b"From ")
    assert content_type("search/chunk-3.json") == "application/json"
    assert content_type("search/terms-0a.bin") == "application/octet-stream"
    assert content_type("x.mbox") == "application/mbox"
    assert content_type("photo.JPG") == "image/jpeg"
    assert content_type("notes.tar.bz2") == "application/octet-stream"


def test_head_sends_the_headers_of_get_without_a_body(served: DevServer) -> None:
    for path in ("/", "/dev/feed.atom", "/" + output_file(served, ".mbox.gz"), "/missing"):
        got = served.get(path)
        head = served.get(path, "HEAD")
        assert head[0] == got[0] and head[2] == b"", path
        assert head[1]["content-type"] == got[1]["content-type"], path
        assert int(head[1]["content-length"]) == len(got[2]), path


def test_byte_ranges(served: DevServer) -> None:
    path = "/" + output_file(served, ".mbox.gz")
    data = (served.site / "output" / path[1:]).read_bytes()
    size = len(data)
    assert size > 40
    cases = {"bytes=0-9": (0, 9), "bytes=10-": (10, size - 1), "bytes=-7": (size - 7, size - 1)}
    cases[f"bytes=5-{size + 100}"] = (5, size - 1)
    for header, (start, end) in cases.items():
        status, headers, body = served.get(path, headers={"Range": header})
        assert status == 206, header
        assert headers["content-range"] == f"bytes {start}-{end}/{size}", header
        assert body == data[start : end + 1], header
        assert "content-encoding" not in headers
    for header in (f"bytes={size}-", f"bytes={size + 5}-{size + 9}", "bytes=-0"):
        status, headers, body = served.get(path, headers={"Range": header})
        assert status == 416 and headers["content-range"] == f"bytes */{size}" and body == b"", header
    for header in ("bytes=0-1,4-5", "items=0-3", "bytes=9-2", "bytes=x-y"):
        status, headers, body = served.get(path, headers={"Range": header})
        assert status == 200 and body == data, header
    status, headers, body = served.get(path, "HEAD", headers={"Range": "bytes=0-9"})
    assert status == 206 and headers["content-length"] == "10" and body == b""
    assert served.get("/", headers={"Range": "bytes=0-9"})[0] == 200  # pages get the script: whole
    assert parse_range("bytes=0-0", 1) == (0, 0)
    assert parse_range(None, 5) is None


TRAVERSALS = [
    b"/../../../../../etc/passwd",
    b"/dev/../../../../../etc/passwd",
    b"/static/../../../../../../etc/passwd",
    b"/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
    b"/%2E%2E/%2E%2E/%2E%2E/%2E%2E/etc/passwd",
    b"/.%2e/.%2e/.%2e/.%2e/etc/passwd",
    b"/..%2f..%2f..%2f..%2fetc%2fpasswd",
    b"/%2e%2e%2f%2e%2e%2f%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    b"/..%5c..%5c..%5c..%5cetc%5cpasswd",
    b"/..\\..\\..\\..\\etc\\passwd",
    b"/%252e%252e/%252e%252e/%252e%252e/etc/passwd",
    b"/%c0%ae%c0%ae/%c0%ae%c0%ae/%c0%ae%c0%ae/etc/passwd",
    b"//etc/passwd",
    b"/etc/passwd",
    b"/index.html%00.png",
    b"/index.html\x00.png",
    b"http://127.0.0.1/../../../../etc/passwd",
    b"/outside/passwd",
    b"/outside-file",
    b"/dev/../outside/passwd",
    b"/.hidden-temp",
]


def test_path_traversal_never_leaves_the_output_folder(served: DevServer) -> None:
    output = served.site / "output"
    (output / "outside").symlink_to("/etc", target_is_directory=True)
    (output / "outside-file").symlink_to("/etc/passwd")
    (output / "inside").symlink_to(output / "dev", target_is_directory=True)
    (output / ".hidden-temp").write_text("a build's temporary file")
    try:
        for target in TRAVERSALS:
            status, data = raw_request(served.url, target)
            assert status in (403, 404), (target, status)
            assert b"root:" not in data and b"temporary file" not in data, target
        # A symlink that stays inside the output folder is followed.
        status, _, body = served.get("/inside/")
        assert status == 200 and b"Plans for 2.0" in body
    finally:
        for name in ("outside", "outside-file", "inside", ".hidden-temp"):
            (output / name).unlink()
    assert served.proc.poll() is None


def test_template_change_reloads_pages_within_two_seconds(served: DevServer) -> None:
    version = page_version(served.get("/")[2])
    events = Events(served.url, version)
    try:
        started = time.monotonic()
        set_footer(served.site, "footer-v2")
        status = events.next(timeout=10)
        signalled = time.monotonic() - started
        assert status["error"] is None and status["version"] > version
        page = served.get("/dev/")[2]
        served_new = time.monotonic() - started
    finally:
        events.close()
    assert b"footer-v2" in page and b"footer-v1" not in page
    print(f"template change: reload signal after {signalled:.2f} s, new page after {served_new:.2f} s")
    assert signalled < 2.0 and served_new < 2.0
    assert page_version(page) == status["version"]


def test_an_imported_message_appears(served: DevServer, tmp_path: Path) -> None:
    version = page_version(served.get("/dev/")[2])
    events = Events(served.url, version)
    source = tmp_path / "new.mbox"
    source.write_bytes(mboxrd([post(9, "Freshly imported question")]))
    try:
        started = time.monotonic()
        result = run_listlib("import", source, cwd=served.site)
        assert result.returncode == 0, result.stderr
        status = events.next(timeout=15)
        elapsed = time.monotonic() - started
    finally:
        events.close()
    assert status["error"] is None and status["version"] > version
    assert b"Freshly imported question" in served.get("/dev/")[2]
    print(f"import: reload signal {elapsed:.2f} s after the import started")


def test_broken_template_shows_the_error_and_fixing_it_recovers(served: DevServer) -> None:
    before = served.get("/")[2]
    version = page_version(before)
    events = Events(served.url, version)
    start = len(served.lines)
    try:
        # A runtime error whose message carries markup: it must arrive as text.
        set_footer(served.site, '{{ site["<img src=x onerror=alert(1)>"] }}')
        status = events.next(timeout=10)
        assert status["error"] is not None and "<img src=x onerror=alert(1)>" in status["error"]
        assert "base.html:" in status["error"] and "template error" in status["error"]
        served.wait_for_line("Error: ", start=start)
        code, _, page = served.get("/")
        assert code == 200 and served.proc.poll() is None  # still serving the last good pages
        overlay = re.search(rb'<div id="listlib-error".*?</div>', page, re.S)
        assert overlay, page[-800:]
        assert b"&lt;img src=x onerror=alert(1)&gt;" in overlay.group(0)
        assert b"<img" not in overlay.group(0)
        assert b"footer-v1" in page or b"footer-v2" in page
        # A second mistake: a syntax error, reported with its line.
        set_footer(served.site, "{% if %}")
        status = events.next(timeout=10)
        assert status["error"] is not None and "base.html:2" in status["error"]
        set_footer(served.site, "footer-v3")
        status = events.next(timeout=10)
        assert status["error"] is None
    finally:
        events.close()
    page = served.get("/")[2]
    assert b"footer-v3" in page and b"listlib-error" not in page


def test_configuration_changes_rebuild_even_when_saved_by_rename(served: DevServer) -> None:
    config = served.site / "listlib.toml"
    original = config.read_text()
    events = Events(served.url, page_version(served.get("/")[2]))
    try:
        # An editor that saves by writing a new file and renaming it over the old one.
        (served.site / "listlib.toml.new").write_text(original.replace("Test archive", "Renamed archive"))
        os.replace(served.site / "listlib.toml.new", config)
        assert events.next(timeout=10)["error"] is None
        assert b"Renamed archive" in served.get("/")[2]
        # Still watched after the rename: a broken file is reported, and fixing it recovers.
        config.write_text(original.replace("[site]", "[site]\ntitle = 3"))
        status = events.next(timeout=10)
        assert status["error"] is not None and "listlib.toml" in status["error"]
        assert b'id="listlib-error"' in served.get("/")[2]
        config.write_text(original)
        assert events.next(timeout=10)["error"] is None
    finally:
        events.close()
        config.write_text(original)
    page = served.get("/")[2]
    assert b"Test archive" in page and b"listlib-error" not in page


def test_rebuild_gate_makes_requests_wait_for_the_rebuild(tmp_path: Path) -> None:
    gate = SiteGate(tmp_path)
    entered: list[float] = []
    with gate.writing():
        reader = threading.Thread(target=lambda: gate.reading().__enter__() and entered.append(time.monotonic()))
        finished_at = time.monotonic() + 0.3
        reader.start()
        time.sleep(0.3)
        assert entered == []  # still waiting: the rebuild holds the gate
    reader.join(5)
    assert entered and entered[0] >= finished_at
    # And a rebuild waits for a request that is opening a file.
    order: list[str] = []
    with gate.reading():
        writer = threading.Thread(target=lambda: (gate.writing().__enter__(), order.append("rebuild")))
        writer.start()
        time.sleep(0.2)
        order.append("request done")
    writer.join(5)
    assert order == ["request done", "rebuild"]
    # A rebuild's status reaches waiting event streams; a rebuild that changed nothing does not.
    assert gate.publish(changed=False, error=None).version == 0
    assert gate.wait_for_change(0, 0.05) is None
    assert gate.publish(changed=True, error=None).version == 1
    assert gate.wait_for_change(0, 0.05) == gate.status


def test_taken_port_is_a_clear_error_offering_a_free_one(tmp_path: Path) -> None:
    write_site(tmp_path / "site")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_listlib("serve", "--port", port, cwd=tmp_path / "site")
    assert result.returncode == 1
    match = re.fullmatch(
        rf"Error: 127\.0\.0\.1:{port} is already in use; port (\d+) is free: try --port \1\n", result.stderr
    )
    assert match, result.stderr
    assert "Traceback" not in result.stderr
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", int(match.group(1))))


def test_no_reload_open_and_ctrl_c(tmp_path: Path) -> None:
    root = tmp_path / "site"
    write_site(root)
    fill(root, [post(1, "Plans for 2.0")])
    opened = tmp_path / "opened.txt"
    recorder = tmp_path / "browser.sh"
    recorder.write_text(f'#!/bin/sh\necho "$1" > {opened}\n')
    recorder.chmod(0o755)
    server = DevServer.start(root, "--no-reload", "--open", env={"BROWSER": f"{recorder} %s"})
    try:
        status, _, page = server.get("/")
        assert status == 200 and b"footer-v1" in page and b"_listlib" not in page
        assert server.get("/_listlib/reload.js")[0] == 404
        assert server.get("/_listlib/events?version=0")[0] == 404
        deadline = time.monotonic() + 5
        while not opened.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert opened.read_text().strip() == server.url
        set_footer(root, "footer-v2")
        time.sleep(0.5)
        assert b"footer-v1" in server.get("/")[2]  # not watching
    finally:
        code = server.stop()
    assert code == 0, server.output()
    assert "Traceback" not in server.output() and "Stopped." in server.output()
    assert temp_files(root) == []


@pytest.mark.slow
def test_requests_wait_for_a_rebuild_and_ctrl_c_interrupts_one_cleanly(tmp_path: Path) -> None:
    root = tmp_path / "site"
    write_site(root)
    fill(root, [post(n, f"Topic {n}") for n in range(1, 121)])
    server = DevServer.start(root, "-j", "2")
    pages = sorted(p.relative_to(root / "output").as_posix() for p in (root / "output").rglob("*.html"))
    pages = [p for p in pages if not p.startswith("mid/") and p != "404.html"][::5]
    assert len(pages) > 20
    # Every page is rebuilt (about a second): requests made meanwhile wait for the end.
    start = len(server.lines)
    set_footer(root, "footer-v2")
    server.wait_for_line("rebuilding", start=start)
    answers = [server.get("/" + page) for page in pages]
    done = server.wait_for_line(" files written", start=start, timeout=1)
    assert "(reloading pages)" in done
    for page, (status, _, body) in zip(pages, answers, strict=True):
        assert status == 200 and (b"footer-v2" in body or b'http-equiv="refresh"' in body), page
    # Ctrl-C in the middle of the next rebuild.
    start = len(server.lines)
    set_footer(root, "footer-v3")
    server.wait_for_line("rebuilding", start=start)
    # Interrupt once the first page has the new footer: the render is then under way (a
    # fixed pause could outlast the whole rebuild on a fast machine).
    output = root / "output"
    deadline = time.monotonic() + 10
    while not any(b"footer-v3" in (output / page).read_bytes() for page in pages):
        assert time.monotonic() < deadline, "the rebuild wrote no page in 10 s"
        time.sleep(0.002)
    code = server.stop()
    assert code == 0, server.output()
    assert "Traceback" not in server.output()
    assert not any(" files written" in line for line in server.lines[start:]), "the rebuild was not interrupted"
    assert temp_files(root) == [], server.lines[start:]
    # The next build finishes what was interrupted: every page has the new footer.
    result = run_listlib("build", "-j", "1", cwd=root)
    assert result.returncode == 0, result.stderr
    pages = [p for p in (root / "output").rglob("*.html") if "mid" not in p.parts and p.name != "404.html"]
    stale = [p for p in pages if b'http-equiv="refresh"' not in p.read_bytes() and b"footer-v3" not in p.read_bytes()]
    assert stale == []
    assert not os.listdir(root / "content" / ".tmp")


@pytest.mark.skipif(not shutil.which("ss"), reason="needs ss (iproute2) to read the listen backlog")
def test_the_dev_server_listens_with_a_backlog_a_browser_cannot_overflow(served: DevServer) -> None:
    port = int(served.url.rstrip("/").rsplit(":", 1)[1])
    listing = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=True).stdout
    # For a listening socket, ss shows the backlog in the Send-Q column (socketserver's default is 5).
    backlogs = [int(line.split()[2]) for line in listing.splitlines() if line.startswith("LISTEN")]
    assert backlogs and min(backlogs) >= 128, listing
