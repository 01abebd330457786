"""Bounds on numbers that a user or a remote service wrote (a job's output, its checkpoint marks, a comment): a
value is checked where it enters, so that no stage later meets an overflow, a NaN or an infinity (issue 30: F1,
F2, F13, F14). Pure; imported by the hooks, so it stays small."""

from __future__ import annotations

import math

#: A checkpoint, a job window or any duration we record is at most this long (seconds).
MAX_DURATION_S = 30 * 86400.0
#: Sizes (bytes) above this are not believed (an exabyte).
MAX_BYTES = float(1 << 60)
#: Times a job wrote may lie this far outside its attempt's window (clocks, buffered output).
SLACK_S = 60.0
#: A number written as text longer than this is no number we read.
MAX_NUMBER_TEXT = 40


def finite(value: object, lo: float, hi: float) -> float | None:
    """VALUE (a number, or its text) as a float in [LO, HI]; None when it is not a number, is NaN or infinite, or
    lies outside."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        if len(value) > MAX_NUMBER_TEXT:
            return None
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, int):
        return float(value) if lo <= value <= hi else None
    if not isinstance(value, float) or not math.isfinite(value) or not lo <= value <= hi:
        return None
    return value


def window(since: float | None, until: float) -> tuple[float, float]:
    """The attempt's window as bounds for the times a job wrote: from its prolog (or MAX_DURATION_S before UNTIL
    without one) to UNTIL, each widened by SLACK_S."""
    start = since if since is not None and math.isfinite(since) else until - MAX_DURATION_S
    return start - SLACK_S, until + SLACK_S
