"""SQLite files: a derived file keeps its rows while its version holds, starts empty
from another version or a damaged file, a snapshot does not see later commits, and a
connection's page caches are small."""

from __future__ import annotations

from pathlib import Path

from listlib.sqlfile import CACHE_KIB, connect, open_derived, snapshot

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS items (name TEXT PRIMARY KEY, size INTEGER NOT NULL);
"""


def test_a_derived_file_keeps_its_rows_while_its_version_holds(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "derived.sqlite"
    db = open_derived(path, SCHEMA, "3")
    db.execute("INSERT INTO items VALUES ('a', 1)")
    db.close()
    db = open_derived(path, SCHEMA, "3")
    assert db.execute("SELECT * FROM items").fetchall() == [("a", 1)]
    assert db.execute("SELECT journal_mode FROM pragma_journal_mode").fetchone() == ("wal",)
    db.close()


def test_another_version_starts_empty_with_the_tables_made_again(tmp_path: Path) -> None:
    path = tmp_path / "derived.sqlite"
    old = connect(path)
    old.executescript(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); INSERT INTO meta VALUES ('version', '2');"
        "CREATE TABLE items (name TEXT PRIMARY KEY); INSERT INTO items VALUES ('a');"
        "CREATE TABLE dropped (x); INSERT INTO dropped VALUES (1);"
    )
    old.close()
    db = open_derived(path, SCHEMA, "3")
    assert db.execute("SELECT * FROM items").fetchall() == []
    db.execute("INSERT INTO items VALUES ('b', 2)")  # the new columns
    tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {"meta", "items"}
    assert db.execute("SELECT * FROM meta").fetchall() == [("version", "3")]
    db.close()


def test_a_damaged_derived_file_is_made_again(tmp_path: Path) -> None:
    path = tmp_path / "derived.sqlite"
    path.write_bytes(b"not a database, whatever its name says" * 100)
    Path(f"{path}-wal").write_bytes(b"junk")
    db = open_derived(path, SCHEMA, "3")
    assert db.execute("SELECT count(*) FROM items").fetchone() == (0,)
    assert db.execute("SELECT value FROM meta WHERE key = 'version'").fetchone() == ("3",)
    db.close()


def test_a_snapshot_does_not_see_commits_made_meanwhile(tmp_path: Path) -> None:
    path = tmp_path / "derived.sqlite"
    reader = open_derived(path, SCHEMA, "3")
    writer = connect(path, isolation_level=None)
    with snapshot(reader):
        assert reader.execute("SELECT count(*) FROM items").fetchone() == (0,)
        writer.execute("INSERT INTO items VALUES ('a', 1)")
        assert reader.execute("SELECT count(*) FROM items").fetchone() == (0,)
    assert not reader.in_transaction
    assert reader.execute("SELECT count(*) FROM items").fetchone() == (1,)
    writer.close()
    reader.close()


def test_a_connections_page_caches_are_small_for_its_file_and_its_temporary_tables(tmp_path: Path) -> None:
    """SQLite's default (2,000 KiB a schema) fills as the archive grows: a build's memory
    would grow with it (tests/build/test_build_memory.py)."""
    assert CACHE_KIB <= 512
    for db in (connect(tmp_path / "plain.sqlite"), open_derived(tmp_path / "derived.sqlite", SCHEMA, "1")):
        db.execute("CREATE TEMP TABLE scratch (x)")
        for schema in ("main", "temp"):
            assert db.execute(f"PRAGMA {schema}.cache_size").fetchone() == (-CACHE_KIB,)
        db.close()
