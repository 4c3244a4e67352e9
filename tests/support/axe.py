"""axe-core (the accessibility rules engine, an npm package) run inside a page of the
real headless Chromium of ``tests/support/chromium.py``: ``AXE`` is the path of its
``axe.min.js`` (``tests/.node/``, where ``.ci/run`` installs it, else npm's global
folder), None when it is not installed; ``audit`` opens a page at a width and colour
scheme, injects it, runs the WCAG 2.2 AA rules and returns the violations (and can
save a full-page screenshot). Nothing here installs anything."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from .chromium import DevTools
from .helpers import REPO

#: The rule tags of WCAG 2.0, 2.1 and 2.2 at levels A and AA.
AA_TAGS = ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa")


def _find_axe() -> Path | None:
    local = REPO / "tests" / ".node" / "node_modules" / "axe-core" / "axe.min.js"
    if local.is_file():
        return local
    npm = shutil.which("npm")
    if npm is None:
        return None
    try:
        root = subprocess.run([npm, "root", "-g"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    found = Path(root) / "axe-core" / "axe.min.js" if root else None
    return found if found and found.is_file() else None


AXE = _find_axe()

WAIT_JS = """new Promise((resolve) => {
  const status = document.getElementById('search-status');
  const started = Date.now();
  const check = () => {
    const text = status ? status.textContent : 'none';
    // search.js marks the status busy while it searches (its words are the site's language's).
    if ((text && !(status && status.getAttribute('aria-busy'))) || Date.now() - started > 10000) resolve(text);
    else setTimeout(check, 50);
  };
  check();
})"""

RUN_JS = """axe.run(document, {runOnly: {type: 'tag', values: %s}, resultTypes: ['violations']}).then((r) =>
  r.violations.map((v) => ({id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 5).map((n) => ({target: n.target.join(' '), summary: n.failureSummary}))})))"""


def audit(browser: DevTools, url: str, width: int, scheme: str, screenshot: Path | None = None) -> list[dict[str, Any]]:
    """The axe-core AA violations of ``url`` at ``width`` CSS pixels in the ``scheme``
    ("light" or "dark") colour scheme, after the search page (if it is one) answered."""
    assert AXE is not None
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
        browser.send(
            "Emulation.setEmulatedMedia", session, features=[{"name": "prefers-color-scheme", "value": scheme}]
        )
        browser.events.clear()
        browser.send("Page.navigate", session, url=url)
        browser.wait_for("Page.loadEventFired", session)
        browser.send("Runtime.evaluate", session, expression=WAIT_JS, awaitPromise=True, returnByValue=True)
        browser.send("Runtime.evaluate", session, expression=AXE.read_text(encoding="utf-8"))
        answer = browser.send(
            "Runtime.evaluate",
            session,
            timeout=120,
            expression=RUN_JS % json.dumps(list(AA_TAGS)),
            awaitPromise=True,
            returnByValue=True,
        )
        if "exceptionDetails" in answer:
            raise RuntimeError(f"axe-core failed on {url}: {answer['exceptionDetails']}")
        if screenshot is not None:
            shot = browser.send("Page.captureScreenshot", session, format="png", captureBeyondViewport=True)
            screenshot.write_bytes(base64.b64decode(shot["data"]))
        return answer["result"]["value"]  # type: ignore[no-any-return]
    finally:
        browser.send("Target.closeTarget", targetId=target)
