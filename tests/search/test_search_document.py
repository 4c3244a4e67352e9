"""A search result's excerpt (``search.document.excerpt_of``)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from listlib.search.document import EXCERPT, author_words, excerpt_of


def _by_definition(body: str) -> str:
    collapsed = re.sub(r"\s+", " ", body).strip()
    if len(collapsed) <= EXCERPT:
        return collapsed
    return collapsed[:EXCERPT].rsplit(" ", 1)[0] + "…"


_PIECES = st.sampled_from(["raid", "disk", "über", "磁盘", " ", "  ", "\n", "\t", "\u00a0", "\u2003", "\x1c", "x" * 40])


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=400).map("".join))
def test_the_excerpt_is_the_collapsed_start_of_the_body_cut_at_a_word(body: str) -> None:
    assert excerpt_of(body) == _by_definition(body)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=1200))
def test_any_text_gives_the_excerpt_of_the_definition(body: str) -> None:
    assert excerpt_of(body) == _by_definition(body)


def test_a_body_that_starts_with_pages_of_whitespace_still_gives_its_words() -> None:
    body = " \n" * 5000 + "the array is degraded " * 30
    excerpt = excerpt_of(body)
    assert excerpt.startswith("the array is degraded the")
    assert excerpt.endswith("…") and len(excerpt) <= EXCERPT + 1


def test_author_words_cut_capitalised_names_and_are_asked_again_alike() -> None:
    first = author_words("NeilBrown DMcKenzie", "neil.brown@example.org")
    assert first == ["neilbrown", "neil", "brown", "dmckenzie", "d", "mc", "kenzie", "neil", "brown", "example", "org"]
    first.append("changed")  # a caller's list is its own: the words kept are not touched
    assert author_words("NeilBrown DMcKenzie", "neil.brown@example.org") == first[:-1]
