"""The one interface every part of slurmtools uses to talk to Slurm."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

from slurmtools.slurm.types import JobInfo, JobRecord, NodeEvent, NodeInfo


@runtime_checkable
class Slurm(Protocol):
    """Reads and actions on a Slurm cluster. Implementations: CliSlurm (default), PyslurmSlurm."""

    name: str

    def version(self) -> str: ...

    def nodes(self, names: Sequence[str] | None = None) -> list[NodeInfo]: ...

    def drain(self, nodes: Sequence[str], reason: str) -> None:
        """Raw drain. Callers outside slurmtools.slurm go through slurmtools.drain instead."""

    def resume(self, nodes: Sequence[str]) -> None: ...

    def job(self, job_id: int) -> JobInfo | None: ...

    def jobs(self, *, user: str | None = None, nodes: Sequence[str] | None = None) -> list[JobInfo]: ...

    def submit(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None,
               cwd: str | None = None, user: str | None = None) -> int:
        """`sbatch --parsable ARGV...`: options, then the script and its arguments, as a list. USER: submit
        as that user (root only; the CLI backend drops to the user before exec, ENV cleaned by slurm/userenv.py)."""

    def requeue(self, job_id: int, *, hold: bool = False) -> None: ...

    def update_job(self, job_id: int, *, excluded_nodes: Sequence[str] | None = None,
                   start_time: str | None = None, comment: str | None = None) -> None: ...

    def release(self, job_id: int) -> None: ...

    def cancel(self, job_id: int) -> None: ...

    def signal(self, job_id: int, sig: str, *, batch_only: bool = True) -> None: ...

    def job_history(self, *, since: datetime | None = None,
                    job_ids: Sequence[int] | None = None) -> list[JobRecord]: ...

    def node_events(self, *, since: datetime | None = None) -> list[NodeEvent]: ...
