"""The README's search examples find messages in the bundled sample site, through the
Python reader and the same number through the JS client; ``from:`` finds an author by
any part of a name written as one word."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from listlib.build import build_site
from listlib.config import load_config
from listlib.search.reader import Source, search

from ..build.test_build import add, build, post
from ..support.helpers import REPO, make_message
from .test_search import NODE, _node

README = REPO / "README.md"


def readme_examples() -> list[str]:
    """The queries of the README's example list (every backticked span of it)."""
    text = README.read_text(encoding="utf-8")
    block = text[text.index("<!-- search-examples -->") : text.index("<!-- /search-examples -->")]
    return [query for line in block.splitlines() if line.startswith("- ") for query in re.findall(r"`([^`]+)`", line)]


@pytest.fixture(scope="module")
def sample_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The search index of the repository's sample site, built in a copy of it."""
    site = tmp_path_factory.mktemp("sample")
    shutil.copytree(REPO / "content", site / "content", ignore=shutil.ignore_patterns(".index", ".tmp", ".lock"))
    shutil.copy(REPO / "listlib.toml", site / "listlib.toml")
    build_site(load_config(site / "listlib.toml"), workers=1)
    return site / "output/search"


def test_the_readme_lists_search_examples() -> None:
    examples = readme_examples()
    assert len(examples) >= 10 and "from:kenji" in examples and '"feature freeze"' in examples


@pytest.mark.parametrize("query", readme_examples())
def test_each_readme_example_finds_messages_in_the_sample_site(sample_index: Path, query: str) -> None:
    assert search(Source(sample_index), query).total > 0, query


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_the_js_client_finds_as_many_for_each_readme_example(sample_index: Path) -> None:
    queries = readme_examples()
    expected = [search(Source(sample_index), q).total for q in queries]
    got = _node([{"q": q} for q in queries], sample_index)
    assert [g["total"] for g in got] == expected  # type: ignore[union-attr,index]


NAMES = {
    1: "NeilBrown <neilb@suse.de>",
    2: "Neil Brown <nb@example.org>",
    3: "DAVID McKenzie <dmck@example.org>",
    4: "Ann Neilson <ann@example.org>",
}


def _by(n: int) -> bytes:
    message = post(n, f"Message {n}")
    return message.replace(f"From: Person {n % 3} <p{n % 3}@example.org>".encode(), f"From: {NAMES[n]}".encode())


def test_from_finds_the_parts_of_a_name_written_as_one_word(site: Path) -> None:
    add(site, *(_by(n) for n in NAMES))
    build(site)
    index = site / "output/search"

    def subjects(query: str) -> set[str]:
        return {hit.subject for hit in search(Source(index), query).hits}

    assert subjects("from:neil") == {"Message 1", "Message 2"}  # not Neilson
    assert subjects("from:brown") == {"Message 1", "Message 2"}
    assert subjects("from:neilbrown") == {"Message 1"}
    assert subjects('from:"neil brown"') == {"Message 1", "Message 2"}
    assert subjects("from:mckenzie") == subjects("from:kenzie") == {"Message 3"}
    assert subjects("from:david") == {"Message 3"}
    assert subjects("neil") == {"Message 1", "Message 2"}  # the author's words count everywhere
    assert subjects("from:neil*") == {"Message 1", "Message 2", "Message 4"}
    if NODE is not None:
        queries = ["from:neil", "from:brown", "from:kenzie", "from:neil*"]
        got = _node([{"q": q} for q in queries], index)
        assert [g["total"] for g in got] == [2, 2, 1, 3]  # type: ignore[union-attr,index]


def test_from_matches_address_parts_where_addresses_are_shown(site: Path) -> None:
    toml = site / "listlib.toml"
    toml.write_text(toml.read_text().replace("[site]\n", "[site]\nobfuscate_addresses = false\n"))
    add(site, make_message("Hello", sender="Someone <neil.brown@example.org>", message_id="<a@x>"))
    build(site)
    index = Source(site / "output/search")
    assert search(index, "from:brown").total == 1
    assert search(index, "from:neil").total == 1
