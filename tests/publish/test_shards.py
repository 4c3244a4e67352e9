"""The record of a publish in shards: which shard holds a path, that shards round-trip,
that one new message rewrites a small part of a big site's record, and that the root's
delta holds small changes until it outgrows its limit."""

from __future__ import annotations

import hashlib

import pytest

from listlib.publish.plan import Headers, Record, plan_publish
from listlib.publish.run import Stored, _cached_shards, _next_shards
from listlib.publish.shards import (
    DELTA_LIMIT,
    HASHED,
    Delta,
    Root,
    assemble,
    group,
    parse_root,
    parse_shard,
    root_bytes,
    shard_bytes,
    shard_of,
)


@pytest.mark.parametrize(
    ("path", "shard"),
    [
        ("dev/2024/05/index.html", "dev/2024/05"),
        ("dev/2024/05/3xAAAAAa.eml", "dev/2024/05"),
        ("dev/2024/05/3xAAAAAa/patch.diff", "dev/2024/05"),
        ("search/seg/0007/p3.bin", "search/seg/0007"),
        ("search/seg/0007/meta.json.js", "search/seg/0007"),
    ],
)
def test_a_month_and_a_search_segment_are_shards_of_their_own(path: str, shard: str) -> None:
    assert shard_of(path) == shard


@pytest.mark.parametrize(
    "path", ["index.html", "dev/index.html", "mid/ab/cdef.html", "dev/<a@b>/raw", "search/manifest.json", "dev/2024/x"]
)
def test_other_files_go_to_a_few_hashed_shards_per_folder(path: str) -> None:
    folder, _, bucket = shard_of(path).partition("#")
    assert folder == (path.split("/")[0] if "/" in path else "") and 0 <= int(bucket) < HASHED


def page(n: int) -> str:
    """The page of message ``n`` in ``site``."""
    return f"dev/{2020 + n % 5}/{n % 12 + 1:02d}/{n:08x}.html"


def site(messages: int) -> dict[str, tuple[str, int]]:
    """A manifest shaped like a one-list site of ``messages`` messages over five years."""
    files: dict[str, tuple[str, int]] = {}
    for n in range(messages):
        for name in (page(n), page(n).replace(".html", ".eml"), f"mid/{n % 256:02x}/{n:08x}.html"):
            files[name] = (hashlib.blake2b(name.encode(), digest_size=8).hexdigest(), 100)
    for n in range(40):
        files[f"search/seg/{n:04d}/p0.bin"] = ("s", 1)
    files.update({"index.html": ("i", 1), "dev/index.html": ("l", 1), "search/manifest.json": ("m", 1)})
    return files


def test_shards_round_trip_to_the_same_record() -> None:
    record = Record(files=site(500), pending={"dev/2020/01/gone.html": ("g", 1)}, generation=4, headers="h")
    names: dict[str, str] = {}
    stored: dict[str, bytes] = {}
    for key, (files, pending) in group(record).items():
        name, data = shard_bytes(key, files, pending)
        assert shard_bytes(key, dict(reversed(files.items())), pending) == (name, data), "deterministic"
        names[key] = name
        stored[name] = data
    root = parse_root(root_bytes(Root(record.generation, record.headers, names)), "test")
    assert isinstance(root, Root) and root.names == names
    again = assemble(root, (parse_shard(stored[name], name) for name in root.names.values()))
    assert again == record


def test_one_new_message_rewrites_a_small_part_of_a_big_record() -> None:
    before = site(50_000)
    record = Record(files=dict(before), headers=Headers().fingerprint())
    after = dict(before)
    after.update(
        {
            "dev/2024/05/new.html": ("n", 1),
            "dev/2024/05/new.eml": ("n", 1),
            "dev/2024/05/index.html": ("changed", 1),
            "mid/3f/new.html": ("n", 1),
            "search/seg/0099/p0.bin": ("n", 1),
            "search/manifest.json": ("changed", 1),
            "index.html": ("changed", 1),
            "dev/index.html": ("changed", 1),
        }
    )
    plan = plan_publish(after, record)
    assert plan.touched == {path for path in after if before.get(path) != after[path]}
    keys = {shard_of(path) for path in plan.touched}
    written = group(plan.record, keys)
    everything = group(plan.record)
    entries = sum(len(files) + len(pending) for files, pending in written.values())
    assert len(written) <= 8 and len(everything) > 100
    assert entries < len(after) / 20, f"{entries} of {len(after)} entries written again"


def published(stored: Stored, manifest: dict[str, tuple[str, int]], bucket: dict[str, bytes]) -> Stored:
    """One publish's record as ``_carry_out`` writes it: its shards into ``bucket`` and
    the root read back as the next publish reads it."""
    plan = plan_publish(manifest, stored.record)
    names, shards, delta = _next_shards(plan, stored)
    bucket.update(shards)
    root = parse_root(root_bytes(Root(plan.record.generation, plan.record.headers, names, delta)), "test")
    assert isinstance(root, Root)
    assert assemble(root, (parse_shard(bucket[name], name) for name in root.names.values())) == plan.record
    return Stored(plan.record, root)


def test_small_changes_go_in_the_roots_delta_until_it_outgrows_its_limit() -> None:
    bucket: dict[str, bytes] = {}
    files = site(2_000)
    stored = published(Stored(Record()), files, bucket)
    assert not stored.root.delta and len(bucket) == len(stored.names), "a first publish writes every shard"
    written = len(bucket)
    for n in range(5):
        files = {**files, f"dev/2024/05/new{n}.html": ("n", 1), "index.html": (f"i{n}", 1)}
        files.pop(page(n))
        stored = published(stored, files, bucket)
        assert len(bucket) == written, "no shard written again"
    assert len(stored.root.delta) == 11 and stored.root.delta.files[page(0)] is None
    assert stored.record.pending == {page(4): site(2_000)[page(4)]}, "the others deleted by the publish after"
    # a change of more paths than the delta may hold: the shards holding them are written
    many = {path: (digest + "x", size) for path, (digest, size) in files.items() if path.startswith("mid/")}
    assert len(many) > DELTA_LIMIT
    files = {**files, **many}
    stored = published(stored, files, bucket)
    assert not stored.root.delta and len(bucket) > written
    assert stored.record.files == files


def test_the_cached_record_gives_only_shards_its_delta_left_alone() -> None:
    """Entries of a path the delta holds are not in any cached shard (the cache holds the
    delta applied, not the shard as written), so such a shard is read again."""
    bucket: dict[str, bytes] = {}
    files = site(300)
    stored = published(Stored(Record()), files, bucket)
    files = {**files, "index.html": ("changed", 1)}
    stored = published(stored, files, bucket)
    known = _cached_shards(stored)
    holding = stored.names[shard_of("index.html")]
    assert holding not in known and len(known) == len(stored.names) - 1
    for name, entries in known.items():
        assert entries == parse_shard(bucket[name], name)


def test_a_delta_round_trips_through_the_root() -> None:
    delta = Delta({"a.html": ("d", 3), "b.html": None}, {"b.html": ("e", 4), "a.html": None})
    root = Root(7, "h", {"#1": "x"}, delta, intent={"c.html": ("f", 5)}, intent_shards=["s"], retired=["r"])
    again = parse_root(root_bytes(root), "test")
    assert again == root
