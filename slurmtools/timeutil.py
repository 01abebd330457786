"""Parsing the times and durations operators type: `7d`, `12h`, `2026-11-01`, `2026-11-01T12:00`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> timedelta:
    """`90s`, `30m`, `12h`, `7d`, `2w` -> timedelta. Raises ValueError with the accepted forms."""
    value = _duration_seconds(text)
    if value is None:
        raise ValueError(f"not a duration: {text!r} (use e.g. 90s, 30m, 12h, 7d, 2w)")
    return timedelta(seconds=value)


def _duration_seconds(text: str) -> float | None:
    """`7d` -> 604800.0; None if TEXT is not a number followed by one of s, m, h, d, w. (No `re`: the
    spool imports this module on every job start.)"""
    text = text.strip()
    if len(text) < 2 or text[-1] not in _UNITS:
        return None
    number = text[:-1].strip()
    whole, dot, frac = number.partition(".")
    if not (number.isascii() and whole.isdigit() and (not dot or frac.isdigit())):
        return None   # what \d+(\.\d+)? accepts: "1.5", not "1.", ".5", "-1", "1e3"
    return float(number) * _UNITS[text[-1]]


def aware(text: str) -> datetime:
    """An ISO time; one without a zone is taken as UTC (what the ledger stores). Raises ValueError."""
    dt = datetime.fromisoformat(text)
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def parse_since(text: str, *, now: datetime | None = None) -> datetime:
    """A point in time: a duration ago (`7d`), `now`, or an ISO date/time (local time if no zone)."""
    now = now or datetime.now(UTC)
    text = text.strip()
    if text == "now":
        return now
    if _duration_seconds(text) is not None:
        return now - parse_duration(text)
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"not a time: {text!r} (use e.g. 7d, 12h, 2026-11-01, 2026-11-01T12:00)") from None
    return dt if dt.tzinfo else dt.astimezone()
