"""Parsing the times and durations operators type: `7d`, `12h`, `2026-11-01`, `2026-11-01T12:00`."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> timedelta:
    """`90s`, `30m`, `12h`, `7d`, `2w` -> timedelta. Raises ValueError with the accepted forms."""
    m = _DURATION.match(text)
    if not m:
        raise ValueError(f"not a duration: {text!r} (use e.g. 90s, 30m, 12h, 7d, 2w)")
    return timedelta(seconds=float(m.group(1)) * _UNITS[m.group(2)])


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
    if _DURATION.match(text):
        return now - parse_duration(text)
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"not a time: {text!r} (use e.g. 7d, 12h, 2026-11-01, 2026-11-01T12:00)") from None
    return dt if dt.tzinfo else dt.astimezone()
