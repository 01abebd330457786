"""Plain data the Slurm access layer returns, independent of the backend."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any


class SlurmError(RuntimeError):
    """Any failure talking to Slurm."""


class SlurmCommandError(SlurmError):
    """A Slurm command exited non-zero."""

    def __init__(self, argv: list[str], returncode: int, stderr: str, stdout: str = "") -> None:
        self.argv = argv
        self.returncode = returncode
        self.stderr = stderr.strip()
        self.stdout = stdout
        super().__init__(f"`{' '.join(argv)}` exited {returncode}: {self.stderr or stdout.strip() or '(no output)'}")


class SlurmTimeout(SlurmError):
    """A Slurm command ran past its hard timeout and was killed."""

    def __init__(self, argv: list[str], timeout: float) -> None:
        self.argv = argv
        self.timeout = timeout
        super().__init__(f"`{' '.join(argv)}` timed out after {timeout:g}s")


class SlurmNotFound(SlurmError):
    """A Slurm command is not installed where we looked."""


class SlurmParseError(SlurmError):
    """Slurm printed something we could not parse."""


@dataclass(frozen=True)
class ExitStatus:
    """A job's exit: the process exit code, or the signal that killed it (Slurm's `code:signal`)."""

    code: int = 0
    signal: int = 0

    @classmethod
    def from_wait_status(cls, raw: int) -> ExitStatus:
        """Decode a raw wait(2) status, as in SLURM_JOB_EXIT_CODE and squeue --json (768 = exit 3)."""
        raw = int(raw)
        if raw < 0:
            raise ValueError(f"negative wait status {raw}")
        if raw & 0x7F:
            return cls(code=0, signal=raw & 0x7F)
        return cls(code=(raw >> 8) & 0xFF, signal=0)

    @classmethod
    def from_pair(cls, text: str) -> ExitStatus:
        """Parse Slurm's `code:signal` text (sacct ExitCode, scontrol ExitCode, SLURM_JOB_EXIT_CODE2)."""
        code, _, sig = text.strip().partition(":")
        try:
            return cls(code=int(code), signal=int(sig or 0))
        except ValueError:
            raise ValueError(f"not an exit code of the form code:signal: {text!r}") from None

    @property
    def ok(self) -> bool:
        return self.code == 0 and self.signal == 0

    def __str__(self) -> str:
        return f"{self.code}:{self.signal}"


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


@dataclass(frozen=True)
class NodeInfo:
    """One node as Slurm sees it. `state` is the base state (idle, mixed, allocated, down, ...)."""

    name: str
    state: str
    flags: tuple[str, ...] = ()
    reason: str = ""
    reason_user: str | None = None
    reason_time: datetime | None = None
    partitions: tuple[str, ...] = ()
    gres: str = ""

    @property
    def drain(self) -> bool:
        """DRAIN flag set (draining or drained)."""
        return "DRAIN" in self.flags

    @property
    def drained(self) -> bool:
        return self.drain and self.state in {"idle", "down"}

    @property
    def draining(self) -> bool:
        return self.drain and self.state in {"mixed", "allocated", "completing"}

    @property
    def responding(self) -> bool:
        return "NOT_RESPONDING" not in self.flags

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["flags"] = list(self.flags)
        data["partitions"] = list(self.partitions)
        data["reason_time"] = _iso(self.reason_time)
        data["drained"] = self.drained
        data["draining"] = self.draining
        return data


@dataclass(frozen=True)
class JobInfo:
    """A job as slurmctld knows it now (pending, running, or finished within MinJobAge)."""

    job_id: int
    name: str = ""
    user: str = ""
    state: str = ""
    state_reason: str = ""
    nodes: tuple[str, ...] = ()
    excluded_nodes: tuple[str, ...] = ()
    restart_count: int = 0
    exit: ExitStatus = field(default_factory=ExitStatus)
    comment: str = ""
    requeue: bool = False
    batch_host: str = ""
    partition: str = ""
    submit_time: datetime | None = None
    start_time: datetime | None = None
    end_time: datetime | None = None
    work_dir: str = ""
    stdout: str = ""
    stderr: str = ""         # as Slurm gives it (empty: with stdout)
    array_job_id: int | None = None
    array_task_id: int | None = None
    sluid: str | None = None  # this run's SLUID where squeue gives one (25.11+: step_id.sluid); new at each requeue

    @property
    def finished(self) -> bool:
        return self.state in FINISHED_STATES

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["nodes"] = list(self.nodes)
        data["excluded_nodes"] = list(self.excluded_nodes)
        data["exit"] = str(self.exit)
        for key in ("submit_time", "start_time", "end_time"):
            data[key] = _iso(getattr(self, key))
        return data


FINISHED_STATES = frozenset({
    "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "BOOT_FAIL", "OUT_OF_MEMORY",
    "PREEMPTED", "DEADLINE", "REQUEUED", "REVOKED",
})


@dataclass(frozen=True)
class JobRecord:
    """One attempt of a job in Slurm's accounting (sacct --duplicates prints each attempt)."""

    job_id: str            # as sacct prints it: "12", "12_3" for array tasks
    job_id_raw: int
    attempt: int           # 0 for the first attempt, +1 per requeue (ordered by submit time)
    name: str
    user: str
    state: str             # the base state: "CANCELLED by 0" -> "CANCELLED"
    exit: ExitStatus
    derived_exit: ExitStatus
    nodes: tuple[str, ...]
    submit_time: datetime | None
    start_time: datetime | None
    end_time: datetime | None
    elapsed_s: int
    partition: str
    comment: str
    reason: str
    work_dir: str
    sluid: str | None = None   # the run's SLUID where sacct lists one (25.11+; jobstate.is_sluid)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["nodes"] = list(self.nodes)
        data["exit"] = str(self.exit)
        data["derived_exit"] = str(self.derived_exit)
        for key in ("submit_time", "start_time", "end_time"):
            data[key] = _iso(getattr(self, key))
        return data


@dataclass(frozen=True)
class NodeEvent:
    """A node DOWN/DRAIN period from `sacctmgr show event` (end is None while it lasts)."""

    node: str
    start: datetime
    end: datetime | None
    state: str
    reason: str
    user: str

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["start"] = _iso(self.start)
        data["end"] = _iso(self.end)
        return data
