"""A paged thread in a real headless Chromium: the permanent URL of a message on a later
page of its thread (a redirect page) lands on that page, scrolled to the message.
Skipped when Chromium is not installed."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from ..build.test_build import add, build, call_of, page_of
from ..build.test_thread_pages import LONG_THREAD
from ..support.chromium import CHROMIUM, DevTools, fresh_browser

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")

WHERE_JS = """(() => {
  const target = document.getElementById(decodeURIComponent(location.hash.slice(1)));
  return {ready: document.readyState, href: location.href, title: document.title, scrollY: window.scrollY,
          top: target ? Math.round(target.getBoundingClientRect().top) : null, height: window.innerHeight};
})()"""


def landed(browser: DevTools, url: str, expected: str) -> dict[str, Any]:
    """Open ``url`` and follow its redirect page; where the tab is once on ``expected``."""
    target = browser.send("Target.createTarget", url="about:blank")["targetId"]
    session = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    try:
        browser.send("Page.enable", session)
        browser.send(
            "Emulation.setDeviceMetricsOverride", session, width=1280, height=900, deviceScaleFactor=1, mobile=False
        )
        browser.send("Page.navigate", session, url=url)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                where = browser.send("Runtime.evaluate", session, expression=WHERE_JS, returnByValue=True)
            except RuntimeError:  # the redirect page navigated while asked
                continue
            value = where["result"].get("value") or {}
            if str(value.get("href", "")).split("#")[0].endswith(expected) and value.get("ready") == "complete":
                return value
            time.sleep(0.1)
        raise AssertionError(f"{url} did not land on {expected}")
    finally:
        browser.send("Target.closeTarget", targetId=target)


def test_a_permalink_to_a_message_on_page_two_scrolls_to_it(site: Path) -> None:
    add(site, *LONG_THREAD)
    build(site)
    call, _path = call_of(site, 6)  # the last message of page 2
    permalink = (site / "output" / page_of(site, 6)).as_uri()
    page_two = f"{call_of(site, 1)[0]}-2.html"
    with fresh_browser() as browser:
        where = landed(browser, permalink, page_two)
    assert where["href"].endswith(f"{page_two}#{call}")
    assert "(page 2 of 4)" in where["title"]
    assert where["scrollY"] > 0 and 0 <= where["top"] < where["height"] // 4, where
