"""The thread cache: incremental updates agree with a rebuild, and report exactly what changed."""

from __future__ import annotations

import calendar
import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from listlib.store.index import FILED, PENDING, Index, Row
from listlib.threadcache import CACHE_VERSION
from listlib.threadset import ThreadSet
from listlib.values import Month


def day(n: float) -> int:
    """Seconds of day n after 2024-01-01 (day 31 is in February)."""
    return calendar.timegm((2024, 1, 1, 0, 0, 0)) + int(n * 86400)


def make_row(
    call: str,
    *,
    mid: str | None = None,
    irt: str | None = None,
    refs: tuple[str, ...] = (),
    subject: str = "Topic",
    date: int,
    slug: str = "dev",
    state: int = FILED,
    author: tuple[str, str] = ("", ""),
    no_archive: bool = False,
) -> Row:
    stamp = time.gmtime(date)
    return Row(
        call=call,
        list=slug,
        path=f"{slug}/{stamp.tm_year:04d}/{stamp.tm_mon:02d}/{call}.eml",
        state=state,
        message_id=mid,
        vitals="v",
        raw_hash="h" + call,
        size=1,
        date=date,
        date_source="date",
        year=stamp.tm_year,
        month=stamp.tm_mon,
        subject=subject,
        from_name=author[0],
        from_addr=author[1],
        in_reply_to=irt,
        refs=" ".join(refs),
        collision=0,
        reason=None,
        origin="test",
        no_archive=no_archive,
    )


@pytest.fixture
def index(tmp_path: Path) -> Iterator[Index]:
    index = Index(tmp_path / "index.sqlite")
    yield index
    index.close()


@pytest.fixture
def threadset(tmp_path: Path) -> Iterator[ThreadSet]:
    with ThreadSet(tmp_path / "cache") as opened:
        yield opened


def add(index: Index, *rows: Row) -> None:
    index.begin()
    index.insert_many(rows)
    index.commit()


def remove(index: Index, *calls: str) -> None:
    index.begin()
    index.delete(calls)
    index.commit()


def snapshot(threadset: ThreadSet) -> dict[str, object]:
    """Everything the cache says about the threads, independent of generations."""
    found: dict[str, object] = {}
    for slug in threadset.slugs():
        ids = threadset.thread_ids(slug)
        found[slug] = (
            threadset.threads(slug, ids),
            [m for m in threadset.months(slug)],
            {
                call: threadset.thread_of(slug, call)
                for t in threadset.threads(slug, ids).values()
                for call, *_ in t.messages
            },
        )
    return found


def rebuilt(index: Index, folder: Path, overrides: dict[str, dict[str, str | None]] | None = None) -> dict[str, object]:
    with ThreadSet(folder) as fresh:
        fresh.update(index, overrides)
        return snapshot(fresh)


def test_first_update_threads_every_list_and_month(index: Index, threadset: ThreadSet) -> None:
    add(
        index,
        make_row("c0000001", mid="a", subject="Hello", date=day(1)),
        make_row("c0000002", mid="b", irt="a", refs=("a",), subject="Re: Hello", date=day(40)),
        make_row("c0000003", mid="x", subject="Other list", date=day(2), slug="announce"),
        make_row("c0000004", mid="p", irt="a", date=day(3), state=PENDING),
    )
    changes = threadset.update(index)
    assert changes.rethreaded == 3
    assert changes.threads == {("dev", "c0000001"), ("announce", "c0000003")}
    assert changes.months == {("dev", Month(2024, 1)), ("dev", Month(2024, 2)), ("announce", Month(2024, 1))}
    thread = threadset.thread("dev", "c0000001")
    assert thread is not None
    assert thread.messages == (("c0000001", None, 0), ("c0000002", "c0000001", 1))
    assert thread.months == ((2024, 1, 1), (2024, 2, 1))
    assert (thread.first, thread.last, thread.count) == (day(1), day(40), 2)
    # A thread spanning months is listed in each, with its count there.
    assert [(m.year, m.month, m.threads) for m in threadset.months("dev")] == [
        (2024, 1, (("c0000001", 1),)),
        (2024, 2, (("c0000001", 1),)),
    ]


def test_update_without_changes_rethreads_nothing(index: Index, threadset: ThreadSet) -> None:
    add(index, make_row("c0000001", mid="a", date=day(1)), make_row("c0000002", mid="b", irt="a", date=day(2)))
    first = threadset.update(index)
    again = threadset.update(index)
    assert again.rethreaded == 0
    assert again.generation == first.generation
    assert not (again.threads or again.months or again.gone)


def test_adding_a_reply_rethreads_only_its_cluster_and_reports_its_thread(index: Index, threadset: ThreadSet) -> None:
    add(
        index,
        make_row("c0000001", mid="a", subject="Spanning", date=day(1)),
        make_row("c0000002", mid="b", irt="a", subject="Re: Spanning", date=day(35)),
        make_row("c0000003", mid="c", subject="Unrelated", date=day(36)),
        make_row("c0000004", mid="d", subject="Also unrelated", date=day(70)),
    )
    threadset.update(index)
    add(index, make_row("c0000005", mid="e", irt="b", refs=("a", "b"), subject="Re: Spanning", date=day(36)))
    changes = threadset.update(index)
    assert changes.rethreaded == 3
    assert changes.threads == {("dev", "c0000001")}
    # Its January page shows the thread's new total, so January changed too.
    assert changes.months == {("dev", Month(2024, 1)), ("dev", Month(2024, 2))}
    assert not changes.gone


def test_late_root_renames_the_thread_and_records_the_successor(index: Index, threadset: ThreadSet) -> None:
    add(index, make_row("c0000002", mid="b", irt="a", refs=("a",), subject="Re: Late", date=day(2)))
    threadset.update(index)
    assert threadset.thread_ids("dev") == ["c0000002"]
    add(index, make_row("c0000009", mid="a", subject="Late", date=day(1)))
    changes = threadset.update(index)
    assert threadset.thread_ids("dev") == ["c0000009"]
    assert changes.threads == {("dev", "c0000009")}
    assert changes.gone == {("dev", "c0000002"): "c0000009"}
    assert threadset.gone("dev") == {"c0000002": "c0000009"}


def test_removing_a_message_rethreads_its_thread(index: Index, threadset: ThreadSet) -> None:
    add(
        index,
        make_row("c0000001", mid="a", date=day(1)),
        make_row("c0000002", mid="b", irt="a", date=day(2)),
        make_row("c0000003", mid="c", irt="b", date=day(40)),
    )
    threadset.update(index)
    remove(index, "c0000001")
    changes = threadset.update(index)
    assert changes.gone == {("dev", "c0000001"): None}
    assert changes.threads == {("dev", "c0000002")}
    assert changes.months == {("dev", Month(2024, 1)), ("dev", Month(2024, 2))}
    remove(index, "c0000002", "c0000003")
    changes = threadset.update(index)
    assert threadset.thread_ids("dev") == []
    assert threadset.months("dev") == []
    assert changes.months == {("dev", Month(2024, 1)), ("dev", Month(2024, 2))}


def test_changes_since_a_generation_add_up(index: Index, threadset: ThreadSet) -> None:
    add(index, make_row("c0000001", mid="a", subject="One", date=day(1)))
    start = threadset.update(index)
    add(index, make_row("c0000002", mid="b", subject="Two", date=day(40)))
    threadset.update(index)
    add(index, make_row("c0000003", mid="c", irt="a", subject="Re: One", date=day(2)))
    threadset.update(index)
    since = threadset.changes_since(start.epoch, start.generation)
    assert not since.everything
    assert since.threads == {("dev", "c0000001"), ("dev", "c0000002")}
    assert since.months == {("dev", Month(2024, 1)), ("dev", Month(2024, 2))}
    latest = threadset.changes_since(since.epoch, since.generation)
    assert not (latest.threads or latest.months)
    assert threadset.changes_since("another-epoch", 3).everything


def test_damaged_or_stale_cache_is_rebuilt_silently(index: Index, tmp_path: Path) -> None:
    add(index, make_row("c0000001", mid="a", date=day(1)), make_row("c0000002", mid="b", irt="a", date=day(2)))
    folder = tmp_path / "cache"
    with ThreadSet(folder) as threadset:
        first = threadset.update(index)
        expected = snapshot(threadset)
    (folder / "threads.sqlite").write_bytes(b"this is not a database" * 100)
    for suffix in ("-wal", "-shm"):
        (folder / f"threads.sqlite{suffix}").unlink(missing_ok=True)
    with ThreadSet(folder) as threadset:
        changes = threadset.update(index)
        assert changes.epoch != first.epoch
        assert threadset.changes_since(first.epoch, first.generation).everything
        assert snapshot(threadset) == expected
    with ThreadSet(folder) as threadset:
        threadset.cache.db.execute("UPDATE meta SET value = ? WHERE key = 'version'", (str(CACHE_VERSION + 1),))
    with ThreadSet(folder) as threadset:
        assert threadset.update(index).rethreaded == 2
        assert snapshot(threadset) == expected


# Incremental updates in any order of additions and removals agree with a rebuild.

IDS = [f"i{n}" for n in range(10)]
SUBJECTS = ["Hello", "Re: Hello", "Other", "Re: Other", ""]
AUTHORS = [("Ann", "ann@x"), ("", "bob@x"), ("Ann", "ann@y"), ("", "")]


def random_rows(draw: st.DrawFn, most: int) -> list[Row]:
    """1 to ``most`` rows of two lists whose ids, references and subjects often meet."""
    count = draw(st.integers(min_value=1, max_value=most))
    return [
        make_row(
            f"c{n:07d}",
            mid=draw(st.one_of(st.none(), st.sampled_from(IDS))),
            irt=draw(st.one_of(st.none(), st.sampled_from(IDS))),
            refs=tuple(draw(st.lists(st.sampled_from(IDS), max_size=3))),
            subject=draw(st.sampled_from(SUBJECTS)),
            date=day(draw(st.integers(min_value=0, max_value=120))),
            slug=draw(st.sampled_from(["dev", "dev", "announce"])),
            author=draw(st.sampled_from(AUTHORS)),
            no_archive=draw(st.booleans()),
        )
        for n in range(count)
    ]


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[Row], list[list[str]], list[list[str]]]:
    rows = random_rows(draw, 14)
    count = len(rows)
    calls = [row.call for row in rows]
    order = draw(st.permutations(calls))
    cuts = sorted(draw(st.lists(st.integers(min_value=0, max_value=count), max_size=4)))
    batches = [list(order[a:b]) for a, b in zip([0, *cuts], [*cuts, count], strict=True)]
    removals = [draw(st.lists(st.sampled_from(calls), max_size=2, unique=True)) for _ in batches]
    return rows, batches, removals


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(histories())
def test_incremental_updates_agree_with_a_rebuild_from_scratch(
    tmp_path_factory: pytest.TempPathFactory, history: tuple[list[Row], list[list[str]], list[list[str]]]
) -> None:
    rows, batches, removals = history
    by_call = {row.call: row for row in rows}
    folder = tmp_path_factory.mktemp("incremental")
    index = Index(folder / "index.sqlite")
    present: set[str] = set()
    try:
        with ThreadSet(folder / "cache") as threadset:
            for batch, gone in zip(batches, removals, strict=True):
                add(index, *(by_call[c] for c in batch))
                present.update(batch)
                threadset.update(index)
                doomed = [c for c in gone if c in present]
                remove(index, *doomed)
                present.difference_update(doomed)
                threadset.update(index)
                assert snapshot(threadset) == rebuilt(index, folder / f"fresh{random.random()}")
    finally:
        index.close()


Edit = tuple[str, str | None, bool]
"""(call, parent or None, undo) of one override edit."""


@st.composite
def override_histories(
    draw: st.DrawFn,
) -> tuple[list[Row], list[list[str]], list[list[str]], list[list[Edit]]]:
    rows, batches, removals = draw(histories())
    calls = [row.call for row in rows]
    slug_of = {row.call: row.list for row in rows}
    edits: list[list[Edit]] = []
    for _ in batches:
        step: list[Edit] = []
        for call in draw(st.lists(st.sampled_from(calls), max_size=3)):
            same_list = [c for c in calls if slug_of[c] == slug_of[call]]  # a parent in another list is refused
            parent = draw(st.one_of(st.none(), st.sampled_from(same_list), st.sampled_from(same_list)))
            step.append((call, parent, draw(st.integers(0, 3)) == 0))
        edits.append(step)
    return rows, batches, removals, edits


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(override_histories())
def test_incremental_updates_with_override_edits_agree_with_a_rebuild_from_scratch(
    tmp_path_factory: pytest.TempPathFactory,
    history: tuple[list[Row], list[list[str]], list[list[str]], list[list[Edit]]],
) -> None:
    """Attach, detach and undo between arrivals and removals (a hidden message): the
    cache equals threading from scratch."""
    rows, batches, removals, edits = history
    by_call = {row.call: row for row in rows}
    folder = tmp_path_factory.mktemp("overrides")
    index = Index(folder / "index.sqlite")
    overrides: dict[str, dict[str, str | None]] = {}
    present: set[str] = set()
    try:
        with ThreadSet(folder / "cache") as threadset:
            for batch, gone, changes in zip(batches, removals, edits, strict=True):
                add(index, *(by_call[c] for c in batch))
                present.update(batch)
                threadset.update(index, overrides)
                for call, parent, undo in changes:
                    mine = overrides.setdefault(by_call[call].list, {})
                    if undo:
                        mine.pop(call, None)
                    else:
                        mine[call] = parent
                threadset.update(index, overrides)
                assert snapshot(threadset) == rebuilt(index, folder / f"fresh{random.random()}", overrides)
                doomed = [c for c in gone if c in present]
                remove(index, *doomed)
                present.difference_update(doomed)
                threadset.update(index, overrides)
                assert snapshot(threadset) == rebuilt(index, folder / f"fresh{random.random()}", overrides)
    finally:
        index.close()


def test_an_override_rethreads_only_the_threads_it_names(index: Index, threadset: ThreadSet) -> None:
    add(
        index,
        make_row("c0000001", mid="a", subject="Plans", date=day(1)),
        make_row("c0000002", mid="b", irt="a", subject="Re: Plans", date=day(2)),
        make_row("c0000003", mid="c", subject="Plans again", date=day(40)),
        make_row("c0000004", mid="d", irt="c", subject="Re: Plans again", date=day(41)),
        make_row("c0000005", mid="e", subject="Unrelated", date=day(42)),
    )
    threadset.update(index)
    attach = {"dev": {"c0000003": "c0000001"}}
    changes = threadset.update(index, attach)
    assert changes.rethreaded == 4  # both threads, not the unrelated one
    assert changes.threads == {("dev", "c0000001")}
    assert changes.gone == {("dev", "c0000003"): "c0000001"}
    assert changes.months == {("dev", Month(2024, 1)), ("dev", Month(2024, 2))}
    assert threadset.thread("dev", "c0000001").messages == (  # type: ignore[union-attr]
        ("c0000001", None, 0),
        ("c0000002", "c0000001", 1),
        ("c0000003", "c0000001", 1),
        ("c0000004", "c0000003", 2),
    )
    assert threadset.update(index, attach).rethreaded == 0
    # A detach of the reply in January changes only January's thread list.
    detach = {"dev": {"c0000003": "c0000001", "c0000002": None}}
    changes = threadset.update(index, detach)
    assert changes.threads == {("dev", "c0000001"), ("dev", "c0000002")}
    assert changes.months == {("dev", Month(2024, 1)), ("dev", Month(2024, 2))}
    # Undoing everything gives back the threads the headers make.
    changes = threadset.update(index, {})
    assert changes.threads == {("dev", "c0000001"), ("dev", "c0000003")}
    assert changes.gone == {("dev", "c0000002"): "c0000001"}
    assert threadset.thread_ids("dev") == ["c0000001", "c0000003", "c0000005"]
    assert snapshot(threadset) == rebuilt(index, threadset.folder.parent / "fresh")


def test_big_closures_thread_in_a_child_process_with_the_same_result() -> None:
    from listlib.forkpool import run_in_child
    from listlib.threader import ThreadInput, reference_chain, thread_messages
    from listlib.threadset import _FORK_AT

    rnd = random.Random(3)
    inputs = []
    for n in range(_FORK_AT + 10):
        parent = f"m{rnd.randrange(n)}" if n and rnd.random() < 0.8 else None
        inputs.append(
            ThreadInput(f"c{n:07d}", f"m{n}", parent, (parent,) if parent else (), "Subject", day(n / 50), f"h{n}")
        )
    chains = {m.call: reference_chain(m) for m in inputs}

    def compute() -> list[object]:
        return thread_messages(inputs, chains)  # type: ignore[return-value]

    join = run_in_child(compute, big=True)
    assert join is not compute  # forked: the child computes, join receives
    assert join() == compute()


def test_a_thread_lists_its_distinct_authors_in_display_order(index: Index, threadset: ThreadSet) -> None:
    ann, bob = ("Ann", "ann@x"), ("Bob", "bob@x")
    add(
        index,
        make_row("c0000001", mid="a", date=day(1), author=ann),
        make_row("c0000002", mid="b", irt="a", date=day(2), author=bob),
        make_row("c0000003", mid="c", irt="b", date=day(3), author=ann),
        make_row("c0000004", mid="d", irt="a", date=day(4), author=("Dee", "dee@x"), no_archive=True),
    )
    threadset.update(index)
    # Authors of messages withheld from the archive (X-No-Archive) are never shown.
    assert threadset.threads("dev", ["c0000001"])["c0000001"].authors == (ann, bob)
    # A reply by someone new changes the thread's authors; removing it changes them back.
    add(index, make_row("c0000005", mid="e", irt="d", date=day(40), author=("Cy", "cy@x")))
    threadset.update(index)
    assert threadset.threads("dev", ["c0000001"])["c0000001"].authors == (ann, bob, ("Cy", "cy@x"))
    add(index, make_row("c0000006", mid="f", irt="b", date=day(41), author=("Cy", "cy@y")))
    threadset.update(index)
    # Display order is tree order: the reply to c0000002 comes before c0000004's subtree.
    assert threadset.threads("dev", ["c0000001"])["c0000001"].authors == (ann, bob, ("Cy", "cy@y"), ("Cy", "cy@x"))
    remove(index, "c0000005", "c0000006")
    threadset.update(index)
    assert threadset.threads("dev", ["c0000001"])["c0000001"].authors == (ann, bob)


def test_a_month_mark_changes_with_its_messages_or_their_threads_only(index: Index, threadset: ThreadSet) -> None:
    february = (2024, 2)
    add(
        index,
        make_row("c0000002", mid="b", irt="a", refs=("a",), date=day(40)),
        make_row("c0000003", mid="c", subject="Elsewhere", date=day(70)),
    )
    threadset.update(index)
    before = threadset.cache.month_marks("dev")
    assert set(before) == {february, (2024, 3)}
    assert threadset.cache.month_marks("dev", [february]) == {february: before[february]}
    add(index, make_row("c0000004", mid="d", irt="c", refs=("c",), date=day(71)))  # March only
    threadset.update(index)
    assert threadset.cache.month_marks("dev")[february] == before[february]
    # The missing root arrives in January: February's message now belongs to its thread.
    add(index, make_row("c0000001", mid="a", date=day(5)))
    threadset.update(index)
    assert threadset.thread_of("dev", "c0000002") == "c0000001"
    assert threadset.cache.month_marks("dev")[february] != before[february]


def test_the_index_names_the_lists_that_have_filed_messages(index: Index) -> None:
    assert index.slugs() == []
    add(
        index,
        make_row("c0000001", date=day(1), slug="dev"),
        make_row("c0000002", date=day(1), slug="announce", state=PENDING),
        make_row("c0000003", date=day(2), slug="zeta"),
        make_row("c0000004", date=day(3), slug="announce2"),
    )
    assert index.slugs() == ["announce2", "dev", "zeta"]  # a list with only pending rows has none filed
