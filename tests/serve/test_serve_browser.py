"""listlib serve with a real headless Chromium (DevTools protocol, see tests/support/chromium.py):
a page open in the browser reloads by itself after a template change, shows a failed
rebuild's error as text in an overlay without reloading, and reloads once it is fixed.
Skipped when Chromium is not installed."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from ..support.chromium import CHROMIUM, DevTools
from ..support.devserver import DevServer, fill, post, set_footer, write_site

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")

OVERLAY_JS = """(() => {
  const box = document.getElementById("listlib-error");
  return box ? {text: box.textContent, images: box.querySelectorAll("img").length} : null;
})()"""


def evaluate(browser: DevTools, session: str, expression: str) -> Any:
    return browser.send("Runtime.evaluate", session, expression=expression, returnByValue=True)["result"].get("value")


def wait_for_value(browser: DevTools, session: str, expression: str, timeout: float = 10) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = evaluate(browser, session, expression)
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"{expression} stayed empty for {timeout} s")


@pytest.mark.slow
def test_an_open_page_reloads_itself_after_a_template_change(tmp_path: Path) -> None:
    root = tmp_path / "site"
    write_site(root)
    fill(root, [post(1, "Plans for 2.0"), post(2, "Re: Plans for 2.0", reply_to=1)])
    server = DevServer.start(root)
    profile = tempfile.TemporaryDirectory(prefix="listlib-chromium-")
    browser = DevTools(Path(profile.name))
    try:
        target = browser.send("Target.createTarget", url="about:blank")["targetId"]
        session = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime"):
            browser.send(f"{domain}.enable", session)
        browser.send("Page.navigate", session, url=server.url + "dev/")
        browser.wait_for("Page.loadEventFired", session)
        assert evaluate(browser, session, "document.querySelector('.marker').textContent") == "footer-v1"
        # Mark this document: only a reload makes a new one without the mark.
        evaluate(browser, session, "window.listlibMark = 'old page'")

        browser.events.clear()
        started = time.monotonic()
        set_footer(root, "footer-v2")
        browser.wait_for("Page.loadEventFired", session, timeout=10)
        reloaded = time.monotonic() - started
        assert evaluate(browser, session, "document.querySelector('.marker').textContent") == "footer-v2"
        assert evaluate(browser, session, "typeof window.listlibMark") == "undefined"
        print(f"Chromium reloaded the page {reloaded:.2f} s after the template change")
        assert reloaded < 2.0

        # A broken template: the error shows as text in an overlay, and the page stays.
        evaluate(browser, session, "window.listlibMark = 'still here'")
        set_footer(root, '{{ site["<img src=x onerror=alert(1)>"] }}')
        overlay = wait_for_value(browser, session, OVERLAY_JS)
        assert "<img src=x onerror=alert(1)>" in overlay["text"] and "base.html:" in overlay["text"]
        assert overlay["images"] == 0
        assert evaluate(browser, session, "window.listlibMark") == "still here"

        # Fixed: the page reloads by itself, without the overlay.
        browser.events.clear()
        set_footer(root, "footer-v3")
        browser.wait_for("Page.loadEventFired", session, timeout=10)
        assert evaluate(browser, session, "document.querySelector('.marker').textContent") == "footer-v3"
        assert evaluate(browser, session, OVERLAY_JS) is None
        errors = [e for e in browser.events if e.get("method") == "Runtime.exceptionThrown"]
        assert errors == []
    finally:
        browser.close()
        profile.cleanup()
        code = server.stop()
    assert code == 0, server.output()
