"""The job a node hook runs for, parsed once at the hook's edge from the environment Slurm gives it.

Everything below the hooks takes these values (a job id as an int, the node's name, the job's uid...), never
`os.environ` or a raw environment dict. Every value is the job's or its user's word where a user can set it
(the comment, the output paths): bounded here, and a hostile value becomes None (with a line in `problems`),
never a traceback in the hook. Stdlib only, no `dataclasses`: the prolog imports this before every job.
"""

from __future__ import annotations

import os

from slurmtools._plain import Plain
from slurmtools.jobstate import is_sluid

TYPE_CHECKING = False  # typing for the type checker only: it costs ~7 ms of every prolog (docs/performance.md)
if TYPE_CHECKING:
    from collections.abc import Mapping

#: Slurm job ids are 32-bit; a restart count fits far below this.
MAX_JOB_ID = (1 << 32) - 1
MAX_RESTARTS = 1 << 20
#: The longest comment, node list, path or name kept (a user's comment may be megabytes).
MAX_COMMENT = 4096
MAX_NODELIST = 65536
MAX_PATH = 4096
MAX_NAME = 256
#: GPU minor numbers a node may have.
MAX_GPUS = 1024


def _text(env: Mapping[str, str], name: str, limit: int) -> str | None:
    value = env.get(name)
    return value[:limit] if value else None


def _number(env: Mapping[str, str], name: str, limit: int, problems: list[str]) -> int | None:
    """A decimal number of at most LIMIT, or None (absent, or not one: said in PROBLEMS, bounded)."""
    raw = env.get(name)
    if not raw:
        return None
    if raw.isascii() and raw.isdigit() and len(raw) <= 20 and int(raw) <= limit:
        return int(raw)
    problems.append(f"{name} is not a number up to {limit}: {raw[:40]!r}")
    return None


def parse_gpus(text: str | None) -> frozenset[int]:
    """SLURM_JOB_GPUS ("0,1,3": the GPUs' minor numbers) -> {0, 1, 3}; anything else in the list is ignored."""
    return frozenset(int(p) for p in (text or "")[:MAX_PATH].split(",")
                     if p.strip().isascii() and p.strip().isdigit() and int(p) < MAX_GPUS)


def this_node(env: Mapping[str, str]) -> str:
    """The Slurm node this hook runs on: SLURMD_NODENAME (lab nodes share a hostname), else the hostname."""
    name = env.get("SLURMD_NODENAME")
    if name:
        return name[:MAX_NAME]
    import socket  # only without SLURMD_NODENAME: socket costs ~3 ms of a prolog's import

    return socket.gethostname().split(".")[0]


class JobContext(Plain):
    """One job on this node, as the prolog or epilog sees it (SLURM_JOB_ID, SLURMD_NODENAME, ...)."""

    def __init__(self, *, node: str, job_id: int | None = None, sluid: str | None = None,
                 user: str | None = None, uid: int | None = None, gpus: frozenset[int] = frozenset(),
                 stdout: str | None = None, stderr: str | None = None, nodelist: str | None = None,
                 partition: str | None = None, restart_count: int = 0, comment: str = "",
                 exit_status: int | None = None, problems: tuple[str, ...] = ()) -> None:
        self.node = node
        self.job_id = job_id                # None: no job (HealthCheckProgram), or an id that is not one
        self.sluid = sluid                  # SLURM_JOB_SLUID (Slurm 25.11+): this run's id, new at each requeue
        self.user = user
        self.uid = uid
        self.gpus = gpus                    # minor numbers (/dev/nvidiaN) of the job's GPUs on this node
        self.stdout = stdout
        self.stderr = stderr
        self.nodelist = nodelist
        self.partition = partition
        self.restart_count = restart_count
        self.comment = comment
        self.exit_status = exit_status      # the raw wait(2) status of SLURM_JOB_EXIT_CODE (epilog only)
        self.problems = problems            # hostile or malformed values, one line each (set to None above)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> JobContext:
        """Parse Slurm's hook environment (os.environ by default). Never raises on what a job or user set."""
        env = os.environ if env is None else env
        problems: list[str] = []
        sluid = env.get("SLURM_JOB_SLUID") or None
        if sluid is not None and not is_sluid(sluid):
            problems.append(f"SLURM_JOB_SLUID is not an id: {sluid[:40]!r}")
            sluid = None
        return cls(node=this_node(env), job_id=_number(env, "SLURM_JOB_ID", MAX_JOB_ID, problems), sluid=sluid,
                   user=_text(env, "SLURM_JOB_USER", MAX_NAME),
                   uid=_number(env, "SLURM_JOB_UID", MAX_JOB_ID, problems),
                   gpus=parse_gpus(env.get("SLURM_JOB_GPUS")),
                   stdout=_text(env, "SLURM_JOB_STDOUT", MAX_PATH), stderr=_text(env, "SLURM_JOB_STDERR", MAX_PATH),
                   nodelist=_text(env, "SLURM_NODELIST", MAX_NODELIST) or _text(env, "SLURM_JOB_NODELIST",
                                                                               MAX_NODELIST),
                   partition=_text(env, "SLURM_JOB_PARTITION", MAX_NAME),
                   restart_count=_number(env, "SLURM_JOB_RESTART_COUNT", MAX_RESTARTS, problems) or 0,
                   comment=(env.get("SLURM_JOB_COMMENT") or "")[:MAX_COMMENT],
                   exit_status=_number(env, "SLURM_JOB_EXIT_CODE", MAX_JOB_ID, problems),
                   problems=tuple(problems))

    @property
    def key(self) -> str:
        """The job id as idempotency keys have always spelt it ("" without one)."""
        return "" if self.job_id is None else str(self.job_id)

    @property
    def run_parts(self) -> tuple[str, ...]:
        """What idempotency keys add for this run: its SLUID where Slurm gives one (25.11+), so a reused job id's
        run is not taken for an earlier run's duplicate; nothing on releases without it (their keys unchanged)."""
        return (self.sluid,) if self.sluid else ()

    @property
    def outputs(self) -> list[str]:
        """The job's output files, stdout first, each once (stderr is often the same file)."""
        return list(dict.fromkeys(p for p in (self.stdout, self.stderr) if p))

    @property
    def tokens(self) -> list[str]:
        """The comment's tokens (`slurmtools=off`, `slurmtools=retry:3`...)."""
        from slurmtools.jobs.marker import tokens

        return tokens(self.comment)

    @property
    def opted_out(self) -> bool:
        from slurmtools.jobs.marker import OPT_OUT

        return OPT_OUT in self.tokens
