"""WCAG 2.2 AA in real Chromium: axe-core finds no violation on every kind of page (site
index, list index, month, by-date, a long thread, both pages of a paged thread, a message with attachments and an
inline image, a removed message's tombstone and its placeholder in its thread, a patch series with
its versions and collected trailers, the search page with results, the 404
page) in the light and the dark colour scheme at 390 and 1280 CSS pixels; a full-page
screenshot of each is kept in ``$LISTLIB_ARTIFACTS/a11y/`` (default
``tests/artifacts/a11y/``, git-ignored). The markup the rules cannot judge is checked
here too: one heading per message naming author and date, link texts that make sense
alone, alt text, ``lang``, the contents as nested lists, a visible focus ring on
everything the Tab key reaches (the skip link first), the search box of every page's
header. Skipped without Chromium or axe-core (``.ci/run`` installs it
into ``tests/.node/``)."""

from __future__ import annotations

import base64
import os
import re
import threading
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from listlib.build import build_site
from listlib.config import load_config
from listlib.filing import file_sources
from listlib.stewardship import Selector, steward
from listlib.store.core import Store

from ..support.axe import AXE, WAIT_JS, audit
from ..support.chromium import CHROMIUM, DevTools, fresh_browser
from ..support.helpers import REPO, SITE_TOML, make_message, mboxrd

pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"),
    pytest.mark.skipif(AXE is None, reason="axe-core is not installed (npm install --prefix tests/.node axe-core)"),
]

T0 = datetime(2024, 5, 2, 8, 0, tzinfo=UTC)
SUBJECT = "md/raid5: stripe batching under degraded writes"


def _png() -> bytes:
    """A valid 2x2 grey PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return len(data).to_bytes(4, "big") + kind + data + zlib.crc32(kind + data).to_bytes(4, "big")

    header = (2).to_bytes(4, "big") * 2 + bytes([8, 0, 0, 0, 0])
    pixels = zlib.compress(b"\x00\x80\x80" * 2)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def _post(n: int, subject: str, body: str, parent: list[int] | None = None) -> bytes:
    headers = {"Content-Type": "text/plain; charset=utf-8", "Content-Transfer-Encoding": "8bit"}
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


def _with_attachments() -> bytes:
    """An HTML message in German with two inline images (one described, one only named)
    and a PDF attachment."""
    png = base64.encodebytes(_png()).decode()
    html = (
        '<p>Hallo, anbei das Diagramm:</p><p><img src="cid:diagram@example.org"></p>'
        '<p>und das Foto:</p><p><img src="cid:photo@example.org"></p>'
    )
    body = f"""\
--outer
Content-Type: multipart/related; boundary="inner"

--inner
Content-Type: text/html; charset=utf-8

{html}
--inner
Content-Type: image/png; name="diagram.png"
Content-ID: <diagram@example.org>
Content-Description: Diagram of the degraded array
Content-Transfer-Encoding: base64

{png}
--inner
Content-Type: image/png; name="array-photo.png"
Content-ID: <photo@example.org>
Content-Transfer-Encoding: base64

{png}
--inner--
--outer
Content-Type: application/pdf; name="report.pdf"
Content-Disposition: attachment; filename="report.pdf"
Content-Transfer-Encoding: base64

{base64.encodebytes(b"%PDF-1.4 not really").decode()}
--outer--
"""
    return make_message(
        "Diagramm des Arrays",
        body,
        message_id="<m50@example.org>",
        sender="Bernd Beispiel <bernd@example.org>",
        date=T0 + timedelta(hours=50),
        extra={"Content-Type": 'multipart/mixed; boundary="outer"', "MIME-Version": "1.0", "Content-Language": "de"},
    )


def messages() -> list[bytes]:
    """A 24-message thread (a chain 12 deep, replies below it), the message with
    attachments, a short thread and a message to be removed, a patch and its review."""
    out = [_post(1, SUBJECT, "Message number 1.\n\n> a quote\n\nThe rest.\n")]
    ancestry: dict[int, list[int]] = {1: []}
    for n in range(2, 25):
        parent = n - 1 if n <= 13 else [1, 3, 13, 7][n % 4]
        ancestry[n] = ancestry[parent] + [parent]
        out.append(_post(n, "Re: " + SUBJECT, f"> Message number {parent}.\n\nMessage number {n}.\n", ancestry[n]))
    out.append(_with_attachments())
    out.append(_post(60, "A short question", "Message number 60.\n"))
    out.append(_post(61, "Re: A short question", "Message number 61, to be removed.\n", [60]))
    # a patch and its review: month and by-date pages show their class badges
    diff = "Fix it.\n---\ndiff --git a/md.c b/md.c\n--- a/md.c\n+++ b/md.c\n@@ -1 +1 @@\n-old\n+new\n"
    out.append(_post(70, "[PATCH] md: fix the resync", diff))
    out.append(_post(71, "Re: [PATCH] md: fix the resync", "> +new\n\nReviewed-by: Person 1 <p1@example.org>\n", [70]))
    # a thread long enough to be paged (more than 50 messages): its pages 1 and 2
    out.append(_post(100, "A long thread", "Message number 100.\n"))
    out.extend(_post(n, "Re: A long thread", f"Message number {n}.\n", [100]) for n in range(101, 160))
    out.extend(series_messages())
    return out


def series_messages() -> list[bytes]:
    """A patch series: two versions (v2 links back to v1), a cover letter, two patches, a
    review with trailers on a patch and an ack of the whole series."""
    diff = "---\n x | 2 +-\n\ndiff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n"
    out = [_post(196, "[PATCH 1/1] md: fix resync", "Fix it.\n\nSigned-off-by: Person 0 <p0@example.org>\n" + diff)]
    out.append(_post(201, "[PATCH v2 0/2] md: fix resync", "Two patches now.\n"))
    for number in (1, 2):
        body = f"Part {number}.\n\nSigned-off-by: Person 2 <p2@example.org>\n" + diff
        out.append(_post(201 + number, f"[PATCH v2 {number}/2] md: part {number}", body, [201]))
    review = "> Part 1.\n\nLooks right.\n\nReviewed-by: Person 4 <p4@example.org>\n"
    out.append(_post(204, "Re: [PATCH v2 1/2] md: part 1", review, [201, 202]))
    out.append(_post(205, "Re: [PATCH v2 0/2] md: fix resync", "Acked-by: Person 0 <p0@example.org>\n", [201]))
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The site, built in-process with message 61 removed: the page of each kind."""
    return _build(tmp_path_factory, "en-GB")


def _build(tmp_path_factory: pytest.TempPathFactory, language: str) -> dict[str, str]:
    root = tmp_path_factory.mktemp("a11y") / "site"
    root.mkdir()
    (root / "listlib.toml").write_text(SITE_TOML.replace("[site]\n", f'[site]\nlanguage = "{language}"\n'))
    source = root.parent / "in.mbox"
    source.write_bytes(mboxrd(messages()))
    config = load_config(root / "listlib.toml")
    with Store(config.site.content_dir).open() as store:
        report = file_sources(store, config.lists, [source])
        assert report.failed == 0 and report.filed == len(messages()), report.summary()
        rows = {n: store.index.rows_by_message_id("dev", f"m{n}@example.org")[0] for n in (1, 50, 60, 61, 100, 201)}
    steward(config, "remove", Selector(ids=(rows[61].call,)), reason="privacy request", by="test")
    build_site(config, workers=1)
    page = {n: row.path[: -len(".eml")] + ".html" for n, row in rows.items()}
    return {
        "site-index": "index.html",
        "list-index": "dev/index.html",
        "month": "dev/2024/05/index.html",
        "by-date": "dev/2024/05/date.html",
        "thread": page[1],
        "long-thread-1": page[100],
        "long-thread-2": page[100].removesuffix(".html") + "-2.html",
        "attachments": page[50],
        "tombstone": page[61],
        "placeholder": page[60],
        "series": page[201],
        "search": "search/index.html?q=degraded",
        "not-found": "404.html",
        "_output": str(root / "output"),
    }


@pytest.fixture(scope="module")
def server(built: dict[str, str]) -> Iterator[str]:
    """The output folder over http on a free port of 127.0.0.1."""
    yield from _serve(built)


@pytest.fixture(scope="module")
def built_german(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The same site with ``[site] language = "de"``."""
    return _build(tmp_path_factory, "de")


@pytest.fixture(scope="module")
def server_german(built_german: dict[str, str]) -> Iterator[str]:
    yield from _serve(built_german)


def _serve(built: dict[str, str]) -> Iterator[str]:
    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=built["_output"]))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


@pytest.fixture(scope="module")
def browser() -> Iterator[DevTools]:
    with fresh_browser() as devtools:
        yield devtools


@pytest.fixture(scope="module")
def artifacts() -> Path:
    folder = Path(os.environ.get("LISTLIB_ARTIFACTS") or REPO / "tests" / "artifacts") / "a11y"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


PAGES = [
    "site-index",
    "list-index",
    "month",
    "by-date",
    "thread",
    "long-thread-1",
    "long-thread-2",
    "attachments",
    "tombstone",
    "placeholder",
    "series",
    "search",
    "not-found",
]


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [390, 1280])
@pytest.mark.parametrize("page", PAGES)
def test_every_kind_of_page_has_no_aa_violation(
    browser: DevTools, server: str, built: dict[str, str], artifacts: Path, page: str, width: int, scheme: str
) -> None:
    shot = artifacts / f"{page}-{width}-{scheme}.png"
    violations = audit(browser, server + built[page], width, scheme, shot)
    assert violations == [], "\n".join(
        f"{v['id']} ({v['impact']}): {v['help']}: " + "; ".join(n["target"] for n in v["nodes"]) for v in violations
    )


@pytest.mark.parametrize(("width", "scheme"), [(1280, "light"), (390, "dark")])
@pytest.mark.parametrize("page", PAGES)
def test_every_kind_of_page_in_german_has_no_aa_violation(
    browser: DevTools,
    server_german: str,
    built_german: dict[str, str],
    artifacts: Path,
    page: str,
    width: int,
    scheme: str,
) -> None:
    # Longer words (and a page in another language) must keep every target, contrast and name.
    shot = artifacts / f"de-{page}-{width}-{scheme}.png"
    violations = audit(browser, server_german + built_german[page], width, scheme, shot)
    assert violations == [], "\n".join(
        f"{v['id']} ({v['impact']}): {v['help']}: " + "; ".join(n["target"] for n in v["nodes"]) for v in violations
    )
    assert '<html lang="de">' in _read(built_german, page.replace("search", "not-found"))


def test_the_search_page_in_german_says_its_results_in_german(
    browser: DevTools, server_german: str, built_german: dict[str, str]
) -> None:
    target = browser.send("Target.createTarget", url="about:blank")["targetId"]
    session = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    try:
        browser.send("Page.enable", session)
        browser.events.clear()
        browser.send("Page.navigate", session, url=server_german + built_german["search"])
        browser.wait_for("Page.loadEventFired", session)
        answer = browser.send("Runtime.evaluate", session, expression=WAIT_JS, awaitPromise=True, returnByValue=True)
    finally:
        browser.send("Target.closeTarget", targetId=target)
    status = answer["result"]["value"]
    assert re.fullmatch(r"\d+ Nachrichten?(, .* angezeigt)?", status), status


def test_the_rules_engine_sees_a_violation(browser: DevTools, server: str, built: dict[str, str]) -> None:
    """A page with known faults (an image without alt text, text on a same-coloured
    background), so that the zero above is not the zero of a test that sees nothing."""
    faulty = Path(built["_output"]) / "__faulty__.html"
    faulty.write_text(
        '<!doctype html><html lang="en"><title>faults</title><main><img src="x.png">'
        '<p style="color:#777;background:#888">grey on grey</p></main></html>'
    )
    found = {v["id"] for v in audit(browser, server + "__faulty__.html", 1280, "light")}
    assert {"image-alt", "color-contrast"} <= found, found


def _read(built: dict[str, str], page: str) -> str:
    return (Path(built["_output"]) / built[page]).read_text(encoding="utf-8")


def test_pages_carry_the_site_language_and_messages_their_own(built: dict[str, str]) -> None:
    for page in ("site-index", "thread", "not-found"):
        assert '<html lang="en-GB">' in _read(built, page), page
    attachments = _read(built, "attachments")
    assert re.search(r'<article class="message[^"]*"[^>]* lang="de"', attachments), attachments[:3000]


def test_class_badges_say_the_class_in_words(built: dict[str, str]) -> None:
    # The audits above see them: a badge is text (not colour alone) in the tag's colours.
    assert '<span class="tag class-badge class-patch">Patch</span>' in _read(built, "month")
    by_date = _read(built, "by-date")
    assert ">Patch</span>" in by_date and '<span class="tag class-badge class-review">Review</span>' in by_date


def test_inline_images_get_alt_text_from_their_description_or_file_name(built: dict[str, str]) -> None:
    images = re.findall(r"<img [^>]*>", _read(built, "attachments"))
    assert len(images) == 2, images
    assert 'alt="Diagram of the degraded array"' in images[0]
    assert 'alt="array-photo.png"' in images[1]


def test_each_message_has_one_heading_with_author_and_date_and_links_that_name_it(built: dict[str, str]) -> None:
    thread = _read(built, "thread")
    headings = re.findall(r"<h2 [^>]*>(.*?)</h2>", thread, flags=re.S)
    assert len(headings) == 24, len(headings)
    first = re.sub(r"<[^>]+>", "", headings[0])
    assert "Person 1" in first and "2024-05-02" in first, first
    # "raw" and "reply" alone say nothing out of context: their accessible text names the message.
    for word in ("raw", "permalink"):
        links = re.findall(rf"<a [^>]*>{word}(.*?)</a>", thread, flags=re.S)
        assert len(links) == 24 and all("Person" in link for link in links), links[:2]


def test_the_contents_of_a_thread_are_its_tree_as_nested_lists(built: dict[str, str]) -> None:
    thread = _read(built, "thread")
    toc = thread[thread.index('<details class="toc"') : thread.index("</details>")]
    # Well nested: every list and item closed in order; an item's replies are a list inside it.
    stack: list[str] = []
    depth_of: dict[str, int] = {}
    for tag in re.finditer(r'<(/?)(ol|li)>|<a href="#([^"]+)"', toc):
        closing, name, call = tag.groups()
        if call:
            depth_of[call] = stack.count("ol") - 1
        elif closing:
            assert stack.pop() == name, toc
        else:
            assert name == ("li" if stack and stack[-1] == "ol" else "ol"), toc
            stack.append(name)
    assert stack == [] and len(depth_of) == 24
    sections = re.findall(r'<article class="message indent-\d+" id="([^"]+)"', thread)
    chain = [depth_of[call] for call in sections[:13]]
    assert chain == list(range(13)), chain  # the reply chain, each one level below its parent


def test_the_search_box_in_a_page_header_leads_to_the_results(
    browser: DevTools, server: str, built: dict[str, str]
) -> None:
    target = browser.send("Target.createTarget", url="about:blank")["targetId"]
    session = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]

    def value(expression: str, **options: Any) -> Any:
        answer = browser.send("Runtime.evaluate", session, expression=expression, returnByValue=True, **options)
        return answer["result"].get("value")

    try:
        browser.send("Page.enable", session)
        browser.events.clear()
        browser.send("Page.navigate", session, url=server + built["thread"])
        browser.wait_for("Page.loadEventFired", session)
        value("document.querySelector('header form[role=search] input[name=q]').value = 'degraded'")
        browser.events.clear()
        value("document.querySelector('header form[role=search] button').click()")
        browser.wait_for("Page.loadEventFired", session)
        assert value("location.pathname + location.search") == "/search/index.html?q=degraded"
        status = value(WAIT_JS, awaitPromise=True)
        hits = value("document.querySelectorAll('#search-results li').length")
        assert value("document.querySelector('#search-form input[name=q]').value") == "degraded"
    finally:
        browser.send("Target.closeTarget", targetId=target)
    assert hits >= 1, (status, hits)


FOCUS_JS = """(() => {
  const el = document.activeElement, style = getComputedStyle(el), box = el.getBoundingClientRect();
  return {
    tag: el.tagName.toLowerCase() + (el.className ? '.' + el.className : ''),
    text: (el.textContent || el.getAttribute('aria-label') || '').trim().slice(0, 40),
    outline: style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2,
    onScreen: box.width > 0 && box.height > 0 && box.left >= 0 && box.top >= 0,
  };
})()"""


@pytest.mark.parametrize("page", ["thread", "list-index", "search"])
def test_the_keyboard_focus_is_always_visible_and_starts_with_the_skip_link(
    browser: DevTools, server: str, built: dict[str, str], page: str
) -> None:
    target = browser.send("Target.createTarget", url="about:blank")["targetId"]
    session = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    seen = []
    try:
        browser.send("Page.enable", session)
        browser.events.clear()
        browser.send("Page.navigate", session, url=server + built[page])
        browser.wait_for("Page.loadEventFired", session)
        browser.send("Runtime.evaluate", session, expression=WAIT_JS, awaitPromise=True)
        for _ in range(40):
            for kind in ("rawKeyDown", "keyUp"):
                browser.send(
                    "Input.dispatchKeyEvent", session, type=kind, key="Tab", code="Tab", windowsVirtualKeyCode=9
                )
            answer = browser.send("Runtime.evaluate", session, expression=FOCUS_JS, returnByValue=True)
            seen.append(answer["result"]["value"])
    finally:
        browser.send("Target.closeTarget", targetId=target)
    assert seen[0]["tag"] == "a.skip" and seen[0]["onScreen"], seen[0]  # shown when focused
    seen = seen[: next((n for n, s in enumerate(seen) if s["tag"] == "body"), len(seen))]  # to the page's end
    assert len(seen) >= 5, seen
    hidden = [s for s in seen if not s["outline"]]
    assert hidden == [], hidden
