"""The durable UIDL record of accounts that keep mail on the server."""

from __future__ import annotations

from pathlib import Path

from listlib.uidls import UidlLog


def test_recorded_uidls_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / ".pop3" / "archive.uidls"
    log = UidlLog(path, "ann@pop.example.org")
    assert log.load() == set()
    log.add(["a1", "b2"])
    log.add(["b2", "c3"])
    assert path.read_text() == "listlib-uidls 1 ann@pop.example.org\na1\nb2\nc3\n"
    assert UidlLog(path, "ann@pop.example.org").load() == {"a1", "b2", "c3"}


def test_a_line_cut_short_by_a_crash_is_forgotten_and_cut_off(tmp_path: Path) -> None:
    path = tmp_path / "archive.uidls"
    path.write_text("listlib-uidls 1 ann@h\na1\nb2\nc3-cut-sh")
    log = UidlLog(path, "ann@h")
    assert log.load() == {"a1", "b2"}
    log.add(["c3"])
    assert path.read_text() == "listlib-uidls 1 ann@h\na1\nb2\nc3\n"


def test_a_record_of_another_mailbox_means_nothing(tmp_path: Path) -> None:
    path = tmp_path / "archive.uidls"
    UidlLog(path, "ann@old.example.org").add(["a1"])
    log = UidlLog(path, "ann@new.example.org")
    assert log.load() == set()
    assert path.read_text() == "listlib-uidls 1 ann@new.example.org\n"


def test_uidls_that_left_the_server_are_forgotten_in_bulk(tmp_path: Path) -> None:
    path = tmp_path / "archive.uidls"
    log = UidlLog(path, "ann@h")
    log.add(str(i) for i in range(100))
    assert not log.forget_others({str(i) for i in range(10, 100)})  # 10 stale: not worth a rewrite yet
    assert log.forget_others({str(i) for i in range(50, 100)})
    assert UidlLog(path, "ann@h").load() == {str(i) for i in range(50, 100)}
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
