"""The store's filing pipeline: a batch is decided while the one before it is still
being put in place, and nothing about dedup, reporting or locking changes."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from listlib.config import load_config
from listlib.errors import LockTimeoutError
from listlib.filers import RawMail
from listlib.filing import Filer, FilingReport
from listlib.fsutil import acquire_lock, release_lock
from listlib.store import pipeline as pipeline_module
from listlib.store.core import Store
from listlib.verify import check_store

from ..support.helpers import make_message, stored_files


def mails(*raws: bytes) -> list[RawMail]:
    return [RawMail(raw, f"test#{n}", None, 0) for n, raw in enumerate(raws)]


class Gate:
    """A fault hook that holds the pipeline's thread at a point until opened."""

    def __init__(self, point: str) -> None:
        self.point = point
        self.reached = threading.Event()
        self.open = threading.Event()

    def __call__(self, point: str) -> None:
        if point == self.point and not self.open.is_set():
            self.reached.set()
            assert self.open.wait(10)


def test_a_batch_decided_while_the_one_before_is_not_in_place_sees_its_messages(site: Path) -> None:
    config = load_config(site / "listlib.toml")
    original = make_message(body="The original text of a post with enough words to compare.\n")
    # The same post with a list footer added: its body words must be read from batch 1's bytes.
    copy = original + b"--\nThe dev list: https://lists.example.org/dev\n"
    other = make_message(body="A completely unrelated announcement about cheese.\n")  # reuses the id
    gate = Gate("temp-written")
    report = FilingReport()
    with Store(config.site.content_dir, fault=gate).open() as store:
        filer = Filer(store, config.lists, report=report)
        with store.pipeline() as pipeline:
            first = mails(original)
            filer.submit(pipeline, first, [filer.decide(m) for m in first], lambda: None)
            assert gate.reached.wait(10)  # batch 1 decided, its files not yet in place
            assert not stored_files(site / "content")
            second = mails(copy, other)
            filer.submit(pipeline, second, [filer.decide(m) for m in second], lambda: None)
            assert report.messages == 0  # nothing is reported before it is durable
            gate.open.set()
        assert (report.filed, report.duplicates, report.collisions) == (2, 1, 1)
        assert sorted(stored_files(site / "content").values()) == sorted([original, other])
        assert check_store(store).ok


@pytest.mark.parametrize("failing_rename", [25, 65])  # in the second batch; in the last one (raised by finish)
def test_a_failure_putting_a_batch_in_place_stops_the_pipeline_and_loses_nothing(
    site: Path, failing_rename: int
) -> None:
    config = load_config(site / "listlib.toml")
    batches = [mails(*(make_message(message_id=f"<{b}.{i}@x>") for i in range(20))) for b in range(4)]
    renamed = [0]

    def disk_full_at_that_rename(point: str) -> None:
        if point == "renamed":
            renamed[0] += 1
            if renamed[0] == failing_rename:
                raise OSError(28, "No space left on device")

    report = FilingReport()
    done: list[int] = []
    with Store(config.site.content_dir, fault=disk_full_at_that_rename).open() as store:
        filer = Filer(store, config.lists, report=report)
        with pytest.raises(OSError, match="No space left"), store.pipeline() as pipeline:
            for number, batch in enumerate(batches):
                filer.submit(pipeline, batch, [filer.decide(m) for m in batch], lambda n=number: done.append(n))
    in_place_batches = (failing_rename - 1) // 20
    assert done == list(range(in_place_batches)) and report.filed == 20 * in_place_batches  # only what is in place
    assert not [t for t in threading.enumerate() if t.name == "listlib-committer"]
    with Store(config.site.content_dir).open() as store:  # the next lock holder cleans up
        with store.locked():
            pass
        assert check_store(store).ok
        in_place = len(stored_files(site / "content"))  # the batches before and what the failing one renamed
        assert in_place == failing_rename
        filer = Filer(store, config.lists)
        for batch in batches:
            filer.file(batch)
        assert (filer.report.filed, filer.report.duplicates) == (80 - in_place, in_place)
    assert len(stored_files(site / "content")) == 80


def test_a_long_pipeline_lets_another_process_take_the_lock_between_batches(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipeline_module, "_LOCK_TURN", 0.05)
    config = load_config(site / "listlib.toml")
    took_it = threading.Event()
    pipeline_done = threading.Event()

    def other_process() -> None:  # another descriptor of the lock file: flock treats it as another holder
        fd = acquire_lock(config.site.content_dir / ".lock", 30, "busy")
        if not pipeline_done.is_set():
            took_it.set()
        release_lock(fd)

    with Store(config.site.content_dir).open() as store:
        filer = Filer(store, config.lists)
        with store.pipeline() as pipeline:
            waiter = threading.Thread(target=other_process)
            waiter.start()
            # Batches until the other holder had its turn, for up to 20 s (some 250 turns):
            # the lock is free for 30 ms a turn and a waiter tries every 10 ms, so on a
            # loaded machine a waiter may sleep through a few turns, never through all.
            deadline = time.monotonic() + 20
            b = 0
            while not took_it.is_set() and time.monotonic() < deadline:
                batch = mails(*(make_message(message_id=f"<{b}.{i}@x>") for i in range(5)))
                filer.submit(pipeline, batch, [filer.decide(m) for m in batch], lambda: None)
                b += 1
        pipeline_done.set()
        waiter.join()
    assert took_it.is_set()


@pytest.mark.parametrize("point", ["pending-committed", "temp-written", "renamed", "folders-synced"])
def test_a_batch_holds_the_store_lock_until_its_files_are_in_place(site: Path, point: str) -> None:
    """Between the two halves of a batch another process must not get the lock: its
    recovery would delete the temporary files and pending rows still in use."""
    config = load_config(site / "listlib.toml")
    others_got_in: list[bool] = []

    def try_the_lock(reached: str) -> None:
        if reached == point and not others_got_in:
            try:
                fd = acquire_lock(config.site.content_dir / ".lock", 0.05, "busy")
            except LockTimeoutError:
                others_got_in.append(False)
            else:
                release_lock(fd)
                others_got_in.append(True)

    with Store(config.site.content_dir, fault=try_the_lock).open() as store:
        Filer(store, config.lists).file(mails(make_message()))
    assert others_got_in == [False]


def test_a_pipeline_files_with_a_larger_page_cache_and_gives_it_back(site: Path) -> None:
    """Large lists dirty a page of each hash index per message: a batch's pages must fit
    SQLite's cache while an import files, and whoever reads the index after it in the
    same process (``import --build``) gets the default size again."""
    from listlib.store.index import _FILING_CACHE_KIB

    config = load_config(site / "listlib.toml")
    with Store(config.site.content_dir).open() as store:

        def cache_size() -> int:
            return int(store.index.db.execute("PRAGMA cache_size").fetchone()[0])

        default = cache_size()
        filer = Filer(store, config.lists)
        with store.pipeline() as pipeline:
            assert cache_size() == -_FILING_CACHE_KIB != default
            batch = mails(make_message())
            filer.submit(pipeline, batch, [filer.decide(m) for m in batch], lambda: None)
        assert cache_size() == default
        assert filer.report.filed == 1
