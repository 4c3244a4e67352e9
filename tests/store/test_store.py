import json
import os
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from listlib.config import load_config
from listlib.filing import FilingReport, file_sources
from listlib.store.core import Store
from listlib.store.index import SCHEMA_VERSION
from listlib.verify import check_store, repair_store

from ..support.helpers import make_message, mboxrd, stored_files

NOW = 1_800_000_000.0


def do_import(site: Path, *sources: Path, **kwargs) -> FilingReport:  # type: ignore[no-untyped-def]
    config = load_config(site / "listlib.toml")
    with Store(config.site.content_dir, clock=lambda: NOW).open() as store:
        return file_sources(store, config.lists, list(sources), **kwargs)


def write_mbox(path: Path, messages: list[bytes]) -> Path:
    path.write_bytes(mboxrd(messages))
    return path


def test_messages_are_stored_byte_for_byte_under_list_year_month(site: Path) -> None:
    raw = make_message(body="From the top\n>From quoted\n")
    report = do_import(site, write_mbox(site / "in.mbox", [raw]))
    assert (report.messages, report.filed) == (1, 1)
    files = stored_files(site / "content")
    [(path, data)] = files.items()
    assert path.startswith("dev/2024/05/") and path.endswith(".eml")
    assert data == raw
    assert len(Path(path).stem) == 8


def test_reimporting_files_each_message_once(site: Path) -> None:
    mbox = write_mbox(site / "in.mbox", [make_message(message_id=f"<{i}@x>") for i in range(10)])
    first = do_import(site, mbox)
    second = do_import(site, mbox)
    assert (first.filed, first.duplicates) == (10, 0)
    assert (second.filed, second.duplicates) == (0, 10)
    assert len(stored_files(site / "content")) == 10


def test_same_post_from_mbox_and_maildir_is_filed_once(site: Path) -> None:
    post = make_message(body="Patch attached.\nFrom my tests it works.\n")
    write_mbox(site / "a.mbox", [post])
    maildir = site / "md"
    for folder in ("cur", "new", "tmp"):
        (maildir / folder).mkdir(parents=True)
    delivered = b"Return-Path: <ann@example.org>\nDelivered-To: archive@example.org\nX-Status: RO\n" + post
    (maildir / "cur" / "1.M1:2,S").write_bytes(delivered.replace(b"it works.\n", b"it works.\n\n"))
    report = do_import(site, site / "a.mbox", maildir)
    assert (report.filed, report.duplicates, report.collisions) == (1, 1, 0)


def test_same_message_id_with_different_content_is_a_reported_collision(site: Path) -> None:
    first = make_message(body="The original text.\n")
    other = make_message(body="A completely unrelated announcement about cheese.\n")
    other_sender = make_message(body="The original text.\n", sender="mallory@example.net")
    report = do_import(site, write_mbox(site / "a.mbox", [first, other, other_sender]))
    assert (report.filed, report.duplicates, report.collisions) == (3, 0, 2)
    detail = report.collision_details[0]
    assert detail["message_id"] == "m1@example.org" and len(detail["others"]) == 1
    assert sorted(stored_files(site / "content").values()) == sorted([first, other, other_sender])


def test_messages_without_message_id_are_matched_on_content(site: Path) -> None:
    a = make_message(message_id=None, body="no id here\n")
    b = make_message(message_id=None, body="a different text\n")
    mbox = write_mbox(site / "a.mbox", [a, b, a])
    report = do_import(site, mbox)
    assert (report.filed, report.duplicates) == (2, 1)
    assert do_import(site, mbox).duplicates == 3


def test_only_messages_without_message_id_are_indexed_by_vitals(site: Path) -> None:
    """Dedup looks vitals up only among messages without a Message-ID: the index of
    vitals holds just those (a random B-tree insert per message filed was the cost of a
    full one), and an index file from before loses its full one on opening."""
    without_id = make_message(message_id=None, body="no id here\n")
    mbox = write_mbox(site / "a.mbox", [without_id, make_message(message_id="<with@x>")])
    assert do_import(site, mbox).filed == 2
    index_file = site / "content" / ".index" / "index.sqlite"
    db = sqlite3.connect(index_file)
    db.execute("CREATE INDEX messages_by_vitals ON messages (list, vitals)")  # as listlib made it before
    db.close()
    store = Store(site / "content").open()
    try:
        indexes = dict(store.index.db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index'").fetchall())
        assert "messages_by_vitals" not in indexes
        assert indexes["messages_by_vitals_without_id"].endswith("WHERE message_id IS NULL")
        vitals = next(row.vitals for row in store.index.iter_rows() if row.message_id is None)
        traced: list[str] = []
        store.index.db.set_trace_callback(traced.append)
        [row] = store.index.find_related("dev", [], [], [vitals])
        store.index.db.set_trace_callback(None)
        assert row.message_id is None
        (query,) = [sql for sql in traced if "vitals IN" in sql]
        plan = store.index.db.execute(f"EXPLAIN QUERY PLAN {query}").fetchall()
        expected = "SEARCH messages USING INDEX messages_by_vitals_without_id (list=? AND vitals=?)"
        assert [r[-1] for r in plan] == [expected]
    finally:
        store.close()
    assert do_import(site, mbox).duplicates == 2


def test_routing_by_list_id_then_addresses_then_no_list(site: Path) -> None:
    by_id = make_message(
        message_id="<1@x>", to="someone@example.org", extra={"List-Id": "Announcements <announce.lists.example.org>"}
    )
    by_cc = make_message(message_id="<2@x>", to="x@example.org", extra={"Cc": "Dev <DEV@lists.example.org>"})
    by_delivered = make_message(
        message_id="<3@x>", to="x@example.org", extra={"Delivered-To": "announce@lists.example.org"}
    )
    stray = make_message(message_id="<4@x>", to="nobody@example.org")
    report = do_import(site, write_mbox(site / "a.mbox", [by_id, by_cc, by_delivered, stray]))
    assert report.by_list == {"announce": 2, "dev": 1, "_no_list": 1}
    assert report.no_list == 1
    lists = sorted(p.split("/")[0] for p in stored_files(site / "content"))
    assert lists == ["_no_list", "announce", "announce", "dev"]


def test_forced_list_overrides_routing(site: Path) -> None:
    report = do_import(site, write_mbox(site / "a.mbox", [make_message(to="x@y.org")]), forced_list="announce")
    assert report.by_list == {"announce": 1}


def test_unfileable_mail_goes_to_failed_with_a_reason(site: Path) -> None:
    (site / "in").mkdir()
    (site / "in" / "no-headers.txt").write_bytes(b"Send Ppp mailing list submissions to\n\tppp@zzz.org\n")
    (site / "in" / "empty.eml").write_bytes(b"")
    report = do_import(site, site / "in")
    assert (report.messages, report.failed, report.filed) == (2, 2, 0)
    failed = site / "content" / "_failed"
    reasons = sorted(json.loads(p.read_text())["reason"] for p in failed.glob("*.json"))
    assert reasons == ["empty", "no-headers"]
    assert sorted(p.read_bytes() for p in failed.glob("*.eml")) == sorted(
        [b"", (site / "in" / "no-headers.txt").read_bytes()]
    )
    assert do_import(site, site / "in").duplicates == 2


def test_date_source_is_recorded_and_chosen_month_follows_it(site: Path) -> None:
    no_date = make_message(
        message_id="<nd@x>", date=None, extra={"Received": "from a by b; Tue, 9 Dec 2025 14:03:11 +0000"}
    )
    future = make_message(message_id="<fu@x>", date=datetime(2040, 1, 1, tzinfo=UTC))
    envelope_only = make_message(message_id="<env@x>", date=None)
    data = mboxrd([no_date, future])
    data += b"From a@b Mon Mar  3 10:00:00 2003\n" + envelope_only + b"\n"
    (site / "a.mbox").write_bytes(data)
    do_import(site, site / "a.mbox")
    config = load_config(site / "listlib.toml")
    with Store(config.site.content_dir).open() as store:
        rows = {row.message_id: row for row in store.index.iter_rows()}
    assert (rows["nd@x"].date_source, rows["nd@x"].year, rows["nd@x"].month) == ("received", 2025, 12)
    assert (rows["env@x"].date_source, rows["env@x"].year, rows["env@x"].month) == ("envelope", 2003, 3)
    assert rows["fu@x"].date_source == "import"
    sidecar = json.loads((site / "content" / rows["nd@x"].path).with_suffix(".json").read_text())
    assert sidecar["date_source"] == "received"


def test_index_rebuilt_from_files_matches_the_original(site: Path) -> None:
    messages = [make_message(message_id=f"<{i}@x>", body=f"text {i}\n") for i in range(20)]
    messages.append(make_message(message_id="<nd@x>", date=None))
    do_import(site, write_mbox(site / "a.mbox", messages))
    content = site / "content"
    with Store(content).open() as store:
        before = sorted(r._replace(origin="") for r in store.index.iter_rows())
    (content / ".index" / "index.sqlite").unlink()
    for extra in ("-wal", "-shm"):
        (content / ".index" / f"index.sqlite{extra}").unlink(missing_ok=True)
    with Store(content).open() as store:
        after = sorted(r._replace(origin="") for r in store.index.iter_rows())
        assert check_store(store).ok
    assert after == before


def test_check_finds_problems_and_repair_fixes_them(site: Path) -> None:
    do_import(site, write_mbox(site / "a.mbox", [make_message(message_id=f"<{i}@x>") for i in range(5)]))
    content = site / "content"
    files = sorted(p for p in content.rglob("*.eml") if ".tmp" not in p.parts)
    files[0].unlink()
    files[1].write_bytes(files[1].read_bytes() + b"tampered\n")
    stray = files[2].parent / "0000zzzz.eml"
    stray.write_bytes(make_message(message_id="<stray@x>"))
    (content / ".tmp" / "leftover.eml").write_bytes(b"half")
    with Store(content).open() as store:
        report = check_store(store)
        text = "\n".join(report.problems + report.leftovers)
        assert "in the index but the file is missing" in text
        assert "its bytes changed" in text
        assert "0000zzzz.eml: not in the index" in text
        assert "leftover.eml: temporary file" in text
        repair_store(store)
        assert check_store(store).ok
        assert store.index.count() == 5  # 4 originals (one tampered) + the stray file


def test_call_numbers_are_unique_and_increase(site: Path) -> None:
    do_import(site, write_mbox(site / "a.mbox", [make_message(message_id=f"<a{i}@x>") for i in range(50)]))
    do_import(site, write_mbox(site / "b.mbox", [make_message(message_id=f"<b{i}@x>") for i in range(50)]))
    with Store(site / "content").open() as store:
        rows = list(store.index.iter_rows())
    calls = [r.call for r in rows]
    assert len(set(calls)) == 100
    by_origin = sorted(rows, key=lambda r: (r.origin.split("#")[0], int(r.origin.split("#")[1])))
    assert [r.call for r in by_origin] == sorted(calls)


def test_dry_run_writes_nothing_but_reports_the_same(site: Path) -> None:
    mbox = write_mbox(site / "a.mbox", [make_message(message_id=f"<{i % 7}@x>") for i in range(10)])
    dry = do_import(site, mbox, dry_run=True)
    assert (dry.filed, dry.duplicates) == (7, 3)
    assert stored_files(site / "content") == {}
    real = do_import(site, mbox)
    assert (real.filed, real.duplicates) == (7, 3)


def test_no_temporary_files_remain(site: Path) -> None:
    do_import(site, write_mbox(site / "a.mbox", [make_message(message_id=f"<{i}@x>") for i in range(30)]))
    assert os.listdir(site / "content" / ".tmp") == []


def test_two_stores_on_one_site_never_allocate_the_same_call_number(site: Path) -> None:
    """Two importers interleaving batches within the same millisecond (a fixed clock)."""
    from listlib.filing import prepare_message
    from listlib.routing import Router
    from listlib.store.batch import Prepared

    config = load_config(site / "listlib.toml")
    router = Router(config.lists)

    def items(prefix: str) -> list[Prepared]:
        out = []
        for i in range(5):
            raw = make_message(message_id=f"<{prefix}{i}@x>")
            d = prepare_message(raw, None, router, None, int(NOW))
            out.append(Prepared(raw, d.facts, d.slug, d.date, d.date_source, f"{prefix}#{i}"))
        return out

    a = Store(site / "content", clock=lambda: NOW).open()
    b = Store(site / "content", clock=lambda: NOW).open()
    try:
        a.file_batch(items("a"))
        b.file_batch(items("b"))
        a.file_batch(items("c"))
        b.file_batch(items("d"))
    finally:
        a.close()
        b.close()
    with Store(site / "content").open() as store:
        assert store.index.count() == 20
        assert check_store(store).ok


@pytest.mark.parametrize("parallel", [False, True])
def test_a_source_that_breaks_off_keeps_what_was_read_before_the_break(site: Path, parallel: bool) -> None:
    import gzip
    import random

    rng = random.Random(7)
    messages = [
        make_message(message_id=f"<{i}@x>", body="".join(rng.choice("abcdefgh \n") for _ in range(3000)) + "\n")
        for i in range(1200)
    ]
    whole = gzip.compress(mboxrd(messages))
    (site / "broken.mbox.gz").write_bytes(whole[: len(whole) * 2 // 3])
    report = do_import(site, site / "broken.mbox.gz", parallel=parallel)
    assert [item["path"] for item in report.unreadable] == [str(site / "broken.mbox.gz")]
    assert "cannot be read" in report.unreadable[0]["reason"]
    filed = stored_files(site / "content")
    assert 600 < len(filed) < 800
    assert set(filed.values()) <= set(messages)
    with Store(site / "content").open() as store:
        assert check_store(store).ok


def test_an_index_from_an_older_schema_is_rebuilt_with_the_new_columns(site: Path) -> None:
    secret = make_message(message_id="<s@x>", extra={"X-No-Archive": "yes"})
    do_import(site, write_mbox(site / "a.mbox", [make_message(message_id="<a@x>"), secret]))
    index_file = site / "content" / ".index" / "index.sqlite"
    db = sqlite3.connect(index_file)
    db.executescript(
        "DROP INDEX messages_by_mid_hash; ALTER TABLE messages DROP COLUMN no_archive; "
        "ALTER TABLE messages DROP COLUMN pins; UPDATE meta SET value = '3' WHERE key = 'schema_version';"
    )
    db.close()
    with Store(site / "content").open() as store:
        rows = {row.message_id: row for row in store.index.iter_rows()}
        assert store.index.schema_version() == SCHEMA_VERSION
    assert rows["s@x"].no_archive == 1 and rows["a@x"].no_archive == 0


def test_a_batch_commits_without_waiting_for_the_disk_and_every_other_commit_waits(site: Path) -> None:
    """The pending rows of a batch are made durable by the same sync as its files;
    the index's own commits stay FULL before and after, also when a batch fails."""
    from listlib.store.index import Index

    index = Index(site / "index.sqlite")

    def level() -> int:
        return index.db.execute("PRAGMA synchronous").fetchone()[0]

    assert level() == 2  # FULL
    index.begin(synced=False)
    assert level() == 1  # NORMAL, for this transaction only
    index.set_meta("x", "1")
    index.commit()
    assert level() == 2
    index.begin(synced=False)
    index.rollback()
    assert level() == 2
    index.begin()
    assert level() == 2
    index.rollback()
    index.sync()  # the write-ahead log exists while the index is open
    assert Path(f"{index.path}-wal").exists()
    index.close()


def test_revisions_read_only_the_messages_stewards_changed(site: Path) -> None:
    """Every build asks each list for its revisions: the query goes through the partial
    index of changed messages, not through the list's every row (SQLite's planner, with
    no statistics, would take the by-date index for ``list = ?``)."""
    messages = [make_message(message_id=f"<m{n}@example.org>") for n in range(3)]
    assert do_import(site, write_mbox(site / "in.mbox", messages)).filed == 3
    store = Store(site / "content").open()
    try:
        traced: list[str] = []
        store.index.db.set_trace_callback(traced.append)
        assert store.index.revisions("dev") == {}
        store.index.db.set_trace_callback(None)
        (query,) = [sql for sql in traced if "raw_hash" in sql]
        plan = store.index.db.execute(f"EXPLAIN QUERY PLAN {query}").fetchall()
        assert [row[-1] for row in plan] == ["SEARCH messages USING INDEX messages_revised (list=?)"]
    finally:
        store.close()
