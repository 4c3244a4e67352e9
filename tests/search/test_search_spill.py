"""A big batch is indexed in bounded memory: runs of ``update.RUN_DOCS`` documents
spilled to disk and merged back a band of terms at a time (``spill``) into a segment
written a piece at a time (``writer.SegmentWriter``), with the same bytes as the
batch inverted and written in one piece."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from listlib.config import load_config
from listlib.search import spill, update
from listlib.search.bulk import Columns, invert_columns, layout_of, merge_columns, to_segment
from listlib.search.segment import Layout, write_segment
from listlib.search.update import update_index
from listlib.search.writer import SegmentWriter

from ..build.test_build import add, post
from .test_search import found, tree
from .test_search_invert import _doc

QUERIES = ["raid", "topic", "common", "from:person", '"common words"', "top*", "raid -bitmap", "subject:topic", "m7*"]


def _sliced(layout: Layout, start: int, end: int) -> Layout:
    p, q = layout.postings_at, layout.positions_at
    return Layout(
        layout.terms[start:end],
        layout.df[start:end],
        layout.postings[p[start] : p[end]],
        [at - p[start] for at in p[start : end + 1]],
        layout.positions[q[start] : q[end]],
        [at - q[start] for at in q[start : end + 1]],
    )


@pytest.mark.parametrize("seed", range(6))
def test_a_segment_written_in_pieces_has_the_bytes_of_one_written_whole(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    vocabulary = [f"w{n}" for n in range(rng.choice([40, 3000, 6000]))] + ["über", "磁盘", "a"]
    fields = [
        {"subject": rng.sample(vocabulary, 3), "body": rng.choices(vocabulary, k=rng.randint(0, 300))}
        for _ in range(rng.randint(1, 500))
    ]
    docs = [_doc(n, spec, n, "dev") for n, spec in enumerate(fields)]
    columns = merge_columns([invert_columns(docs, 150.0, 0.75)], by_key=True)
    write_segment(tmp_path / "whole", to_segment(columns))
    writer = SegmentWriter(tmp_path / "pieces")
    at = 0
    while at < len(columns.rows):
        step = rng.randint(1, 50)
        writer.add_rows(columns.rows[at : at + step])
        at += step
    layout = layout_of(columns)
    at = 0
    while at < len(layout.terms):
        step = rng.choice([1, 2, 7, 100, 1000])
        writer.add_terms(_sliced(layout, at, min(at + step, len(layout.terms))))
        at += step
    writer.finish()
    whole = tree(tmp_path / "whole")
    assert sum(name.startswith("p") for name in whole) > 1 or len(vocabulary) < 100
    assert tree(tmp_path / "pieces") == whole


def _segment(site: Path) -> dict[str, bytes]:
    """The files of the index's one segment."""
    search = site / "output/search"
    (info,) = json.loads((search / "manifest.json").read_bytes())["segments"]
    return tree(search / "seg" / info["id"])


@pytest.mark.parametrize("workers", [1, 2])
def test_a_batch_of_many_runs_is_indexed_in_bounded_pieces_as_in_one(
    site: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """Runs and bands are bounded (documents a run, postings a band: one term more per
    run), and the segment is the one a batch inverted in one run makes."""
    body = "Common words about raid and bitmap, m{n} and x{k}.\n"
    add(site, *[post(n, f"Topic {n} raid", body=body.format(n=n, k=n % 7)) for n in range(1, 601)])
    config = load_config(site / "listlib.toml")
    update_index(config, clean=True, workers=workers)
    whole = _segment(site)
    answers = {query: found(site, query) for query in QUERIES}

    runs, bands = _watched(monkeypatch, lambda columns: len(np.unique(columns.docs)))  # documents a run
    monkeypatch.setattr(update, "RUN_DOCS", 50)
    monkeypatch.setattr(spill, "BAND_POSTINGS", 400)
    monkeypatch.setattr(spill, "BAND_TERMS", 200)
    update_index(config, clean=True, workers=workers)
    chunk = max(100, min(update._CHUNK_DOCS, 600 // (workers * 4)))
    assert len(runs) >= 600 // (50 + chunk) and max(runs) < 50 + chunk
    assert len(bands) > 10
    assert all(postings <= 400 + count * biggest for postings, biggest, count in bands)
    assert _segment(site) == whole
    assert {query: found(site, query) for query in QUERIES} == answers
    assert not list((site / "output/search/seg").glob("*.runs")), "the runs are deleted"


def test_a_band_holds_no_more_postings_than_the_biggest_run(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Small runs (tests, or a batch just over ``RUN_DOCS``) are merged back in bands of
    their size, not of ``BAND_POSTINGS``: merging never takes more than inverting took."""
    body = "Common words about raid and bitmap, m{n} and x{k}.\n"
    add(site, *[post(n, f"Topic {n} raid", body=body.format(n=n, k=n % 7)) for n in range(1, 401)])
    config = load_config(site / "listlib.toml")
    update_index(config, clean=True)
    whole = _segment(site)

    runs, bands = _watched(monkeypatch, lambda columns: len(columns.docs))  # postings a run
    monkeypatch.setattr(update, "RUN_DOCS", 50)
    update_index(config, clean=True)
    assert len(runs) > 2 and max(runs) < spill.BAND_POSTINGS
    assert len(bands) > 2
    assert all(postings <= max(runs) + count * biggest for postings, biggest, count in bands)
    assert _segment(site) == whole


def _watched(
    monkeypatch: pytest.MonkeyPatch, size_of: Callable[[Columns], int]
) -> tuple[list[int], list[tuple[int, int, int]]]:
    """The spill watched: each run's size (``size_of`` its columns) and each band merged
    back (its postings, its biggest term's, the runs spilled by then), as they come."""
    runs: list[int] = []
    bands: list[tuple[int, int, int]] = []
    spill_run, layout = spill.spill_run, spill.layout_of

    def spilled(folder: Path, columns: Columns) -> spill.Run:
        runs.append(size_of(columns))
        return spill_run(folder, columns)

    def band(columns: Columns) -> Layout:
        sizes = np.diff(columns.ends, prepend=0)
        bands.append((len(columns.docs), int(sizes.max()), len(runs)))
        return layout(columns)

    monkeypatch.setattr(spill, "spill_run", spilled)
    monkeypatch.setattr(spill, "layout_of", band)
    return runs, bands
