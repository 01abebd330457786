"""The controller's state, typed: a decision's status (a small state machine) and what the decision row keeps in its
JSON column `ControllerDecision.details`, read by `load` and written by `dump` and nowhere else.

    ┌─────────── decide ───────────┐       stalls/act, evacuate
    ▼               ▼              ▼              ▼
 observed         done          acting ◄──── evacuating
 (observe mode)  (no retry)     │   ▲ a failed try, a wait (COMPLETING)
                                ▼   │
                           done · failed

`observed`, `done` and `failed` are final: the queue file is removed and nothing moves the row again. `acting`
finishes the flow (requeue or resubmission) and may be found again by a restarted controller; `evacuating` waits
out the job's checkpoint grace and then acts.

Rows written by earlier versions read the same: every key they wrote is a field here, and a key this version does
not know is kept as it is (`Details.extra`) and written back unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from slurmtools.ledger.models import ControllerDecision


class Status(StrEnum):
    """`ControllerDecision.status`."""

    ACTING = "acting"            # a retry decided: requeue (or resubmit) and verify; on record before it starts
    EVACUATING = "evacuating"    # the job was sent its checkpoint signal and has its grace before the requeue
    OBSERVED = "observed"        # a retry decided in observe mode (or with slurmtools disabled): nothing done
    DONE = "done"                # finished: no retry, or the retry verified
    FAILED = "failed"            # the retry could not be made: an alert for a person

    @property
    def final(self) -> bool:
        return self in FINAL


FINAL = frozenset({Status.DONE, Status.FAILED, Status.OBSERVED})
#: Where a status may go next (a status may also stay: a failed try, a wait).
TRANSITIONS: dict[Status, frozenset[Status]] = {
    Status.EVACUATING: frozenset({Status.ACTING}),
    Status.ACTING: frozenset({Status.DONE, Status.FAILED}),
    Status.OBSERVED: frozenset(),
    Status.DONE: frozenset(),
    Status.FAILED: frozenset(),
}


class TransitionError(ValueError):
    """A move the state machine does not have (a bug, never a user's input)."""


def move(row: ControllerDecision, to: Status) -> None:
    """Set ROW's status to TO, if the machine allows it from its status now."""
    now = Status(row.status)
    if to != now and to not in TRANSITIONS[now]:
        raise TransitionError(f"decision {row.job_id}.{row.restart_count}: {now} cannot become {to}")
    row.status = to.value


@dataclass
class Resubmit:
    """A resubmission of a job that left slurmctld's memory (controller/resubmit.py)."""

    job_id: int | None = None        # the new job, once sbatch gave it (or it was found by its comment tag)
    submitting: float | None = None  # when sbatch was started: the intent, on record before it runs
    user: str | None = None
    argv: list[str] | None = None
    adopted: bool = False            # found by its comment tag after a controller died in sbatch
    id_reused: bool = False          # slurmctld gave the forgotten job id out again


@dataclass
class Evacuate:
    """A job moved off a node taken out from under it (controller/evacuate.py, stalls/act.py)."""

    signal: str | None = None
    grace: float = 0.0
    nodes: list[str] = field(default_factory=list)
    signalled: float | None = None   # when the signal was sent (or the grace is counted from)
    signal_error: str | None = None


@dataclass
class Details:
    """What a decision row keeps besides its columns."""

    classification: dict[str, Any] | None = None   # policy.Classification.to_dict()
    decision: dict[str, Any] | None = None   # policy.Decision.to_dict(): delay_s, exclude, ...
    ask: str | None = None                # the retry marker the job asked with
    state: str | None = None              # Slurm's state of the attempt
    exit: str | None = None
    missing_epilogs: list[str] | None = None
    item: dict[str, Any] | None = None    # the queue item
    alert: str | None = None
    resubmit: Resubmit | None = None      # set: the retry is a resubmission
    evacuate: Evacuate | None = None      # set: the decision is an evacuation
    stall: dict[str, Any] | None = None   # the stall detector's brief (stalls/act.py)
    act_tries: int = 0
    last_error: str | None = None
    errors: list[dict[str, Any]] | None = None   # each failed try: time, error
    waiting: str | None = None            # why acting waits (the job still COMPLETING)
    requeued_by: str | None = None        # "slurm": Slurm requeued the attempt itself
    extra: dict[str, Any] = field(default_factory=dict)   # keys this version does not know, kept as they were

    @property
    def delay_s(self) -> float:
        return float((self.decision or {}).get("delay_s") or 0)

    @property
    def resubmitted_as(self) -> int | None:
        """The job a resubmission made, once it has one."""
        return int(self.resubmit.job_id) if self.resubmit is not None and self.resubmit.job_id is not None else None


_PARTS: dict[str, type[Any]] = {"resubmit": Resubmit, "evacuate": Evacuate}


def _part(cls: type[Any], raw: object) -> Any:
    raw = raw if isinstance(raw, dict) else {}
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in raw.items() if k in names})


def load(raw: dict[str, Any] | None) -> Details:
    """A row's `details` column as `Details` (None or {}: an empty one)."""
    raw = dict(raw or {})
    known = {f.name for f in fields(Details)} - {"extra"}
    out = Details(extra={k: v for k, v in raw.items() if k not in known})
    for name in known & raw.keys():
        value = raw[name]
        if name in _PARTS:
            value = None if value is None else _part(_PARTS[name], value)
        elif name == "act_tries":
            value = int(value or 0)
        setattr(out, name, value)
    return out


def dump(details: Details) -> dict[str, Any]:
    """`Details` as the row's `details` column: only what is set (not None; `act_tries` once counted), so a row
    reads as the previous version wrote it."""
    out: dict[str, Any] = dict(details.extra)
    default = Details()
    for f in fields(Details):
        if f.name == "extra":
            continue
        value = getattr(details, f.name)
        if f.name in _PARTS:
            if value is not None:
                out[f.name] = {k: v for k, v in vars(value).items() if v != getattr(_PARTS[f.name](), k)}
        elif value != getattr(default, f.name):
            out[f.name] = value
    return out


def of(row: ControllerDecision) -> Details:
    """ROW's details."""
    return load(row.details)


def save(row: ControllerDecision, details: Details) -> None:
    """Write DETAILS into ROW (a new dict: SQLAlchemy sees the change)."""
    row.details = dump(details)
