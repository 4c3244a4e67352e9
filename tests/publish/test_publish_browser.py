"""The published site read from the bucket in headless Chromium: the sample site,
published to moto's S3 server on 127.0.0.1, browsed over HTTP from the bucket's own
URLs (site index -> list -> thread page, the search page with a query), with the
Content-Type and bytes the bucket answers: no console error, no failed request."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest

from ..support.chromium import CHROMIUM, DevTools, fresh_browser
from ..support.helpers import REPO, run_listlib
from ..support.s3server import CREDENTIALS, moto_s3

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")

SEARCH_DONE_JS = """new Promise((resolve) => {
  const check = () => {
    const status = document.getElementById('search-status').textContent;
    if (status && status !== 'Searching\\u2026') {
      resolve({status, hits: [...document.querySelectorAll('#search-results li a.hit')].map((a) => a.href)});
    } else {
      setTimeout(check, 50);
    }
  };
  check();
})"""
LINKS_JS = "[...document.querySelectorAll('a[href]')].map((a) => a.href)"


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of the published sample site's folder in the bucket."""
    with moto_s3() as s3:
        root = tmp_path_factory.mktemp("browse") / "site"
        root.mkdir()
        shutil.copy(REPO / "listlib.toml", root / "listlib.toml")
        s3.new_bucket("browse")
        # public reads, as a bucket behind a plain website endpoint is configured
        statement = {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::browse/*"}
        s3.client.put_bucket_policy(
            Bucket="browse", Policy=json.dumps({"Version": "2012-10-17", "Statement": [statement]})
        )
        with (root / "listlib.toml").open("a") as file:
            file.write(
                f'\n[publish]\ntarget = "s3://browse/archive"\nendpoint_url = "{s3.url}"\nregion = "us-east-1"\n'
            )
        run_listlib("import", REPO / "sample", cwd=root, check=True)
        run_listlib("build", "--publish", "-q", cwd=root, env=CREDENTIALS, check=True)
        yield f"{s3.url}/browse/archive/"


@pytest.fixture(scope="module")
def browser() -> Iterator[DevTools]:
    with fresh_browser() as devtools:
        yield devtools


def visit(browser: DevTools, url: str, expression: str, promise: bool = False) -> tuple[Any, list[str]]:
    """Load ``url``, evaluate ``expression`` there; its value and the errors seen."""
    target = browser.send("Target.createTarget", url="about:blank")["targetId"]
    session = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    try:
        for domain in ("Page", "Runtime", "Log", "Network"):
            browser.send(f"{domain}.enable", session)
        browser.events.clear()
        browser.send("Page.navigate", session, url=url)
        browser.wait_for("Page.loadEventFired", session)
        value = browser.send(
            "Runtime.evaluate", session, expression=expression, awaitPromise=promise, returnByValue=True
        )
        errors = []
        for event in browser.events:
            if event.get("sessionId") != session:
                continue
            params = event.get("params", {})
            if event["method"] == "Runtime.exceptionThrown":
                errors.append(json.dumps(params["exceptionDetails"])[:300])
            elif event["method"] == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
                errors.append(json.dumps(params["args"])[:300])
            elif event["method"] == "Log.entryAdded" and params["entry"]["level"] == "error":
                if not params["entry"].get("url", "").endswith("/favicon.ico"):
                    errors.append(f"{params['entry']['text']} {params['entry'].get('url', '')}")
            elif event["method"] == "Network.responseReceived" and params["response"]["status"] >= 400:
                errors.append(f"{params['response']['status']} {params['response']['url']}")
        return value["result"].get("value"), errors
    finally:
        browser.send("Target.closeTarget", targetId=target)


def test_the_site_browses_from_the_bucket_without_errors(browser: DevTools, published: str) -> None:
    links, errors = visit(browser, published + "index.html", LINKS_JS)
    assert errors == []
    list_page = next(link for link in links if link.endswith("/dev/index.html"))
    links, errors = visit(browser, list_page, LINKS_JS)
    assert errors == []
    thread = next(link for link in links if link.rsplit("/", 1)[1].startswith("3x") and link.endswith(".html"))
    links, errors = visit(browser, thread, "document.title + ' ' + document.body.innerText.length")
    assert errors == [] and links


def test_the_search_page_searches_the_bucket(browser: DevTools, published: str) -> None:
    seen, errors = visit(browser, published + "search/index.html?q=" + quote("autosave"), SEARCH_DONE_JS, True)
    assert errors == []
    assert seen["hits"], seen
    assert all(hit.startswith(published) for hit in seen["hits"]), seen
