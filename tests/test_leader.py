"""Leader election between two controllers (slurmtools.controller.leader): exactly one acts, the other takes over
when the leader stops or dies. SQLite's lock file here, with real processes for the death; PostgreSQL's advisory
lock on the lab's server in tests/integration/test_leader_lab.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

from slurmtools.controller.engine import Controller
from slurmtools.controller.leader import Leader, lock_key
from slurmtools.ledger.db import make_engine


def test_one_leader_per_database_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    a, b = Leader(make_engine(url), "c1"), Leader(make_engine(url), "c1")
    assert a.hold() and not b.hold() and a.hold()           # holding again is still holding
    a.release()
    assert b.hold() and not a.hold()
    b.release()
    other = Leader(make_engine(f"sqlite:///{tmp_path / 'other.db'}"), "c1")
    assert a.hold() and other.hold()                         # another database: another election


def test_lock_keys_are_stable_and_per_cluster() -> None:
    assert lock_key("c1") == lock_key("c1") != lock_key("c2")
    assert -(2 ** 63) <= lock_key("c1") < 2 ** 63


class _Counting:
    """Just enough of a Controller for Controller.run: counts its passes."""

    run = Controller.run

    def __init__(self) -> None:
        self.passes = 0

    def once(self) -> dict[str, Any]:
        self.passes += 1
        return {"decisions": [], "alerts": [], "breaker": {"open": False}}


def test_two_controllers_one_acts_and_the_other_takes_over(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    first, second = _Counting(), _Counting()
    stop_first = threading.Event()
    stop_all = threading.Event()
    t1 = threading.Thread(target=first.run, args=(0.05, stop_first.is_set, Leader(make_engine(url), "c")))
    t1.start()
    time.sleep(0.3)
    t2 = threading.Thread(target=second.run, args=(0.05, stop_all.is_set, Leader(make_engine(url), "c")))
    t2.start()
    time.sleep(0.5)
    assert first.passes > 3 and second.passes == 0           # the second waits
    stop_first.set()
    t1.join(5)
    deadline = time.monotonic() + 2
    while second.passes == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    stopped_at = first.passes
    assert second.passes > 0                                  # took over within a few intervals
    time.sleep(0.2)
    assert first.passes == stopped_at
    stop_all.set()
    t2.join(5)


CHILD = textwrap.dedent("""
    import sys, time
    from slurmtools.controller.leader import Leader
    from slurmtools.ledger.db import make_engine
    leader = Leader(make_engine(sys.argv[1]), "c")
    while True:
        print("leader" if leader.hold() else "waiting", flush=True)
        time.sleep(0.05)
""")


def test_a_killed_leader_is_replaced(tmp_path: Path) -> None:
    """SIGKILL, not a clean stop: the lock must go with the process."""
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, url], stdout=subprocess.PIPE, text=True, env=env)
             for _ in range(2)]
    try:
        firsts = [p.stdout.readline().strip() for p in procs if p.stdout]
        while sorted(firsts) != ["leader", "waiting"]:          # both started; one of them leads
            firsts = [p.stdout.readline().strip() for p in procs if p.stdout]
        lead = procs[firsts.index("leader")]
        standby = procs[1 - firsts.index("leader")]
        lead.send_signal(signal.SIGKILL)
        lead.wait(5)
        assert standby.stdout is not None
        t0 = time.monotonic()
        while standby.stdout.readline().strip() != "leader":
            assert time.monotonic() - t0 < 5, "the standby did not take over"
    finally:
        for p in procs:
            p.kill()
            p.wait(5)
