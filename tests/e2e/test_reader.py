"""The reader's features in a real headless Chromium, each with and without scripts
where the page has one: deep threads that stay readable (indentation capped, "reply to
NAME" below the cap, quotes of the parent folded sooner, every message folds without a
script), search results grouped by thread, "new since your last visit" from the
browser's own storage, dates in the reader's own format, and the phone layout (no
page wider than a 390 px screen, 24 px targets). Skipped without Chromium."""

from __future__ import annotations

import base64
import contextlib
import os
import re
import threading
import time
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
from listlib.render.pages import MAX_INDENT
from listlib.store.core import Store

from ..support.axe import AXE, audit
from ..support.chromium import CHROMIUM, DevTools, fresh_browser
from ..support.helpers import REPO, SITE_TOML, make_message, mboxrd, run_listlib

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")

T0 = datetime(2024, 5, 2, 8, 0, tzinfo=UTC)
DEEP = 10
"""Messages of the reply chain: each answers the one before."""
LONG = 55
"""Messages of the paged thread: its second page holds the last five."""


def _deep() -> list[bytes]:
    """A chain of ``DEEP`` replies; each quotes three lines of its parent and three of
    a manual page that no message before it quoted."""
    out = []
    for n in range(1, DEEP + 1):
        own = f"Paragraph one of message {n}, about stripes.\nSecond line of message {n}.\nThird line of message {n}.\n"
        headers = {}
        body = own
        if n > 1:
            refs = " ".join(f"<d{k}@example.org>" for k in range(1, n))
            headers = {"In-Reply-To": f"<d{n - 1}@example.org>", "References": refs}
            parent = "".join(f"> {line}\n" for line in _own(n - 1).splitlines())
            manual = "".join(f"> Manual line {k} for reply {n}.\n" for k in range(1, 4))
            body = f"{parent}\nMy answer {n}.\n\n{manual}\n{own}"
        out.append(
            make_message(
                "Deep" if n == 1 else "Re: Deep",
                body,
                message_id=f"<d{n}@example.org>",
                sender=f"Writer {n} <w{n}@example.org>",
                date=T0 + timedelta(hours=n),
                extra=headers,
            )
        )
    return out


def _own(n: int) -> str:
    return f"Paragraph one of message {n}, about stripes.\nSecond line of message {n}.\nThird line of message {n}.\n"


def _thread(key: str, subject: str, count: int, start: datetime, word: str) -> list[bytes]:
    """A flat thread of ``count`` messages, every one of them with ``word`` in its body."""
    out = []
    for n in range(count):
        headers = {"In-Reply-To": f"<{key}0@example.org>", "References": f"<{key}0@example.org>"} if n else {}
        out.append(
            make_message(
                subject if n == 0 else "Re: " + subject,
                f"Message {n} of {subject}: the {word} is slow.\n",
                message_id=f"<{key}{n}@example.org>",
                sender=f"Author {key}{n} <a{key}{n}@example.org>",
                date=start + timedelta(hours=n),
                extra=headers,
            )
        )
    return out


def messages() -> list[bytes]:
    return [
        *_deep(),
        *_thread("r", "Resync speed", 3, T0 + timedelta(days=1), "resync"),
        *_thread("s", "Slow resync after reboot", 2, T0 + timedelta(days=2), "resync"),
        *_thread("j", "June news", 2, datetime(2024, 6, 10, 9, 0, tzinfo=UTC), "resync"),
        # A thread long enough to be paged (50 messages a page), in April.
        *_thread("p", "Paged", LONG, datetime(2024, 4, 1, 9, 0, tzinfo=UTC), "paging"),
        # A late reply to "Resync speed" whose mailer kept only In-Reply-To.
        make_message(
            "Re: Resync speed",
            "Late: the resync finished.\n",
            message_id="<r9@example.org>",
            sender="Late Writer <late@example.org>",
            date=T0 + timedelta(days=5),
            extra={"In-Reply-To": "<r0@example.org>"},
        ),
    ]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("reader") / "site"
    root.mkdir()
    (root / "listlib.toml").write_text(SITE_TOML)
    source = root.parent / "in.mbox"
    source.write_bytes(mboxrd(messages()))
    config = load_config(root / "listlib.toml")
    with Store(config.site.content_dir).open() as store:
        report = file_sources(store, config.lists, [source])
    assert report.failed == 0 and report.filed == len(messages()), report.summary()
    build_site(config, workers=1)
    return root / "output"


@pytest.fixture(scope="module")
def server(site: Path) -> Iterator[str]:
    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=str(site)))
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


class Tab:
    """One tab of the browser: ``go`` to a URL (waits for its load), ``js`` to evaluate."""

    def __init__(self, browser: DevTools, session: str) -> None:
        self.browser, self.session = browser, session

    def js(self, expression: str) -> Any:
        answer = self.browser.send(
            "Runtime.evaluate", self.session, expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in answer:
            raise AssertionError(f"{expression}: {answer['exceptionDetails']}")
        return answer["result"].get("value")

    def go(self, url: str) -> None:
        self.browser.events.clear()
        self.browser.send("Page.navigate", self.session, url=url)
        self.browser.wait_for("Page.loadEventFired", self.session)

    def wait(self, expression: str, timeout: float = 10) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                value = self.js(expression)
            except RuntimeError as error:
                # Asked while the page navigates (what a wait after a click is often for): not yet.
                if "navigated or closed" not in str(error):
                    raise
                value = None
            if value:
                return value
            time.sleep(0.05)
        raise AssertionError(f"never true: {expression}")

    def click(self, selector: str) -> None:
        """A real mouse click in the middle of the first element ``selector`` finds."""
        self.browser.send("Page.bringToFront", self.session)
        box = self.js(
            f"(() => {{ const e = document.querySelector({selector!r}); e.scrollIntoView({{block: 'center'}});"
            " const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        self.browser.send("Input.dispatchMouseEvent", self.session, type="mouseMoved", x=box[0], y=box[1])
        for kind in ("mousePressed", "mouseReleased"):
            self.browser.send(
                "Input.dispatchMouseEvent", self.session, type=kind, x=box[0], y=box[1], button="left", clickCount=1
            )


@contextlib.contextmanager
def tab(browser: DevTools, width: int = 1280, scripts: bool = True, locale: str = "") -> Iterator[Tab]:
    target = browser.send("Target.createTarget", url="about:blank")["targetId"]
    session = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    try:
        browser.send("Page.enable", session)
        browser.send(
            "Emulation.setDeviceMetricsOverride",
            session,
            width=width,
            height=900,
            deviceScaleFactor=1,
            mobile=width < 600,
        )
        if not scripts:
            browser.send("Emulation.setScriptExecutionDisabled", session, value=True)
        if locale:
            browser.send("Emulation.setLocaleOverride", session, locale=locale)
        yield Tab(browser, session)
    finally:
        browser.send("Target.closeTarget", targetId=target)


def _page_of(site: Path, message_id: str) -> str:
    """The thread page (under output/) that holds a message, found by its anchor."""
    for page in sorted(site.glob("dev/*/*/*.html"), key=lambda p: ("-" in p.name, p.name)):  # first pages first
        text = page.read_text(encoding="utf-8")
        if f"%3C{message_id.replace('@', '%40')}%3E" in text and 'class="thread"' in text:
            return page.relative_to(site).as_posix()
    raise AssertionError(message_id)


# -- readable deep threads ---------------------------------------------------------------------


def test_replies_below_the_indent_cap_are_drawn_at_it_and_say_whom_they_answer(site: Path) -> None:
    page = (site / _page_of(site, "d1@example.org")).read_text(encoding="utf-8")
    articles = re.findall(r'<article class="message indent-(\d+)" id="([^"]+)"', page)
    assert [int(indent) for indent, _ in articles] == [min(n, MAX_INDENT) for n in range(DEEP)]
    calls = [call for _, call in articles]
    for n, call in enumerate(calls):
        section = page[page.index(f'id="{call}"') :]
        section = section[: section.index("</article>")]
        said = re.search(r'<p class="reply-to">reply to <a href="#([^"]+)">(.*?)<span', section)
        if n <= MAX_INDENT:
            assert said is None, section[:500]
        else:
            assert said is not None and said.groups() == (calls[n - 1], f"Writer {n}"), section[:500]
    # The contents say it too, below the cap.
    toc = page[page.index('<details class="toc"') : page.index("</details>")]
    assert toc.count('class="reply-to"') == DEEP - 1 - MAX_INDENT


def test_quotes_of_the_parent_fold_and_quotes_of_anything_else_stay(site: Path) -> None:
    page = (site / _page_of(site, "d1@example.org")).read_text(encoding="utf-8")
    assert page.count('<details class="quote repeat">') == DEEP - 1
    assert page.count('<span class="quote">&gt; Manual line 1 for reply') == DEEP - 1


@pytest.mark.parametrize("width", [390, 1280])
def test_indentation_stops_growing_past_the_cap(browser: DevTools, server: str, site: Path, width: int) -> None:
    with tab(browser, width=width) as t:
        t.go(server + _page_of(site, "d1@example.org"))
        page = t.js("document.documentElement.scrollWidth")
        lefts = t.js("[...document.querySelectorAll('article.message')].map((a) => a.getBoundingClientRect().left)")
    assert page <= width
    assert lefts == sorted(lefts) and len(set(lefts[: MAX_INDENT + 1])) == MAX_INDENT + 1, lefts
    assert set(lefts[MAX_INDENT:]) == {lefts[MAX_INDENT]}, lefts  # the replies deeper than the cap stay at it
    assert width - lefts[-1] >= 0.75 * width, lefts  # and keep most of the width


@pytest.mark.parametrize("scripts", [False, True])
def test_a_message_folds_to_its_header_and_opens_again_with_a_click(
    browser: DevTools, server: str, site: Path, scripts: bool
) -> None:
    shown = "+document.querySelectorAll('article.message')[3].querySelector('.msg-body').checkVisibility()"
    with tab(browser, scripts=scripts) as t:
        t.go(server + _page_of(site, "d1@example.org"))
        assert t.js(shown) == 1
        t.click("article.message:nth-of-type(4) .fold > summary")
        t.wait(shown + " === 0")
        assert t.js("document.querySelectorAll('article.message')[3].querySelector('h2').getClientRects().length") == 1
        label = t.js("document.querySelectorAll('article.message')[3].querySelector('.fold > summary').innerText")
        t.click("article.message:nth-of-type(4) .fold > summary")
        t.wait(shown + " === 1")
    assert label.strip().startswith("Expand"), label


# -- search results grouped by thread ----------------------------------------------------------

RESYNC_THREADS = {"Resync speed": 4, "Slow resync after reboot": 2, "June news": 2}


def test_the_command_line_groups_hits_by_thread(site: Path) -> None:
    import json

    result = run_listlib("search", "--by-thread", "--json", "-n", "20", "resync", cwd=site.parent, check=True)
    answer = json.loads(result.stdout)
    assert answer["total"] == sum(RESYNC_THREADS.values())
    threads = {t["subject"]: t for t in answer["threads"]}
    assert {subject: len(t["hits"]) for subject, t in threads.items()} == RESYNC_THREADS
    for thread in threads.values():
        dates = [hit["date"] for hit in thread["hits"]]
        assert dates == sorted(dates) and thread["url"] == thread["hits"][0]["url"]
    text = run_listlib("search", "--by-thread", "-n", "20", "resync", cwd=site.parent, check=True).stdout
    assert "Resync speed  (4 messages)" in text and "  2024-05-07  dev  Late Writer" in text, text
    # Without --by-thread: one line a message, as before.
    flat = run_listlib("search", "-n", "20", "resync", cwd=site.parent, check=True).stdout
    assert "(4 messages)" not in flat and flat.count("Re: Resync speed") == 3, flat


def test_a_result_row_grows_by_a_ten_character_thread_key(site: Path) -> None:
    import json

    rows = [row for chunk in site.glob("search/seg/*/d*.json") for row in json.loads(chunk.read_text())]
    assert rows and all(len(row) == 9 and re.fullmatch(r"[0-9a-f]{10}", row[8]) for row in rows), rows[:2]


SEARCH_GROUPS_JS = """(() => [...document.querySelectorAll('#search-results > li')].map((li) => ({
  subject: li.querySelector('h2').textContent,
  link: li.querySelector('h2 a').getAttribute('href'),
  hits: [...li.querySelectorAll('.thread-messages > li')].map((m) => ({
    href: m.querySelector('a.hit').getAttribute('href'),
    text: m.querySelector('.meta').textContent,
    datetime: m.querySelector('time').getAttribute('datetime'),
  })),
})))()"""


def test_the_search_page_groups_hits_by_thread_with_list_and_date(browser: DevTools, server: str, site: Path) -> None:
    with tab(browser) as t:
        t.go(server + "search/index.html?q=resync")
        t.wait("document.querySelectorAll('#search-results > li').length > 0")
        groups = t.js(SEARCH_GROUPS_JS)
        status = t.js("document.getElementById('search-status').textContent")
    assert status == "8 messages", status
    assert {g["subject"]: len(g["hits"]) for g in groups} == RESYNC_THREADS, groups
    for group in groups:
        assert group["link"] == group["hits"][0]["href"]
        assert [h["datetime"] for h in group["hits"]] == sorted(h["datetime"] for h in group["hits"])
        assert all(h["text"].endswith(" · dev") for h in group["hits"]), group


# -- new since your last visit -------------------------------------------------------------------


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def _remember(t: Tab, server: str, visits: dict[str, Any] | None) -> None:
    """Open the site's front page and set (None: clear) what the browser remembers."""
    import json

    t.go(server + "index.html")
    t.js(
        "localStorage.clear()"
        if visits is None
        else f"localStorage.setItem('listlib-visits', {json.dumps(json.dumps(visits))})"
    )


MARKS_JS = """[...document.querySelectorAll('.new-tag')].map((tag) => {
  const row = tag.closest('li, article');
  const name = row.querySelector('a.subject, .latest a, h2');
  return [(name.tagName === 'H2' ? name.firstChild : name).textContent.trim(), tag.textContent];
})"""


def test_a_thread_page_marks_messages_newer_than_the_last_visit_and_leads_from_one_to_the_next(
    browser: DevTools, server: str, site: Path
) -> None:
    page = _page_of(site, "r0@example.org")
    thread = "dev/" + page.rsplit("/", 1)[1].removesuffix(".html")
    seen = T0 + timedelta(days=1, hours=1, minutes=30)  # after r0 and r1, before r2 and the late r9
    with tab(browser) as t:
        _remember(t, server, {"lists": {}, "threads": {thread: {"at": _ms(seen), "prev": None}}})
        t.browser.send("Network.enable", t.session)
        t.browser.events.clear()
        t.go(server + page)
        requested = [
            e["params"]["request"]["url"] for e in t.browser.events if e.get("method") == "Network.requestWillBeSent"
        ]
        t.wait("!!document.querySelector('.new-since')")
        marks = t.js(MARKS_JS)
        bar = t.js("document.querySelector('.new-since').textContent")
        order = t.js("[...document.querySelectorAll('article.message')].map((a) => a.id)")
        t.click(".new-since a.next-new")
        first = t.wait("location.hash")
        t.click(f"article[id='{first[1:]}'] a.next-new")
        second = t.wait(f"location.hash !== '{first}' && location.hash")
        stored = t.js("JSON.parse(localStorage.getItem('listlib-visits')).threads")
    assert [m[0] for m in marks] == ["Author r2", "Late Writer"], marks
    assert bar.startswith("New messages in this thread since your last visit: 2."), bar
    assert [first, second] == ["#" + order[2], "#" + order[3]]
    assert stored[thread]["prev"] == _ms(seen) and stored[thread]["at"] > _ms(seen)
    # Nothing is sent anywhere: the page asked its own server for its own files only.
    assert requested and all(url.startswith(server) for url in requested), requested


def test_list_and_month_pages_mark_new_threads_and_new_replies_and_keep_them_for_the_session(
    browser: DevTools, server: str
) -> None:
    seen = T0 + timedelta(days=1, minutes=30)  # after "Deep" and the first "Resync speed" message
    with tab(browser) as t:
        _remember(t, server, {"lists": {"dev": {"at": _ms(seen), "prev": None}}, "threads": {}})
        t.go(server + "dev/2024/05/index.html")
        month = t.js(MARKS_JS)
        t.go(server + "dev/index.html")  # the same visit: the same marks
        listed = t.js(MARKS_JS)
        t.go(server + "dev/2024/05/index.html")
        again = t.js(MARKS_JS)
    assert sorted(month) == [["Resync speed", "new replies"], ["Slow resync after reboot", "new"]], month
    assert again == month
    # The list page's latest threads: June's too; a row there does not say when its thread began.
    assert sorted(listed) == [["June news", "new"], ["Resync speed", "new"], ["Slow resync after reboot", "new"]]


def test_a_thread_never_opened_shows_what_is_new_since_the_list_visit_also_when_reloaded(
    browser: DevTools, server: str, site: Path
) -> None:
    seen = T0 + timedelta(days=1, hours=1, minutes=30)  # after r0 and r1
    with tab(browser) as t:
        _remember(t, server, {"lists": {"dev": {"at": _ms(seen), "prev": None}}, "threads": {}})
        marks = []
        for _ in range(2):
            t.go(server + _page_of(site, "r0@example.org"))
            marks.append(t.js(MARKS_JS))
    assert marks[0] == marks[1] == [["Author r2", "New"], ["Late Writer", "New"]], marks


def test_a_first_visit_marks_nothing_and_is_remembered(browser: DevTools, server: str, site: Path) -> None:
    with tab(browser) as t:
        _remember(t, server, None)
        t.go(server + "dev/2024/05/index.html")
        t.go(server + _page_of(site, "r0@example.org"))
        marks = t.js("document.querySelectorAll('.new-tag, .new-since').length")
        stored = t.js("JSON.parse(localStorage.getItem('listlib-visits'))")
    assert marks == 0
    assert set(stored["lists"]) == {"dev"} and len(stored["threads"]) == 1


def test_without_scripts_nothing_is_marked_and_nothing_is_missing(browser: DevTools, server: str, site: Path) -> None:
    seen = {"lists": {"dev": {"at": _ms(T0), "prev": None}}, "threads": {}}
    pages = ["dev/index.html", "dev/2024/05/index.html", _page_of(site, "r0@example.org")]
    found = {}
    with tab(browser) as t:
        _remember(t, server, seen)
    with tab(browser, scripts=False) as t:
        for page in pages:
            t.go(server + page)
            found[page] = t.js(
                "[document.querySelectorAll('.new-tag, .new-since').length,"
                " document.querySelectorAll('.latest li, .threads li, article.message').length]"
            )
    assert found == {pages[0]: [0, 5], pages[1]: [0, 3], pages[2]: [0, 4]}, found


def test_next_new_message_leads_to_the_later_page_of_a_long_thread(browser: DevTools, server: str, site: Path) -> None:
    page = _page_of(site, "p0@example.org")
    thread = "dev/" + page.rsplit("/", 1)[1].removesuffix(".html")
    seen = datetime(2024, 4, 1, 9, 0, tzinfo=UTC) + timedelta(hours=LONG - 4, minutes=30)  # the last three are new
    with tab(browser) as t:
        _remember(t, server, {"lists": {}, "threads": {thread: {"at": _ms(seen), "prev": None}}})
        t.go(server + page)
        t.wait("!!document.querySelector('.new-since')")
        bar = t.js("document.querySelector('.new-since').textContent")
        here = t.js("document.querySelectorAll('.new-tag').length")
        t.click(".new-since a.next-new")
        t.wait("location.pathname.endsWith('-2.html') && document.readyState === 'complete'")
        t.wait("!!document.querySelector('.new-since')")
        there = t.js("[...document.querySelectorAll('article.message.new')].map((a) => a.id)")
        target = t.js("location.hash.slice(1)")
    assert bar.startswith("New messages in this thread since your last visit: 3."), bar
    assert here == 0 and len(there) == 3 and target == there[0], (here, there, target)


# -- dates in the reader's format ----------------------------------------------------------------

DATES_JS = """[...document.querySelectorAll('time[datetime]')].map(
  (t) => [t.getAttribute('datetime'), t.textContent.replace(/\\u202f/g, ' '), t.title])"""


@pytest.mark.parametrize(
    ("locale", "moment", "day"),
    [
        ("de-DE", "03.05.2024, 01:00", "03.05.2024"),
        ("en-US", "May 3, 2024, 1:00 AM", "May 3, 2024"),
        ("en-GB", "3 May 2024, 01:00", "3 May 2024"),
    ],
)
def test_dates_show_in_the_readers_language_and_zone_over_the_iso_form(
    browser: DevTools, server: str, site: Path, locale: str, moment: str, day: str
) -> None:
    thread = _page_of(site, "r0@example.org")
    with tab(browser, locale=locale) as t:
        t.browser.send("Emulation.setTimezoneOverride", t.session, timezoneId="America/Los_Angeles")
        t.go(server + thread)
        t.wait("document.querySelector('[data-time-zone]').textContent !== 'UTC'")
        times = t.js(DATES_JS)
        t.go(server + "dev/2024/05/index.html")
        days = t.js(DATES_JS)
        t.go(server + "search/index.html?q=resync")
        t.wait("document.querySelectorAll('#search-results time').length > 0")
        found = t.js(DATES_JS)
    # r0 was sent at 2024-05-03 08:00 UTC: 01:00 in Los Angeles; the heading's time is first.
    first = next(x for x in times if x[0] == "2024-05-03T08:00:00Z")
    assert first[1] == moment, first
    assert first[2] == "2024-05-03 08:00 UTC"
    # Days (UTC days) on the month page and in search results, the ISO day kept as the title.
    assert [d[1] for d in days if d[2] == "2024-05-03 (UTC)"][:1] == [day], days
    assert [d[1] for d in found if d[2] == "2024-05-03 (UTC)"][:1] == [day], found


def test_without_scripts_dates_stay_in_their_iso_form(browser: DevTools, server: str, site: Path) -> None:
    with tab(browser, scripts=False, locale="de-DE") as t:
        t.go(server + _page_of(site, "r0@example.org"))
        times = t.js(DATES_JS)
        t.go(server + "dev/2024/05/index.html")
        days = t.js(DATES_JS)
    assert ["2024-05-03T08:00:00Z", "2024-05-03 08:00 UTC", ""] in times, times
    assert days and all(re.fullmatch(r"\d{4}-\d\d-\d\d", text) for _iso, text, _title in days), days


# -- the phone layout --------------------------------------------------------------------------

PHONE_PAGES = [
    "index.html",
    "dev/index.html",
    "dev/2024/05/index.html",
    "dev/2024/05/date.html",
    "search/index.html?q=resync",
]

LAYOUT_JS = """(() => {
  const small = [...document.querySelectorAll('.calendar a, .lists a, .by-date a, .threads a, .latest a')]
    .map((a) => a.getBoundingClientRect()).filter((r) => r.height < 24 || r.width < 24).length;
  const boxes = [...document.querySelectorAll('.calendar-wrap, table')]
    .filter((e) => e.scrollWidth > e.clientWidth + 1);
  return {page: document.documentElement.scrollWidth, small, scrolling: boxes.map((e) => e.className)};
})()"""


@pytest.mark.parametrize("page", PHONE_PAGES)
def test_on_a_phone_no_page_scrolls_sideways_and_every_index_target_is_24px(
    browser: DevTools, server: str, page: str
) -> None:
    with tab(browser, width=390) as t:
        t.go(server + page)
        seen = t.js(LAYOUT_JS)
    assert seen == {"page": 390, "small": 0, "scrolling": []}, seen


def test_on_a_phone_the_calendar_names_its_months_and_the_lists_table_keeps_its_counts(
    browser: DevTools, server: str, site: Path
) -> None:
    artifacts = Path(os.environ.get("LISTLIB_ARTIFACTS") or REPO / "tests" / "artifacts") / "reader"
    artifacts.mkdir(parents=True, exist_ok=True)
    with tab(browser, width=390) as t:
        t.go(server + "dev/index.html")
        may = t.js(
            "(() => { const a = document.querySelector('.calendar td[data-m=May] a');"
            " return [a.parentElement.innerText, a.getBoundingClientRect().width]; })()"
        )
        t.go(server + "index.html")
        counts = t.js("document.querySelector('.lists tbody tr').innerText")
    shown = may[0].split()
    assert shown[0] == "May" and shown[-2:] == [str(DEEP + 3 + 2 + 1), "3"], may  # the month, messages, threads
    assert may[1] >= 48, may  # six to a row, not thirteen
    assert "threads" in counts and "messages" in counts, counts
    # Screenshots of the reader's pages at both widths, kept with the accessibility test's.
    for width in (390, 1280):
        for name, page in [
            ("thread", _page_of(site, "d1@example.org")),
            *[(p.split("?")[0].replace("/", "-"), p) for p in PHONE_PAGES],
        ]:
            with tab(browser, width=width) as t:
                t.go(server + page)
                if page.startswith("search/"):  # once the results are in
                    t.wait("document.querySelectorAll('#search-results > li').length > 0")
                shot = t.browser.send("Page.captureScreenshot", t.session, format="png", captureBeyondViewport=True)
            (artifacts / f"{name}-{width}.png").write_bytes(base64.b64decode(shot["data"]))


# -- accessibility of what the scripts add -------------------------------------------------------


@pytest.mark.skipif(AXE is None, reason="axe-core is not installed (npm install --prefix tests/.node axe-core)")
@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [390, 1280])
@pytest.mark.parametrize("page", ["thread", "month", "list"])
def test_new_marks_and_deep_replies_have_no_aa_violation(
    browser: DevTools, server: str, site: Path, page: str, width: int, scheme: str
) -> None:
    path = {"thread": _page_of(site, "r0@example.org"), "month": "dev/2024/05/index.html", "list": "dev/index.html"}
    with tab(browser) as t:
        _remember(t, server, {"lists": {"dev": {"at": _ms(T0), "prev": None}}, "threads": {}})
    violations = audit(browser, server + path[page], width, scheme)
    assert violations == [], violations
    if page == "thread":  # and the deep thread, its "reply to" lines and folded quotes
        assert audit(browser, server + _page_of(site, "d1@example.org"), width, scheme) == []
