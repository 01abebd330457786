"""The lab's PostgreSQL for the ledger: Debian's server binaries, a cluster under the lab's state
directory owned by postgres, trust auth on 127.0.0.1 only, tracked by its postmaster.pid."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from slurmtools.lab.procs import LabError

Lab = Any   # slurmtools.lab.cluster.Lab, which imports this module

BIN_CANDIDATES = sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)


def pg_bin(tool: str) -> str:
    for cand in BIN_CANDIDATES:
        if (cand / tool).exists():
            return str(cand / tool)
    raise LabError(f"PostgreSQL's {tool} not found under /usr/lib/postgresql/*/bin")


def start(lab: Lab) -> None:
    pdir = lab.root / "pg"
    data = pdir / "data"
    if lab._alive(data / "postmaster.pid"):
        return
    pdir.mkdir(exist_ok=True)
    shutil.chown(pdir, "postgres", "postgres")
    port = str(lab.ports.postgres)
    if not (data / "PG_VERSION").exists():
        lab._run([pg_bin("initdb"), "-D", str(data), "--auth=trust", "-U", "postgres",
                  "-E", "UTF8", "--locale=C.UTF-8"], user="postgres", cwd="/tmp")
    log = pdir / "postgres.log"
    seen = log.stat().st_size if log.exists() else 0
    try:
        lab._run([pg_bin("pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", "60",
                  "-o", f"-p {port} -k {pdir} -c listen_addresses=127.0.0.1 -c max_connections=300",
                  "start"], user="postgres", cwd="/tmp")
    except LabError as exc:
        raise LabError(f"postgresql did not start on 127.0.0.1:{port}: {why(log, seen) or exc}") from None
    proc = lab._run(["psql", "-h", "127.0.0.1", "-p", port, "-U", "postgres", "-tAc",
                     "SELECT 1 FROM pg_database WHERE datname='slurmtools'"], cwd="/tmp")
    if proc.stdout.strip() != "1":
        lab._run([pg_bin("createdb"), "-h", "127.0.0.1", "-p", port, "-U", "postgres", "slurmtools"], cwd="/tmp")
    lab.say(f"started postgresql (127.0.0.1:{port}, database slurmtools)")


def why(log: Path, since: int) -> str:
    """The server's own reasons (its FATAL, PANIC and HINT lines, and LOG lines of what it could not do) written to
    LOG after offset SINCE."""
    try:
        with log.open("rb") as fh:
            fh.seek(since)
            text = fh.read(1 << 20).decode("utf-8", "replace")
    except OSError:
        return ""
    reasons = [line.split("] ", 1)[-1].strip() for line in text.splitlines()
               if any(mark in line for mark in ("] FATAL: ", "] PANIC: ", "] HINT: ", "] LOG:  could not "))]
    return "; ".join(reasons[-4:])


def stop(lab: Lab) -> None:
    data = lab.root / "pg" / "data"
    if lab._alive(data / "postmaster.pid"):
        lab._run([pg_bin("pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"],
                 user="postgres", cwd="/tmp", check=False)
        lab.say("stopped postgresql")
