"""The pyslurm backend: nodes and jobs read and changed through libslurm's RPCs (pyslurm >= 25.11 API).

pyslurm is built against one Slurm release (PyPI has 25.11 only), so it is used only when it imports *and* its
major.minor matches the running Slurm's. `import pyslurm` is never done in a process where libslurm could call
`fatal()` and end it: with no readable slurm.conf (and nothing says configless), libslurm's init exits the whole
Python process ("Could not establish a configuration source") instead of raising. So `unusable_reason` checks the
configuration file first, then imports pyslurm in a child process; only when that child imported it cleanly does
this process import it.

What goes through pyslurm: version, nodes, drain, resume, job, jobs, requeue (and requeue-hold), release,
update_job, cancel, signal. What stays on the CLI (documented fallbacks, the same on every release: docs/
slurm-access.md): `submit` (sbatch's option parsing, `--parsable`, and dropping to the submitting user before exec
have no pyslurm equivalent with the same behaviour), each run's SLUID on releases that have one (pyslurm 25.11's
Job has no attribute for it: one `squeue -o "%A %s"` per read of jobs), `job_history` and `node_events`
(slurmdbd's records: pyslurm's db API reads them, but its JobFilter/Events do not give sacct's `--duplicates`
attempts that the ledger keys on).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from slurmtools.jobstate import is_sluid
from slurmtools.slurm import parse
from slurmtools.slurm.cli_backend import CliSlurm
from slurmtools.slurm.types import ExitStatus, JobInfo, NodeInfo, SlurmError

log = logging.getLogger(__name__)

#: Where Slurm looks for slurm.conf without SLURM_CONF (the sysconfdir Debian's and the lab's builds use).
DEFAULT_CONF = "/etc/slurm/slurm.conf"
#: Calls that go to the CLI on this backend, and why (the conformance suite checks the list).
#: (And within `job`/`jobs`: the state_reason code of a job slurmctld gave a description, `_reason_codes`.)
CLI_FALLBACKS = {
    "submit": "sbatch's option parsing and user drop have no pyslurm equivalent",
    "job_history": "sacct --duplicates attempts (pyslurm.db.Jobs has no per-attempt rows)",
    "node_events": "sacctmgr show event (pyslurm has no node-event reader)",
}


class PyslurmError(SlurmError):
    """A libslurm RPC made through pyslurm failed (the RPC and Slurm's own message)."""

    def __init__(self, call: str, exc: BaseException) -> None:
        self.call = call
        self.errno = getattr(exc, "errno", None)
        super().__init__(f"pyslurm {call}: {getattr(exc, 'msg', None) or exc}")


def _major_minor(version: str) -> tuple[int, int] | None:
    parts = version.replace("-", ".").split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return None


def conf_reason(env: dict[str, str] | None = None) -> str | None:
    """Why importing pyslurm here could end this process (no readable slurm.conf), or None."""
    env = dict(os.environ) if env is None else env
    path = env.get("SLURM_CONF") or DEFAULT_CONF
    if not os.path.isfile(path) or not os.access(path, os.R_OK):
        return (f"not importing pyslurm: no readable slurm.conf at {path} "
                f"({'SLURM_CONF' if env.get('SLURM_CONF') else 'the default path'}), and libslurm would exit "
                "this process (fatal) instead of raising")
    return None


def import_reason(timeout: float = 30.0) -> str | None:
    """Why pyslurm cannot be imported safely here, or None: installed, a readable slurm.conf, and a child
    process imported it (libslurm read its configuration) without dying."""
    if "pyslurm" in sys.modules:
        return None
    if importlib.util.find_spec("pyslurm") is None:
        return "pyslurm is not installed (pip install 'slurmtools[pyslurm]' against this Slurm: docs/install.md)"
    why = conf_reason()
    if why:
        return why
    try:
        proc = subprocess.run([sys.executable, "-c", "import pyslurm; print(pyslurm.__version__)"],
                              capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"not importing pyslurm: a child importing it failed ({exc})"
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        return f"not importing pyslurm: importing it in a child process failed ({last[:200]})"
    return None


def unusable_reason(slurm_version: Callable[[], str]) -> str | None:
    """Why pyslurm cannot be used here, or None when it can (asks Slurm's version only if needed)."""
    why = import_reason()
    if why:
        return why
    try:
        import pyslurm
    except Exception as exc:  # noqa: BLE001 - any import failure means "not usable"
        return f"pyslurm does not import: {exc}"
    have = _major_minor(str(getattr(pyslurm, "__version__", "")))
    running = slurm_version()
    want = _major_minor(running)
    if have is None or want is None or have != want:
        return f"pyslurm {getattr(pyslurm, '__version__', '?')} does not match Slurm {running}"
    return None


def _time(value: Any) -> datetime | None:
    """pyslurm's time (epoch seconds, or a datetime: naive ones are the host's local time) in UTC, as the CLI
    backend gives it (parse.epoch): the two backends' records of one job are then equal, printed alike too."""
    if value in (None, 0, ""):
        return None
    if isinstance(value, datetime):
        return value.astimezone(UTC)
    try:
        return datetime.fromtimestamp(int(value), tz=UTC)
    except (TypeError, ValueError, OSError, OverflowError):
        return None


def _names(value: Any) -> tuple[str, ...]:
    if not value:
        return ()
    if isinstance(value, (list, tuple)):
        return tuple(str(v) for v in value)
    return tuple(parse.expand(str(value)))


def _natural(name: str) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def _int(value: Any) -> int | None:
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


class PyslurmSlurm(CliSlurm):
    """Nodes and jobs through pyslurm; submit and accounting through the CLI (CLI_FALLBACKS)."""

    name = "pyslurm"

    def _pyslurm(self) -> Any:
        import pyslurm

        return pyslurm

    def _rpc(self, call: str, fn: Callable[[], Any]) -> Any:
        self.calls.append(["pyslurm", call])
        ps = self._pyslurm()
        try:
            return fn()
        except ps.RPCError as exc:
            raise PyslurmError(call, exc) from None
        except (ps.PyslurmError, ValueError, TypeError) as exc:
            raise PyslurmError(call, exc) from None

    # ----------------------------------------------------------------------- reads
    def version(self) -> str:
        ps = self._pyslurm()
        return str(self._rpc("version", lambda: ps.slurmctld.Config.load().version))

    def slurm_release(self) -> tuple[int, int]:
        if self._release is None:
            self._release = _major_minor(str(getattr(self._pyslurm(), "__version__", ""))) or (0, 0)
        return self._release

    @staticmethod
    def _node(node: Any) -> NodeInfo:
        parts = [s for s in str(getattr(node, "state", "") or "").upper().split("+") if s]
        return NodeInfo(
            name=str(node.name),
            state=parts[0].lower() if parts else "",
            flags=tuple(parts[1:]),
            reason=getattr(node, "reason", "") or "",
            reason_user=getattr(node, "reason_user", None) or None,
            reason_time=_time(getattr(node, "reason_time", None)),
            partitions=tuple(getattr(node, "partitions", None) or ()),
            gres=(getattr(node, "configured_gres", None) and ",".join(
                f"{k}:{v}" for k, v in dict(node.configured_gres).items())) or "",
        )

    def nodes(self, names: Sequence[str] | None = None) -> list[NodeInfo]:
        ps = self._pyslurm()
        loaded: Any = self._rpc("Nodes.load", ps.Nodes.load)
        wanted = set(names) if names is not None else None
        out = [self._node(node) for name, node in loaded.items() if wanted is None or name in wanted]
        return sorted(out, key=lambda n: _natural(n.name))

    @staticmethod
    def _job(job: Any) -> JobInfo:
        state = str(getattr(job, "state", "") or "")
        return JobInfo(
            job_id=int(job.id),
            name=getattr(job, "name", "") or "",
            user=getattr(job, "user_name", "") or "",
            state=state.upper(),
            state_reason=getattr(job, "state_reason", "") or "",
            nodes=_names(getattr(job, "allocated_nodes", None)),
            excluded_nodes=_names(getattr(job, "excluded_nodes", None)),
            restart_count=_int(getattr(job, "requeue_count", 0)) or 0,
            exit=ExitStatus(code=_int(getattr(job, "exit_code", 0)) or 0,
                            signal=_int(getattr(job, "exit_code_signal", 0)) or 0),
            comment=getattr(job, "comment", "") or "",
            requeue=bool(getattr(job, "is_requeueable", False)),
            batch_host=getattr(job, "batch_host", "") or "",
            partition=getattr(job, "partition", "") or "",
            submit_time=_time(getattr(job, "submit_time", None)),
            start_time=_time(getattr(job, "start_time", None)),
            # as the CLI backend: a running or pending job's end_time is Slurm's forecast, not an end
            end_time=None if state.upper() in {"RUNNING", "PENDING"} else _time(getattr(job, "end_time", None)),
            work_dir=getattr(job, "working_directory", "") or "",
            stdout=getattr(job, "standard_output", "") or "",
            stderr=getattr(job, "standard_error", "") or "",
            array_job_id=_int(getattr(job, "array_id", None)),
            array_task_id=_int(getattr(job, "array_task_id", None)),
        )

    def _reason_codes(self, jobs: list[JobInfo]) -> list[JobInfo]:
        """pyslurm's `state_reason` is slurmctld's free-text description where it set one ("job requeued in held
        state") and Slurm's reason code ("JobHeldUser", what squeue gives) only otherwise, and the code behind a
        description is not in pyslurm's API: for those jobs (few: a requeue-hold, an admin's note) the code comes
        from one squeue call (the CLI fallback docs/slurm-access.md names)."""
        described = {j.job_id for j in jobs if " " in j.state_reason}
        if not described:
            return jobs
        codes = {j.job_id: j.state_reason for j in CliSlurm.jobs(self) if j.job_id in described}
        return [replace(j, state_reason=codes[j.job_id]) if j.job_id in codes else j for j in jobs]

    def _sluids(self, jobs: list[JobInfo], job_id: int | None = None) -> list[JobInfo]:
        """Each run's SLUID (25.11+): pyslurm 25.11's Job does not expose it (its slurm.h declarations have the
        field, its Job class no attribute), so where the running squeue lists SLUID it comes from one light
        `squeue -o "%A %s"` (job id, SLUID: the CLI fallback docs/slurm-access.md names). The controller compares
        it with the run that ended (controller/base.run_of)."""
        if not jobs or not self.squeue_has("SLUID"):
            return jobs
        which = ["-j", str(int(job_id))] if job_id is not None else []
        found: dict[int, str] = {}
        for line in self.run("squeue", "-h", "--states=all", *which, "-o", "%A %s").splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0].isdigit() and is_sluid(parts[1]):
                found[int(parts[0])] = parts[1]
        return [replace(j, sluid=found.get(j.job_id)) for j in jobs]

    def jobs(self, *, user: str | None = None, nodes: Sequence[str] | None = None) -> list[JobInfo]:
        ps = self._pyslurm()
        loaded: Any = self._rpc("Jobs.load", ps.Jobs.load)
        jobs = self._sluids(self._reason_codes([self._job(job) for job in loaded.values()]))
        if user is not None:
            jobs = [j for j in jobs if j.user == user]
        if nodes is not None:
            wanted = set(nodes)
            jobs = [j for j in jobs if wanted.intersection(j.nodes)]
        return sorted(jobs, key=lambda j: j.job_id)

    def job(self, job_id: int) -> JobInfo | None:
        ps = self._pyslurm()
        self.calls.append(["pyslurm", "Job.load"])
        try:
            job = ps.Job.load(int(job_id))
        except ps.RPCError as exc:
            if getattr(exc, "errno", None) == 2017 \
                    or "Invalid job id" in str(exc):
                return None
            raise PyslurmError("Job.load", exc) from None
        return self._sluids(self._reason_codes([self._job(job)]), int(job_id))[0]

    # --------------------------------------------------------------------- actions
    def drain(self, nodes: Sequence[str], reason: str) -> None:
        if not reason.strip():
            raise ValueError("Slurm refuses a drain without a reason")
        ps = self._pyslurm()
        self._rpc("Node.modify(drain)", lambda: ps.Node(parse.collect(nodes)).modify(
            ps.Node(state="DRAIN", reason=reason)))

    def resume(self, nodes: Sequence[str]) -> None:
        ps = self._pyslurm()
        self._rpc("Node.modify(resume)", lambda: ps.Node(parse.collect(nodes)).modify(ps.Node(state="RESUME")))

    def requeue(self, job_id: int, *, hold: bool = False) -> None:
        ps = self._pyslurm()
        self._rpc("Job.requeue", lambda: ps.Job(int(job_id)).requeue(hold=hold))

    def update_job(self, job_id: int, *, excluded_nodes: Sequence[str] | None = None,
                   start_time: str | None = None, comment: str | None = None) -> None:
        changes: dict[str, Any] = {}
        if excluded_nodes is not None:
            changes["excluded_nodes"] = parse.collect(excluded_nodes) if excluded_nodes else ""
        if start_time is not None:
            changes["begin_time"] = start_time
        if comment is not None:
            changes["comment"] = comment
        if not changes:
            return
        ps = self._pyslurm()
        self._rpc("Job.modify", lambda: ps.Job(int(job_id)).modify(ps.JobSubmitDescription(**changes)))

    def release(self, job_id: int) -> None:
        ps = self._pyslurm()
        self._rpc("Job.release", lambda: ps.Job(int(job_id)).release())

    def cancel(self, job_id: int) -> None:
        ps = self._pyslurm()
        self._rpc("Job.cancel", lambda: ps.Job(int(job_id)).cancel())

    def signal(self, job_id: int, sig: str, *, batch_only: bool = True) -> None:
        name = sig.upper()
        if not (name.isdigit() or parse_signal(name)):
            raise ValueError(f"not a signal name: {sig!r}")
        ps = self._pyslurm()
        self._rpc("Job.send_signal", lambda: ps.Job(int(job_id)).send_signal(
            name if name.isdigit() else parse_signal(name), steps="batch" if batch_only else "children"))


def parse_signal(name: str) -> int | None:
    """A signal name ("TERM", "SIGUSR1") as its number, or None."""
    import signal as signals

    name = name.upper()
    if not name.startswith("SIG"):
        name = "SIG" + name
    sig = getattr(signals.Signals, name, None) if name.isidentifier() else None
    return int(sig) if sig is not None else None
