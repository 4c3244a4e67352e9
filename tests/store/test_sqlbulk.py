"""Bulk SQL statements store exactly what executemany would, NUL characters included."""

from __future__ import annotations

import sqlite3

from hypothesis import given
from hypothesis import strategies as st

from listlib.sqlbulk import insert_rows, where_in

_VALUE = st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1), st.text(st.characters(exclude_categories=["Cs"])))


def _tables() -> tuple[sqlite3.Connection, sqlite3.Connection]:
    dbs = sqlite3.connect(":memory:"), sqlite3.connect(":memory:")
    for db in dbs:
        db.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, a, b)")
    return dbs


@given(st.lists(st.tuples(_VALUE, _VALUE), max_size=30))
def test_insert_rows_stores_what_executemany_stores(values: list[tuple[object, object]]) -> None:
    bulk, plain = _tables()
    rows = [(index, a, b) for index, (a, b) in enumerate(values)]
    insert_rows(bulk, "INSERT INTO t (k, a, b)", 3, rows)
    plain.executemany("INSERT INTO t (k, a, b) VALUES (?, ?, ?)", rows)
    query = "SELECT k, a, typeof(a), b, typeof(b) FROM t ORDER BY k"
    assert bulk.execute(query).fetchall() == plain.execute(query).fetchall()


def test_text_with_nul_survives() -> None:
    bulk, _ = _tables()
    insert_rows(bulk, "INSERT INTO t", 3, [(1, "a\x00b", "c")])
    assert bulk.execute("SELECT a FROM t").fetchone() == ("a\x00b",)


def test_where_in_touches_exactly_the_keys() -> None:
    bulk, _ = _tables()
    insert_rows(bulk, "INSERT INTO t", 3, [(k, f"v{k}", None) for k in range(2000)])
    where_in(bulk, "DELETE FROM t WHERE k", range(0, 2000, 2))
    where_in(bulk, "UPDATE t SET b = 1 WHERE a", ["v1", "v3", "x\x00y"])
    assert bulk.execute("SELECT count(*) FROM t").fetchone() == (1000,)
    assert bulk.execute("SELECT k FROM t WHERE b = 1 ORDER BY k").fetchall() == [(1,), (3,)]
    where_in(bulk, "DELETE FROM t WHERE k", [])
    insert_rows(bulk, "INSERT INTO t", 3, [])
    assert bulk.execute("SELECT count(*) FROM t").fetchone() == (1000,)


@given(st.integers(0, 2100), st.sampled_from([0, 40, 300]))
def test_insert_rows_keeps_every_row_in_order_at_any_count_and_parameter_limit(count: int, limit: int) -> None:
    bulk, plain = _tables()
    if limit:
        bulk.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, limit)
    rows = [(None, f"a{i}", i) for i in range(count)]  # k NULL: the rowid shows the insertion order
    insert_rows(bulk, "INSERT INTO t (k, a, b)", 3, rows)
    plain.executemany("INSERT INTO t (k, a, b) VALUES (?, ?, ?)", rows)
    query = "SELECT k, a, b FROM t ORDER BY k"
    assert bulk.execute(query).fetchall() == plain.execute(query).fetchall()
