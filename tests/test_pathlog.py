"""PathLog: the paths a build wrote, in order, equal to the list of them, with all but
the last few in an unnamed temporary file."""

from __future__ import annotations

from listlib.pathlog import PathLog

PATHS = [f"dev/2024/{n % 12 + 1:02d}/{n:06d}.html" for n in range(25)] + ["mid/ü/ß.html", "odd/\udcff.html"]


def test_a_log_past_its_memory_reads_back_every_path_in_order() -> None:
    log = PathLog(in_memory=4)
    log.extend(PATHS[:20])
    for path in PATHS[20:]:
        log.append(path)
    assert len(log) == len(PATHS) and bool(log)
    assert list(log) == PATHS and log == PATHS and log == tuple(PATHS)
    assert list(log) == PATHS  # read twice
    assert (log[0], log[5], log[-1], log[len(PATHS) - 2]) == (PATHS[0], PATHS[5], PATHS[-1], PATHS[-2])
    assert log[3:6] == PATHS[3:6]
    assert sorted(log) == sorted(PATHS) and set(log) == set(PATHS) and PATHS[7] in log
    assert log != PATHS[:-1] and log != [*PATHS[:-1], "other"]


def test_a_log_keeps_at_most_its_memory_in_memory() -> None:
    log = PathLog((f"p/{n}" for n in range(10_000)), in_memory=100)
    assert len(log._tail) < 100
    assert len(log) == 10_000 and list(log)[-1] == "p/9999"


def test_an_empty_log_equals_the_empty_list() -> None:
    assert PathLog() == [] and not PathLog() and list(PathLog()) == []
    assert PathLog(["a"]) == ["a"] and PathLog(["a"]) != ["b"]
