"""Property tests are time-independent: the profile loaded by conftest.py has no
deadline and no wall-clock health check, and no test sets a deadline of its own."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

TESTS = Path(__file__).resolve().parent


def test_the_default_profile_has_no_wall_clock_limits() -> None:
    assert settings().deadline is None
    assert HealthCheck.too_slow in settings().suppress_health_check


@given(st.integers())
def test_a_plain_given_test_inherits_the_profile(_number: int) -> None:
    assert settings().deadline is None


def test_no_test_sets_a_deadline_or_unsuppresses_the_slow_check() -> None:
    for path in TESTS.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"settings\([^)]*deadline\s*=\s*(?!None)\w", text), path.name
        assert "suppress_health_check=[" + "]" not in text, path.name
