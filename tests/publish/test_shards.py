"""The record of a publish in shards: which shard holds a path, that shards round-trip,
and that one new message rewrites a small part of a big site's record."""

from __future__ import annotations

import hashlib

import pytest

from listlib.publish.plan import Headers, Record, plan_publish
from listlib.publish.shards import (
    HASHED,
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


def site(messages: int) -> dict[str, tuple[str, int]]:
    """A manifest shaped like a one-list site of ``messages`` messages over five years."""
    files: dict[str, tuple[str, int]] = {}
    for n in range(messages):
        month = f"dev/{2020 + n % 5}/{n % 12 + 1:02d}"
        for name in (f"{month}/{n:08x}.html", f"{month}/{n:08x}.eml", f"mid/{n % 256:02x}/{n:08x}.html"):
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
    root = parse_root(root_bytes(record, names), "test")
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
