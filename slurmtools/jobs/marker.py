"""The retry marker: the contract between the researcher's side (`slurmtools sbatch`), the job_submit plugin
(partition defaults) and the controller. A job asks for retries with `slurmtools=retry[:N[:node|any]]` in
its comment, and opts out of everything with `slurmtools=off`. Pure data; no imports of the stages."""

from __future__ import annotations

from dataclasses import dataclass

MARKER = "slurmtools=retry"
OPT_OUT = "slurmtools=off"
RETRY_ON = ("node", "any")


@dataclass(frozen=True)
class RetryAsk:
    """What a job asked for: up to MAX_RETRIES retries, on node faults only or on any failure."""

    max_retries: int
    retry_on: str = "node"
    opted_out: bool = False

    def marker(self) -> str:
        return f"{MARKER}:{self.max_retries}:{self.retry_on}"


def parse_marker(comment: str | None, default_max: int = 3, default_on: str = "node") -> RetryAsk | None:
    """`slurmtools=retry`, `slurmtools=retry:5`, `slurmtools=retry:5:any` anywhere in a job comment
    (separated by spaces, commas or semicolons); `slurmtools=off` opts out. None: not asked."""
    tokens = (comment or "").replace(",", " ").replace(";", " ").split()
    if OPT_OUT in tokens:
        return RetryAsk(0, default_on, opted_out=True)
    for token in tokens:
        if token != MARKER and not token.startswith(MARKER + ":"):
            continue
        parts = token.split(":")[1:]
        max_retries, on = default_max, default_on
        if parts and parts[0]:
            if not parts[0].isdigit():
                continue
            max_retries = int(parts[0])
        if len(parts) > 1 and parts[1]:
            if parts[1] not in RETRY_ON:
                continue
            on = parts[1]
        return RetryAsk(max_retries, on)
    return None
