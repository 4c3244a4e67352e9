"""Threading a list from scratch a batch of clusters at a time gives exactly the cache
that threading it in one batch gives."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from listlib.store.index import Index, Row
from listlib.threadbatch import cluster_calls
from listlib.threadset import ThreadSet

from .test_threadset import add, day, make_row, random_rows

TABLES = ["months", "messages", "keys", "threads", "thread_months", "gone", "overrides", "revisions"]


def dump(folder: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every row of the cache's tables but ``meta`` (its epoch is random)."""
    db = sqlite3.connect(folder / "threads.sqlite")
    try:
        return {table: sorted(db.execute(f"SELECT * FROM {table}").fetchall(), key=repr) for table in TABLES}
    finally:
        db.close()


def threaded(index: Index, folder: Path, overrides: dict[str, dict[str, str | None]], batch: int | None) -> dict:
    with ThreadSet(folder, batch=batch) as threadset:
        changes = threadset.update(index, overrides)
    return {"changes": changes, **dump(folder)}


def same_but_epoch(a: dict, b: dict) -> None:
    assert a["changes"].threads == b["changes"].threads
    assert a["changes"].months == b["changes"].months
    assert a["changes"].rethreaded == b["changes"].rethreaded
    for table in TABLES:
        assert a[table] == b[table], table


def test_batches_hold_whole_clusters_of_bounded_size() -> None:
    # Clusters: {a1, a2, a3} (a shared id), {b1, b2} (a subject), {c1}, {d1 .. d6} (one big).
    keys = {
        "a1": ["<x"],
        "b1": ["s:topic"],
        "a2": ["<x", "<y"],
        "c1": ["<z"],
        "a3": ["<y"],
        "b2": ["s:topic"],
        **{f"d{n}": ["<d", f"<d{n}"] for n in range(1, 7)},
    }
    clusters = cluster_calls(keys.items())
    batches = [[clusters.calls[n] for n in batch] for batch in clusters.batches(4)]
    assert sorted(call for batch in batches for call in batch) == sorted(keys)
    cluster_of = {clusters.calls[n]: clusters.name(n) for n in range(len(clusters.calls))}
    assert {cluster_of[c] for c in ("a1", "a2", "a3")} == {"a1"}
    assert {cluster_of[c] for c in ("b1", "b2")} == {"b1"}
    assert cluster_of["d4"] == "d1"
    for batch in batches:
        assert len(batch) <= 4 or {cluster_of[c] for c in batch} == {"d1"}  # only the big one alone
        for call in batch:
            assert all(c in batch for c, name in cluster_of.items() if name == cluster_of[call])
    assert len(batches) == 3  # a (b would pass 4); b and c; d alone
    assert dict(clusters.key_clusters()) == {
        "<x": "a1",
        "<y": "a1",
        "s:topic": "b1",
        "<z": "c1",
        "<d": "d1",
        **{f"<d{n}": "d1" for n in range(1, 7)},
    }


def test_a_list_threaded_one_cluster_at_a_time_gives_the_same_cache(tmp_path: Path) -> None:
    """Threads spanning months by references and by subject, an override joining a
    cluster to another, a detached reply, and a Message-ID used twice."""
    index = Index(tmp_path / "index.sqlite")
    rows: list[Row] = [
        make_row("c0000001", mid="a", subject="Plans", date=day(1), author=("Ann", "ann@x")),
        make_row("c0000002", mid="b", irt="a", refs=("a",), subject="Re: Plans", date=day(35)),
        make_row("c0000003", mid="c", irt="b", refs=("a", "b"), subject="Re: Plans", date=day(70)),
        make_row("c0000004", mid="d", subject="Budget", date=day(20)),
        make_row("c0000005", mid="e", subject="Re: Budget", date=day(40)),  # by subject, into February
        make_row("c0000006", mid="f", subject="Elsewhere", date=day(50)),
        make_row("c0000007", mid="g", irt="f", subject="Re: Elsewhere", date=day(51)),
        make_row("c0000008", mid="h", irt="missing", refs=("missing",), subject="Orphan", date=day(3)),
        make_row("c0000009", mid="i", irt="missing", refs=("missing",), subject="Orphan too", date=day(33)),
        make_row("c0000010", mid="a", subject="Plans", date=day(2)),  # the same Message-ID again
        make_row("c0000011", mid="k", subject="Alone", date=day(90), slug="announce"),
    ]
    add(index, *rows)
    overrides: dict[str, dict[str, str | None]] = {"dev": {"c0000006": "c0000004", "c0000003": None}}
    try:
        whole = threaded(index, tmp_path / "whole", overrides, None)
        for batch in (1, 2, 3):
            same_but_epoch(threaded(index, tmp_path / f"batch{batch}", overrides, batch), whole)
        thread_of = {call: thread for call, *_, thread in whole["messages"]}
        assert thread_of["c0000007"] == thread_of["c0000004"]  # the override joined two clusters
        assert thread_of["c0000005"] == "c0000004"
        assert thread_of["c0000003"] == "c0000003"
        assert len({(row[2], row[3]) for row in whole["messages"]}) > 1
    finally:
        index.close()


@st.composite
def lists_with_overrides(draw: st.DrawFn) -> tuple[list[Row], dict[str, dict[str, str | None]]]:
    rows = random_rows(draw, 16)
    overrides: dict[str, dict[str, str | None]] = {}
    for row in draw(st.lists(st.sampled_from(rows), max_size=4)):
        same_list = [r.call for r in rows if r.list == row.list]
        overrides.setdefault(row.list, {})[row.call] = draw(st.one_of(st.none(), st.sampled_from(same_list)))
    return rows, overrides


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lists_with_overrides(), st.integers(min_value=1, max_value=4))
def test_any_batch_size_gives_the_cache_of_one_batch(
    tmp_path_factory: pytest.TempPathFactory,
    case: tuple[list[Row], dict[str, dict[str, str | None]]],
    batch: int,
) -> None:
    rows, overrides = case
    folder = tmp_path_factory.mktemp("batches")
    index = Index(folder / "index.sqlite")
    try:
        add(index, *rows)
        same_but_epoch(
            threaded(index, folder / "small", overrides, batch), threaded(index, folder / "one", overrides, None)
        )
    finally:
        index.close()
