"""The render pass hands the indexer the text of the messages it displayed (``search.spool``):
the index comes out the same as when the indexer displays every message itself."""

from __future__ import annotations

import json
import shutil
import tracemalloc
from pathlib import Path

import pytest

from listlib.config import load_config
from listlib.display import DisplayOptions, display_message
from listlib.search import update
from listlib.search.document import SearchText, indexer_options, search_text
from listlib.search.spool import SpoolReader, SpoolWriter
from listlib.search.update import update_index
from listlib.values import call_number_from_int

from ..build.test_build import add, build, post
from ..support.helpers import CORPORA

DATA = Path(__file__).parent.parent / "data"


def _samples() -> list[Path]:
    found = sorted((DATA / "display").glob("*.eml"))
    if (CORPORA / "edge").is_dir():
        found += sorted(p for p in (CORPORA / "edge").rglob("*") if p.is_file())
    return found


@pytest.mark.parametrize("obfuscate", [True, False])
def test_the_render_pass_display_gives_the_indexers_search_text(obfuscate: bool) -> None:
    samples = _samples()
    assert samples
    for path in samples:
        raw = path.read_bytes()
        own = search_text(display_message(raw, indexer_options(obfuscate)), obfuscate)
        for images in (True, False):
            options = DisplayOptions(obfuscate_addresses=obfuscate, load_remote_images=images, attachment_base="../a/")
            assert search_text(display_message(raw, options), obfuscate) == own, path


_FIXTURES = [
    "hostile-attachment-names.eml",
    "html-only-hostile.eml",
    "patch-attached.eml",
    "dmarc-wrapped.eml",
    "latin1-really-cp1252.eml",
    "plain-quotes-signature.eml",
    "related-cid-image.eml",
]


def _segment_files(site: Path) -> dict[str, bytes]:
    manifest = json.loads((site / "output/search/manifest.json").read_bytes())
    (info,) = manifest["segments"]
    return {p.name: p.read_bytes() for p in sorted((site / "output/search/seg" / info["id"]).iterdir())}


@pytest.mark.parametrize("count", [30, 150])  # token by token, and with numpy
def test_an_index_fed_by_the_render_pass_equals_one_made_alone(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    fixtures = [
        f"To: dev@lists.example.org\nMessage-ID: <fixture-{name}@example.org>\n".encode()
        + (DATA / "display" / name).read_bytes()
        for name in _FIXTURES
    ]
    add(site, *(post(n, f"Topic {n // 4} резервный", reply_to=n - 1 if n % 4 else None) for n in range(count)))
    add(site, *fixtures)
    displayed: list[str] = []
    analyse = update.analyse

    def counting(row, raw, obfuscate, cls=None):  # type: ignore[no-untyped-def]
        displayed.append(row.call)
        return analyse(row, raw, obfuscate, cls)

    monkeypatch.setattr(update, "analyse", counting)
    build(site)
    assert displayed == []  # every document came from the render pass
    alone = tmp_path / "alone"
    shutil.copytree(site, alone)
    update_index(load_config(alone / "listlib.toml"), clean=True)
    assert len(set(displayed)) == count + len(fixtures)
    assert _segment_files(alone) == _segment_files(site)


def test_stale_and_torn_spool_records_are_not_used(tmp_path: Path) -> None:
    folder = tmp_path / "spool"
    writer = SpoolWriter(folder)
    text = SearchText("Subject", "Ann", "Ann", "an…@example.org", "a.txt", "Body text")
    writer.add("AAAAAAAA", "hash-1", text)
    writer.add("BBBBBBBB", "hash-2", text._replace(body="other"))
    writer.close()
    reader = SpoolReader(folder)
    assert reader.text("AAAAAAAA", "hash-1") == text
    assert reader.text("BBBBBBBB", "hash-2") == text._replace(body="other")
    assert reader.text("AAAAAAAA", "hash-changed") is None
    assert reader.text("CCCCCCCC", "hash-1") is None
    reader.close()
    (spooled,) = folder.iterdir()
    spooled.write_bytes(spooled.read_bytes()[:-3])  # a worker killed mid-record
    reader = SpoolReader(folder)
    assert reader.text("AAAAAAAA", "hash-1") == text
    assert reader.text("BBBBBBBB", "hash-2") is None
    reader.close()


def test_the_places_are_found_by_call_number_first_last_and_missing(tmp_path: Path) -> None:
    folder = tmp_path / "spool"
    text = SearchText("Subject", "Ann", "Ann", "", "", "Body")
    calls = ["AAAAAAAM", "AAAAAAAA", "zzzzzzzz", "AAAAAAAB", "-AAAAAAA", "AAAAAAA_"]  # unsorted, "-" sorts first
    first, second = SpoolWriter(folder), SpoolWriter(folder)
    for n, call in enumerate(calls):
        (first if n % 2 else second).add(call, f"hash-{call}", text._replace(body=call))
    first.close()
    second.close()
    reader = SpoolReader(folder)
    assert len(reader.places) == len(calls)
    for call in calls:  # "-AAAAAAA" is the first key, "zzzzzzzz" the last
        assert reader.text(call, f"hash-{call}") == text._replace(body=call), call
    for missing in ["--------", "AAAAAAA-", "AAAAAAAC", "zzzzzzzy", "zzzzzzz~", "~~~~~~~~", "AAAA", "AAAAAAAAA", ""]:
        assert reader.places.find(missing) is None, missing
        assert reader.text(missing, f"hash-{missing}") is None, missing
    reader.close()


def test_of_records_of_one_call_number_the_last_read_is_kept(tmp_path: Path) -> None:
    folder = tmp_path / "spool"
    text = SearchText("Subject", "Ann", "Ann", "", "", "Body")
    writer = SpoolWriter(folder)
    writer.add("BBBBBBBB", "hash-old", text._replace(body="old"))
    writer.add("AAAAAAAA", "hash-a", text)
    writer.add("BBBBBBBB", "hash-new", text._replace(body="new"))
    writer.add("CCCCCCCCC", "hash-c", text)  # not a call number's length: not kept
    writer.close()
    reader = SpoolReader(folder)
    assert len(reader.places) == 2
    assert reader.text("BBBBBBBB", "hash-new") == text._replace(body="new")
    assert reader.text("BBBBBBBB", "hash-old") is None  # as when the store's bytes changed since
    assert reader.text("AAAAAAAA", "hash-a") == text
    assert reader.text("CCCCCCCCC", "hash-c") is None
    reader.close()
    assert len(SpoolReader(tmp_path / "none").places) == 0


def test_the_places_take_a_few_bytes_a_record_not_an_object(tmp_path: Path) -> None:
    """The search step's inverting workers are forked holding the reader: a dict of
    objects (some 290 bytes a record) was copied into each of them as their lookups
    touched it (issue 28). Flat arrays take 24 bytes a record and are only read."""
    folder = tmp_path / "spool"
    writer = SpoolWriter(folder)
    text = SearchText("Subject", "Ann", "Ann", "", "", "Body")
    count = 5_000
    for n in range(count):
        writer.add(call_number_from_int(10**9 + n * 7_919 % count), f"{n:032x}", text)
    writer.close()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        reader = SpoolReader(folder)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(reader.places) == count
    assert held < count * 40, f"{held / count:.0f} bytes a record"
    reader.close()
