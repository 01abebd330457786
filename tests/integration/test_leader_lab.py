"""Two controllers on the lab's real PostgreSQL: one leads through an advisory lock, the other takes over when the
leader is killed, and a database restart leaves exactly one leader again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurmtools.lab import Lab

from .test_ledger_pg import pg_ledger  # noqa: F401 - the fixture: a fresh database on the lab's PostgreSQL

CHILD = """
import sys, time
from slurmtools.controller.leader import Leader
from slurmtools.ledger.db import make_engine
leader = Leader(make_engine(sys.argv[1]), "lab")
while True:
    print("leader" if leader.hold() else "waiting", flush=True)
    time.sleep(0.1)
"""


class Contender:
    def __init__(self, url: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
        self.proc = subprocess.Popen([sys.executable, "-c", CHILD, url], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, env=env)
        os.set_blocking(self.proc.stdout.fileno(), False)  # type: ignore[union-attr]
        self.last = ""

    def poll(self) -> str:
        assert self.proc.stdout is not None
        for line in self.proc.stdout.readlines():
            self.last = line.strip()
        return self.last


@pytest.fixture
def two(pg_ledger: dict[str, str]) -> Iterator[list[Contender]]:  # noqa: F811
    procs = [Contender(pg_ledger["SLURMTOOLS_LEDGER_URL"]) for _ in range(2)]
    yield procs
    for c in procs:
        c.proc.kill()
        c.proc.wait(10)


def states(two: list[Contender], want: list[str], timeout: float) -> list[str]:
    deadline = time.monotonic() + timeout
    while True:
        got = [c.poll() for c in two]
        if sorted(got) == sorted(want) or time.monotonic() > deadline:
            return got
        time.sleep(0.1)


def test_a_killed_leader_is_replaced_on_postgresql(two: list[Contender]) -> None:
    assert sorted(states(two, ["leader", "waiting"], 30)) == ["leader", "waiting"]
    time.sleep(1)
    assert sorted(states(two, ["leader", "waiting"], 1)) == ["leader", "waiting"]     # and it stays so
    lead = next(c for c in two if c.last == "leader")
    standby = next(c for c in two if c is not lead)
    t0 = time.monotonic()
    lead.proc.send_signal(signal.SIGKILL)
    lead.proc.wait(10)
    deadline = t0 + 10
    while standby.poll() != "leader":
        assert time.monotonic() < deadline, "the standby did not take over within 10 s"
        time.sleep(0.05)


def test_a_database_restart_leaves_one_leader(lab: Lab, two: list[Contender]) -> None:
    assert sorted(states(two, ["leader", "waiting"], 30)) == ["leader", "waiting"]
    lab.stop_postgres()
    try:
        assert states(two, ["waiting", "waiting"], 30) == ["waiting", "waiting"]     # nobody acts blind
    finally:
        lab.start_postgres()
    assert sorted(states(two, ["leader", "waiting"], 60)) == ["leader", "waiting"]
    time.sleep(1)
    assert sorted(states(two, ["leader", "waiting"], 1)) == ["leader", "waiting"]
