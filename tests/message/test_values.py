from hypothesis import given
from hypothesis import strategies as st

from listlib.values import (
    EPOCH_MS,
    call_number_from_int,
    call_number_to_int,
    is_call_number,
    is_slug,
    tick_of_ms,
)


@given(st.integers(min_value=0, max_value=62**8 - 1))
def test_call_number_round_trips(value: int) -> None:
    call = call_number_from_int(value)
    assert len(call) == 8 and is_call_number(call)
    assert call_number_to_int(call) == value


@given(st.integers(min_value=0, max_value=62**8 - 2), st.integers(min_value=1, max_value=10**9))
def test_call_numbers_sort_like_their_values(value: int, step: int) -> None:
    later = min(value + step, 62**8 - 1)
    assert call_number_from_int(value) < call_number_from_int(later)


def test_call_numbers_are_url_safe_and_last_past_2100() -> None:
    year_2100_ms = 4102444800000
    call = call_number_from_int(tick_of_ms(year_2100_ms))
    assert call.isalnum() and call.isascii()
    assert tick_of_ms(EPOCH_MS - 5) == 0


def test_slugs() -> None:
    assert is_slug("dev") and is_slug("linux-raid") and is_slug("a1")
    for bad in ("Dev", "-dev", "dev-", "d_v", "", "dev/x", "_no_list"):
        assert not is_slug(bad)
