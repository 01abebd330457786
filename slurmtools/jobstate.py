"""The per-job state folder, `<node state_dir>/jobs/`: what a job's prolog leaves for its epilog on one node.

One file per job, node and purpose (`<job>.<node>.json`: the kernel-log marker, diagnosis/sources;
`<job>.<node>.io.json`: the NFS counters at job start, iostat/jobio), written here only (`fsutil.write_atomic`),
read back here only (`fsutil.read_safely`: a regular file of root's, no link, bounded), and pruned here only.
Stdlib only: the prolog writes here before every job.
"""

from __future__ import annotations

import os
import time

from slurmtools.fsutil import read_safely, write_atomic

#: The files of jobs that ended longer ago than this are removed (an epilog that never ran leaves one).
MAX_AGE_S = 7 * 86400
#: A state file is a few hundred bytes; a larger one is not ours.
MAX_BYTES = 1 << 20
#: Purposes and their file suffixes.
SUFFIXES = {"marker": ".json", "io": ".io.json"}


def folder(state_dir: str) -> str:
    # os.path, not pathlib: this runs in the prolog before every job, and pathlib costs ~6 ms to import
    return os.path.join(state_dir, "jobs")


def path(state_dir: str, job_id: int, node: str, purpose: str) -> str:
    return os.path.join(folder(state_dir), f"{job_id}.{node}{SUFFIXES[purpose]}")


def write(state_dir: str, job_id: int, node: str, purpose: str, text: str) -> None:
    """Replace the job's PURPOSE file atomically (root's, mode 0600). Raises OSError."""
    os.makedirs(folder(state_dir), mode=0o700, exist_ok=True)
    write_atomic(path(state_dir, job_id, node, purpose), text, 0o600)


def read(state_dir: str, job_id: int, node: str, purpose: str, *, remove: bool = False) -> str | None:
    """The job's PURPOSE file, or None when it is missing or not one of ours (a link, a FIFO, another owner's
    file, too large). REMOVE: unlink it once read (the epilog consumes what the prolog left)."""
    where = path(state_dir, job_id, node, purpose)
    try:
        data, _ = read_safely(where, MAX_BYTES, owners=(0, os.geteuid()), whole=True)
    except OSError:
        return None
    if remove:
        try:
            os.unlink(where)
        except OSError:
            pass
    return data.decode("utf-8", "replace")


def prune(state_dir: str, max_age: float = MAX_AGE_S, every: float = 0.0) -> int:
    """Remove state files (and temporary files of dead writers) older than MAX_AGE seconds; returns how many.
    EVERY: at most once per that many seconds (a stamp file's age says when it last ran), so that an epilog does
    not stat a week of files after every job."""
    jobs = folder(state_dir)
    if every:
        stamp = os.path.join(jobs, ".pruned")
        try:
            if time.time() - os.stat(stamp).st_mtime < every:
                return 0
        except FileNotFoundError:
            pass
        write_atomic(stamp, "")
    cutoff = time.time() - max_age
    removed = 0
    try:
        entries = list(os.scandir(jobs))
    except OSError:
        return 0
    for entry in entries:
        try:
            if entry.name.endswith((".json", ".tmp")) and entry.stat(follow_symlinks=False).st_mtime < cutoff:
                os.unlink(entry.path)
                removed += 1
        except OSError:
            pass
    return removed


#: A run's SLUID (Slurm 25.11+), as Slurm prints it (src/common/sluid.c, print_sluid): "s" and 13 Crockford
#: base-32 digits (no I, L, O, U) of a 64-bit number: a 12-bit cluster id, milliseconds, a sequence. A job gets a
#: new one at each requeue (src/common/job_record.c, job_record_set_sluid): it names a run, not a job.
_SLUID_DIGITS = frozenset("0123456789ABCDEFGHJKMNPQRSTVWXYZ")


def is_sluid(text: str) -> bool:
    """TEXT is a SLUID as Slurm prints it (str2sluid also reads an "S")."""
    return len(text) == 14 and text[0] in "sS" and all(c in _SLUID_DIGITS for c in text[1:])
