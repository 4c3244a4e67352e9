"""The two inverters (``segment.invert`` per token, ``bulk.invert_columns`` with arrays) make identical segments."""

from __future__ import annotations

import itertools
import random
import re
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from listlib.search import bulk
from listlib.search.analysis import MAX_WORD, words
from listlib.search.bulk import collect_runs, encode_all_postings, invert_columns, merge_columns, to_segment
from listlib.search.codec import MAX_POSITION, decode_positions, encode_postings
from listlib.search.merge import read_segment
from listlib.search.segment import FIELD_GAP, Doc, SegmentData, invert, term_key, write_segment

_WORDS = st.sampled_from(["raid", "disk", "md", "resync", "a", "0", "über", "磁盘", "x" * 12])
_FIELD = st.lists(_WORDS, max_size=30)


def _doc(number: int, fields: dict[str, list[str]], date: int, slug: str) -> Doc:
    return Doc(
        call=f"c{number:07d}",
        message_id=f"m{number}@example.org",
        list=slug,
        url=f"{slug}/{number}.html",
        subject=" ".join(fields.get("subject", [])),
        author="Ann",
        date=date,
        excerpt="",
        fields=fields,
    )


_DOCS = st.lists(
    st.builds(
        lambda fields, date, slug: (fields, date, slug),
        st.fixed_dictionaries({}, optional=dict.fromkeys(("subject", "author", "attachments", "body"), _FIELD)),
        st.integers(0, 2_000_000_000),
        st.sampled_from(["dev", "users"]),
    ),
    max_size=25,
)


def _plain(data: SegmentData, first: int = 0) -> tuple[object, dict[str, tuple[list[int], bytes, bytes | None]]]:
    """Rows and postings as plain values, doc numbers counted from ``first``."""
    return data.rows, {
        term: ([d + first for d in p.docs], bytes(p.impacts), None if p.positions is None else bytes(p.positions))  # type: ignore[arg-type]
        for term, p in data.postings.items()
    }


@settings(max_examples=300, deadline=None)
@given(_DOCS, st.integers(0, 100_000), st.floats(0.0, 500.0), st.sampled_from([0.0, 0.75, 1.0]))
def test_bulk_inversion_equals_the_per_token_one(
    specs: list[tuple[dict[str, list[str]], int, str]], first: int, avgdl: float, b: float
) -> None:
    docs = [_doc(number, *spec) for number, spec in enumerate(specs)]
    assert _plain(to_segment(invert_columns(docs, avgdl, b, first))) == _plain(invert(docs, avgdl, b), first)


@settings(max_examples=200, deadline=None)
@given(_DOCS, st.lists(st.integers(0, 25), max_size=4), st.booleans())
def test_merged_runs_equal_one_inversion(
    specs: list[tuple[dict[str, list[str]], int, str]], cuts: list[int], by_key: bool
) -> None:
    docs = sorted((_doc(number, *spec) for number, spec in enumerate(specs)), key=lambda d: (d.list, d.date, d.call))
    bounds = sorted({0, len(docs), *(min(cut, len(docs)) for cut in cuts)})
    runs = [invert_columns(docs[a:b], 150.0, 0.75, a) for a, b in itertools.pairwise(bounds)]
    whole = invert(docs, 150.0, 0.75)
    merged = merge_columns(runs, by_key=by_key)
    if by_key:
        assert merged.terms == sorted(merged.terms, key=term_key)
    assert _plain(to_segment(merged)) == _plain(whole) if bounds != [0] else not whole.rows
    with tempfile.TemporaryDirectory() as tmp:
        assert _written(Path(tmp), to_segment(merged)) == _written(Path(tmp), whole)


def _written(folder: Path, data: SegmentData) -> dict[str, bytes]:
    target = folder / f"s{len(list(folder.iterdir()))}"
    write_segment(target, data)
    return {p.name: p.read_bytes() for p in target.iterdir()}


def test_a_big_merged_segment_is_written_as_the_per_token_one(tmp_path: Path) -> None:
    """Many distinct terms: many dictionary chunks and postings and positions files."""
    rng = random.Random(7)
    vocabulary = [f"w{n}" for n in range(6000)] + ["über", "磁盘", "a"]
    fields = [
        {"subject": rng.sample(vocabulary, 3), "body": rng.choices(vocabulary, k=rng.randint(0, 120))}
        for _ in range(600)
    ]
    docs = [_doc(n, spec, n, "dev") for n, spec in enumerate(fields)]
    runs = [invert_columns(docs[a : a + 70], 150.0, 0.75, a) for a in range(0, len(docs), 70)]
    merged = _written(tmp_path, to_segment(merge_columns(runs, by_key=True)))
    assert sum(name.startswith("p") for name in merged) > 10 and sum(name.startswith("t") for name in merged) > 10
    whole = invert(docs, 150.0, 0.75)
    assert merged == _written(tmp_path, whole)
    # Read back through the dictionary's offsets and written again: the same files.
    assert _written(tmp_path, read_segment(tmp_path / "s0")) == merged


def test_positions_past_the_limit_are_dropped_alike() -> None:
    body = ["raid", "disk"] * (MAX_POSITION // 2 + 50) + ["late"]
    docs = [_doc(0, {"subject": ["raid"], "body": body}, 0, "dev"), _doc(1, {"body": ["late", "raid"]}, 1, "dev")]
    bulk = to_segment(invert_columns(docs, 100.0, 0.75))
    assert _plain(bulk) == _plain(invert(docs, 100.0, 0.75))
    late = bulk.postings["late"]
    assert list(late.docs) == [0, 1]
    assert decode_positions(late.positions, 2) == [[], [3 * FIELD_GAP]]  # type: ignore[arg-type]  # after three empty fields
    assert max(decode_positions(bulk.postings["raid"].positions, 2)[0]) < MAX_POSITION  # type: ignore[arg-type]


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=120))
def test_ascii_words_are_runs_of_letters_and_digits(text: str) -> None:
    expected = [w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) <= MAX_WORD]
    assert words(text) == expected


def test_runs_collected_as_they_come_merge_to_one_inversion() -> None:
    docs = [
        _doc(n, {"subject": ["raid", str(n % 7)], "body": ["disk", "md", str(n % 5)] * (n % 4)}, n, "dev")
        for n in range(70)
    ]
    runs = [invert_columns(docs[a : a + 3], 150.0, 0.75, a) for a in range(0, len(docs), 3)]  # 24 runs: two levels
    collected = collect_runs(iter(runs))
    assert len(collected) < len(runs)
    assert _plain(to_segment(merge_columns(collected))) == _plain(invert(docs, 150.0, 0.75))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=300, unique=True).map(sorted),
        min_size=1,
        max_size=6,
    )
)
def test_all_postings_encode_as_each_alone(terms: list[list[int]]) -> None:
    _check_encoding(terms)


@pytest.mark.parametrize("step", [1, 5, 64, 129])
def test_postings_encode_alike_in_any_steps(monkeypatch: pytest.MonkeyPatch, step: int) -> None:
    monkeypatch.setattr(bulk, "_ENCODE_STEP", step)
    _check_encoding([[1, 5, 9], list(range(0, 3000, 7)), [2**31 + 5], list(range(40, 400, 3)), [0, 70000]])


def _check_encoding(terms: list[list[int]]) -> None:
    docs = np.array([doc for term in terms for doc in term], dtype=np.uint32)
    impacts = np.array([(doc * 7 + 1) % 255 + 1 for doc in docs.tolist()], dtype=np.uint8)
    ends = np.cumsum([len(term) for term in terms])
    blob, offsets = encode_all_postings(docs, impacts, ends)
    start = 0
    for number, end in enumerate(ends.tolist()):
        expected = encode_postings(docs[start:end].tolist(), impacts[start:end].tobytes())
        assert blob[offsets[number] : offsets[number + 1]] == expected
        start = end
    assert offsets[-1] == len(blob)


@pytest.mark.parametrize("count", [1, 40, 300])
def test_a_segment_written_from_columns_is_the_per_token_one(tmp_path: Path, count: int) -> None:
    words = ["raid", "disk", "md", "resync", "über", "磁盘", "a", "0"]
    docs = [
        _doc(
            n,
            {"subject": [words[n % 8], "md"], "author": ["ann"], "body": [words[(n * k) % 8] for k in range(n % 50)]},
            n * 86_400 * 3,
            "dev",
        )
        for n in range(count)
    ]
    write_segment(tmp_path / "columns", to_segment(invert_columns(docs, 150.0, 0.75)))
    write_segment(tmp_path / "tokens", invert(docs, 150.0, 0.75))
    files = sorted(p.name for p in (tmp_path / "tokens").iterdir())
    assert files == sorted(p.name for p in (tmp_path / "columns").iterdir())
    for name in files:
        assert (tmp_path / "columns" / name).read_bytes() == (tmp_path / "tokens" / name).read_bytes(), name
