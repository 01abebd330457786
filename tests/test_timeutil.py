"""Durations and times operators type: the accepted forms are exactly number[.digits] + s/m/h/d/w."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from slurmtools.timeutil import parse_duration, parse_since


@pytest.mark.parametrize(("text", "seconds"), [("90s", 90), ("30m", 1800), ("1.5h", 5400), (" 7 d ", 604800),
                                               ("2w", 1209600)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "7", "d", "1.s", ".5s", "-1s", "+1s", "1e3s", "1..2s", "1.5.5s", "٣s", "7x"])
def test_not_durations(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)


def test_since() -> None:
    now = datetime(2026, 11, 22, 12, tzinfo=UTC)
    assert parse_since("2h", now=now) == now - timedelta(hours=2)
    assert parse_since("now", now=now) == now
    with pytest.raises(ValueError, match="not a time"):
        parse_since(".5h", now=now)
