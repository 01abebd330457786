"""Processes and ports of the lab's daemons: PID files (the only way `lab down` finds what to stop), liveness,
loopback ports, and waiting for a daemon to come up with its log's tail on failure."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path


class LabError(RuntimeError):
    """The lab could not do what was asked; the message says what and where to look."""


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie is not alive for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def pid_is(pid: int, comm: str) -> bool:
    """The PID is alive and runs the program we expect (a stale PID file may name a reused PID)."""
    try:
        name = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return False
    return pid_alive(pid) and name.startswith(comm[:15])


def read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex((host, port)) == 0


def wait_for(what: str, predicate: Callable[[], bool], timeout: float, log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    hint = ""
    if log is not None and log.exists():
        tail = log.read_text(errors="replace").splitlines()[-15:]
        hint = f"\nlast lines of {log}:\n" + "\n".join(tail)
    raise LabError(f"{what} not ready after {timeout:.0f}s{hint}")


def job_pids(node: str) -> Iterator[tuple[int, str]]:
    """Processes of Slurm jobs running on lab node NODE (pid, job id), found by their environment (SLURMD_NODENAME
    and SLURM_JOB_ID set; the hooks' own processes, with SLURM_SCRIPT_CONTEXT, left out)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "environ").read_bytes()
        except OSError:
            continue
        env = dict(item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
        if env.get(b"SLURMD_NODENAME") == node.encode() and b"SLURM_JOB_ID" in env \
                and env.get(b"SLURM_SCRIPT_CONTEXT") is None:
            yield int(entry.name), env[b"SLURM_JOB_ID"].decode()
