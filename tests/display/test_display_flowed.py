"""``format=flowed`` undone (``display.textbody.unflow``): RFC 3676 cases."""

from __future__ import annotations

import pytest

from listlib.display.textbody import unflow


@pytest.mark.parametrize(
    ("flowed", "delsp", "expected"),
    [
        ("one \ntwo\n", False, "one two\n"),
        ("one \ntwo", True, "onetwo"),
        ("> quoted \n> more\n>> deeper", False, "> quoted more\n>> deeper"),
        ("> soft \n>> other depth", False, "> soft \n>> other depth"),
        (" From stuffed\n >x", False, "From stuffed\n>x"),
        ("text \n-- \nsig", False, "text -- \nsig"),
        ("-- \nsig", False, "-- \nsig"),
        (">>no space\n>> \n>", False, ">> no space\n>>\n>"),
    ],
)
def test_rfc_3676_examples(flowed: str, delsp: bool, expected: str) -> None:
    assert unflow(flowed, delsp) == expected
