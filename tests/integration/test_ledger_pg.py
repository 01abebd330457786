"""The ledger on the lab's real PostgreSQL, and imports from the lab's real Slurm accounting."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from slurmtools.lab import Lab
from slurmtools.ledger import db, models
from slurmtools.ledger.spool import Spool
from slurmtools.slurm import CliSlurm

from .conftest import wait_job, wait_until

WRITER = Path(__file__).resolve().parents[1] / "ledger_writer.py"


@pytest.fixture
def pg_ledger(lab: Lab, tmp_path: Path) -> Iterator[dict[str, str]]:
    """A fresh database on the lab's PostgreSQL and a fresh spool, as environment variables."""
    name = f"test_{secrets.token_hex(4)}"
    psql = ["psql", "-h", "127.0.0.1", "-p", str(lab.ports.postgres), "-U", "postgres", "-d", "postgres", "-qc"]
    subprocess.run([*psql, f"CREATE DATABASE {name}"], check=True, capture_output=True)
    env = {"SLURMTOOLS_LEDGER_URL": f"postgresql+psycopg://postgres@127.0.0.1:{lab.ports.postgres}/{name}",
           "SLURMTOOLS_SPOOL_DIR": str(tmp_path / "spool")}
    yield env
    lab.start_postgres()  # in case a test left it stopped
    subprocess.run([*psql, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"], capture_output=True)


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["slurmtools", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env})


def rows(env: dict[str, str], model: type[models.Base] = models.Finding) -> int:
    eng = db.make_engine(env["SLURMTOOLS_LEDGER_URL"])
    try:
        with Session(eng) as s:
            return int(s.scalar(select(func.count()).select_from(model)) or 0)
    finally:
        eng.dispose()


def test_64_concurrent_writers_postgresql(pg_ledger: dict[str, str]) -> None:
    assert run(pg_ledger, "ledger", "init").returncode == 0
    env = {**os.environ, **pg_ledger}
    procs = [subprocess.Popen([sys.executable, str(WRITER), str(i), "5"], env=env, stderr=subprocess.PIPE, text=True)
             for i in range(64)]
    results = [(p.wait(timeout=300), p.stderr.read() if p.stderr else "") for p in procs]
    assert all(rc == 0 for rc, _ in results), [r for r in results if r[0]][:3]
    assert Spool(pg_ledger["SLURMTOOLS_SPOOL_DIR"]).counts()["pending"] == 0
    eng = db.make_engine(pg_ledger["SLURMTOOLS_LEDGER_URL"])
    with Session(eng) as s:
        messages = s.scalars(select(models.Finding.message)).all()
    eng.dispose()
    assert len(messages) == 320 and len(set(messages)) == 320


def test_database_down_during_a_burst(lab: Lab, pg_ledger: dict[str, str]) -> None:
    assert run(pg_ledger, "ledger", "init").returncode == 0
    lab.stop_postgres()
    try:
        for i in range(20):
            out = run(pg_ledger, "ledger", "record", "--node", f"n{i % 4 + 1}", "--job", str(500 + i),
                      "--kind", "xid", "-m", f"burst {i}", "--severity", "critical")
            assert out.returncode == 0, out.stderr
            assert "kept in the spool" in out.stderr
        assert Spool(pg_ledger["SLURMTOOLS_SPOOL_DIR"]).counts()["pending"] == 20
        down = run(pg_ledger, "ledger", "flush", "--json")
        assert down.returncode == 1 and json.loads(down.stdout)["left"] == 20
    finally:
        lab.start_postgres()
    first = run(pg_ledger, "ledger", "flush", "--json")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["shipped"] == 20
    second = run(pg_ledger, "ledger", "flush", "--json")
    assert json.loads(second.stdout)["shipped"] == 0
    assert rows(pg_ledger) == 20


def test_import_sacct_matches_sacct(lab: Lab, slurm: CliSlurm, pg_ledger: dict[str, str], jobs: list[int],
                                    workdir: Path) -> None:
    base = ["-o", "/dev/null", "-D", str(workdir)]
    ok = slurm.submit([*base, "--wrap", "true"])
    bad = slurm.submit([*base, "--wrap", "exit 3"])
    rq = slurm.submit([*base, "--requeue", "--wrap", "sleep 4"])
    jobs += [ok, bad, rq]
    wait_job(slurm, rq, lambda j: j.state == "RUNNING", "running")
    slurm.requeue(rq)
    wait_job(slurm, rq, lambda j: j.state == "COMPLETED" and j.restart_count == 1, "completed after requeue", 90)

    def sacct_rows() -> dict[int, list[tuple[str, str, str]]] | None:
        text = subprocess.run(["sacct", "-P", "-n", "-X", "--duplicates", "-j", f"{ok},{bad},{rq}",
                               "-o", "JobIDRaw,Submit,State,ExitCode,NodeList"], capture_output=True, text=True).stdout
        out: dict[int, list[tuple[str, str, str, str]]] = {}
        for line in text.splitlines():
            jid, submit, state, code, nodes = line.split("|")
            out.setdefault(int(jid), []).append((submit, state.split()[0], code, nodes))
        done = len(out.get(rq, [])) == 2 and out[rq][-1][1] == "COMPLETED" and len(out) == 3
        return {k: [(s, c, n) for _, s, c, n in sorted(v)] for k, v in out.items()} if done else None

    expected = wait_until("sacct rows for the three jobs", sacct_rows, timeout=60)
    assert expected[rq][0][0] == "REQUEUED"
    for _ in range(2):  # idempotent
        out = run({**pg_ledger, "SLURMTOOLS_CONFIG": os.environ["SLURMTOOLS_CONFIG"]},
                  "ledger", "import-sacct", "--since", "10m", "--json")
        assert out.returncode == 0, out.stderr
    eng = db.make_engine(pg_ledger["SLURMTOOLS_LEDGER_URL"])
    with Session(eng) as s:
        got: dict[int, list[tuple[str, str, str]]] = {}
        for a in s.scalars(select(models.JobAttempt).where(models.JobAttempt.job_id.in_([ok, bad, rq]))
                           .order_by(models.JobAttempt.job_id, models.JobAttempt.restart_count)):
            got.setdefault(a.job_id, []).append((a.state or "", f"{a.exit_code}:{a.exit_signal}", a.nodes or ""))
            assert a.cluster == "lab" and a.source == "sacct" and a.submit_time is not None
    eng.dispose()
    assert got == expected


@pytest.mark.parametrize("order", ["forward", "reverse"])
def test_derived_report_data_postgresql(pg_ledger: dict[str, str], order: str) -> None:
    """The ledger's derived report data (ledger/derived.py) on PostgreSQL: the unit tests' scenario in two orders,
    then migration 0008's backfill gives the same rows."""
    from alembic import command

    from slurmtools.ledger import schema, store
    from slurmtools.ledger.spool import Event
    from tests.test_ledger import _derived, _derived_events

    eng = db.make_engine(pg_ledger["SLURMTOOLS_LEDGER_URL"])
    try:
        schema.upgrade(eng)
        events = [Event(e.type, e.data, cluster="c", key=e.key) for e in _derived_events()]
        if order == "reverse":
            events = [e for e in reversed(events) if e.key not in ("a7", "a8")] + \
                     [e for e in events if e.key in ("a7", "a8")]
        for e in events + events[:5]:
            with eng.begin() as conn:
                store.store(conn, [e])
        got = _derived(eng)
        assert got[0] == [("c", 1, 0), ("c", 2, 1), ("c", 9, 0)]
        assert got[1] == [("c", "ann", "sweep"), ("c", "ann", "train")]
        with eng.begin() as conn:
            command.downgrade(schema.alembic_config(conn), "0007")  # type: ignore[arg-type]
        schema.upgrade(eng)
        assert _derived(eng) == got
    finally:
        eng.dispose()


@pytest.mark.parametrize("first", ["attempt", "note"])
def test_derived_flag_with_two_concurrent_writers_postgresql(pg_ledger: dict[str, str], first: str) -> None:
    """An attempt stored while a finding naming it is noted in another transaction: whichever commits first, the
    attempt ends up flagged (the advisory lock orders them; without it, both miss the other's uncommitted row)."""
    import threading
    import time

    from sqlalchemy import text

    from slurmtools.ledger import derived, schema, store
    from slurmtools.ledger.spool import Event

    eng = db.make_engine(pg_ledger["SLURMTOOLS_LEDGER_URL"])
    try:
        schema.upgrade(eng)
        att = Event("attempt", {"job_id": 1, "restart_count": 0, "state": "COMPLETED", "user": "u", "name": "n",
                                "source": "sacct"}, cluster="c", key="a")
        started = threading.Event()

        def writer(mine: str) -> None:
            with eng.begin() as conn:
                if mine != first:
                    started.wait(10)
                if mine == "attempt":
                    store.store(conn, [att])
                else:
                    derived.note_interrupted(conn, [("c", 1, 0)])
                if mine == first:
                    started.set()
                    time.sleep(0.5)    # commits only after the other writer has begun its statements

        threads = [threading.Thread(target=writer, args=(w,)) for w in ("attempt", "note")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        with eng.connect() as conn:
            assert conn.execute(text("SELECT interrupted FROM job_attempts")).scalar_one() is True
    finally:
        eng.dispose()


def test_derived_locks_of_crossing_batches_never_deadlock_postgresql(pg_ledger: dict[str, str]) -> None:
    """Two batches shipped at once, each storing an attempt and a finding naming the other's attempt: every lock a
    batch needs is taken at its start in one order (derived.lock_batch), so neither fails with a deadlock (without
    it, most of 30 such pairs did) and every attempt ends flagged."""
    import threading
    import time

    from sqlalchemy import text

    from slurmtools.ledger import schema, store
    from slurmtools.ledger.spool import Event

    def att(j: int) -> Event:
        return Event("attempt", {"job_id": j, "restart_count": 0, "state": "COMPLETED", "user": "u", "name": f"n{j}",
                                 "source": "sacct"}, cluster="c", key=f"a{j}")

    def fnd(j: int) -> Event:
        return Event("finding", {"node": "g1", "job_id": j, "restart_count": 0, "source": "kernel", "kind": "xid",
                                 "xid": 79, "category": "hardware", "severity": "critical", "action": "drain_node",
                                 "trust": "kernel", "message": "x"}, cluster="c", key=f"f{j}")

    eng = db.make_engine(pg_ledger["SLURMTOOLS_LEDGER_URL"])
    errors: list[str] = []
    try:
        schema.upgrade(eng)
        for i in range(30):
            x, y = 2 * i + 1, 2 * i + 2
            barrier = threading.Barrier(2)

            def ship(evs: list[Event], barrier: threading.Barrier = barrier) -> None:
                try:
                    with eng.begin() as conn:
                        barrier.wait()
                        store.store(conn, evs)
                        time.sleep(0.05)
                except Exception as exc:  # noqa: BLE001 - collected and asserted below
                    errors.append(type(exc.__cause__ or exc).__name__)

            threads = [threading.Thread(target=ship, args=([att(x), fnd(y)],)),
                       threading.Thread(target=ship, args=([att(y), fnd(x)],))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(30)
        assert errors == []
        with eng.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM job_attempts WHERE interrupted")).scalar_one() == 60
    finally:
        eng.dispose()


def test_report_sections_on_parallel_connections_postgresql(pg_ledger: dict[str, str], tmp_path: Path) -> None:
    """`slurmtools report` with its sections on 1 to 4 connections that share one snapshot (reports/build.py):
    byte-identical JSON whatever the number, and the same as on SQLite; rows a writer commits just after the report
    exported its snapshot (a confirmed failure, an interrupted multi-node attempt and its retry chain: every lane
    reads some of them) are in none of the connections' sections, and in the next report."""
    from datetime import timedelta

    from sqlalchemy import create_engine, event

    from slurmtools.ledger import ship
    from slurmtools.reports.build import build_report
    from slurmtools.textsafe import dumps
    from tests.reports_data import CLUSTER, DAY, T0, attempt, exclusion, fill
    from tests.test_reports import scope

    def same(r: dict[str, Any]) -> str:   # less what differs between two runs or two databases by design
        return dumps({**r, "report": {k: v for k, v in r["report"].items()
                                      if k not in ("seconds", "timings_s", "generated", "database")}}, indent=1)

    url = pg_ledger["SLURMTOOLS_LEDGER_URL"]
    eng, lite, writer = db.make_engine(url), db.make_engine(f"sqlite:///{tmp_path}/l.db"), db.make_engine(url)
    t = T0 + DAY + timedelta(hours=1)
    late = [exclusion("c9", t, t + DAY, "slurmtools: hardware: late", "controller", "confirmed"),
            attempt(990, 0, t, t, t + timedelta(hours=2), "NODE_FAIL", "d[5-6]")]

    def commit_late(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if "pg_export_snapshot" in statement:
            with writer.begin() as w:
                ship.store(w, late)
            with Session(writer) as s:
                s.add(models.RetryChain(idempotency_key="late", cluster=CLUSTER, root_job_id=990, user="alice",
                                        created=t, max_retries=2, status="failed", retries_used=0))
                s.commit()

    try:
        fill(eng)
        fill(lite)
        base = same(build_report(lite, scope(), charts=True))
        for n in (1, 2, 3, 4):
            assert same(build_report(eng, scope(), charts=True, connections=n)) == base, n
        # a pool with no spare connection (as a server at max_connections): the lanes run on the one there is
        one = create_engine(url, pool_size=1, max_overflow=0, pool_timeout=0.5)
        try:
            assert same(build_report(one, scope(), charts=True, connections=4)) == base
        finally:
            one.dispose()
        event.listen(eng, "after_cursor_execute", commit_late)
        assert same(build_report(eng, scope(), charts=True, connections=4)) == base
        event.remove(eng, "after_cursor_execute", commit_late)
        was, now = json.loads(base), build_report(eng, scope(), charts=True, connections=4)
        assert now["failures"]["failures"] == was["failures"]["failures"] + 1
        assert now["detection"]["confirmed"] == was["detection"]["confirmed"] + 1
        assert now["mttf"]["interruptions"] == was["mttf"]["interruptions"] + 1
        assert now["goodput"]["chains"] == was["goodput"]["chains"] + 1
    finally:
        for e in (eng, lite, writer):
            e.dispose()
