"""Progress of a running job, from outside it: its output and error files (paths from Slurm) growing, the
timestamps of its lines, and its checkpoints (the frameworks' own lines, `iostat/ckptlog`; the durations the
ledger already holds for the job's earlier attempts).

The job's *own normal quiet time* is learned from its history: the longest gap between two signs of progress
(consecutive timestamped lines in the tail of its output; the file's modification times seen by earlier scans)
and its longest checkpoint, capped by `stalls.max_learned` so that a hang is never learnt as normal. A job that
checkpoints for 12 minutes every 2 hours has a 12-minute gap in its history, so minute 10 of its next
checkpoint is not a stall.

The files are the user's: opened as the job's user's regular files only, no symlink, bounded reads of what was
written since the last pass (`read_new`, as `hooks.epilog.read_job_log` opens them); nothing of their text is
stored, only times and sizes."""

from __future__ import annotations

import itertools
import os
import stat
from dataclasses import asdict, dataclass, field
from typing import Any

#: Per-job history kept between scans (the state file): at most this many gaps.
MAX_GAPS = 64


@dataclass
class Progress:
    """What the files say about a job now. Times are epoch seconds."""

    last_progress: float | None           # the newest sign of progress (file mtime, timestamped line)
    size: int                             # output + error bytes now
    gaps: list[float] = field(default_factory=list)    # quiet gaps between signs of progress seen in its history
    checkpoint_s: list[float] = field(default_factory=list)   # durations of its finished checkpoints
    in_checkpoint_since: float | None = None     # a checkpoint begun (its line) and not yet ended
    files: list[dict[str, Any]] = field(default_factory=list)

    def learned_quiet(self, cap: float) -> float:
        """The job's longest normal quiet time (gap between progress, or checkpoint), at most CAP."""
        return min(cap, max([0.0, *self.gaps, *self.checkpoint_s]))

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["gaps"] = sorted(self.gaps)[-8:]
        return d


def file_state(path: str, uid: int | None) -> dict[str, Any] | None:
    """Size and modification time of one of the job's files (a regular file of the job's user, not a link)."""
    if not path or path == "/dev/null":
        return None
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or (uid is not None and st.st_uid != uid):
        return None
    return {"path": path, "size": st.st_size, "mtime": st.st_mtime}


def line_gaps(lines: list[str], since: float | None) -> tuple[list[float], float | None]:
    """The gaps between consecutive timestamped LINES at or after SINCE (the attempt's start), and the newest
    timestamp. A line's time is the date and time near its start (ckptlog.line_time: local time)."""
    from slurmtools.iostat.ckptlog import line_time

    times = [t for t in (line_time(x) for x in lines) if t is not None and (since is None or t >= since)]
    gaps = [b - a for a, b in itertools.pairwise(times) if b > a]
    return gaps, (max(times) if times else None)


def checkpoints(lines: list[str], since: float | None) -> tuple[list[float], float | None]:
    """Durations of the finished checkpoints in LINES (after SINCE), and when an unfinished one began (its line's
    time), from the frameworks' lines (`data/checkpoint_lines.toml`)."""
    from slurmtools.iostat import ckptlog

    events = ckptlog.scan(lines)
    done = [float(e["seconds"]) for e in events if e.get("seconds") is not None
            and (since is None or e.get("start") is None or e["start"] >= since)]
    last_end = max((e["end_no"] for e in events), default=-1)
    open_since: float | None = None
    patterns = [p for p in ckptlog.load_patterns() if p.mark == "begin"]
    for no in range(len(lines) - 1, last_end, -1):
        low = lines[no].lower()
        if not any(n in low for n in ckptlog.NEEDLES):
            continue
        if any(p.regex.search(lines[no]) for p in patterns):
            t = ckptlog.line_time(lines[no])
            open_since = t if t is not None else -1.0     # -1: begun, time unknown (the caller uses the mtime)
            break
    return done, open_since


def read_new(path: str, uid: int | None, offset: int, max_bytes: int) -> tuple[list[str], int, int] | None:
    """The complete lines of PATH after byte OFFSET (at most the last MAX_BYTES of them), the offset after the last
    one, and the file's inode; the file opened as `hooks.epilog.read_job_log` does (a regular file of the job's
    user, no link, never blocking). None when it cannot be read so."""
    from slurmtools.fsutil import read_safely

    try:
        data, st = read_safely(path, max_bytes, owners=None if uid is None else (uid,), start=offset)
    except OSError:
        return None
    begin = max(offset, st.st_size - max_bytes)
    if begin > offset:                       # cut: the first line is partial
        data = data[data.find(b"\n") + 1:] if b"\n" in data else b""
        begin = st.st_size - len(data)
    end = data.rfind(b"\n") + 1             # a line still being written waits for the next pass
    return data[:end].decode("utf-8", "replace").splitlines(), begin + end, st.st_ino


def observe(paths: list[str], uid: int | None, start: float | None, history: dict[str, Any] | None,
            max_bytes: int, ledger_checkpoints: list[float] | None = None) -> tuple[Progress, dict[str, Any]]:
    """The job's progress now, and its history for the next scan (HISTORY: what the last scan kept). Only the
    bytes written since the last scan are read (at most MAX_BYTES a file); what earlier reads found (the longest
    gaps between timestamped lines, the newest line's time, finished checkpoints, an open one) is in the history."""
    from slurmtools.iostat.ckptlog import NEEDLES, line_time

    old = dict(history or {})
    offsets: dict[str, Any] = dict(old.get("files") or {})
    seen: list[dict[str, Any]] = []
    lines: list[str] = []
    files: dict[str, Any] = {}
    for path in dict.fromkeys(p for p in paths if p):           # stdout and stderr are often one file
        st = file_state(path, uid)
        if st is None:
            continue
        seen.append(st)
        prev = offsets.get(path) or {}
        same = prev.get("ino") is not None and int(prev.get("offset", 0)) <= int(st["size"])
        got = read_new(path, uid, int(prev.get("offset", 0)) if same else 0, max_bytes)
        if got is None:
            continue
        new_lines, offset, ino = got
        if same and ino != prev.get("ino"):          # replaced since: read it from its start (its tail)
            got = read_new(path, uid, 0, max_bytes)
            if got is None:
                continue
            new_lines, offset, ino = got
        files[path] = {"ino": ino, "offset": offset}
        lines.extend(new_lines)
    size = sum(int(s["size"]) for s in seen)
    # an empty file's time is when Slurm created it, not progress
    mtime = max((float(s["mtime"]) for s in seen if s["size"]), default=None)
    before = old.get("newest_line")
    new_gaps, newest = line_gaps(lines, start)
    if before is not None and newest is not None:
        first = min(t for t in (line_time(x) for x in lines) if t is not None and (start is None or t >= start))
        if first > float(before):
            new_gaps.append(first - float(before))
    newest_line = max((t for t in (newest, before) if t is not None), default=None)
    line_kept = sorted([*(float(g) for g in old.get("line_gaps", [])), *new_gaps])[-MAX_GAPS:]
    ckpts, open_since = checkpoints(lines, start)
    if not lines:
        open_since = old.get("open_ckpt")            # nothing new: as it was
    elif not any(n in x.lower() for x in lines for n in NEEDLES):
        open_since = None                            # other lines since, none about a checkpoint: it is over
    ckpt_kept = [*(float(c) for c in old.get("ckpts", [])), *ckpts][-MAX_GAPS:]
    kept = [float(g) for g in old.get("gaps", [])][-MAX_GAPS:]
    last = old.get("mtime")
    if mtime is not None and last is not None and mtime > float(last) and float(last) >= (start or 0):
        kept = ([*kept, mtime - float(last)])[-MAX_GAPS:]      # an upper bound of the gaps in between
    progress_at = [t for t in (mtime, newest_line) if t is not None and (start is None or t >= start)]
    last_progress = max(progress_at) if progress_at else None
    if open_since is not None and open_since < 0:
        open_since = last_progress
    p = Progress(last_progress=last_progress, size=size, gaps=line_kept + kept,
                 checkpoint_s=ckpt_kept + list(ledger_checkpoints or []), in_checkpoint_since=open_since, files=seen)
    return p, {"mtime": mtime, "size": size, "gaps": kept, "files": files, "line_gaps": line_kept,
               "newest_line": newest_line, "ckpts": ckpt_kept, "open_ckpt": open_since}
