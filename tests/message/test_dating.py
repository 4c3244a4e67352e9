from listlib.dating import choose_date, month_of
from listlib.values import Month

NOW = 1_800_000_000  # 2027-01-15
DAY = 86_400


def test_sane_date_header_wins() -> None:
    assert choose_date(1_700_000_000, 1_700_000_100, None, NOW) == (1_700_000_000, "date")


def test_future_or_ancient_date_falls_back_to_received() -> None:
    assert choose_date(NOW + 10 * DAY, 1_700_000_000, None, NOW).source == "received"
    assert choose_date(1_700_000_000 + 400 * DAY, 1_700_000_000, None, NOW).source == "received"
    assert choose_date(-2_000_000_000, 1_700_000_000, None, NOW).source == "received"


def test_envelope_then_import_time() -> None:
    assert choose_date(None, None, 1_600_000_000, NOW) == (1_600_000_000, "envelope")
    assert choose_date(None, None, 0, NOW) == (NOW, "import")  # 1970 placeholder is not a date
    assert choose_date(None, None, None, NOW) == (NOW, "import")


def test_date_without_transport_is_trusted_when_plausible() -> None:
    assert choose_date(31_000_000, None, None, NOW).source == "import"  # before 1971
    assert choose_date(1_000_000_000, None, None, NOW) == (1_000_000_000, "date")


def test_month_is_utc() -> None:
    assert month_of(1_704_067_199) == Month(2023, 12)  # 2023-12-31T23:59:59Z
    assert str(month_of(1_704_067_200)) == "2024-01"
