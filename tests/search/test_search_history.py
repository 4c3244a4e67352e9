"""Search answers do not depend on the index's history: an archive indexed build after
build (new messages in batches, take-downs and redactions in between, segments merged
or not) ranks and scores every query exactly as the same archive indexed from scratch,
in the Python reader and in the JS client."""

from __future__ import annotations

import random
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from listlib.search.reader import Source, search
from listlib.store.core import Store
from listlib.verify import repair_store

from ..build.test_build import add, build
from ..support.helpers import SITE_TOML, make_message
from .test_search import NODE, _node, assert_twins_match

WORDS = [
    "raid",
    "disk",
    "bitmap",
    "journal",
    "reshape",
    "array",
    "mdadm",
    "kernel",
    "write",
    "hole",
    "resync",
    "spare",
    "device",
    "sector",
    "chunk",
]
QUERIES = [
    "raid",
    "bitmap journal",
    '"write hole"',
    "resh*",
    "s*",
    "disk list:dev",
    "array list:announce",
    "subject:raid",
    'subject:"write hole"',
    "from:person",
    "array -spare",
    "sector after:2024-03",
    "twin",
]
PAGES = [("raid", 3, 4), ("twin", 1, 3), ("resh*", 5, 5)]
T0 = datetime(2024, 1, 3, 9, 0, tzinfo=UTC)


def _messages(rng: random.Random, count: int) -> list[tuple[str, bytes]]:
    """Messages over two lists and about eight months, from a small vocabulary; a few
    identical twins on one day (equal scores: the order between them is tested too)."""
    out = []
    for n in range(1, count + 1):
        slug = rng.choice(["dev", "announce"])
        if n % 9 == 0:
            subject, body, at = "twin question", "twin body\n", timedelta(days=100, hours=n % 7)
        else:
            subject = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
            body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 80))) + "\n"
            at = timedelta(days=rng.randint(0, 240), hours=rng.randint(0, 23))
        sender = f"Person {n % 4} <p{n % 4}@example.org>"
        to = f"{slug}@lists.example.org"
        raw = make_message(subject, body, message_id=f"<m{n}@example.org>", sender=sender, to=to, date=T0 + at)
        out.append((slug, raw))
    return out


def _path_of(site: Path, slug: str, n: int) -> Path:
    with Store(site / "content").open() as store:
        (row,) = store.index.rows_by_message_id(slug, f"m{n}@example.org")
    return site / "content" / row.path


def _take_down(site: Path, removed: list[Path], redacted: list[Path]) -> None:
    """Remove some stored messages and change the bytes of others (as a take-down and a redaction do)."""
    for path in removed:
        path.unlink()
    for stored in redacted:
        stored.write_bytes(stored.read_bytes().replace(b"\n\n", b"\n\nredacted raid ", 1))
    with Store(site / "content").open(discard_damaged_index=True) as store:
        repair_store(store)


def _answers(folder: Path) -> list[list[tuple[str, float]]]:
    source = Source(folder)
    out = [[(h.call, h.score) for h in search(source, q, limit=1000).hits] for q in QUERIES]
    out += [[(h.call, h.score) for h in search(source, q, offset=o, limit=n).hits] for q, o, n in PAGES]
    return out


def _js_answers(folder: Path, scripts: bool = False) -> list[list[tuple[str, float]]]:
    """The JS client's answers, reading the index files (or their script twins, as from file://)."""
    cases = [{"q": q, "limit": 1000} for q in QUERIES] + [{"q": q, "offset": o, "limit": n} for q, o, n in PAGES]
    cases = [{**case, "scripts": scripts} for case in cases]
    got = _node(cases, folder)
    return [[(call, score) for call, score in case["hits"]] for case in got]  # type: ignore[union-attr]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_incremental_index_answers_like_one_built_from_scratch(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    messages = _messages(rng, 60)
    site = tmp_path / "incremental" / "site"
    site.mkdir(parents=True)
    (site / "listlib.toml").write_text(SITE_TOML)
    numbers = list(range(1, len(messages) + 1))
    added: list[int] = []
    gone: set[int] = set()
    while numbers:
        batch = numbers[: rng.randint(1, 12)]
        numbers = numbers[len(batch) :]
        add(site, *(messages[n - 1][1] for n in batch))
        added.extend(batch)
        build(site)
        if rng.random() < 0.5:
            candidates = [n for n in added if n not in gone]
            removed = rng.sample(candidates, min(len(candidates), rng.randint(0, 2)))
            gone.update(removed)
            redacted = rng.sample([n for n in candidates if n not in removed], 1)
            paths = {n: _path_of(site, messages[n - 1][0], n) for n in removed + redacted}
            _take_down(site, [paths[n] for n in removed], [paths[n] for n in redacted])
            build(site)
    scratch = tmp_path / "scratch" / "site"
    scratch.mkdir(parents=True)
    (scratch / "listlib.toml").write_text(SITE_TOML)
    shutil.copytree(site / "content", scratch / "content")
    build(scratch)
    expected = _answers(scratch / "output/search")
    assert sum(map(len, expected)) > 100
    assert _answers(site / "output/search") == expected
    assert_twins_match(site / "output/search")
    if NODE is not None:
        assert _js_answers(site / "output/search") == expected
        assert _js_answers(site / "output/search", scripts=True) == expected
        assert _js_answers(scratch / "output/search") == expected
