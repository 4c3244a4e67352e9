"""``is:CLASS`` in search: the message's class (``classify``) narrows the results in the
Python reader, ``listlib search`` and the JS client alike; new class rules re-index."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from listlib.search.query import Clause, parse_query
from listlib.search.reader import Source, search

from ..build.test_build import add, build, post
from ..support.helpers import SITE_TOML, run_listlib
from .test_search import NODE, _node

DIFF = "Fix the resync.\n\ndiff --git a/md.c b/md.c\n--- a/md.c\n+++ b/md.c\n@@ -1 +1 @@\n-old\n+new resync\n"
MESSAGES = [
    post(1, "[PATCH] md: fix the resync", body=DIFF, at=timedelta(hours=1)),
    post(2, "Re: [PATCH] md: fix the resync", reply_to=1, refs=(1,), body="Reviewed-by: A <a@x>\n\nresync ok\n"),
    post(3, "Resync is slow", body="My resync takes days.\n", at=timedelta(hours=3)),
    post(4, "[ANN] mdadm 4.3 released", body="The resync code is faster.\n", at=timedelta(hours=4)),
    post(5, "Build failed", body="resync test failed\n", extra={"Auto-Submitted": "auto-generated"}),
]
QUERIES = ["is:patch", "resync is:review", "resync -is:automated", "is:announcement", "is:cover", "IS:PATCH resync"]


def subjects(site: Path, query: str) -> list[str]:
    return sorted(hit.subject for hit in search(Source(site / "output/search"), query).hits)


@pytest.fixture
def classed_site(site: Path) -> Path:
    add(site, *MESSAGES)
    build(site)
    return site


def test_is_parses_to_the_class_field() -> None:
    query = parse_query("resync is:patch -is:automated")
    assert query.must == [Clause(("resync",)), Clause(("patch",), "c:")]
    assert query.must_not == [Clause(("automated",), "c:")]


def test_is_narrows_the_results_to_a_class(classed_site: Path) -> None:
    assert subjects(classed_site, "is:patch") == ["[PATCH] md: fix the resync"]
    assert subjects(classed_site, "resync is:review") == ["Re: [PATCH] md: fix the resync"]
    assert subjects(classed_site, "is:announcement") == ["[ANN] mdadm 4.3 released"]
    assert "Build failed" not in subjects(classed_site, "resync -is:automated")
    assert len(subjects(classed_site, "resync -is:automated")) == 4
    assert subjects(classed_site, "is:vote") == []
    # A class is no word of the message: "patch" is not highlighted, nor found as text.
    results = search(Source(classed_site / "output/search"), "resync is:patch")
    assert "patch" not in results.terms and "resync" in results.terms
    assert subjects(classed_site, "announcement") == []


def test_listlib_search_takes_is(classed_site: Path) -> None:
    out = run_listlib("search", "--json", "is:patch", cwd=classed_site, check=True).stdout
    assert [hit["subject"] for hit in json.loads(out)["hits"]] == ["[PATCH] md: fix the resync"]


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_the_js_client_gives_the_python_readers_results_for_is(classed_site: Path) -> None:
    folder = classed_site / "output/search"
    expected = []
    for query in QUERIES:
        results = search(Source(folder), query)
        expected.append({"total": results.total, "hits": [[h.call, h.score] for h in results.hits]})
    got = _node([{"q": q} for q in QUERIES], folder)
    assert [{"total": g["total"], "hits": g["hits"]} for g in got] == expected  # type: ignore[union-attr,index]
    assert all(e["total"] for e in expected[:4])


def test_new_class_rules_re_index_the_classes(classed_site: Path) -> None:
    (classed_site / "listlib.toml").write_text(
        SITE_TOML + '[[classes.rules]]\nclass = "announcement"\nsubject = "^Resync is slow"\n'
    )
    report = build(classed_site)
    assert report.search is not None and report.search.rebuilt
    assert subjects(classed_site, "is:announcement") == ["Resync is slow", "[ANN] mdadm 4.3 released"]
