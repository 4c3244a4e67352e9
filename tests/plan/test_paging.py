"""Where a long thread's page breaks fall (``plan.paging``): by count and by weight, in
order, and stable at the front when the thread grows."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from listlib.plan.paging import PAGE_BYTES, PAGE_MESSAGES, PLACEHOLDER_WEIGHT, message_weight, page_numbers


def test_a_short_thread_is_one_page() -> None:
    assert page_numbers([2_000] * 12) == [1] * 12


def test_a_thread_of_many_short_messages_is_cut_by_count() -> None:
    pages = page_numbers([1_000] * (2 * PAGE_MESSAGES + 3))
    assert pages == [1] * PAGE_MESSAGES + [2] * PAGE_MESSAGES + [3] * 3


def test_a_few_heavy_messages_fill_a_page_before_the_count_does() -> None:
    heavy = PAGE_BYTES // 3
    assert page_numbers([heavy, heavy, heavy, heavy, 1_000]) == [1, 1, 1, 2, 2]


def test_a_message_heavier_than_a_page_has_a_page_of_its_own() -> None:
    assert page_numbers([1_000, 3 * PAGE_BYTES, 1_000]) == [1, 2, 3]


def test_a_placeholder_weighs_little_whatever_its_stored_size() -> None:
    assert message_weight(5 * PAGE_BYTES, placeholder=True) == PLACEHOLDER_WEIGHT
    assert message_weight(5 * PAGE_BYTES, placeholder=False) == 5 * PAGE_BYTES


weights = st.lists(st.integers(min_value=PLACEHOLDER_WEIGHT, max_value=2 * PAGE_BYTES), max_size=150)


@given(weights, weights)
def test_a_thread_that_grows_at_the_end_keeps_every_earlier_message_on_its_page(
    before: list[int], added: list[int]
) -> None:
    was = page_numbers(before)
    now = page_numbers(before + added)
    assert now[: len(before)] == was
    assert all(b - a in (0, 1) for a, b in itertools.pairwise(now))  # pages in order, none skipped


@given(weights, st.integers(min_value=0), st.integers(min_value=PLACEHOLDER_WEIGHT, max_value=PAGE_BYTES))
def test_a_reply_in_the_middle_moves_no_message_before_it(before: list[int], at: int, weight: int) -> None:
    at = at % (len(before) + 1)
    now = page_numbers([*before[:at], weight, *before[at:]])
    assert now[:at] == page_numbers(before)[:at]
