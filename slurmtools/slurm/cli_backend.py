"""The default backend: Slurm's own commands, which work on every Slurm version.

JSON where every release has it (`sinfo --json`, `squeue --json --states=all`; one parser reads 22.05's and
24.11/26.05's formats, tested on recorded outputs of each), `sacct -P` text (22.05's `sacct --json` reports return
code 0 for failed jobs; the text is the same in every release), `scontrol` for actions. Every call has
a hard timeout and raises a typed error carrying the command, exit code and stderr.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from datetime import datetime

from slurmtools.slurm import parse, userenv
from slurmtools.slurm.types import (
    JobInfo,
    JobRecord,
    NodeEvent,
    NodeInfo,
    SlurmCommandError,
    SlurmError,
    SlurmNotFound,
    SlurmTimeout,
)

log = logging.getLogger(__name__)

_SIGNAL = re.compile(r"^(SIG)?[A-Z0-9]{1,8}$")


def _me() -> str:
    import pwd

    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


def _since(value: datetime | None) -> str:
    return value.astimezone().strftime("%Y-%m-%dT%H:%M:%S") if value else "1970-01-01T00:00:00"


class CliSlurm:
    """Slurm through sinfo/squeue/scontrol/sbatch/sacct/sacctmgr."""

    name = "cli"

    def __init__(self, bin_dir: str = "", timeout: float = 15.0) -> None:
        self.bin_dir = bin_dir
        self._release: tuple[int, int] | None = None
        self._fields: dict[str, frozenset[str]] = {}   # tool -> the fields its help option lists (read once)
        self.timeout = timeout
        self.calls: list[list[str]] = []  # every command run, for audits and tests

    # -------------------------------------------------------------------- plumbing
    def _which(self, tool: str) -> str:
        if self.bin_dir:
            path = os.path.join(self.bin_dir, tool)
            if os.access(path, os.X_OK):
                return path
            raise SlurmNotFound(f"{tool} not found in slurm.bin_dir {self.bin_dir}")
        found = shutil.which(tool) or (f"/usr/bin/{tool}" if os.access(f"/usr/bin/{tool}", os.X_OK) else None)
        if not found:
            raise SlurmNotFound(f"{tool} not found in PATH or /usr/bin (set slurm.bin_dir)")
        return found

    def run(self, tool: str, *args: str, timeout: float | None = None, input: str | None = None,
            env: Mapping[str, str] | None = None, cwd: str | None = None, as_user: str | None = None) -> str:
        """TOOL ARGS. AS_USER: as that user, with ENV cleaned of every loader and shell variable
        (slurm/userenv.py); as another user than ours only from root, dropping to the user before exec."""
        argv = [self._which(tool), *args]
        self.calls.append([tool, *args])
        limit = timeout or self.timeout
        log.debug("slurm: %s", " ".join(argv))
        try:
            if as_user is not None and as_user != _me():
                if os.geteuid() != 0:
                    raise SlurmError(f"cannot run {tool} as {as_user}: only root can (this is {_me()})")
                try:
                    rc, out, err = userenv.run_as(as_user, argv, env=env or {}, cwd=cwd, timeout=limit, input=input)
                except KeyError:
                    raise SlurmError(f"cannot run {tool} as {as_user}: no such user") from None
            else:
                if as_user is not None and env is not None:
                    env = userenv.at_use(env)
                proc = subprocess.run(argv, capture_output=True, text=True, timeout=limit, input=input,
                                      env=dict(env) if env is not None else None, cwd=cwd,
                                      stdin=None if input is not None else subprocess.DEVNULL)
                rc, out, err = proc.returncode, proc.stdout, proc.stderr
        except subprocess.TimeoutExpired:
            raise SlurmTimeout([tool, *args], limit) from None
        except (OSError, ValueError) as exc:
            raise SlurmError(f"cannot run {tool}: {exc}") from None
        if rc != 0:
            raise SlurmCommandError([tool, *args], rc, err, out)
        return out

    # ----------------------------------------------------------------------- reads
    def version(self) -> str:
        out = self.run("sinfo", "--version")  # "slurm 22.05.8"
        return out.split()[-1] if out.split() else ""

    def slurm_release(self) -> tuple[int, int]:
        """(major, minor) of the Slurm these commands belong to (`sinfo --version` is local: no RPC), once."""
        if self._release is None:
            try:
                major, minor = self.version().split(".")[:2]
                self._release = (int(major), int(minor))
            except (ValueError, SlurmError):
                self._release = (0, 0)
        return self._release

    def nodes(self, names: Sequence[str] | None = None) -> list[NodeInfo]:
        # 23.02+: `scontrol show node --json` lists nodes one by one (their `sinfo --json` groups them by state
        # and partition); 22.05's scontrol has no --json, its `sinfo --json` lists nodes. One parser reads both.
        if self.slurm_release() >= (23, 2):
            nodes = parse.parse_sinfo_json(self.run("scontrol", "show", "node", "--json"))
        else:
            nodes = parse.parse_sinfo_json(self.run("sinfo", "--json"))
        if names is not None:
            wanted = set(names)
            nodes = [n for n in nodes if n.name in wanted]
        return nodes

    def jobs(self, *, user: str | None = None, nodes: Sequence[str] | None = None) -> list[JobInfo]:
        # 22.05 ignores -j/-u/-w with --json: filter here. 23.02+ show only pending and running jobs unless asked
        # for all (22.05 shows all, and accepts --states=all).
        jobs = parse.parse_squeue_json(self.run("squeue", "--json", "--states=all"))
        if user is not None:
            jobs = [j for j in jobs if j.user == user]
        if nodes is not None:
            wanted = set(nodes)
            jobs = [j for j in jobs if wanted.intersection(j.nodes)]
        return jobs

    def job(self, job_id: int) -> JobInfo | None:
        """The job as slurmctld knows it; None once it left slurmctld's memory (MinJobAge)."""
        return next((j for j in self.jobs() if j.job_id == int(job_id)), None)

    def sacct_has(self, field: str) -> bool:
        """FIELD is one of the running sacct's fields (`sacct --helpformat`, read once): detected, not guessed from
        the release."""
        return field in self._help_fields("sacct", "--helpformat")

    def squeue_has(self, field: str) -> bool:
        """FIELD is one of the running squeue's `-O` fields (`squeue --helpFormat`, read once; 22.05's squeue has
        no such option: none). Another failure is not remembered: the next call asks again."""
        try:
            return field in self._help_fields("squeue", "--helpFormat")
        except SlurmCommandError as exc:
            if "unrecognized option" in exc.stderr:
                self._fields["squeue"] = frozenset()
            return False
        except SlurmError:
            return False

    def _help_fields(self, tool: str, option: str) -> frozenset[str]:
        """The fields TOOL's OPTION lists, read once per client (a failure raises and is not kept)."""
        if tool not in self._fields:
            self._fields[tool] = frozenset(self.run(tool, option).split())
        return self._fields[tool]

    def job_history(self, *, since: datetime | None = None,
                    job_ids: Sequence[int] | None = None) -> list[JobRecord]:
        fields = list(parse.SACCT_FIELDS)
        if self.sacct_has("SLUID"):     # each run's own id (25.11+); before the free-text Comment, which is last
            fields.insert(fields.index("Comment"), "SLUID")
        args = ["-P", "-X", "--duplicates", "-a", "-o", ",".join(fields), "-S", _since(since), "-E", "now"]
        if job_ids:
            args += ["-j", ",".join(str(int(j)) for j in job_ids)]
        return parse.parse_sacct(self.run("sacct", *args, timeout=max(self.timeout, 60)))

    def node_events(self, *, since: datetime | None = None) -> list[NodeEvent]:
        out = self.run("sacctmgr", "-P", "-n", "show", "event", "format=" + ",".join(parse.EVENT_FIELDS),
                       f"Start={_since(since)}", timeout=max(self.timeout, 60))
        return parse.parse_sacctmgr_events(out)

    # --------------------------------------------------------------------- actions
    def drain(self, nodes: Sequence[str], reason: str) -> None:
        if not reason.strip():
            raise ValueError("Slurm refuses a drain without a reason")
        self.run("scontrol", "update", f"nodename={parse.collect(nodes)}", "state=drain", f"reason={reason}")

    def resume(self, nodes: Sequence[str]) -> None:
        self.run("scontrol", "update", f"nodename={parse.collect(nodes)}", "state=resume")

    def submit(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None,
               cwd: str | None = None, user: str | None = None) -> int:
        return parse.parse_sbatch_parsable(self.run("sbatch", "--parsable", *argv, env=env, cwd=cwd, as_user=user,
                                                    timeout=max(self.timeout, 60)))

    def requeue(self, job_id: int, *, hold: bool = False) -> None:
        self.run("scontrol", "requeuehold" if hold else "requeue", str(int(job_id)))

    def update_job(self, job_id: int, *, excluded_nodes: Sequence[str] | None = None,
                   start_time: str | None = None, comment: str | None = None) -> None:
        args = [f"jobid={int(job_id)}"]
        if excluded_nodes is not None:
            args.append(f"excnodelist={parse.collect(excluded_nodes)}")
        if start_time is not None:
            args.append(f"starttime={start_time}")
        if comment is not None:
            args.append(f"comment={comment}")
        if len(args) > 1:
            self.run("scontrol", "update", *args)

    def release(self, job_id: int) -> None:
        self.run("scontrol", "release", str(int(job_id)))

    def cancel(self, job_id: int) -> None:
        self.run("scancel", str(int(job_id)))

    def signal(self, job_id: int, sig: str, *, batch_only: bool = True) -> None:
        if not _SIGNAL.match(sig.upper()) and not sig.isdigit():
            raise ValueError(f"not a signal name: {sig!r}")
        args = ["--signal", sig.upper()] + (["--batch"] if batch_only else []) + [str(int(job_id))]
        self.run("scancel", *args)
