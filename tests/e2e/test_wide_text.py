"""Long preformatted lines in real Chromium: a kernel log keeps its lines whole in a box
that scrolls sideways (focusable and labelled) while prose wraps at a comfortable
measure; the page itself never scrolls sideways; "Wrap long lines" (a checkbox, no
script) wraps the box. Skipped without Chromium."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from listlib.display.textbody import MEASURE, is_wide

from ..build.test_build import add, build, call_of, post
from ..support.chromium import CHROMIUM, DevTools, fresh_browser

LOG = [
    f"[ {n:4d}.{n * 7919 % 1000000:06d}] md/raid1:md{n % 4}: Disk failure on sdb{n}, disabling device. "
    f"Operation continuing on {n % 3 + 1} devices (array state: clean, degraded; bitmap: 3/8 pages [12KB], 64MB chunk)"
    for n in range(1, 9)
]
PROSE = (
    "I tried the patch on two machines with the same array. It works on the first one. "
    "On the second the resync starts again after every reboot, which looks like the bitmap "
    "is not written back."
)


def test_long_lines_of_logs_code_and_diffs_are_wide_and_prose_is_not() -> None:
    assert all(len(line) > MEASURE for line in LOG) and is_wide("\n".join(LOG))
    assert is_wide("+\tif (test_bit(MD_RECOVERY_RUNNING, &mddev->recovery) && !test_bit(MD_RECOVERY_DONE, &x))")
    assert not is_wide(PROSE)  # a paragraph a mail client left unwrapped
    assert not is_wide("short lines\nonly here")


WIDE_JS = """(() => {
  const wide = document.querySelector('pre.wide'), prose = [...document.querySelectorAll('pre.text')].find(
    (p) => !p.classList.contains('wide') && p.textContent.includes('I tried the patch'));
  const line = parseFloat(getComputedStyle(wide).lineHeight);
  return {
    lines: Math.round((wide.clientHeight - parseFloat(getComputedStyle(wide).paddingTop) * 2) / line),
    scrolls: wide.scrollWidth > wide.clientWidth + 1,
    proseScrolls: prose.scrollWidth > prose.clientWidth + 1,
    proseWraps: prose.clientHeight > 1.5 * parseFloat(getComputedStyle(prose).lineHeight),
    wider: wide.clientWidth > prose.clientWidth,
    focusable: wide.tabIndex === 0, role: wide.getAttribute('role'), label: wide.getAttribute('aria-label'),
    page: document.documentElement.scrollWidth <= document.documentElement.clientWidth,
  };
})()"""


@pytest.fixture(scope="module")
def browser() -> Iterator[DevTools]:
    if CHROMIUM is None:
        pytest.skip("Chromium is not installed")
    with fresh_browser() as devtools:
        yield devtools


def _measure(browser: DevTools, url: str, width: int, *, wrap: bool = False) -> dict[str, Any]:
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
        browser.events.clear()
        browser.send("Page.navigate", session, url=url)
        browser.wait_for("Page.loadEventFired", session)
        if wrap:
            browser.send("Runtime.evaluate", session, expression="document.querySelector('.wrap-toggle input').click()")
        return browser.send("Runtime.evaluate", session, expression=WIDE_JS, returnByValue=True)["result"]["value"]
    finally:
        browser.send("Target.closeTarget", targetId=target)


@pytest.mark.parametrize("width", [390, 1280])
def test_a_log_keeps_its_lines_in_a_box_that_scrolls_and_prose_wraps(site: Path, browser: DevTools, width: int) -> None:
    add(site, post(1, "Resync after reboot", body=PROSE + "\n\nThe log:\n\n" + "\n".join(LOG) + "\n\nThanks,\nAnn\n"))
    build(site)
    url = (site / "output" / call_of(site, 1)[1].replace(".eml", ".html")).as_uri()
    seen = _measure(browser, url, width)
    assert seen["lines"] == len(LOG), seen  # a line each: none wrapped (the prose around it has its own box)
    assert seen["focusable"] and seen["role"] == "region" and seen["label"]
    assert seen["page"] and not seen["proseScrolls"] and seen["proseWraps"], seen
    assert seen["scrolls"], seen  # its lines are longer than the box, even at 1280 px
    assert seen["wider"] or width < 600, seen  # on a wide screen it takes more than the prose measure
    wrapped = _measure(browser, url, width, wrap=True)
    assert not wrapped["scrolls"] and wrapped["lines"] > len(LOG) and wrapped["page"], wrapped
