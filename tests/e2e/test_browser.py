"""The built site in a real headless Chromium: the site index, a month page and a long
thread page load over http without console errors, show their content, and fit a
phone screen without horizontal scrolling.

Chromium is driven two ways, both with the standard library only: ``--dump-dom``
(the DOM after scripts ran, console messages from ``--enable-logging=stderr``) and
the DevTools protocol over ``--remote-debugging-pipe`` (console and network errors,
layout measurements, full-page screenshots); the test server also records every request
it answered with an error (``--enable-logging`` does not show failed requests). A
self-test page with known faults proves each channel sees them. Screenshots are kept in
``$LISTLIB_ARTIFACTS`` (default ``tests/artifacts/``, git-ignored) for a human to look at.
Skipped when Chromium is not installed; nothing here ever downloads a browser.
"""

from __future__ import annotations

import base64
import html
import os
import re
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.header import Header
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from listlib.build import build_site
from listlib.config import load_config
from listlib.filing import file_sources
from listlib.store.core import Store

from ..support.chromium import CHROMIUM, FLAGS, DevTools, fresh_browser
from ..support.helpers import REPO, SITE_TOML, make_message, mboxrd

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")

WIDTHS = {"phone": (390, 844), "desktop": (1280, 900)}
T0 = datetime(2024, 5, 2, 8, 0, tzinfo=UTC)
LONG_SUBJECT = (
    "[PATCH v3 07/12] "
    + " ".join(["md/raid5: rework stripe batching so that a degraded array under heavy parallel writes"] * 4)[:283]
)
UTF8_SUBJECT = "Übersicht: 日本語のテスト — ça marche, ελληνικά, русский 🎉"
LONG_URL = "https://example.org/" + "a-very-long-path-segment-without-spaces" * 12
PATCH = """\
Signed-off-by: Ann Example <ann@example.org>
---
 drivers/md/raid5.c | 4 +++-
 1 file changed, 3 insertions(+), 1 deletion(-)

diff --git a/drivers/md/raid5.c b/drivers/md/raid5.c
index 1234567..89abcde 100644
--- a/drivers/md/raid5.c
+++ b/drivers/md/raid5.c
@@ -1200,7 +1200,9 @@ static int handle_stripe_batch(struct r5conf *conf, struct stripe_head *sh, int disks)
 \tif (!test_bit(STRIPE_BATCH_READY, &sh->state))
-\t\treturn 0;
+\t\treturn handle_stripe_batch_fallback(conf, sh, disks, STRIPE_BATCH_READY | STRIPE_HANDLE | STRIPE_DEGRADED);
+\t/* patch-marker: batching keeps going when the array is degraded and the journal is full */
+\tclear_bit(STRIPE_BATCH_READY, &sh->state);
 \treturn 1;
"""


def _post(n: int, subject: str, body: str, parent: list[int] | None = None, **extra: str) -> bytes:
    headers = {"Content-Type": "text/plain; charset=utf-8", "Content-Transfer-Encoding": "8bit", **extra}
    if parent:
        headers["In-Reply-To"] = f"<m{parent[-1]}@example.org>"
        headers["References"] = " ".join(f"<m{p}@example.org>" for p in parent)
    return make_message(
        subject,
        body,
        message_id=f"<m{n}@example.org>",
        sender=f"Person {n % 5} <p{n % 5}@example.org>",
        date=T0 + timedelta(hours=n),
        extra=headers,
    )


def messages() -> list[bytes]:
    """A 31-message thread (a reply chain 12 deep and more below it, long lines, a patch,
    quoted text, a 300-character subject), a thread with a UTF-8 subject, and a short one."""
    out = []
    ancestry: dict[int, list[int]] = {1: []}
    out.append(_post(1, LONG_SUBJECT, f"Message number 1.\n\n{PATCH}"))
    for n in range(2, 14):  # a chain: message 13 is 12 replies deep
        ancestry[n] = ancestry[n - 1] + [n - 1]
        quoted = f"> Message number {n - 1}, quoted by {n}.\n> > and an older line\n\n"
        out.append(_post(n, "Re: " + LONG_SUBJECT, f"{quoted}Message number {n}, depth {n - 1}.\n", ancestry[n]))
    for n in range(14, 32):  # the rest answer messages spread over the chain
        parent = [1, 3, 13, 7, 13, 14][n % 6] if n != 14 else 13
        ancestry[n] = ancestry[parent] + [parent]
        body = f"Message number {n}.\n"
        if n == 15:
            body += "A long line: " + "word " * 120 + "\nAnd a long link: " + LONG_URL + "\n"
        if n == 16:
            body += "\n" + PATCH
        if n == 17:
            body += "\n".join(f"> quoted-marker line {i} of a long quote" for i in range(20)) + "\n\nI agree.\n"
        out.append(_post(n, "Re: " + LONG_SUBJECT, body, ancestry[n]))
    out.append(_post(40, Header(UTF8_SUBJECT, "utf-8").encode(), "Message number 40: Grüße, 你好, مرحبا.\n"))
    out.append(_post(41, "Re: " + Header(UTF8_SUBJECT, "utf-8").encode(), "Message number 41.\n", [40]))
    out.append(_post(42, "A short question", "Message number 42.\n"))
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A site with those messages, imported and built in-process; the pages to visit."""
    root = tmp_path_factory.mktemp("browser") / "site"
    root.mkdir()
    (root / "listlib.toml").write_text(SITE_TOML)
    source = root.parent / "in.mbox"
    source.write_bytes(mboxrd(messages()))
    config = load_config(root / "listlib.toml")
    with Store(config.site.content_dir).open() as store:
        report = file_sources(store, config.lists, [source])
        assert report.failed == 0 and report.filed == len(messages()), report.summary()
        paths = {n: store.index.rows_by_message_id("dev", f"m{n}@example.org")[0].path for n in (1, 40)}
    build_site(config, workers=1)
    thread = paths[1][: -len(".eml")] + ".html"
    return {
        "output": root / "output",
        "pages": {"index": "index.html", "month": "dev/2024/05/index.html", "thread": thread},
    }


SELFTEST_PAGE = b"""<!doctype html><title>faults</title><link rel=stylesheet href="/missing.css">
<script>console.error("selftest-console-error"); nosuchfunction()</script>"""


class _Handler(SimpleHTTPRequestHandler):
    failures: list[str]
    """Every request answered with an error (shared by the server's handlers), except the
    favicon that browsers ask for by themselves."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        if int(code) >= 400 and self.path != "/favicon.ico":
            self.failures.append(f"{self.path} {code}")

    def do_GET(self) -> None:
        if self.path == "/__selftest__.html":  # a page with known faults, to test the fault detection
            body = SELFTEST_PAGE
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()


class Server(str):
    """The base URL, with the requests answered with an error so far."""

    failures: list[str]


@pytest.fixture(scope="module")
def server(built: dict[str, Any]) -> Iterator[Server]:
    """The output folder over http on a free port of 127.0.0.1."""
    failures: list[str] = []
    handler = type("Handler", (_Handler,), {"failures": failures})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(handler, directory=str(built["output"])))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        base = Server(f"http://127.0.0.1:{httpd.server_address[1]}/")
        base.failures = failures
        yield base
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


@pytest.fixture(scope="module")
def artifacts() -> Path:
    folder = Path(os.environ.get("LISTLIB_ARTIFACTS") or REPO / "tests" / "artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def browser() -> Iterator[DevTools]:
    with fresh_browser() as devtools:
        yield devtools


OVERFLOW_JS = """(() => {
  const root = document.documentElement, width = root.clientWidth;
  const wide = [];
  for (const el of document.body.querySelectorAll('*')) {
    const right = el.getBoundingClientRect().right;
    if (right > width + 0.5 && !(el.parentElement.getBoundingClientRect().right > width + 0.5)) {
      wide.push(`${el.tagName.toLowerCase()}.${el.className} right=${Math.round(right)}`);
    }
  }
  return {scrollWidth: root.scrollWidth, clientWidth: width, wide: wide.slice(0, 10)};
})()"""


def visit(browser: DevTools, url: str, size: tuple[int, int], screenshot: Path | None = None) -> dict[str, Any]:
    """Load ``url`` in a new tab of ``size``: console and network errors, layout widths."""
    target = browser.send("Target.createTarget", url="about:blank")["targetId"]
    session = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    try:
        for domain in ("Page", "Runtime", "Log"):
            browser.send(f"{domain}.enable", session)
        width, height = size
        browser.send(
            "Emulation.setDeviceMetricsOverride",
            session,
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=width < 600,
        )
        browser.events.clear()
        browser.send("Page.navigate", session, url=url)
        browser.wait_for("Page.loadEventFired", session)
        layout = browser.send("Runtime.evaluate", session, expression=OVERFLOW_JS, returnByValue=True)
        if screenshot:
            shot = browser.send("Page.captureScreenshot", session, format="png", captureBeyondViewport=True)
            screenshot.write_bytes(base64.b64decode(shot["data"]))
        errors = []
        for event in browser.events:
            if event.get("sessionId") != session:
                continue
            params = event.get("params", {})
            if event["method"] == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                errors.append(details.get("exception", {}).get("description") or details.get("text"))
            elif event["method"] == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
                errors.append(" ".join(str(arg.get("value", arg.get("description"))) for arg in params["args"]))
            elif event["method"] == "Log.entryAdded" and params["entry"]["level"] == "error":
                if params["entry"].get("url", "").endswith("/favicon.ico"):
                    continue  # asked for by the browser itself; see _Handler.failures
                errors.append(f"{params['entry']['text']} {params['entry'].get('url', '')}")
        return {"errors": errors, **layout["result"]["value"]}
    finally:
        browser.send("Target.closeTarget", targetId=target)


def dump_dom(url: str, size: tuple[int, int]) -> tuple[str, list[str]]:
    """``chromium --dump-dom`` in a fresh profile: the DOM, and the console errors it logged."""
    assert CHROMIUM is not None
    with tempfile.TemporaryDirectory(prefix="listlib-chromium-") as profile:
        result = subprocess.run(
            [
                CHROMIUM,
                *FLAGS,
                f"--user-data-dir={profile}",
                "--enable-logging=stderr",
                "--v=0",
                f"--window-size={size[0]},{size[1]}",
                "--dump-dom",
                url,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    assert result.returncode == 0, result.stderr[-2000:]
    errors = [
        line
        for line in result.stderr.splitlines()
        # Chromium logs every console message at INFO, whatever its level: the pages have
        # no reason to log anything, so any console line counts.
        if ":CONSOLE" in line or "Failed to load resource" in line
    ]
    return result.stdout, errors


def test_the_fault_detection_sees_a_missing_file_and_a_script_error(browser: DevTools, server: Server) -> None:
    before = len(server.failures)
    seen = visit(browser, server + "__selftest__.html", WIDTHS["desktop"])
    assert any("404" in e or "Failed to load resource" in e for e in seen["errors"]), seen
    assert any("nosuchfunction" in e for e in seen["errors"]), seen
    assert any("selftest-console-error" in e for e in seen["errors"]), seen
    assert server.failures[before:] == ["/missing.css 404"]
    # --enable-logging shows script errors, but not failed requests: the server's record does.
    _dom, errors = dump_dom(server + "__selftest__.html", WIDTHS["desktop"])
    assert any("nosuchfunction" in e for e in errors), errors
    assert any("selftest-console-error" in e for e in errors), errors


def expected_text(page: str) -> list[str]:
    if page == "index":
        return ["Test archive", 'href="dev/index.html"', f">{len(messages())}<"]  # the dev list, its message count
    if page == "month":
        return [LONG_SUBJECT, UTF8_SUBJECT, "A short question"]
    return [
        LONG_SUBJECT,
        *(f"Message number {n}" for n in range(1, 32)),
        "Message number 13, depth 12",
        "patch-marker: batching keeps going",
        "quoted-marker line 19",
        LONG_URL,
    ]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", ["index", "month", "thread"])
def test_page_loads_cleanly_and_fits_the_screen(
    browser: DevTools, server: Server, built: dict[str, Any], artifacts: Path, page: str, width: str
) -> None:
    url = server + built["pages"][page]
    before = len(server.failures)
    seen = visit(browser, url, WIDTHS[width], artifacts / f"{page}-{width}.png")
    assert seen["errors"] == [], f"{url}: {seen['errors']}"
    assert server.failures[before:] == [], f"{url}: failed requests"
    assert seen["clientWidth"] == WIDTHS[width][0]
    assert seen["scrollWidth"] <= seen["clientWidth"], f"{url} scrolls sideways at {width} width: {seen}"


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", ["index", "month", "thread"])
def test_dumped_dom_holds_the_content(server: Server, built: dict[str, Any], page: str, width: str) -> None:
    url = server + built["pages"][page]
    before = len(server.failures)
    dom, errors = dump_dom(url, WIDTHS[width])
    assert errors == [], f"{url}: {errors}"
    assert server.failures[before:] == [], f"{url}: failed requests"
    text = re.sub(r"\s+", " ", html.unescape(dom))
    missing = [s for s in expected_text(page) if re.sub(r"\s+", " ", s) not in text]
    assert missing == [], f"{url} lacks {missing}"


SEARCH_DONE_JS = """new Promise((resolve) => {
  const check = () => {
    const status = document.getElementById('search-status').textContent;
    if (status && status !== 'Searching\\u2026') {
      resolve({
        status,
        hits: [...document.querySelectorAll('#search-results li a.hit')].map((a) => a.getAttribute('href')),
        marks: [...document.querySelectorAll('#search-results mark')].map((m) => m.textContent),
        scope: document.getElementById('search-scope').hidden ? null : [
          document.getElementById('search-scope').textContent,
          document.querySelector('#search-scope a').getAttribute('href'),
        ],
      });
    } else {
      setTimeout(check, 50);
    }
  };
  check();
})"""


def test_the_search_page_finds_highlights_and_links_what_the_cli_finds(
    browser: DevTools, server: Server, built: dict[str, Any], artifacts: Path
) -> None:
    from urllib.parse import quote

    from listlib.search.reader import Source, group_by_thread, search

    query = "batching degraded"
    expected = search(Source(built["output"] / "search"), query, limit=20)
    assert expected.total >= 1
    before = len(server.failures)
    url = server + "search/index.html?q=" + quote(query)
    target = browser.send("Target.createTarget", url="about:blank")["targetId"]
    session = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    try:
        browser.send("Page.enable", session)
        phone = {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True}
        browser.send("Emulation.setDeviceMetricsOverride", session, **phone)
        browser.send("Page.navigate", session, url=url)
        browser.wait_for("Page.loadEventFired", session)
        done = browser.send(
            "Runtime.evaluate", session, expression=SEARCH_DONE_JS, awaitPromise=True, returnByValue=True
        )
        seen = done["result"]["value"]
        shot = browser.send("Page.captureScreenshot", session, format="png", captureBeyondViewport=True)
        (artifacts / "search-phone.png").write_bytes(base64.b64decode(shot["data"]))
        layout = browser.send("Runtime.evaluate", session, expression=OVERFLOW_JS, returnByValue=True)
        layout = layout["result"]["value"]
    finally:
        browser.send("Target.closeTarget", targetId=target)
    assert server.failures[before:] == []
    # Grouped by thread as the command line groups them (search.reader.group_by_thread).
    grouped = [hit for thread in group_by_thread(expected.hits) for hit in thread.hits]
    assert seen["hits"] == ["../" + hit.url for hit in grouped], seen
    assert {m.lower() for m in seen["marks"]} >= {"batching", "degraded"}, seen
    assert layout["scrollWidth"] <= layout["clientWidth"], layout


def test_the_search_page_keeps_to_one_list_when_asked(browser: DevTools, server: Server) -> None:
    seen = {}
    for slug in ("dev", "announce"):
        target = browser.send("Target.createTarget", url="about:blank")["targetId"]
        session = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        try:
            browser.send("Page.enable", session)
            browser.send("Page.navigate", session, url=server + f"search/index.html?q=batching&list={slug}")
            browser.wait_for("Page.loadEventFired", session)
            done = browser.send(
                "Runtime.evaluate", session, expression=SEARCH_DONE_JS, awaitPromise=True, returnByValue=True
            )
            seen[slug] = done["result"]["value"]
        finally:
            browser.send("Target.closeTarget", targetId=target)
    assert seen["dev"]["hits"] and seen["announce"]["hits"] == []
    assert seen["announce"]["status"] == "No messages match."
    # The page says that it searched one list, and links to the same search of all.
    assert seen["dev"]["scope"] == ["Searching dev only. Search all lists", "?q=batching"], seen


def test_the_search_page_explains_a_query_of_only_words_to_leave_out(browser: DevTools, server: Server) -> None:
    seen, _resources = _search_in_tab(browser, server + "search/index.html?q=-batching")
    assert seen["hits"] == [] and seen["status"].startswith("Only words to leave out: add a word"), seen


def test_the_search_page_says_so_without_javascript(built: dict[str, Any]) -> None:
    page = (built["output"] / "search/index.html").read_text()
    noscript = page[page.index("<noscript>") : page.index("</noscript>")]
    assert "needs JavaScript" in noscript and 'href="../index.html"' in noscript
    assert 'id="search-app"' in page and " hidden>" in page  # the results area shows only with scripts
    thread = (built["output"] / built["pages"]["thread"]).read_text()
    # A search box in every page's header (the front page's is its own, in the page).
    assert '<form class="site-search" action="../../../search/index.html" method="get" role="search"' in thread
    assert 'class="site-search"' not in (built["output"] / "index.html").read_text()
    assert 'name="list" value="dev"' in (built["output"] / "dev/index.html").read_text()
    # Every search box says what it searches.
    for path, scope in (("index.html", "Search all lists: "), ("dev/index.html", "Search dev only: ")):
        assert f'placeholder="{scope}' in (built["output"] / path).read_text(), path
    assert 'placeholder="words, ' in page


INLINE_SCRIPT_JS = """(() => {
  const script = document.createElement('script');
  script.textContent = 'window.inlineRan = true';
  document.body.appendChild(script);
  return window.inlineRan === true;
})()"""


def _open(browser: DevTools, session: str, url: str) -> None:
    browser.events.clear()
    browser.send("Page.navigate", session, url=url)
    browser.wait_for("Page.loadEventFired", session)


def _value(browser: DevTools, session: str, expression: str) -> Any:
    return browser.send("Runtime.evaluate", session, expression=expression, returnByValue=True)["result"].get("value")


@pytest.mark.parametrize("scheme", ["http", "file"])
def test_the_content_security_policy_refuses_inline_script_and_keeps_the_site_working(
    browser: DevTools, server: Server, built: dict[str, Any], scheme: str
) -> None:
    base = server if scheme == "http" else built["output"].as_uri() + "/"
    target = browser.send("Target.createTarget", url="about:blank")["targetId"]
    session = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    try:
        browser.send("Page.enable", session)
        # The search form on the front page submits to the site (form-action 'self').
        _open(browser, session, base + "index.html")
        assert "Content-Security-Policy" in _value(browser, session, "document.head.innerHTML")
        browser.events.clear()
        _value(browser, session, "document.querySelector('form.search-form input[name=q]').value = 'batching'")
        _value(browser, session, "document.querySelector('form.search-form').submit()")
        browser.wait_for("Page.loadEventFired", session)
        assert _value(browser, session, "location.href").startswith(base + "search/index.html?q=batching")
        # The theme's own script ran and found messages (from file:// it loads the index's
        # script twins, which script-src 'self' allows).
        assert _value(browser, session, "document.getElementById('search-app').hidden") is False
        done = browser.send(
            "Runtime.evaluate", session, expression=SEARCH_DONE_JS, awaitPromise=True, returnByValue=True
        )
        assert done["result"]["value"]["hits"], done
        assert _value(browser, session, INLINE_SCRIPT_JS) is False
        # Folding needs no script: a long quote is a <details> that opens.
        _open(browser, session, base + built["pages"]["thread"])
        folded = "(() => { const d = document.querySelector('details.quote'); d.open = true; return d.open; })()"
        assert _value(browser, session, folded) is True
        assert _value(browser, session, INLINE_SCRIPT_JS) is False
    finally:
        browser.send("Target.closeTarget", targetId=target)


def _search_in_tab(browser: DevTools, url: str) -> tuple[dict[str, Any], list[str]]:
    """What the search page at ``url`` shows once done, and every resource it loaded."""
    target = browser.send("Target.createTarget", url="about:blank")["targetId"]
    session = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    try:
        browser.send("Page.enable", session)
        browser.send("Network.enable", session)
        _open(browser, session, url)
        done = browser.send(
            "Runtime.evaluate", session, expression=SEARCH_DONE_JS, awaitPromise=True, returnByValue=True
        )
        requested = [
            event["params"]["request"]["url"]
            for event in browser.events
            if event.get("sessionId") == session and event["method"] == "Network.requestWillBeSent"
        ]
        return done["result"]["value"], requested
    finally:
        browser.send("Target.closeTarget", targetId=target)


def _index_bytes(output: Path, base: str, loaded: list[str]) -> int:
    """The bytes of the index files (or script twins) among ``loaded``."""
    from urllib.parse import unquote, urlsplit

    prefix = urlsplit(base + "search/").path
    paths = {unquote(urlsplit(url).path) for url in loaded}
    files = [output / "search" / path[len(prefix) :] for path in paths if path.startswith(prefix)]
    return sum(f.stat().st_size for f in files if f.name != "search.js")


@pytest.mark.parametrize(
    "query", ["batching degraded", '"message number 13"', "from:person batch*", "message after:2024-05-03"]
)
def test_the_search_page_finds_the_same_from_disk_as_over_http(
    browser: DevTools, server: Server, built: dict[str, Any], artifacts: Path, query: str
) -> None:
    from urllib.parse import quote

    from listlib.search.reader import Source, group_by_thread, search

    hits = search(Source(built["output"] / "search"), query, limit=20).hits
    expected = ["../" + hit.url for thread in group_by_thread(hits) for hit in thread.hits]
    assert expected
    seen: dict[str, dict[str, Any]] = {}
    loaded: dict[str, int] = {}
    for scheme, base in (("http", str(server)), ("file", built["output"].as_uri() + "/")):
        seen[scheme], resources = _search_in_tab(browser, base + "search/index.html?q=" + quote(query))
        loaded[scheme] = _index_bytes(built["output"], base, resources)
        index_files = [r for r in resources if "/search/seg/" in r or "/search/manifest" in r]
        assert index_files, resources
        # Over http the files themselves, as ever; from disk their script twins.
        assert all(r.split("?")[0].endswith(".js") == (scheme == "file") for r in index_files), resources
    assert seen["file"]["hits"] == seen["http"]["hits"] == expected, seen
    assert seen["file"]["status"] == seen["http"]["status"]
    assert seen["file"]["marks"] == seen["http"]["marks"]
    # The script twins cost base64 (4/3) on the binary files, nothing on the JSON ones.
    assert 0 < loaded["http"] <= loaded["file"] <= loaded["http"] * 4 / 3 + 2000, loaded
    with (artifacts / "search-bytes.txt").open("a") as report:
        report.write(f"{query!r}: http {loaded['http']} bytes, file {loaded['file']} bytes\n")


def test_the_search_page_from_disk_says_what_to_do_without_the_script_twins(
    browser: DevTools, built: dict[str, Any], tmp_path: Path
) -> None:
    import shutil

    copy = tmp_path / "output"
    shutil.copytree(built["output"], copy)
    for twin in (copy / "search").rglob("*.js"):
        twin.unlink()
    seen, _resources = _search_in_tab(browser, copy.as_uri() + "/search/index.html?q=batching")
    assert seen["hits"] == [] and seen["status"].startswith("Search failed"), seen
    assert "search_from_disk = true" in seen["status"] and "listlib serve" in seen["status"], seen


TIMES_JS = """(() => ({
  zone: [...document.querySelectorAll('[data-time-zone]')].map((e) => e.textContent),
  times: [...document.querySelectorAll('time[data-utc]')].map(
    (t) => [t.getAttribute('datetime'), t.textContent, t.title]),
}))()"""


@pytest.mark.parametrize("page", ["thread", "date"])
def test_times_show_in_the_readers_zone_with_scripts(
    browser: DevTools, server: Server, built: dict[str, Any], page: str
) -> None:
    path = built["pages"]["thread"] if page == "thread" else "dev/2024/05/date.html"
    static = (built["output"] / path).read_text()
    assert "<span data-time-zone>UTC</span>" in static and " UTC</time>" in static  # without scripts: UTC
    target = browser.send("Target.createTarget", url="about:blank")["targetId"]
    session = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    try:
        browser.send("Page.enable", session)
        browser.send("Emulation.setTimezoneOverride", session, timezoneId="Asia/Tokyo")
        browser.send("Emulation.setLocaleOverride", session, locale="en-GB")
        _open(browser, session, server + path)
        seen = _value(browser, session, TIMES_JS)
    finally:
        browser.send("Target.closeTarget", targetId=target)
    assert seen["zone"] and all(zone == "your time (Asia/Tokyo)" for zone in seen["zone"]), seen
    assert len(seen["times"]) >= 3
    for iso, text, title in seen["times"]:
        moment = datetime.fromisoformat(iso) + timedelta(hours=9)
        # In the reader's own format (here en-GB's), the UTC text kept as the title.
        assert text == f"{moment.day} {moment:%b %Y}, {moment:%H:%M}", (iso, text)
        assert title.endswith(" UTC")


CONTRAST_JS = """(() => {
  document.querySelectorAll('details').forEach((d) => { d.open = true; });  // folded quotes too
  const rgb = (s) => {
    const m = s.match(/[\\d.]+/g).map(Number);
    return {c: m.slice(0, 3), a: m.length > 3 ? m[3] : 1};
  };
  const lin = (v) => { v /= 255; return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
  const lum = (c) => 0.2126 * lin(c[0]) + 0.7152 * lin(c[1]) + 0.0722 * lin(c[2]);
  const ground = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const b = rgb(getComputedStyle(e).backgroundColor);
      if (b.a > 0) return b.c;
    }
    return rgb(getComputedStyle(document.documentElement).backgroundColor).c;
  };
  const low = [];
  let measured = 0;
  for (const el of document.body.querySelectorAll('*')) {
    if (['INPUT', 'BUTTON', 'TEXTAREA', 'SELECT', 'OPTION', 'SCRIPT'].includes(el.tagName)) continue;
    const text = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!text || !el.getClientRects().length) continue;
    const fg = rgb(getComputedStyle(el).color).c, bg = ground(el);
    const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a);
    const ratio = (hi + 0.05) / (lo + 0.05);
    measured++;
    if (ratio < 4.5) low.push(`${el.tagName.toLowerCase()}.${el.className}: ${ratio.toFixed(2)}`);
  }
  return {measured, low: low.slice(0, 10)};
})()"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_text_on_the_pages_reaches_aa_contrast_in_both_schemes(
    browser: DevTools, server: Server, built: dict[str, Any], scheme: str
) -> None:
    pages = [
        "index.html",
        "dev/index.html",
        "dev/2024/05/index.html",
        "dev/2024/05/date.html",
        built["pages"]["thread"] + "#" + built["pages"]["thread"].rpartition("/")[2][: -len(".html")],
        "search/index.html?q=batching+degraded&list=dev",
    ]
    target = browser.send("Target.createTarget", url="about:blank")["targetId"]
    session = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    seen = {}
    try:
        browser.send("Page.enable", session)
        features = [{"name": "prefers-color-scheme", "value": scheme}]
        browser.send("Emulation.setEmulatedMedia", session, features=features)
        for page in pages:
            _open(browser, session, server + page)
            if page.startswith("search/"):
                browser.send("Runtime.evaluate", session, expression=SEARCH_DONE_JS, awaitPromise=True)
            seen[page] = _value(browser, session, CONTRAST_JS)
    finally:
        browser.send("Target.closeTarget", targetId=target)
    assert all(found["measured"] > 5 for found in seen.values()), seen
    assert {page: found["low"] for page, found in seen.items() if found["low"]} == {}, scheme


TOC_ROWS_JS = """(() => [...document.querySelectorAll('.toc li')].map((li) => {
  const link = li.querySelector(':scope > a'), style = getComputedStyle(link);
  const line = parseFloat(style.lineHeight) || parseFloat(style.fontSize) * 1.5;
  // The row's own text: its item without the nested list of its replies.
  const own = [...li.childNodes].filter((n) => n.nodeName !== 'OL').map((n) => n.textContent).join('');
  return {height: link.getBoundingClientRect().height, line, text: own.trim() === link.textContent.trim()};
}))()"""


@pytest.mark.parametrize("width", WIDTHS)
def test_the_contents_of_a_long_thread_keep_each_row_on_one_line(
    browser: DevTools, server: Server, built: dict[str, Any], width: str
) -> None:
    target = browser.send("Target.createTarget", url="about:blank")["targetId"]
    session = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    try:
        browser.send("Page.enable", session)
        size = WIDTHS[width]
        browser.send(
            "Emulation.setDeviceMetricsOverride",
            session,
            width=size[0],
            height=size[1],
            deviceScaleFactor=1,
            mobile=size[0] < 600,
        )
        _open(browser, session, server + built["pages"]["thread"])
        rows = _value(browser, session, TOC_ROWS_JS)
    finally:
        browser.send("Target.closeTarget", targetId=target)
    assert len(rows) > 30
    for row in rows:
        assert row["text"], "a row holds text outside its link"
        assert row["height"] < 1.6 * max(row["line"], 24), row  # one line (24 px: the smallest target)
