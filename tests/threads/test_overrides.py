"""content/threads.toml: the file's form, every problem named with file and line, and
the canonical text the commands write back."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from listlib.overrides import (
    check_against_store,
    find_loop,
    format_overrides,
    parse_overrides,
    write_overrides,
)

CALLS = [f"0Abc{n:04d}" for n in range(8)]


@st.composite
def override_sets(draw: st.DrawFn) -> dict[str, dict[str, str | None]]:
    found: dict[str, dict[str, str | None]] = {}
    for slug in draw(st.lists(st.sampled_from(["dev", "announce", "a-b_c"]), unique=True, max_size=3)):
        mine: dict[str, str | None] = {}
        for index, call in enumerate(CALLS):
            choice = draw(st.sampled_from(["none", "detach", "attach"]))
            if choice == "detach":
                mine[call] = None
            elif choice == "attach" and index:
                mine[call] = draw(st.sampled_from(CALLS[:index]))  # earlier only: never a loop
        found[slug] = mine
    return found


@settings(max_examples=100, deadline=None)
@given(override_sets())
def test_the_written_file_reads_back_as_the_same_overrides(overrides: dict[str, dict[str, str | None]]) -> None:
    text = format_overrides(overrides)
    assert parse_overrides(text, "threads.toml") == ({s: m for s, m in overrides.items() if m}, [])


def test_the_file_written_replaces_the_old_one_whole(tmp_path: Path) -> None:
    (tmp_path / "threads.toml").write_text("old")
    write_overrides(tmp_path, {"dev": {"0Abc0001": "0Abc0000"}})
    assert parse_overrides((tmp_path / "threads.toml").read_text(), "f")[0] == {"dev": {"0Abc0001": "0Abc0000"}}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["threads.toml"]


def test_every_problem_of_form_is_named_with_its_line() -> None:
    text = (
        "[dev]\n"
        'detach = ["0Abc0001", "bad!", "0Abc0001"]\n'
        "colour = 3\n"
        "\n"
        "[dev.attach]\n"
        '0Abc0002 = "0Abc0003"\n'
        '0Abc0003 = "0Abc0002"\n'
        '0Abc0004 = "0Abc0004"\n'
        '0Abc0001 = "0Abc0000"\n'
        "0Abc0005 = 7\n"
    )
    overrides, problems = parse_overrides(text, "threads.toml")
    assert sorted(problems) == sorted(
        [
            "threads.toml, line 3: [dev] colour: unknown key (only 'attach' and 'detach')",
            "threads.toml, line 2: [dev] detach: 'bad!' is not a call number",
            "threads.toml, line 2: [dev] detach: 0Abc0001 is listed twice",
            "threads.toml, line 8: [dev.attach] 0Abc0004 cannot answer itself",
            "threads.toml, line 9: [dev] 0Abc0001 is both detached and attached",
            "threads.toml, line 10: [dev.attach] 0Abc0005 = 7: the parent is not a call number",
            "threads.toml, line 6: [dev.attach] attachments make a loop: 0Abc0002 -> 0Abc0003 -> 0Abc0002",
        ]
    )
    assert overrides == {"dev": {"0Abc0001": None}}  # what is left is usable, but the file is refused


def test_a_toml_syntax_error_names_line_and_column() -> None:
    assert parse_overrides('[dev]\ndetach = ["0Abc0001",,]\n', "threads.toml")[1] == [
        "threads.toml, line 2, column 22: TOML syntax error: Invalid value"
    ]
    assert parse_overrides("[dev]\ndetach = [\n", "threads.toml")[1] == [
        "threads.toml: TOML syntax error: Invalid value at the end of the file"
    ]


def test_messages_and_lists_are_checked_against_the_store() -> None:
    text = '[dev]\ndetach = ["0Abc0001"]\n\n[dev.attach]\n0Abc0002 = "0Abc0003"\n\n[gone]\ndetach = ["0Abc0002"]\n'
    overrides, problems = parse_overrides(text, "f")
    assert problems == []
    store = {"0Abc0002": "dev", "0Abc0003": "announce"}
    assert check_against_store(overrides, text, "f", ["dev", "announce"], lambda calls: store) == [
        "f, line 2: [dev] detach 0Abc0001: no message 0Abc0001 in the store",
        "f, line 5: [dev.attach] 0Abc0002: parent 0Abc0003 is in list 'announce', not 'dev'",
        "f, line 7: [gone]: no list 'gone' in listlib.toml",
    ]


def test_find_loop_finds_the_first_loop_in_call_order() -> None:
    assert find_loop({"b": "a", "c": "b"}) is None
    assert find_loop({"x": "y", "c": "d", "d": "c", "y": "x"}) == ["c", "d"]
