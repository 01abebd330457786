"""The retry marker: the contract between the researcher's side (`slurmtools sbatch`), the job_submit plugin
(partition defaults) and the controller. A job asks for retries with `slurmtools=retry[:N[:node|any]]` in
its comment, and opts out of everything with `slurmtools=off`. Pure data; no imports of the stages."""

from __future__ import annotations

from slurmtools._plain import Plain

MARKER = "slurmtools=retry"
OPT_OUT = "slurmtools=off"
RETRY_ON = ("node", "any")


class RetryAsk(Plain):
    """What a job asked for: up to MAX_RETRIES retries, on node faults only or on any failure. (A plain record, not
    a dataclass: the prolog reads the opt-out through this module, and `dataclasses` costs it ~10 ms.)"""

    def __init__(self, max_retries: int, retry_on: str = "node", opted_out: bool = False) -> None:
        self.max_retries = max_retries
        self.retry_on = retry_on
        self.opted_out = opted_out

    def marker(self) -> str:
        return f"{MARKER}:{self.max_retries}:{self.retry_on}"


#: The separators between a comment's tokens (a comment is free text: `debug slurmtools=retry:2, owner=me`).
SEPARATORS = (",", ";")
#: A retry count of more digits than this reads as 10**MAX_DIGITS before the site's cap (a 20-digit count is never
#: turned into an integer that would overflow the ledger's column).
MAX_DIGITS = 6


def tokens(comment: str | None) -> list[str]:
    text = str(comment or "")[:4096]
    for sep in SEPARATORS:
        text = text.replace(sep, " ")
    return text.split()


def opted_out(comment: str | None) -> bool:
    """The comment holds `slurmtools=off` as a whole token (`notslurmtools=offline` does not opt out)."""
    return OPT_OUT in tokens(comment)


def parse_marker(comment: str | None, default_max: int = 3, default_on: str = "node",
                 limit: int | None = None) -> RetryAsk | None:
    """`slurmtools=retry`, `slurmtools=retry:5`, `slurmtools=retry:5:any` anywhere in a job comment
    (separated by spaces, commas or semicolons); `slurmtools=off` opts out. None: not asked. A count is ASCII
    digits (`²` is not), capped at LIMIT (the site's `controller.retry_limit`)."""
    words = tokens(comment)
    if OPT_OUT in words:
        return RetryAsk(0, default_on, opted_out=True)
    for token in words:
        if token != MARKER and not token.startswith(MARKER + ":"):
            continue
        parts = token.split(":")[1:]
        max_retries, on = default_max, default_on
        if parts and parts[0]:
            if not (parts[0].isascii() and parts[0].isdigit()):
                continue
            max_retries = int(parts[0]) if len(parts[0]) <= MAX_DIGITS else 10 ** MAX_DIGITS   # saturated
        if len(parts) > 1 and parts[1]:
            if parts[1] not in RETRY_ON:
                continue
            on = parts[1]
        return RetryAsk(max_retries if limit is None else min(max_retries, max(0, int(limit))), on)
    return None


def bounded_count(value: object, limit: int) -> int | None:
    """A retry count from a record (a user wrote it): a non-negative integer (or ASCII digits), capped at
    LIMIT; None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value) if len(value) <= MAX_DIGITS else 10 ** MAX_DIGITS
    if not isinstance(value, int) or value < 0:
        return None
    return min(value, max(0, int(limit)))
