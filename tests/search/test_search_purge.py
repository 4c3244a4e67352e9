"""Take-downs purge the search index: once a build has run after a message was removed,
redacted or marked X-No-Archive, no file under output/search/ (current segments, the
previous generation kept for readers, the manifest) holds its words, subject, sender
or call number; the other messages answer as in an index built from scratch; a reader
holding the manifest from before reads it again; a build killed on the way leaves a
usable index and the next one finishes the purge."""

from __future__ import annotations

import base64
import gzip
import json
import os
import random
import shutil
import signal
import sqlite3
from datetime import timedelta
from itertools import accumulate
from pathlib import Path

import pytest

from listlib.build import build_site
from listlib.config import load_config
from listlib.errors import SearchError
from listlib.render.writer import digest_of
from listlib.search import purge, segment, update
from listlib.search.bulkpurge import drop_postings_of, postings_holding
from listlib.search.codec import drop_positions, drop_postings, encode_positions, encode_postings, postings_hold
from listlib.search.hints import HINTS_FILE
from listlib.search.merge import read_segment
from listlib.search.reader import Source, search
from listlib.search.state import SearchState
from listlib.search.update import purge_index, update_index
from listlib.stewardship import Selector, redact, steward
from listlib.store.core import Store
from listlib.verify import repair_store

from ..build.test_build import T0, add, build, call_of, post
from ..support.helpers import SITE_TOML, make_message, run_listlib
from .test_search import NODE, _node, assert_twins_match

SECRET = 7
SECRET_WORDS = [b"zanzibarite", b"quillfeather", b"blowerly", b"clandestino"]
BODY_WORDS = [b"zanzibarite", b"quillfeather"]
QUERIES = ["common", "topic", "raid", "from:person", '"common words"', "top*", "raid -bitmap", "subject:topic"]


def secret_message() -> bytes:
    return make_message(
        "Clandestino meeting notes",
        "The zanzibarite plan: quillfeather at dawn. Common words too.\n",
        message_id=f"<m{SECRET}@example.org>",
        sender="Whistle Blowerly <blowerly@example.org>",
        date=T0 + timedelta(days=SECRET),
    )


def others(numbers: range) -> list[bytes]:
    body = "Common words about raid and bitmap.\n"
    return [post(n, f"Topic {n} raid", body=body if n % 2 else "Common words.\n") for n in numbers]


def grow(site: Path) -> None:
    """The secret message among others, built in several steps: segments merged, a
    previous generation kept."""
    add(site, *others(range(1, 5)), secret_message())
    build(site)
    for first in range(10, 40, 6):
        add(site, *others(range(first, first + 6)))
        build(site)


def index_bytes(site: Path, *, lower: bool = True) -> bytes:
    """Every file of the search index, decompressed, lower-cased (unless not ``lower``),
    one after another."""
    out = []
    for path in sorted((site / "output/search").rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            if path.name.endswith(".bin.js"):  # a binary file's script twin: its bytes in base64
                data = base64.b64decode(json.loads(data[data.index(b",") + 1 : -3]))
            out.append(gzip.decompress(data) if path.suffix == ".gz" else data)
    blob = b"\n".join(out)
    return blob.lower() if lower else blob


def terms_told(monkeypatch: pytest.MonkeyPatch) -> list[set[str] | None]:
    """The ``terms`` each purge of a segment is told from now on (None: search every term)."""
    named: list[set[str] | None] = []
    purge_segment = update.purge_segment

    def spy(*args: object, terms: set[str] | None = None, **options: object) -> bool:
        named.append(terms)
        return purge_segment(*args, terms=terms, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(update, "purge_segment", spy)
    return named


def take_down(site: Path, how: str) -> None:
    _call, path = call_of(site, SECRET)
    stored = site / "content" / path
    if how == "removed":
        stored.unlink()
    elif how == "redacted":
        data = stored.read_bytes()
        for word in BODY_WORDS:
            data = data.replace(word, b"[redacted]")
        stored.write_bytes(data)
    else:
        stored.write_bytes(b"X-No-Archive: yes\n" + stored.read_bytes())
    with Store(site / "content").open(discard_damaged_index=True) as store:
        repair_store(store)


def traces(site: Path, how: str, call: str) -> list[bytes]:
    """The secret message's words found in the index, in any case, and its call number
    as it is written: call numbers are case-sensitive, and another message's may differ
    from it only in case (a build some 97 s later: one 6th digit is 26 letters on)."""
    blob = index_bytes(site, lower=False)
    lowered = blob.lower()
    words = [word for word in (BODY_WORDS if how == "redacted" else SECRET_WORDS) if word in lowered]
    if how != "redacted" and call.encode() in blob:
        words.append(call.encode())
    return words


def answers(site: Path) -> list[list[tuple[str, float]]]:
    source = Source(site / "output/search")
    return [[(hit.call, hit.score) for hit in search(source, q, limit=100).hits] for q in QUERIES]


def from_scratch(site: Path, tmp_path: Path) -> list[list[tuple[str, float]]]:
    scratch = tmp_path / "scratch" / "site"
    scratch.mkdir(parents=True)
    (scratch / "listlib.toml").write_text(SITE_TOML)
    shutil.copytree(site / "content", scratch / "content")
    build(scratch)
    return answers(scratch)


@pytest.fixture(params=["rewritten", "revised", "capped"])
def purge_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The ways a segment is purged: rewritten whole (small) or revised in place without
    the deleted documents' traces (big; here every segment counts as big); and revised
    as a big archive is: in segments of a capped size (merges cut in pieces), the terms
    holding the deleted documents found with numpy, in a dictionary of chunks of a
    term or two (a chunk left empty is dropped)."""
    if request.param != "rewritten":
        monkeypatch.setattr(update, "PURGE_REWRITE_BELOW", 1)
    if request.param == "capped":
        monkeypatch.setattr(update, "SEGMENT_DOCS", 6)
        monkeypatch.setattr(purge, "VECTOR_FROM", 0)
        monkeypatch.setattr(segment, "DICT_CHUNK", 40)
    return str(request.param)


@pytest.mark.parametrize("how", ["removed", "redacted", "no-archive"])
def test_a_taken_down_message_leaves_no_trace_in_the_search_index(
    site: Path, tmp_path: Path, how: str, purge_path: str
) -> None:
    grow(site)
    call, _path = call_of(site, SECRET)
    assert traces(site, how, call)
    assert [hit.subject for hit in search(Source(site / "output/search"), "zanzibarite").hits] == [
        "Clandestino meeting notes"
    ]
    take_down(site, how)
    report = build(site)
    assert report.search.removed == 1
    assert traces(site, how, call) == []
    assert search(Source(site / "output/search"), "zanzibarite").total == 0
    assert answers(site) == from_scratch(site, tmp_path)
    assert search(Source(site / "output/search"), "common", limit=100).total == 35 - (how != "redacted")
    if purge_path == "capped":
        segments = json.loads((site / "output/search/manifest.json").read_bytes())["segments"]
        assert len(segments) > 5
        assert max(info["docs"] for info in segments) <= 6
    # Later builds keep it so, adding, merging and taking down more.
    add(site, *others(range(50, 58)))
    build(site)
    _call, path = call_of(site, 11)
    (site / "content" / path).unlink()
    with Store(site / "content").open(discard_damaged_index=True) as store:
        repair_store(store)
    build(site)
    assert traces(site, how, call) == []
    assert b"topic 11 raid" not in index_bytes(site)
    assert answers(site) == from_scratch(site, tmp_path / "again")
    assert_twins_match(site / "output/search")


def test_an_index_from_before_purging_is_purged_by_the_next_build(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    grow(site)
    call, _path = call_of(site, SECRET)
    take_down(site, "removed")
    # The update of old: tombstones only, the segments and the previous generation untouched.
    write_manifest = update._write_manifest

    def old_manifest(folder: Path, manifest: dict[str, object], twins: bool) -> None:
        write_manifest(folder, {key: value for key, value in manifest.items() if key != "purged"}, twins)

    monkeypatch.setattr(update, "_to_purge", lambda manifest, remove: set())
    monkeypatch.setattr(update, "_write_manifest", old_manifest)
    build(site)
    assert traces(site, "removed", call)
    monkeypatch.undo()
    report = build(site)
    assert not report.search.rebuilt
    assert traces(site, "removed", call) == []


def test_a_reader_holding_the_manifest_from_before_a_take_down_reads_it_again(site: Path, purge_path: str) -> None:
    grow(site)
    folder = site / "output/search"
    stale = site.parent / "stale-manifest.json"
    shutil.copy(folder / "manifest.json", stale)
    take_down(site, "removed")
    build(site)
    fresh = [[(h.call, h.score) for h in search(Source(folder), q, limit=100).hits] for q in QUERIES]
    source = Source(folder)
    source.cache["manifest.json"] = stale.read_bytes()  # read before the build
    assert [[(h.call, h.score) for h in search(source, q, limit=100).hits] for q in QUERIES] == fresh
    if NODE is not None:
        got = _node([{"q": q, "limit": 100, "stale": str(stale)} for q in QUERIES], folder)
        assert [[tuple(hit) for hit in case["hits"]] for case in got] == fresh  # type: ignore[index,union-attr]
    # A segment missing from the manifest read afresh too: a clear error, not wrong answers.
    manifest = json.loads((folder / "manifest.json").read_bytes())
    shutil.rmtree(folder / "seg" / manifest["segments"][0]["id"])
    with pytest.raises(SearchError, match="changed twice while it was read"):
        search(Source(folder), "common")


@pytest.mark.parametrize("at", ["search-purge", "search-state"])
def test_a_build_killed_while_purging_is_finished_by_the_next_one(
    site: Path, tmp_path: Path, purge_path: str, at: str
) -> None:
    """Killed before its manifest, or after it committed but before it deleted the files
    its purge replaced (which hold the message): the next build leaves no trace of it,
    nor of files a purge left that no manifest named."""
    grow(site)
    call, _path = call_of(site, SECRET)
    take_down(site, "removed")
    points: list[str] = []

    def crash(point: str) -> None:
        points.append(point)
        if point == at or (purge_path == "rewritten" and point == "search-manifest"):
            raise KeyboardInterrupt(point)

    with pytest.raises(KeyboardInterrupt):
        update_index(load_config(site / "listlib.toml"), fault=crash)
    # Meanwhile the old index answers whole (the message still in it: its purge is not done).
    assert search(Source(site / "output/search"), "common", limit=100).total == 35 - (points[-1] != "search-purge")
    if points[-1] == "search-state":
        assert traces(site, "removed", call)  # in the files the purge replaced, not yet deleted
    elif points[-1] == "search-purge":  # files of a revision no manifest named, beside the purge's own
        with sqlite3.connect(site / ".cache/search.sqlite") as db:
            (held,) = db.execute("SELECT segment FROM docs WHERE call = ?", (call,)).fetchone()
        manifest = json.loads((site / "output/search/manifest.json").read_bytes())
        rev = next(info.get("rev", 0) for info in manifest["segments"] if info["id"] == held)
        folder = site / "output/search/seg" / held
        meta = json.loads((folder / segment.meta_name(rev)).read_bytes())
        (folder / f"p{meta['files'][0] + 3}.bin").write_bytes(b"zanzibarite")
        (folder / f"t0-{rev + 2}.json").write_bytes(b'[["zanzibarite"]]')
    build(site)
    assert traces(site, "removed", call) == []
    assert answers(site) == from_scratch(site, tmp_path)


@pytest.mark.parametrize("point", ["search-manifest", "search-state"])
def test_a_build_killed_after_writing_the_purged_index_is_repaired_by_the_next_one(
    site: Path, tmp_path: Path, point: str
) -> None:
    grow(site)
    call, _path = call_of(site, SECRET)
    take_down(site, "removed")
    killed = run_listlib("build", "--jobs", "1", cwd=site, env={"LISTLIB_CRASH_AT": f"{point}:1"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert search(Source(site / "output/search"), "common", limit=100).total == 34
    run_listlib("build", "--jobs", "1", cwd=site, check=True)
    assert traces(site, "removed", call) == []
    assert answers(site) == from_scratch(site, tmp_path)


def test_an_index_in_small_segments_answers_as_one_segment_does(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    grow(site)
    take_down(site, "redacted")
    build(site)
    whole = answers(site)
    monkeypatch.setattr(update, "SEGMENT_DOCS", 4)
    build(site, clean=True)
    segments = json.loads((site / "output/search/manifest.json").read_bytes())["segments"]
    assert sorted(info["docs"] for info in segments) == [3] + [4] * 8  # 35 cut evenly
    assert answers(site) == whole


def test_the_terms_holding_documents_are_found_alike_with_numpy_and_without() -> None:
    rng = random.Random(25)
    for _ in range(200):
        data, starts, everything = bytearray(), [], []
        span = rng.choice([200, 70_000, 20_000_000])
        for _term in range(rng.randint(1, 20)):
            df = rng.choice([1, 2, 5, 127, 128, 129, 300, 1000])
            docs = sorted(rng.sample(range(span), min(df, span)))
            everything.extend(docs)
            starts.append(len(data))
            data += encode_postings(docs, bytes(rng.randint(1, 255) for _ in docs))
        some = rng.sample(everything, min(len(everything), rng.randint(1, 3)))
        deleted = sorted({*some, rng.randrange(span)})
        expected = [i for i, start in enumerate(starts) if postings_hold(memoryview(data)[start:], deleted)]
        assert postings_holding(bytes(data), starts, deleted) == expected
        assert expected  # deleted holds documents of some term


def test_postings_without_some_documents_are_the_postings_of_the_others() -> None:
    rng = random.Random(26)
    for _ in range(200):
        docs = sorted(rng.sample(range(100_000), rng.choice([1, 3, 128, 129, 700])))
        impacts = bytes(rng.randint(1, 255) for _ in docs)
        deleted = sorted({*rng.sample(docs, min(len(docs), rng.choice([1, 2, 50, 400]))), rng.randrange(100_000)})
        kept = [(doc, impact) for doc, impact in zip(docs, impacts, strict=True) if doc not in deleted]
        postings, dropped = drop_postings(encode_postings(docs, impacts), deleted)
        assert dropped == [at for at, doc in enumerate(docs) if doc in deleted]
        assert drop_postings(encode_postings(docs, impacts), deleted, set(deleted)) == (postings, dropped)
        if kept:
            assert postings == encode_postings([doc for doc, _ in kept], bytes(impact for _, impact in kept))
        else:
            assert postings is None


def test_the_postings_of_many_terms_lose_documents_alike_with_numpy_and_without() -> None:
    rng = random.Random(27)
    for _ in range(150):
        data, starts, everything, blobs = bytearray(), [], [], []
        span = rng.choice([300, 70_000, 20_000_000])
        for _term in range(rng.randint(1, 12)):
            df = min(span, rng.choice([1, 2, 5, 127, 128, 129, 300, 1000, 3000]))
            docs = sorted(rng.sample(range(span), df))
            everything.extend(docs)
            starts.append(len(data))
            blobs.append(encode_postings(docs, bytes(rng.randint(1, 255) for _ in docs)))
            data += blobs[-1]
        some = rng.sample(everything, min(len(everything), rng.choice([1, 2, 10, 100, 1000])))
        deleted = sorted({*some, rng.randrange(span)})
        expected = []
        for blob in blobs:
            postings, dropped = drop_postings(blob, deleted)
            expected.append((postings, dropped) if dropped else (blob, []))
        assert drop_postings_of(bytes(data), starts, deleted) == expected


@pytest.mark.usefixtures("purge_path")
def test_the_state_records_every_file_of_the_index_as_written(site: Path) -> None:
    """Files are recorded from what was noted as they were written (not read back):
    after segments added, merged, and purged in place or rewritten, the record is
    each file's digest, size and mtime on disk, and names no other file."""
    grow(site)
    call, _path = call_of(site, SECRET)
    steward(load_config(site / "listlib.toml"), "hide", Selector(ids=[call]), reason="spam", by="test")
    build(site)
    folder = site / "output/search"
    on_disk = {}
    for path in folder.rglob("*"):
        if path.is_file() and path != folder / "index.html":  # the search page is the build's
            data, found = path.read_bytes(), path.stat()
            on_disk[path.relative_to(folder).as_posix()] = (digest_of(data), found.st_size, found.st_mtime_ns)
    state = SearchState(load_config(site / "listlib.toml").site.cache_dir / "search.sqlite")
    try:
        assert state.files() == on_disk
    finally:
        state.close()


def _index_files(site: Path) -> dict[str, tuple[int, bytes]]:
    """Every file of the search index and of its state in the cache: its mtime and bytes."""
    found = {}
    for path in [*(site / "output/search").rglob("*"), *(site / ".listlib").glob("search.sqlite*")]:
        if path.is_file():
            found[str(path.relative_to(site))] = (path.stat().st_mtime_ns, path.read_bytes())
    return found


def test_an_update_beside_a_build_that_would_index_a_message_writes_nothing(site: Path) -> None:
    """``purge_index`` (run beside a build's rendering) leaves a message to index, and
    the take-downs that come with it, to the build's own update, which has the
    rendering's text."""
    grow(site)
    config = load_config(site / "listlib.toml")
    call, _path = call_of(site, SECRET)
    steward(config, "hide", Selector(ids=[call]), reason="spam", by="test")
    add(site, post(90, "Topic 90 raid", body="Common words about a new message.\n"))
    before = _index_files(site)
    assert purge_index(config) is None
    assert _index_files(site) == before
    report = update_index(config)
    assert (report.indexed, report.removed) == (1, 1)
    assert traces(site, "hidden", call) == []


def test_an_update_beside_a_build_purges_a_hidden_message_as_the_build_would(site: Path, tmp_path: Path) -> None:
    grow(site)
    config = load_config(site / "listlib.toml")
    call, _path = call_of(site, SECRET)
    steward(config, "hide", Selector(ids=[call]), reason="spam", by="test")
    report = purge_index(config)
    assert report is not None and (report.indexed, report.removed) == (0, 1)
    assert traces(site, "hidden", call) == []
    assert answers(site) == from_scratch(site, tmp_path)
    assert update_index(config).removed == 0  # nothing left for the build's own update


def test_a_build_on_two_cores_purges_a_take_down_in_another_process(site: Path, tmp_path: Path) -> None:
    grow(site)
    call, _path = call_of(site, SECRET)
    steward(load_config(site / "listlib.toml"), "remove", Selector(ids=[call]), reason="take-down", by="test")
    writers = tmp_path / "manifest-writers"

    def note(point: str) -> None:
        if point == "search-manifest":
            with writers.open("a") as out:
                out.write(f"{os.getpid()}\n")

    report = build_site(load_config(site / "listlib.toml"), workers=2, fault=note)
    assert report.search is not None and report.search.removed == 1
    assert [int(pid) for pid in writers.read_text().split()] != [os.getpid()]
    assert len(writers.read_text().split()) == 1
    assert traces(site, "removed", call) == []
    assert answers(site) == from_scratch(site, tmp_path)


@pytest.mark.parametrize("told", ["right", "wrong"])
def test_a_hidden_message_is_purged_by_looking_up_its_own_terms(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, told: str
) -> None:
    """Its bytes are still stored: its terms are found by displaying it again, and only
    those are looked up in its segment; terms the index does not hold make the purge
    search every term."""
    monkeypatch.setattr(update, "PURGE_REWRITE_BELOW", 1)
    grow(site)
    call, _path = call_of(site, SECRET)
    if told == "wrong":
        monkeypatch.setattr(update, "_terms_of", lambda *_args: {call: {"zanzibarite", "notindexedanywhere"}})
    named = terms_told(monkeypatch)
    steward(load_config(site / "listlib.toml"), "hide", Selector(ids=[call]), reason="spam", by="test")
    build(site)
    (terms,) = named
    if told == "right":
        assert terms is not None and {"zanzibarite", "quillfeather", "s:clandestino", "f:blowerly"} <= terms
    else:
        assert terms == {"zanzibarite", "notindexedanywhere"}
    assert traces(site, "removed", call) == []
    assert answers(site) == from_scratch(site, tmp_path)


def test_a_purge_told_the_terms_writes_what_a_purge_searching_every_term_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Told the deleted documents' terms, a purge loads only the dictionary chunks that
    hold them and those a rewritten postings or positions file runs on into: small
    chunks and files make those runs cross chunks (field terms, which have no
    positions, sit between the terms of a positions file). A segment purged before is
    purged of its new tombstones alone as of all of them."""
    monkeypatch.setattr(segment, "DICT_CHUNK", 300)
    monkeypatch.setattr(segment, "POSTINGS_CHUNK", 200)
    rng = random.Random(27)
    words = [f"w{n:03d}" for n in range(400)]
    docs = [
        segment.Doc(
            call=f"c{n:04d}",
            message_id=f"m{n}@example.org",
            list="list",
            url=f"list/{n}.html",
            subject=f"s{n}",
            author=f"a{n % 7}",
            date=1_600_000_000 + n * 3600,
            excerpt="",
            fields={
                "subject": rng.sample(words, 3),
                "author": [f"a{n % 7}"],
                "body": rng.choices(words[: 40 + n], k=30),
                "class": ["patch"] if n % 5 == 0 else [],
            },
        )
        for n in range(150)
    ]
    old = tmp_path / "seg"
    segment.write_segment(old, segment.invert(docs, 150.0, 0.75), twins=False)
    chunks = [
        json.loads((old / f"t{k}.json").read_bytes())
        for k in range(len(json.loads((old / "meta.json").read_bytes())["dict"]))
    ]
    assert len(chunks) > 10

    def blob(name: str) -> bytes:
        return (old / name).read_bytes()

    def purged(source: Path, rev: int, name: str, deleted: list[int], **options: object) -> Path:
        """A copy of ``source`` (at ``rev``) purged of ``deleted``, its stale files deleted."""
        target = tmp_path / name
        shutil.copytree(source, target)
        done = purge.purge_segment(target, rev, deleted, twins=False, **options)  # type: ignore[arg-type]
        assert done is not None and done.rev == rev + 1
        for stale in done.stale:
            (target / stale).unlink(missing_ok=True)
        return target

    def read(folder: Path, rev: int) -> tuple[list[bytes], dict[str, tuple[list[int], bytes, object]]]:
        data = read_segment(folder, rev)
        postings = {term: (list(p.docs), bytes(p.impacts), p.positions) for term, p in data.postings.items()}
        return [row.json for row in data.rows], postings

    # A purged segment purged again: the documents deleted before are gone from its files.
    earlier = purged(old, 0, "earlier", [3, 40, 41])
    again = purged(earlier, 1, "again", [3, 40, 41, 75])
    fresh = purged(earlier, 1, "fresh", [75])
    assert read(again, 2) == read(fresh, 2)
    assert b"c0075" not in b"".join(path.read_bytes() for path in again.iterdir())
    for deleted in ([0], [149], [75], [3, 40, 41, 148], sorted(rng.sample(range(150), 12))):
        terms = {entry[0] for entry in purge._holding(chunks, blob, deleted)}
        told = purged(old, 0, "told", deleted, terms=terms)
        searched = purged(old, 0, "searched", deleted)
        names = sorted(path.name for path in searched.iterdir())
        assert sorted(path.name for path in told.iterdir()) == names
        assert [(told / name).read_bytes() for name in names] == [(searched / name).read_bytes() for name in names]
        # The files it did not rewrite are the old ones; those it did hold nothing deleted.
        unchanged = {name for name in names if (old / name).exists()}
        assert all((old / name).read_bytes() == (told / name).read_bytes() for name in unchanged)
        rows, postings = read(told, 1)
        assert all(rows[doc] == b"null" for doc in deleted)
        assert not any(set(deleted) & set(docs) for docs, _impacts, _positions in postings.values())
        shutil.rmtree(told)
        shutil.rmtree(searched)


@pytest.mark.parametrize("how", ["removed", "redacted"])
def test_a_message_taken_down_is_purged_by_looking_up_the_terms_noted_before_its_bytes_left(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """``remove`` and ``redact`` note the terms of the bytes they take out of the store
    (``search.hints``): the purge looks up those, not every term; the note is gone
    once the index is purged."""
    monkeypatch.setattr(update, "PURGE_REWRITE_BELOW", 1)
    grow(site)
    call, path = call_of(site, SECRET)
    named = terms_told(monkeypatch)
    config = load_config(site / "listlib.toml")
    if how == "removed":
        steward(config, "remove", Selector(ids=[call]), reason="take-down", by="test")
    else:
        edited = (site / "content" / path).read_bytes()
        for word in BODY_WORDS:
            edited = edited.replace(word, b"[redacted]")
        redact(config, call, edited, reason="leak", by="test")
    assert (config.site.cache_dir / HINTS_FILE).exists()
    build(site)
    (terms,) = named
    assert terms is not None and {"zanzibarite", "quillfeather"} <= terms
    assert not (config.site.cache_dir / HINTS_FILE).exists()
    assert traces(site, how, call) == []
    assert answers(site) == from_scratch(site, tmp_path)


def test_the_note_of_a_message_taken_down_before_it_was_ever_indexed_goes_with_the_next_build(site: Path) -> None:
    """A message filed and removed between two builds was never in the index: no purge
    needs its note, and the next build still deletes it (none outlives a build)."""
    add(site, *others(range(1, 4)))
    build(site)
    add(site, secret_message())
    call, _path = call_of(site, SECRET)
    config = load_config(site / "listlib.toml")
    steward(config, "remove", Selector(ids=[call]), reason="take-down", by="test")
    assert b"zanzibarite" in (config.site.cache_dir / HINTS_FILE).read_bytes()
    build(site)
    assert not (config.site.cache_dir / HINTS_FILE).exists()
    assert b"zanzibarite" not in index_bytes(site)


def test_one_document_dropped_moves_the_blocks_after_it_as_encoding_them_again_would() -> None:
    # Gaps at the edges of each block width (255/256, 65535/65536): a block's width may
    # grow, or shrink, when its first posting moves into the block before.
    rng = random.Random(25)
    for _ in range(1500):
        size = rng.choice([2, 3, 127, 128, 129, 130, 256, 257, 385, 700])
        steps = rng.choice([[1, 2, 5], [1, 255, 256, 300], [1, 65535, 65536, 70_000], [1, 128, 254, 255, 256, 257]])
        docs = list(accumulate((rng.choice(steps) for _ in range(size - 1)), initial=rng.randrange(300)))
        impacts = bytes(rng.randint(1, 255) for _ in docs)
        at = rng.randrange(size)
        data = encode_postings(docs, impacts)
        postings, dropped = drop_postings(data, [docs[at]])
        assert dropped == [at]
        assert postings == encode_postings(docs[:at] + docs[at + 1 :], impacts[:at] + impacts[at + 1 :])
        absent = docs[at] + 1
        if absent not in docs:
            assert drop_postings(data, [absent]) == (data, [])


def test_positions_without_some_postings_are_the_positions_of_the_others() -> None:
    rng = random.Random(27)
    for _ in range(1000):
        count = rng.randint(1, 60)
        positions = [sorted(rng.sample(range(70_000), rng.randint(0, 5))) for _ in range(count)]
        drop = sorted(rng.sample(range(count), rng.randint(0, min(count, 12))))
        data = encode_positions(positions)
        expected = encode_positions([plist for at, plist in enumerate(positions) if at not in drop])
        assert drop_positions(data, drop) == expected
        assert drop_positions(memoryview(data), drop) == expected
